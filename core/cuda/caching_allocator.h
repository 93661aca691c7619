// A caching device allocator (one per device), so the training loop never calls cudaMalloc or
// cudaFree after the first step: freed blocks go to a free list binned by rounded size and are
// reused by the next request of that size class. Sizes round up to 512 B below 1 MiB and to
// 2 MiB above, which keeps the number of distinct classes small for a training step's
// repeating pattern of allocations.
#pragma once
#include <cstddef>
#include <map>
#include <mutex>
#include <vector>

namespace dplab::cuda {

struct AllocatorStats {
  size_t allocated_bytes = 0;  // handed out now
  size_t reserved_bytes = 0;   // obtained from cudaMalloc in total
  size_t cuda_malloc_calls = 0;
  size_t cache_hits = 0;
  size_t peak_allocated_bytes = 0;  // most bytes handed out at once since the last reset_peak()
};

class CachingAllocator {
 public:
  explicit CachingAllocator(int device) : device_(device) {}
  ~CachingAllocator();
  void* allocate(size_t nbytes);
  void release(void* p);
  // Returns every cached (free) block to the driver.
  void empty_cache();
  AllocatorStats stats() const;
  // Starts a new peak measurement at the bytes handed out now (dplab bench --device cuda).
  void reset_peak();
  static size_t round_size(size_t nbytes);

 private:
  int device_;
  mutable std::mutex mu_;
  std::multimap<size_t, void*> free_;  // size class -> block
  std::map<void*, size_t> live_;       // block -> size class
  AllocatorStats stats_;
};

// The allocator of device `index` (created on first use; lives until exit).
CachingAllocator& device_allocator(int index);

}  // namespace dplab::cuda
