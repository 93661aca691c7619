#include "dplab/train/data/device_prefetch.h"

#include <cstring>

#include "dplab/core/error.h"

#ifdef DPLAB_WITH_CUDA
#include <cuda_runtime.h>

#include "dplab/core/cuda/check.h"
#include "dplab/core/cuda/pinned.h"
#include "dplab/core/cuda/stream.h"
#include "dplab/core/cuda/stream_wait.h"
#endif

namespace dplab {

#ifdef DPLAB_WITH_CUDA
namespace {

// Makes `device` current for the scope (every stream and event call below belongs to it).
class CurrentDevice {
 public:
  explicit CurrentDevice(int d) {
    DPLAB_CUDA_CHECK(cudaGetDevice(&prev_));
    if (prev_ != d) DPLAB_CUDA_CHECK(cudaSetDevice(d));
  }
  ~CurrentDevice() { cudaSetDevice(prev_); }
  CurrentDevice(const CurrentDevice&) = delete;
  CurrentDevice& operator=(const CurrentDevice&) = delete;

 private:
  int prev_ = 0;
};

// One staged tensor: pinned host copy and device buffer with room for the largest batch seen.
struct Staged {
  cuda::PinnedBuffer host;
  Tensor device;  // flat [capacity]
};

}  // namespace

struct DeviceBatches::Impl {
  struct Slot {
    Staged images, labels;
    cudaEvent_t copied = nullptr;    // copy stream: the upload into this slot is complete
    cudaEvent_t consumed = nullptr;  // compute stream: the step that read this slot is over
    bool copy_issued = false, consumed_recorded = false;
    Batch batch;  // views of the device buffers
  };
  int dev = 0;
  cudaStream_t copy = nullptr;
  cudaStream_t compute = nullptr;
  cudaEvent_t allocated = nullptr;  // compute stream, at a device-buffer (re)allocation
  Slot slots[2];
  int cur = 0;      // slot of the next batch handed out
  int handed = -1;  // slot handed out last, -1 before the first
  bool primed = false, pending = false;
  bool due = false;  // the next batch is still to be staged (prefetch() or the next next())

  explicit Impl(int device) : dev(device) {
    CurrentDevice guard(dev);
    compute = cuda::compute_stream(dev);
    DPLAB_CUDA_CHECK(cudaStreamCreateWithFlags(&copy, cudaStreamNonBlocking));
    DPLAB_CUDA_CHECK(cudaEventCreateWithFlags(&allocated, cudaEventDisableTiming));
    for (Slot& s : slots) {
      DPLAB_CUDA_CHECK(cudaEventCreateWithFlags(&s.copied, cudaEventDisableTiming));
      DPLAB_CUDA_CHECK(cudaEventCreateWithFlags(&s.consumed, cudaEventDisableTiming));
    }
  }

  ~Impl() {
    // Uploads still in flight read the pinned buffers and write the device buffers: let them
    // finish before both go back to their pools. Destructors report nothing (process exit).
    cudaSetDevice(dev);
    // Bounded (comm.timeout_s): a copy stream held up behind a stalled collective must not
    // hang teardown. If it does not drain, the buffers it may still use are leaked, not reused.
    if (copy && !cuda::stream_drained_quietly(copy)) {
      for (Slot& s : slots) {
        for (Staged* st : {&s.images, &s.labels}) {
          static_cast<void>(new cuda::PinnedBuffer(std::move(st->host)));  // leaked on purpose
          static_cast<void>(new Tensor(std::move(st->device)));
        }
      }
      return;  // the stream and events stay too: destroying them would not stop the copies
    }
    for (Slot& s : slots) {
      if (s.copied) cudaEventDestroy(s.copied);
      if (s.consumed) cudaEventDestroy(s.consumed);
    }
    if (allocated) cudaEventDestroy(allocated);
    if (copy) cudaStreamDestroy(copy);
  }

  // Ensures a device buffer of `numel` elements. A block fresh from the caching allocator may
  // have been freed by the host while compute-stream kernels still use it (the allocator is
  // not stream-aware): the copy stream first waits for everything issued to compute so far.
  void ensure_device(Staged& st, int64_t numel, DType dtype) {
    if (st.device.defined() && st.device.numel() >= numel && st.device.dtype() == dtype) return;
    st.device = Tensor::empty({numel}, dtype, Device::cuda(dev));
    DPLAB_CUDA_CHECK(cudaEventRecord(allocated, compute));
    DPLAB_CUDA_CHECK(cudaStreamWaitEvent(copy, allocated, 0));
  }

