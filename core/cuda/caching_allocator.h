// A caching device allocator (one per device), so the training loop never calls cudaMalloc or
// cudaFree after the first step. The bookkeeping is core/block_pool.h (PyTorch's scheme: 512 B
// rounding, 2 MiB / 20 MiB segments, block splitting and merging, per-stream reuse, free the
// cache and retry on out-of-memory); this class backs it with cudaMalloc/cudaFree on its device.
// Every block is allocated for the stream its thread launches on (core/cuda/stream.h
// launch_stream): the compute stream, where all op kernels and copies run, or, inside a
// CommStreamScope, the comm stream, where that scope's kernels and collectives run. So a block
// is used on the stream it was allocated for, and a released block may serve that stream's next
// request at once. Compute-stream buffers that a collective reads outside a scope are kept alive
// by their NCCL request until the compute stream is ordered after the operation
// (nccl_communicator.cpp).
#pragma once
#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

#include "dplab/core/block_pool.h"

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
  explicit CachingAllocator(int device);
  ~CachingAllocator();
  void* allocate(size_t nbytes);
  void release(void* p);
  // Returns every cached (free) block to the driver.
  void empty_cache();
  AllocatorStats stats() const;
  // Starts a new peak measurement at the bytes handed out now (dplab bench --device cuda).
  void reset_peak();
  static size_t round_size(size_t nbytes) { return BlockPool::round_size(nbytes); }

 private:
  int device_;
  mutable std::mutex mu_;
  std::unique_ptr<BlockPool> pool_;
};

// The allocator of device `index` (created on first use; lives until exit).
CachingAllocator& device_allocator(int index);

}  // namespace dplab::cuda
