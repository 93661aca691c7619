// Page-locked (pinned) host buffers for host -> device transfers. cudaMemcpyAsync from pinned
// memory is a true DMA that overlaps with kernels; from pageable memory the driver first copies
// into its own staging buffer on the calling thread. cudaHostAlloc is expensive (it maps pages
// for the device, milliseconds for large buffers), so buffers come from a process-wide pool and
// go back to it: the training loop never calls cudaHostAlloc after its first steps.
#pragma once
#include <cstddef>
#include <map>
#include <mutex>

namespace dplab::cuda {

struct PinnedStats {
  size_t host_alloc_calls = 0;  // cudaHostAlloc calls in total
  size_t reserved_bytes = 0;    // pinned bytes obtained in total (in use + cached)
  size_t in_use_bytes = 0;      // bytes handed out now
  size_t reuses = 0;            // requests served from the cache
};

class PinnedPool {
 public:
  PinnedPool() = default;
  ~PinnedPool();
  PinnedPool(const PinnedPool&) = delete;
  PinnedPool& operator=(const PinnedPool&) = delete;

  // A pinned buffer of at least `nbytes` (its real size is stored in *capacity). A cached
  // buffer is reused when it is at least nbytes and at most twice as large (so one huge buffer
  // is not pinned down by a tiny request).
  void* acquire(size_t nbytes, size_t* capacity);
  // Returns a buffer to the cache; the caller guarantees no transfer still reads it.
  void release(void* p);
  PinnedStats stats() const;
  // Frees every cached buffer (cudaFreeHost).
  void empty_cache();
  static size_t round_size(size_t nbytes);

 private:
  mutable std::mutex mu_;
  std::multimap<size_t, void*> free_;  // capacity -> buffer
  std::map<void*, size_t> live_;       // buffer -> capacity
  PinnedStats stats_;
};

// The process-wide pool (created on first use, lives until exit).
PinnedPool& pinned_pool();

// A move-only handle on one pooled buffer; returns it to the pool when destroyed. grow()
// replaces it by a larger one only when `nbytes` exceeds the capacity (contents are lost).
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  explicit PinnedBuffer(size_t nbytes) { grow(nbytes); }
  ~PinnedBuffer() { reset(); }
  PinnedBuffer(PinnedBuffer&& o) noexcept : p_(o.p_), cap_(o.cap_) { o.p_ = nullptr, o.cap_ = 0; }
  PinnedBuffer& operator=(PinnedBuffer&& o) noexcept;
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;

  void grow(size_t nbytes);
  void reset();
  void* data() const { return p_; }
  size_t capacity() const { return cap_; }

 private:
  void* p_ = nullptr;
  size_t cap_ = 0;
};

}  // namespace dplab::cuda
