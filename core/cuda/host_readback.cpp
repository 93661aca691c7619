// HostReadback on CUDA devices (core/host_readback.h): a pinned buffer and an event per
// HostReadback; CPU tensors are copied at start(), as without CUDA.
#include "dplab/core/host_readback.h"

#include <cstring>
#include <optional>

#include "dplab/core/cuda/check.h"
#include "dplab/core/cuda/device_guard.h"
#include "dplab/core/cuda/event.h"
#include "dplab/core/cuda/pinned.h"
#include "dplab/core/cuda/stream.h"
#include "dplab/core/cuda/stream_wait.h"

namespace dplab {

struct HostReadback::Device {
  cuda::PinnedBuffer pinned;
  std::optional<cuda::Event> copied;
};

HostReadback::HostReadback() = default;
HostReadback::~HostReadback() {
  // A copy still in flight writes into the pinned buffer, which would go back to the pool: wait
  // for it, bounded; if the device never gets there (a stalled stream), keep the buffer out of
  // the pool for good rather than hand it out while it may still be written. Cannot throw.
  if (!pending_ || !on_device_ || !device_ || !device_->copied) return;
  if (!cuda::event_done_quietly(device_->copied->get()))
    new cuda::PinnedBuffer(std::move(device_->pinned));  // deliberately never freed
}

void HostReadback::start(const Tensor& t) {
  DPLAB_CHECK(t.dtype() == DType::f32 && t.is_contiguous(),
              "HostReadback: {} must be a contiguous f32 tensor", t.str());
  n_ = static_cast<size_t>(t.numel());
  on_device_ = t.device().is_cuda();
  if (!on_device_) {
    host_ = t.to_vector();
    pending_ = true;
    return;
  }
  const int dev = t.device().index;
  if (!device_) device_ = std::make_unique<Device>();
  // The previous copy (not taken) must be over before its buffer is written again.
  if (pending_ && device_->copied) device_->copied->synchronize();
  if (!device_->copied || device_->copied->device() != dev) device_->copied.emplace(dev);
  device_->pinned.grow(n_ * sizeof(float));
  cuda::ScopedDevice on(dev);
  const cudaStream_t s = cuda::launch_stream(dev);
  cuda::copy_to_pinned_async(device_->pinned.data(), t.raw_data(), n_ * sizeof(float), s);
  device_->copied->record(s);
  pending_ = true;
}

std::vector<float> HostReadback::take() {
  DPLAB_CHECK(pending_, "HostReadback::take: nothing was started");
  pending_ = false;
  if (!on_device_) return host_;
  device_->copied->synchronize();  // bounded by comm.timeout_s (stream_wait.h)
  std::vector<float> out(n_);
  std::memcpy(out.data(), device_->pinned.data(), n_ * sizeof(float));
  return out;
}

}  // namespace dplab
