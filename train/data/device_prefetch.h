// DeviceBatches: the loader's batches on the training device, uploaded one batch ahead.
//
// On the CPU it hands out the loader's batches unchanged. On cuda:N each host batch is copied
// into a pinned buffer (core/cuda/pinned.h) and sent with cudaMemcpyAsync on a copy stream of
// its own while the current step computes; the compute stream waits for the copy's event
// (cudaStreamWaitEvent), so no step synchronises the host with the device. Two slots
// alternate: while step t reads slot t%2, batch t+1 travels into the other slot, whose device
// buffers are reused only after the compute stream has passed the end of step t-1 (an event
// recorded when step t asks for its batch). So a handed-out batch is valid until the next call
// of next(): that call refills its slot (if prefetch() has not), ordered only after the work
// enqueued before it; kernels enqueued later must not read the old batch.
//
// When batch t+1 is uploaded: by prefetch(), which the caller places after step t's device
// work is enqueued (the training loop: once backward is; evaluation: once forward is). The
// upload's host part (the loader's next batch, a copy into pinned memory: ~15-30 ms at batch
// 256 of 224x224 images) then runs while the device computes. Uploading it in next(), right
// after handing out batch t, delayed step t's first kernel by that long (issue #34). Without a
// prefetch() call, next() uploads it then, as before.
#pragma once
#include <memory>

#include "dplab/core/device.h"
#include "dplab/data/loader.h"

namespace dplab {

class DeviceBatches {
 public:
  // Throws with cuda_unavailable_reason() for a CUDA device when there is none.
  DeviceBatches(BatchLoader& loader, Device device);
  ~DeviceBatches();
  DeviceBatches(const DeviceBatches&) = delete;
  DeviceBatches& operator=(const DeviceBatches&) = delete;

  // The next batch of the loader's epoch, on the device; false when the epoch is done.
  bool next(Batch& out);
  // Whether the batch after the one next() handed out last is still to be uploaded (always
  // false on the CPU, whose batches are not uploaded).
  bool prefetch_due() const;
  // Uploads it now if it is due (above); a no-op otherwise.
  void prefetch();
  // Drops a batch fetched ahead (call after BatchLoader::start_epoch).
  void reset();
  Device device() const { return device_; }

 private:
  struct Impl;  // CUDA state (streams, events, pinned and device buffers)
  BatchLoader& loader_;
  Device device_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace dplab
