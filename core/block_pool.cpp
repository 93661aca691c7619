#include "dplab/core/block_pool.h"

#include <algorithm>
#include <tuple>
#include <utility>
#include <vector>

#include "dplab/core/error.h"

namespace dplab {

bool BlockPool::BySize::operator()(const Block* a, const Block* b) const {
  return std::tie(a->stream, a->size, a->ptr) < std::tie(b->stream, b->size, b->ptr);
}

BlockPool::BlockPool(BlockPoolBacking backing, std::string name)
    : backing_(std::move(backing)), name_(std::move(name)) {}

BlockPool::~BlockPool() {
  release_cached();
  // Blocks still handed out (process exit with live tensors) keep their segments; only the
  // bookkeeping goes.
  std::vector<Block*> heads;
  for (auto& [p, b] : live_) {
    Block* h = b;
    while (h->prev) h = h->prev;
    heads.push_back(h);
  }
  std::sort(heads.begin(), heads.end());
  heads.erase(std::unique(heads.begin(), heads.end()), heads.end());
  for (Block* h : heads)
    while (h) delete std::exchange(h, h->next);
}

size_t BlockPool::round_size(size_t n) {
  if (n < kMinBlock) return kMinBlock;
  return (n + kMinBlock - 1) / kMinBlock * kMinBlock;
}

size_t BlockPool::segment_size(size_t size) {
  if (size <= kSmallSize) return kSmallSegment;
  if (size < kMinLargeAlloc) return kLargeSegment;
  return (size + kRoundLarge - 1) / kRoundLarge * kRoundLarge;
}

BlockPool::Block* BlockPool::find_free(size_t size, bool small, uintptr_t stream) {
  FreeSet& set = pool(small);
  Block key;
  key.stream = stream;
  key.size = size;
  auto it = set.lower_bound(&key);
  if (it == set.end() || (*it)->stream != stream) return nullptr;
  Block* b = *it;
  set.erase(it);
  return b;
}

BlockPool::Block* BlockPool::new_segment(size_t size, bool small, uintptr_t stream) {
  const size_t seg = segment_size(size);
  void* p = backing_.allocate(seg);
  size_t freed = 0;
  if (!p) {
    // Out of memory: give back what the cache holds whole, then try once more.
    freed = release_cached();
    p = backing_.allocate(seg);
  }
  DPLAB_CHECK(p != nullptr,
              "out of memory on {}: a segment of {} bytes (for a request of {} bytes) could not "
              "be allocated, also after returning {} cached bytes; {} bytes are in use, {} "
              "reserved",
              name_, seg, size, freed, stats_.allocated_bytes, stats_.reserved_bytes);
  auto* b = new Block;
  b->ptr = static_cast<char*>(p);
  b->size = seg;
  b->stream = stream;
  b->small = small;
  stats_.reserved_bytes += seg;
  ++stats_.backing_calls;
  ++stats_.segments;
  return b;
}

void BlockPool::split(Block* b, size_t size) {
  const size_t rest = b->size - size;
  const bool worth = b->small ? rest >= kMinBlock : rest > kSmallSize;
  if (!worth) return;
  auto* r = new Block;
  r->ptr = b->ptr + size;
  r->size = rest;
  r->stream = b->stream;
  r->small = b->small;
  r->prev = b;
  r->next = b->next;
  if (b->next) b->next->prev = r;
  b->next = r;
  b->size = size;
  pool(r->small).insert(r);
}

void* BlockPool::allocate(size_t nbytes, uintptr_t stream) {
  const size_t size = round_size(nbytes);
  const bool small = size <= kSmallSize;
  Block* b = find_free(size, small, stream);
  if (b)
    ++stats_.cache_hits;
  else
    b = new_segment(size, small, stream);
  split(b, size);
  b->allocated = true;
  live_.emplace(b->ptr, b);
  stats_.allocated_bytes += b->size;
  stats_.peak_allocated_bytes = std::max(stats_.peak_allocated_bytes, stats_.allocated_bytes);
  return b->ptr;
}

void BlockPool::release(void* p) {
  auto it = live_.find(p);
  DPLAB_CHECK(it != live_.end(), "caching allocator on {}: release of unknown pointer {}", name_,
              p);
  Block* b = it->second;
  live_.erase(it);
  b->allocated = false;
  stats_.allocated_bytes -= b->size;
  FreeSet& set = pool(b->small);
  // Merge with free neighbours of the same segment (same stream by construction).
  if (Block* n = b->next; n && !n->allocated) {
    set.erase(n);
    b->size += n->size;
    b->next = n->next;
    if (n->next) n->next->prev = b;
    delete n;
  }
  if (Block* q = b->prev; q && !q->allocated) {
    set.erase(q);
    q->size += b->size;
    q->next = b->next;
    if (b->next) b->next->prev = q;
    delete b;
    b = q;
  }
  set.insert(b);
}

size_t BlockPool::release_cached() {
  size_t freed = 0;
  for (FreeSet* set : {&small_free_, &large_free_}) {
    for (auto it = set->begin(); it != set->end();) {
      Block* b = *it;
      if (b->prev || b->next) {  // part of a segment that is partly in use
        ++it;
        continue;
      }
      it = set->erase(it);
      backing_.release(b->ptr);
      stats_.reserved_bytes -= b->size;
      --stats_.segments;
      freed += b->size;
      delete b;
    }
  }
  return freed;
}

}  // namespace dplab
