// Communication work that stays off the compute stream (issue #34: hierarchical GradSync's
// stage kernels). On a CUDA device the training thread keeps enqueueing backward on the compute
// stream while GradSync's communication thread reduces the buckets that are ready. A bucket's
// own kernels (the hierarchical reducer's padding copy and scaling, the 16-bit wire conversions)
// would queue behind that backward if they ran on the compute stream, and with them every stage
// after the first. Inside a CommStreamScope they run on the device's comm stream instead,
// where the bucket's collectives run:
//
//   - on entry the comm stream waits (an event, no host wait) for a ComputeMark: the point of
//     the compute stream where the training thread saw the bucket's gradients ready (GradSync
//     records it in the grad-ready hook), so nothing enqueued after that holds the bucket up;
//     without a mark, for the compute stream's work so far;
//   - inside, this thread's kernels, copies and allocations for the device go to the comm
//     stream (core/cuda/stream.h, launch_stream); allocations come from the caching allocator's
//     pool for that stream, so a block is only ever reused in the order of the stream it was
//     used on; cuBLAS and cuDNN refuse (their handles are bound to the compute stream);
//   - the compute stream is ordered after the scope's work by order_compute_after_comm(), which
//     GradSync::finish() calls before the optimizer reads the gradients.
//
// Per thread, as PyTorch's current-stream guard. On the CPU (and in a build without CUDA) both
// do nothing: there is one stream of work, the calling thread.
#pragma once
#include <memory>

#include "dplab/core/device.h"

namespace dplab {

// A point of a device's compute stream: the work the recording thread had enqueued there at
// its last record() (a CUDA event; nothing on the CPU). Record and use it in that order: a
// scope waits for the record made before it began.
class ComputeMark {
 public:
  explicit ComputeMark(Device device);
  ~ComputeMark();
  ComputeMark(const ComputeMark&) = delete;
  ComputeMark& operator=(const ComputeMark&) = delete;
  void record();

 private:
  friend class CommStreamScope;
  struct Impl;
  std::unique_ptr<Impl> impl_;  // null on the CPU
};

class CommStreamScope {
 public:
  // The comm stream waits for `after` (null: for the compute stream's work so far).
  explicit CommStreamScope(Device device, const ComputeMark* after = nullptr);
  ~CommStreamScope();
  CommStreamScope(const CommStreamScope&) = delete;
  CommStreamScope& operator=(const CommStreamScope&) = delete;

 private:
  bool active_ = false;
  int previous_ = -1;
};

// The device's compute stream waits for the work enqueued on its comm stream so far (an event:
// the host does not wait). Nothing on the CPU.
void order_compute_after_comm(Device device);

}  // namespace dplab
