#include "dplab/core/cuda/caching_allocator.h"

#include <algorithm>
#include <memory>

#include "dplab/core/cuda/check.h"
#include "dplab/core/cuda/stream.h"
#include "dplab/core/storage.h"
#include "dplab/core/tensor.h"

namespace dplab::cuda {

namespace {
// Restores the current device on scope exit.
class DeviceGuard {
 public:
  explicit DeviceGuard(int d) {
    DPLAB_CUDA_CHECK(cudaGetDevice(&prev_));
    if (prev_ != d) DPLAB_CUDA_CHECK(cudaSetDevice(d));
  }
  ~DeviceGuard() { cudaSetDevice(prev_); }

 private:
  int prev_ = 0;
};
}  // namespace

size_t CachingAllocator::round_size(size_t n) {
  if (n == 0) n = 1;
  constexpr size_t kSmall = 512, kLarge = 2u << 20, kSplit = 1u << 20;
  const size_t unit = n < kSplit ? kSmall : kLarge;
  return (n + unit - 1) / unit * unit;
}

CachingAllocator::~CachingAllocator() {
  // Process exit: the driver may already be shutting down; release quietly.
  for (auto& [size, p] : free_) cudaFree(p);
}

void* CachingAllocator::allocate(size_t nbytes) {
  const size_t size = round_size(nbytes);
  std::lock_guard<std::mutex> lock(mu_);
  auto it = free_.find(size);
  void* p = nullptr;
  if (it != free_.end()) {
    p = it->second;
    free_.erase(it);
    ++stats_.cache_hits;
  } else {
    DeviceGuard guard(device_);
    cudaError_t e = cudaMalloc(&p, size);
    if (e == cudaErrorMemoryAllocation) {
      // Out of memory: give the cache back and try once more before failing.
      cudaGetLastError();
      for (auto& [s, q] : free_) {
        DPLAB_CUDA_CHECK(cudaFree(q));
        stats_.reserved_bytes -= s;
      }
      free_.clear();
      e = cudaMalloc(&p, size);
    }
    DPLAB_CHECK(e == cudaSuccess,
                "cudaMalloc({} bytes) on cuda:{} failed: {} ({}); {} bytes in use", size, device_,
                cudaGetErrorName(e), cudaGetErrorString(e), stats_.allocated_bytes);
    stats_.reserved_bytes += size;
    ++stats_.cuda_malloc_calls;
  }
  live_[p] = size;
  stats_.allocated_bytes += size;
  stats_.peak_allocated_bytes = std::max(stats_.peak_allocated_bytes, stats_.allocated_bytes);
  return p;
}

void CachingAllocator::release(void* p) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = live_.find(p);
  DPLAB_CHECK(it != live_.end(), "CachingAllocator::release of unknown pointer on cuda:{}",
              device_);
  stats_.allocated_bytes -= it->second;
  free_.emplace(it->second, p);
  live_.erase(it);
}

void CachingAllocator::empty_cache() {
  std::lock_guard<std::mutex> lock(mu_);
  DeviceGuard guard(device_);
  for (auto& [size, p] : free_) {
    DPLAB_CUDA_CHECK(cudaFree(p));
    stats_.reserved_bytes -= size;
  }
  free_.clear();
}

AllocatorStats CachingAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

void CachingAllocator::reset_peak() {
  std::lock_guard<std::mutex> lock(mu_);
  stats_.peak_allocated_bytes = stats_.allocated_bytes;
}

CachingAllocator& device_allocator(int index) {
  static std::mutex mu;
  static std::map<int, std::unique_ptr<CachingAllocator>> allocators;
  std::lock_guard<std::mutex> lock(mu);
  auto& a = allocators[index];
  if (!a) a = std::make_unique<CachingAllocator>(index);
  return *a;
}

}  // namespace dplab::cuda

namespace dplab {

std::shared_ptr<Storage> cuda_allocate_storage(size_t nbytes, Device device) {
  DPLAB_CHECK(cuda_available(), "cannot allocate on {}: {}", device.str(),
              cuda_unavailable_reason());
  DPLAB_CHECK(device.index < cuda_device_count(), "cannot allocate on {}: only {} CUDA device(s)",
              device.str(), cuda_device_count());
  auto& alloc = cuda::device_allocator(device.index);
  void* p = alloc.allocate(nbytes);
  return std::make_shared<Storage>(p, nbytes, device, [&alloc](void* q) { alloc.release(q); });
}

// Copies between the host and a device (or two devices) in the order of the device's compute
// stream, so a copy sees every kernel issued before it and later kernels see the copy, without
// synchronising the whole device. The host side stays synchronous, as Tensor::copy_ promises:
// a device -> host copy waits for its stream before returning (the caller reads the values); a
// host -> device copy from pageable memory returns once the driver has staged the source, so
// the caller may free or change it at once.
void cuda_copy_between_devices(const Tensor& src, Tensor& dst) {
  DPLAB_CHECK(src.dtype() == dst.dtype(), "copy {} -> {}: convert the dtype on one device first",
              src.str(), dst.str());
  Tensor s = src.contiguous();
  DPLAB_CHECK(dst.is_contiguous(), "copy into non-contiguous {} across devices", dst.str());
  if (s.nbytes() == 0) return;
  if (src.device().is_cpu() || dst.device().is_cpu()) {
    const bool upload = src.device().is_cpu();
    const int dev = upload ? dst.device().index : src.device().index;
    cuda::DeviceGuard guard(dev);
    cudaStream_t stream = cuda::compute_stream(dev);
    const cudaMemcpyKind kind = upload ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost;
    DPLAB_CUDA_CHECK(cudaMemcpyAsync(dst.raw_data(), s.raw_data(), s.nbytes(), kind, stream));
    // Pinned host memory would make the upload truly asynchronous: wait for it too, so the
    // host may reuse its buffer (the batch prefetcher is the asynchronous path).
    DPLAB_CUDA_CHECK(cudaStreamSynchronize(stream));
    return;
  }
  // Device to device: same device in its compute stream order; across devices the source's
  // pending work finishes first and the copy completes before returning (rare: moving models).
  const int sd = src.device().index, dd = dst.device().index;
  if (sd == dd) {
    cuda::DeviceGuard guard(dd);
    DPLAB_CUDA_CHECK(cudaMemcpyAsync(dst.raw_data(), s.raw_data(), s.nbytes(),
                                     cudaMemcpyDeviceToDevice, cuda::compute_stream(dd)));
    return;
  }
  {
    cuda::DeviceGuard guard(sd);
    DPLAB_CUDA_CHECK(cudaStreamSynchronize(cuda::compute_stream(sd)));
  }
  cuda::DeviceGuard guard(dd);
  cudaStream_t stream = cuda::compute_stream(dd);
  DPLAB_CUDA_CHECK(cudaMemcpyPeerAsync(dst.raw_data(), dd, s.raw_data(), sd, s.nbytes(), stream));
  DPLAB_CUDA_CHECK(cudaStreamSynchronize(stream));
}

}  // namespace dplab
