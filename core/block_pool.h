// The bookkeeping of the caching device allocator (core/cuda/caching_allocator.h), separated from
// CUDA so it runs, and is tested, on any machine against a fake backing allocator.
//
// Modelled on PyTorch's CUDA caching allocator (issue #19, item 9; its design, not its code):
//  - Requests round up to 512 B. Requests up to 1 MiB come from 2 MiB segments (the "small"
//    pool); larger ones from 20 MiB segments when under 10 MiB, else from a segment of the
//    request rounded up to 2 MiB (the "large" pool).
//  - A free block bigger than the request is split: the request takes the front, the rest stays
//    free in the pool (small pool: when at least 512 B remain; large pool: when more than 1 MiB
//    remains, so the large pool never fills with slivers). A released block merges with free
//    neighbours of its segment. So a batch size that changes from step to step reuses the same
//    segments instead of adding a new size class each time.
//  - Best fit: the smallest free block of the pool that holds the request.
//  - Stream-ordered reuse: a block belongs to the stream it was allocated for and is reused
//    only by allocations for the same stream; work on that stream after the release is ordered
//    after every earlier use, so the memory is free for it without a host synchronisation.
//  - Out of memory: every cached segment that is wholly free is returned, and the request is
//    tried once more before failing with the figures.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <unordered_map>

namespace dplab {

struct BlockPoolBacking {
  // Obtains `bytes` (a segment) or returns nullptr when out of memory; throws on other errors.
  std::function<void*(size_t bytes)> allocate;
  // Returns a segment obtained from allocate(). Must not throw (called from destructors).
  std::function<void(void* p)> release;
};

struct BlockPoolStats {
  size_t allocated_bytes = 0;  // handed out now (rounded sizes)
  size_t reserved_bytes = 0;   // held in segments from the backing allocator
  size_t backing_calls = 0;    // segments obtained (cudaMalloc calls)
  size_t cache_hits = 0;       // requests served from a free block
  size_t peak_allocated_bytes = 0;
  size_t segments = 0;  // segments held now
};

class BlockPool {
 public:
  static constexpr size_t kMinBlock = 512;             // rounding unit, smallest block
  static constexpr size_t kSmallSize = 1u << 20;       // largest request of the small pool
  static constexpr size_t kSmallSegment = 2u << 20;    // segment of the small pool
  static constexpr size_t kMinLargeAlloc = 10u << 20;  // below: a kLargeSegment is taken
  static constexpr size_t kLargeSegment = 20u << 20;
  static constexpr size_t kRoundLarge = 2u << 20;  // larger requests: own segment, 2 MiB steps

  // `name` appears in errors ("cuda:0").
  BlockPool(BlockPoolBacking backing, std::string name);
  ~BlockPool();  // returns the cached segments; blocks still handed out are left alone
  BlockPool(const BlockPool&) = delete;
  BlockPool& operator=(const BlockPool&) = delete;

  // A block of at least `nbytes` usable in the order of `stream` (an opaque key). Not thread-safe:
  // the caller locks.
  void* allocate(size_t nbytes, uintptr_t stream);
  // Returns a block from allocate() to the pool (throws naming the pool on an unknown pointer).
  void release(void* p);
  // Returns every wholly free segment to the backing allocator; the bytes returned.
  size_t release_cached();
  const BlockPoolStats& stats() const { return stats_; }
  void reset_peak() { stats_.peak_allocated_bytes = stats_.allocated_bytes; }

  static size_t round_size(size_t nbytes);
  // The segment obtained for a request of rounded size `size`.
  static size_t segment_size(size_t size);

 private:
  struct Block {
    char* ptr = nullptr;
    size_t size = 0;
    uintptr_t stream = 0;
    bool small = false;
    bool allocated = false;
    Block* prev = nullptr;  // neighbours in the same segment
    Block* next = nullptr;
  };
  struct BySize {  // (stream, size, address): best fit by lower_bound
    bool operator()(const Block* a, const Block* b) const;
  };
  using FreeSet = std::set<Block*, BySize>;
  FreeSet& pool(bool small) { return small ? small_free_ : large_free_; }
  Block* find_free(size_t size, bool small, uintptr_t stream);
  Block* new_segment(size_t size, bool small, uintptr_t stream);
  void split(Block* b, size_t size);

  BlockPoolBacking backing_;
  std::string name_;
  FreeSet small_free_, large_free_;
  std::unordered_map<void*, Block*> live_;
  BlockPoolStats stats_;
};

}  // namespace dplab
