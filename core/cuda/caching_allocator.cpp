#include "dplab/core/cuda/caching_allocator.h"

#include <algorithm>
#include <map>
#include <memory>

#include "dplab/core/cuda/check.h"
#include "dplab/core/cuda/stream.h"
#include "dplab/core/cuda/stream_wait.h"
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

CachingAllocator::CachingAllocator(int device) : device_(device) {
  BlockPoolBacking backing;
  backing.allocate = [device](size_t bytes) -> void* {
    DeviceGuard guard(device);
    void* p = nullptr;
    const cudaError_t e = cudaMalloc(&p, bytes);
    if (e == cudaErrorMemoryAllocation) {
      // Out of memory is an answer, not a failure: the pool frees its cache and retries. The
      // runtime keeps it as the thread's last error, which the next kernel launcher would
      // report (issue #19, item 1): clear it, as PyTorch's allocator does.
      (void)cudaGetLastError();
      return nullptr;
    }
    DPLAB_CUDA_CHECK(e);
    return p;
  };
  backing.release = [device](void* p) {
    // Also runs at process exit, when the driver may be shutting down: never throws.
    int prev = -1;
    if (cudaGetDevice(&prev) == cudaSuccess && prev != device) cudaSetDevice(device);
    if (cudaFree(p) != cudaSuccess) (void)cudaGetLastError();
    if (prev >= 0 && prev != device) cudaSetDevice(prev);
  };
  pool_ = std::make_unique<BlockPool>(std::move(backing), fmt::format("cuda:{}", device));
}

CachingAllocator::~CachingAllocator() = default;

void* CachingAllocator::allocate(size_t nbytes) {
  std::lock_guard<std::mutex> lock(mu_);
  // For the stream this thread launches on: inside a CommStreamScope the comm stream's pool.
  return pool_->allocate(nbytes, reinterpret_cast<uintptr_t>(launch_stream(device_)));
}

void CachingAllocator::release(void* p) {
  std::lock_guard<std::mutex> lock(mu_);
  pool_->release(p);
}

void CachingAllocator::empty_cache() {
  std::lock_guard<std::mutex> lock(mu_);
  pool_->release_cached();
}

AllocatorStats CachingAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  const BlockPoolStats& b = pool_->stats();
  AllocatorStats s;
  s.allocated_bytes = b.allocated_bytes;
  s.reserved_bytes = b.reserved_bytes;
  s.cuda_malloc_calls = b.backing_calls;
  s.cache_hits = b.cache_hits;
  s.peak_allocated_bytes = b.peak_allocated_bytes;
  return s;
}

void CachingAllocator::reset_peak() {
  std::lock_guard<std::mutex> lock(mu_);
  pool_->reset_peak();
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

// Copies between the host and a device (or two devices) in the order of the stream this thread
// launches on (the compute stream, or the comm stream inside a CommStreamScope), so a copy sees
// every kernel issued before it and later kernels see the copy, without synchronising the whole
// device. The host side stays synchronous, as Tensor::copy_ promises: a device -> host copy waits
// for its stream before returning (the caller reads the values); a host -> device copy from
// pageable memory returns once the driver has staged the source, so the caller may free or change
// it at once.
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
    cudaStream_t stream = cuda::launch_stream(dev);
    // Staged through pinned memory and waited for with comm.timeout_s (stream_wait.h): compute
    // may be waiting on a stalled collective, and a copy into pageable memory would block in
    // the driver without limit. The batch prefetcher is the asynchronous upload path.
    const std::string what = fmt::format("copy {} -> {}", src.str(), dst.str());
    if (upload)
      cuda::copy_from_host(dst.raw_data(), s.raw_data(), s.nbytes(), stream, what);
    else
      cuda::copy_to_host(dst.raw_data(), s.raw_data(), s.nbytes(), stream, what);
    return;
  }
  // Device to device: same device in its compute stream order; across devices the source's
  // pending work finishes first and the copy completes before returning (rare: moving models).
  const int sd = src.device().index, dd = dst.device().index;
  if (sd == dd) {
    cuda::DeviceGuard guard(dd);
    DPLAB_CUDA_CHECK(cudaMemcpyAsync(dst.raw_data(), s.raw_data(), s.nbytes(),
                                     cudaMemcpyDeviceToDevice, cuda::launch_stream(dd)));
    return;
  }
  {
    cuda::DeviceGuard guard(sd);
    cuda::wait_stream(cuda::launch_stream(sd),
                      fmt::format("copy {} -> {}: the source's stream", src.str(), dst.str()));
  }
  cuda::DeviceGuard guard(dd);
  cudaStream_t stream = cuda::launch_stream(dd);
  DPLAB_CUDA_CHECK(cudaMemcpyPeerAsync(dst.raw_data(), dd, s.raw_data(), sd, s.nbytes(), stream));
  cuda::wait_stream(stream, fmt::format("copy {} -> {}", src.str(), dst.str()));
}

}  // namespace dplab