  // Host tensor -> pinned buffer -> device buffer (asynchronous on the copy stream).
  Tensor upload(Staged& st, const Tensor& host_tensor) {
    const Tensor h = host_tensor.contiguous();
    const size_t n = h.nbytes();
    st.host.grow(n);
    if (n > 0) std::memcpy(st.host.data(), h.raw_data(), n);
    ensure_device(st, h.numel(), h.dtype());
    Tensor d = st.device.flat_range(0, h.numel()).view(h.shape());
    if (n > 0)
      DPLAB_CUDA_CHECK(
          cudaMemcpyAsync(d.raw_data(), st.host.data(), n, cudaMemcpyHostToDevice, copy));
    return d;
  }

  // Fetches the loader's next batch into slot `i`; false at the end of the epoch.
  bool stage(BatchLoader& loader, int i) {
    Batch hb;
    if (!loader.next(hb)) return false;
    Slot& s = slots[i];
    CurrentDevice guard(dev);
    // The pinned buffers are about to be overwritten: their last upload must be complete
    // (issued two steps ago, so this rarely waits).
    if (s.copy_issued) cuda::wait_event(s.copied, "batch prefetch: the upload two steps ago");
    // The device buffers are about to be overwritten: the step that read them must be over.
    if (s.consumed_recorded) DPLAB_CUDA_CHECK(cudaStreamWaitEvent(copy, s.consumed, 0));
    s.batch.images = upload(s.images, hb.images);
    s.batch.labels = upload(s.labels, hb.labels);
    s.batch.number = hb.number;
    DPLAB_CUDA_CHECK(cudaEventRecord(s.copied, copy));
    s.copy_issued = true;
    return true;
  }

  void prefetch(BatchLoader& loader) {
    if (!due) return;
    due = false;
    pending = stage(loader, cur);
  }

  bool next(BatchLoader& loader, Batch& out) {
    if (!primed) {
      primed = true;
      pending = stage(loader, cur);
    }
    prefetch(loader);  // not done since the previous call: upload it now
    if (!pending) return false;
    CurrentDevice guard(dev);
    Slot& s = slots[cur];
    // Everything the compute stream runs from here on sees this batch on the device.
    DPLAB_CUDA_CHECK(cudaStreamWaitEvent(compute, s.copied, 0));
    // The previous step is fully issued by now: once the compute stream gets here, its slot
    // may be overwritten.
    if (handed >= 0) {
      DPLAB_CUDA_CHECK(cudaEventRecord(slots[handed].consumed, compute));
      slots[handed].consumed_recorded = true;
    }
    out = s.batch;
    handed = cur;
    cur ^= 1;
    due = true;  // prefetch() uploads it once this step's work is enqueued
    return true;
  }

  void reset() { primed = pending = due = false; }
};
#else
struct DeviceBatches::Impl {};
#endif

DeviceBatches::DeviceBatches(BatchLoader& loader, Device device)
    : loader_(loader), device_(device) {
  if (device.is_cpu()) return;
  DPLAB_CHECK(cuda_available(), "cannot train on {}: {}", device.str(), cuda_unavailable_reason());
  DPLAB_CHECK(device.index < cuda_device_count(), "cannot train on {}: only {} CUDA device(s)",
              device.str(), cuda_device_count());
#ifdef DPLAB_WITH_CUDA
  impl_ = std::make_unique<Impl>(device.index);
#endif
}

DeviceBatches::~DeviceBatches() = default;

bool DeviceBatches::next(Batch& out) {
#ifdef DPLAB_WITH_CUDA
  if (impl_) return impl_->next(loader_, out);
#endif
  return loader_.next(out);
}

bool DeviceBatches::prefetch_due() const {
#ifdef DPLAB_WITH_CUDA
  if (impl_) return impl_->due;
#endif
  return false;
}

void DeviceBatches::prefetch() {
#ifdef DPLAB_WITH_CUDA
  if (impl_) impl_->prefetch(loader_);
#endif
}

void DeviceBatches::reset() {
#ifdef DPLAB_WITH_CUDA
  if (impl_) impl_->reset();
#endif
}

}  // namespace dplab
