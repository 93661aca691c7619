#include "dplab/core/cuda/pinned.h"

#include "dplab/core/cuda/check.h"

namespace dplab::cuda {

size_t PinnedPool::round_size(size_t n) {
  if (n == 0) n = 1;
  // Pages below 1 MiB, 1 MiB above: batches of one run have a handful of sizes.
  constexpr size_t kPage = 4096, kLarge = 1u << 20;
  const size_t unit = n < kLarge ? kPage : kLarge;
  return (n + unit - 1) / unit * unit;
}

PinnedPool::~PinnedPool() {
  // Process exit: the driver may already be shutting down; free quietly.
  for (auto& [cap, p] : free_) cudaFreeHost(p);
}

void* PinnedPool::acquire(size_t nbytes, size_t* capacity) {
  const size_t size = round_size(nbytes);
  std::lock_guard<std::mutex> lock(mu_);
  void* p = nullptr;
  size_t cap = 0;
  auto it = free_.lower_bound(size);
  if (it != free_.end() && it->first <= 2 * size) {
    cap = it->first;
    p = it->second;
    free_.erase(it);
    ++stats_.reuses;
  } else {
    cap = size;
    // Portable: usable from every device's streams; plain (not mapped, not write-combined),
    // since the host writes each batch and never reads it back.
    cudaError_t e = cudaHostAlloc(&p, cap, cudaHostAllocPortable);
    if (e != cudaSuccess) {
      cudaGetLastError();
      DPLAB_FAIL(
          "cudaHostAlloc({} bytes, cudaHostAllocPortable) failed: {} ({}); {} pinned bytes "
          "reserved",
          cap, cudaGetErrorName(e), cudaGetErrorString(e), stats_.reserved_bytes);
    }
    ++stats_.host_alloc_calls;
    stats_.reserved_bytes += cap;
  }
  live_[p] = cap;
  stats_.in_use_bytes += cap;
  if (capacity) *capacity = cap;
  return p;
}

void PinnedPool::release(void* p) {
  if (p == nullptr) return;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = live_.find(p);
  DPLAB_CHECK(it != live_.end(), "PinnedPool::release of a pointer the pool did not hand out");
  stats_.in_use_bytes -= it->second;
  free_.emplace(it->second, p);
  live_.erase(it);
}

PinnedStats PinnedPool::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

void PinnedPool::empty_cache() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [cap, p] : free_) {
    DPLAB_CUDA_CHECK(cudaFreeHost(p));
    stats_.reserved_bytes -= cap;
  }
  free_.clear();
}

PinnedPool& pinned_pool() {
  static PinnedPool pool;  // thread-safe initialisation; the pool locks its own state
  return pool;
}

PinnedBuffer& PinnedBuffer::operator=(PinnedBuffer&& o) noexcept {
  if (this != &o) {
    reset();
    p_ = o.p_;
    cap_ = o.cap_;
    o.p_ = nullptr;
    o.cap_ = 0;
  }
  return *this;
}

void PinnedBuffer::grow(size_t nbytes) {
  if (p_ != nullptr && nbytes <= cap_) return;
  reset();
  p_ = pinned_pool().acquire(nbytes, &cap_);
}

void PinnedBuffer::reset() {
  if (p_ != nullptr) pinned_pool().release(p_);
  p_ = nullptr;
  cap_ = 0;
}

}  // namespace dplab::cuda
