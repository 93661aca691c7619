// Communication work that stays off the compute stream (issue #34: hierarchical GradSync's
// stage kernels). On a CUDA device the training thread keeps enqueueing backward on the compute
// stream while GradSync's communication thread reduces the buckets that are ready. A bucket's
// own kernels (the hierarchical reducer's padding copy and scaling, the 16-bit wire conversions)
// would queue behind that backward if they ran on the compute stream, and with them every stage
// after the first. Inside a CommStreamScope they run on the device's comm stream instead,
// where the bucket's collectives run:
//
//   - on entry the comm stream waits (an event, no host wait) for a StreamMark of the compute
//     stream: where the training thread saw the bucket's gradients ready (GradSync records it in
//     the grad-ready hook), so nothing enqueued after that holds the bucket up; without a mark,
//     for the compute stream's work so far;
//   - inside, this thread's kernels, copies and allocations for the device go to the comm
//     stream (core/cuda/stream.h, launch_stream); allocations come from the caching allocator's
//     pool for that stream, so a block is only ever reused in the order of the stream it was
//     used on; cuBLAS and cuDNN refuse (their handles are bound to the compute stream);
//   - a StreamMark of the comm stream recorded at the end of the scope's work, made the compute
//     stream's wait (GradSync::finish(), before the optimizer reads the gradients), orders
//     compute after that work and after nothing posted later.
//
// Per thread, as PyTorch's current-stream guard. On the CPU (and in a build without CUDA) all of
// it does nothing: there is one stream of work, the calling thread.
#pragma once
#include <memory>

#include "dplab/core/device.h"
#include "dplab/core/device_intervals.h"

namespace dplab {

// A point of one of a device's streams: the work enqueued there when record() was last called
// (a CUDA event; nothing on the CPU). Record it, then use it.
class StreamMark {
 public:
  StreamMark(Device device, DeviceStream stream);
  ~StreamMark();
  StreamMark(const StreamMark&) = delete;
  StreamMark& operator=(const StreamMark&) = delete;
  void record();
  // `waiter` (the device's other stream) waits for the mark on the device; the host does not.
  void make_wait(DeviceStream waiter) const;

 private:
  friend class CommStreamScope;
  struct Impl;
  std::unique_ptr<Impl> impl_;  // null on the CPU
};

class CommStreamScope {
 public:
  // The comm stream waits for `after`, a mark of the compute stream (null: for the compute
  // stream's work so far).
  explicit CommStreamScope(Device device, const StreamMark* after = nullptr);
  ~CommStreamScope();
  CommStreamScope(const CommStreamScope&) = delete;
  CommStreamScope& operator=(const CommStreamScope&) = delete;

 private:
  // Used by the CUDA build only (the CPU build's scope is empty).
  [[maybe_unused]] bool active_ = false;
  [[maybe_unused]] int previous_ = -1;
};

}  // namespace dplab
