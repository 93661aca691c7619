// The caching allocator's bookkeeping (core/block_pool.h) against a fake backing allocator that
// hands out addresses of a pretend device with a fixed capacity: rounding, segment sizes,
// splitting, merging, best fit, per-stream reuse, and out-of-memory recovery. Expected figures
// are worked out by hand from the rules in the header (PyTorch's scheme), not by the pool.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>

#include "dplab/core/block_pool.h"
#include "dplab/core/error.h"

namespace dplab {
namespace {

constexpr size_t KiB = 1024, MiB = 1024 * 1024;

// A pretend device: addresses from a counter (never dereferenced), `capacity` bytes at most.
struct FakeDevice {
  explicit FakeDevice(size_t cap) : capacity(cap) {}
  size_t capacity;
  size_t used = 0;
  uintptr_t next = 0x100000000;
  std::map<void*, size_t> live;
  int allocs = 0, frees = 0;
  BlockPoolBacking backing() {
    return {[this](size_t n) -> void* {
              if (used + n > capacity) return nullptr;
              void* p = reinterpret_cast<void*>(next);
              next += n;
              used += n;
              live[p] = n;
              ++allocs;
              return p;
            },
            [this](void* p) {
              auto it = live.find(p);
              ASSERT_NE(it, live.end()) << "released a segment the device never gave out";
              used -= it->second;
              live.erase(it);
              ++frees;
            }};
  }
};

uintptr_t addr(void* p) {
  return reinterpret_cast<uintptr_t>(p);
}

TEST(BlockPool, RoundsTo512AndPicksSegmentsLikePyTorch) {
  EXPECT_EQ(BlockPool::round_size(0), 512u);
  EXPECT_EQ(BlockPool::round_size(1), 512u);
  EXPECT_EQ(BlockPool::round_size(512), 512u);
  EXPECT_EQ(BlockPool::round_size(513), 1024u);
  // Above 1 MiB still in 512 B steps (the old allocator rounded 1 MiB + 1 up to 2 MiB).
  EXPECT_EQ(BlockPool::round_size(MiB + 1), MiB + 512);
  EXPECT_EQ(BlockPool::segment_size(512), 2 * MiB);
  EXPECT_EQ(BlockPool::segment_size(MiB), 2 * MiB);
  EXPECT_EQ(BlockPool::segment_size(MiB + 512), 20 * MiB);
  EXPECT_EQ(BlockPool::segment_size(10 * MiB - 512), 20 * MiB);
  EXPECT_EQ(BlockPool::segment_size(10 * MiB), 10 * MiB);
  EXPECT_EQ(BlockPool::segment_size(10 * MiB + 512), 12 * MiB);
}

TEST(BlockPool, SmallRequestsShareOneSegmentBySplitting) {
  FakeDevice dev{64 * MiB};
  BlockPool pool(dev.backing(), "fake:0");
  void* a = pool.allocate(1000, 1);  // 1024
  void* b = pool.allocate(3000, 1);  // 3072
  void* c = pool.allocate(100, 1);   // 512
  EXPECT_EQ(dev.allocs, 1);
  EXPECT_EQ(pool.stats().reserved_bytes, 2 * MiB);
  EXPECT_EQ(pool.stats().allocated_bytes, 1024u + 3072u + 512u);
  // Splitting hands out consecutive pieces of the segment.
  EXPECT_EQ(addr(b), addr(a) + 1024);
  EXPECT_EQ(addr(c), addr(b) + 3072);
  pool.release(b);
  // Best fit: a 2 KiB request takes b's 3 KiB hole, not the big tail.
  void* d = pool.allocate(2048, 1);
  EXPECT_EQ(d, b);
  EXPECT_EQ(pool.stats().cache_hits, 3u) << "b, c (the segment's rest) and d (b's hole)";
}

TEST(BlockPool, ReleasedNeighboursMergeSoALargerRequestFits) {
  FakeDevice dev{64 * MiB};
  BlockPool pool(dev.backing(), "fake:0");
  void* a = pool.allocate(4 * MiB, 1);
  void* b = pool.allocate(4 * MiB, 1);
  void* c = pool.allocate(4 * MiB, 1);
  ASSERT_EQ(dev.allocs, 1) << "three 4 MiB blocks come from one 20 MiB segment";
  pool.release(a);
  pool.release(b);
  // a and b merged into 8 MiB at a's address: an 8 MiB request fits there, no new segment.
  void* d = pool.allocate(8 * MiB, 1);
  EXPECT_EQ(d, a);
  EXPECT_EQ(dev.allocs, 1);
  pool.release(c);
  pool.release(d);
  // The whole segment is free again and goes back on release_cached.
  EXPECT_EQ(pool.release_cached(), 20 * MiB);
  EXPECT_EQ(dev.used, 0u);
  EXPECT_EQ(pool.stats().reserved_bytes, 0u);
}

TEST(BlockPool, LargePoolKeepsNoSliversOfAMegabyteOrLess) {
  FakeDevice dev{64 * MiB};
  BlockPool pool(dev.backing(), "fake:0");
  // A 19.5 MiB request from a 20 MiB segment: the 0.5 MiB rest is too small to split off.
  void* a = pool.allocate(20 * MiB - 512 * KiB, 1);
  EXPECT_EQ(pool.stats().allocated_bytes, 20 * MiB);
  void* b = pool.allocate(2 * MiB, 1);
  EXPECT_EQ(dev.allocs, 2) << "the sliver must not have been split off and reused";
  pool.release(a);
  pool.release(b);
}

TEST(BlockPool, BlocksAreReusedOnlyByTheirOwnStream) {
  FakeDevice dev{64 * MiB};
  BlockPool pool(dev.backing(), "fake:0");
  void* a = pool.allocate(4096, /*stream*/ 1);
  pool.release(a);
  void* b = pool.allocate(4096, /*stream*/ 2);
  EXPECT_NE(b, a);
  EXPECT_EQ(dev.allocs, 2) << "stream 2 must not reuse memory freed in stream 1's order";
  void* c = pool.allocate(4096, 1);
  EXPECT_EQ(c, a);
  pool.release(b);
  pool.release(c);
}

// The case: batch sizes that change every step. The old allocator cached one block per
// size class (2 MiB classes above 1 MiB) and never split or merged, so every new size added a
// class and the reserved memory grew with the number of sizes seen. Here the segments of the
// first steps serve all later ones (the run is deterministic: a fixed seed), and hold well
// under what the old scheme kept (its classes, summed by hand below).
TEST(BlockPool, VaryingBatchSizesReuseTheSameSegments) {
  FakeDevice dev{1024 * MiB};
  BlockPool pool(dev.backing(), "fake:0");
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> batch(1, 64);
  const size_t per_sample = 150 * KiB + 40;  // activations per sample of three layers
  size_t largest_step = 0, calls_at_50 = 0;
  std::set<size_t> old_classes;  // the old allocator's size classes for these requests
  for (int step = 0; step < 200; ++step) {
    const size_t n = static_cast<size_t>(batch(rng));
    std::vector<void*> live;
    size_t step_bytes = 0;
    for (size_t layer = 1; layer <= 3; ++layer) {
      const size_t bytes = n * per_sample * layer;
      step_bytes += (bytes + 511) / 512 * 512;
      const size_t unit = bytes < MiB ? 512 : 2 * MiB;
      old_classes.insert((bytes + unit - 1) / unit * unit);
      live.push_back(pool.allocate(bytes, 1));
    }
    largest_step = std::max(largest_step, step_bytes);
    for (void* p : live) pool.release(p);
    if (step == 49) calls_at_50 = pool.stats().backing_calls;
  }
  size_t old_reserved = 0;
  for (size_t c : old_classes) old_reserved += c;
  EXPECT_EQ(pool.stats().backing_calls, calls_at_50) << "segments added after step 50";
  EXPECT_LE(pool.stats().reserved_bytes * 3, old_reserved * 2)
      << "reserved " << pool.stats().reserved_bytes << ", the old scheme " << old_reserved;
  EXPECT_LE(pool.stats().reserved_bytes, 3 * largest_step);
  EXPECT_EQ(pool.stats().allocated_bytes, 0u);
  EXPECT_EQ(pool.stats().peak_allocated_bytes, largest_step);
}

TEST(BlockPool, OutOfMemoryFreesTheCacheAndRetries) {
  FakeDevice dev{40 * MiB};
  BlockPool pool(dev.backing(), "fake:0");
  void* a = pool.allocate(12 * MiB, 1);  // own 12 MiB segment
  void* b = pool.allocate(12 * MiB, 2);  // another stream: another 12 MiB segment
  pool.release(a);
  pool.release(b);
  ASSERT_EQ(dev.used, 24 * MiB);
  // 30 MiB does not fit next to the 24 MiB cached: the pool must return both and retry.
  void* c = pool.allocate(30 * MiB, 1);
  EXPECT_NE(c, nullptr);
  EXPECT_EQ(dev.frees, 2);
  EXPECT_EQ(dev.used, 30 * MiB);
  EXPECT_EQ(pool.stats().reserved_bytes, 30 * MiB);
  // Still too big with nothing cached: an error with the figures.
  try {
    pool.allocate(20 * MiB, 1);
    FAIL() << "expected an out-of-memory error";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("out of memory on fake:0"), std::string::npos) << m;
    EXPECT_NE(m.find("20971520 bytes"), std::string::npos) << m;
    EXPECT_NE(m.find("31457280 bytes are in use"), std::string::npos) << m;
  }
  pool.release(c);
}

TEST(BlockPool, ReleasingAnUnknownPointerNamesThePool) {
  FakeDevice dev{8 * MiB};
  BlockPool pool(dev.backing(), "fake:3");
  int x = 0;
  EXPECT_THROW(
      {
        try {
          pool.release(&x);
        } catch (const Error& e) {
          EXPECT_NE(std::string(e.what()).find("fake:3"), std::string::npos);
          throw;
        }
      },
      Error);
}

}  // namespace
}  // namespace dplab
