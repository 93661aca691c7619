// The host block cache (core/storage.cpp): large CPU storages are recycled instead of going
// back to the OS, which must never hand one block to two live tensors or lose contents.
#include <gtest/gtest.h>

#include <set>

#include "common/harness.h"
#include "dplab/core/storage.h"

namespace dplab {
namespace {

constexpr size_t kLarge = size_t{1} << 20;  // well above the cache's 64 KiB threshold
// Each test uses its own odd sizes, so blocks left idle by another test in the same process
// cannot be the ones found.
constexpr size_t kOdd = kLarge + 12 * 1024 + 17;

TEST(HostBlockCache, FreedLargeBlockIsReusedForTheSameSize) {
  void* first = nullptr;
  {
    auto s = Storage::allocate(kOdd, Device::cpu());
    first = s->data();
  }
  auto again = Storage::allocate(kOdd, Device::cpu());
  EXPECT_EQ(again->data(), first) << "a same-size block freed just before was not reused";
  EXPECT_EQ(again->nbytes(), kOdd);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(again->data()) % kHostAlignment, 0u);
}

TEST(HostBlockCache, LiveBlocksAreDistinctAndKeepTheirContents) {
  std::vector<Tensor> live;
  std::set<const void*> seen;
  for (int i = 0; i < 6; ++i) {
    live.push_back(Tensor::full({int64_t(kLarge / 4)}, float(i)));
    EXPECT_TRUE(seen.insert(live.back().raw_data()).second) << "block handed out twice";
  }
  live.erase(live.begin() + 1, live.begin() + 4);  // free three, then take three again
  for (int i = 0; i < 3; ++i) live.push_back(Tensor::full({int64_t(kLarge / 4)}, 10.f + i));
  const float want[] = {0, 4, 5, 10, 11, 12};
  std::set<const void*> now;
  for (size_t i = 0; i < live.size(); ++i) {
    EXPECT_TRUE(now.insert(live[i].raw_data()).second) << "block handed out twice";
    EXPECT_EQ(test::max_abs_diff(live[i], Tensor::full(live[i].shape(), want[i])), 0.0)
        << "tensor " << i << " lost its contents";
  }
}

TEST(HostBlockCache, SmallRequestDoesNotPinAMuchLargerBlock) {
  const void* big = nullptr;
  {
    auto s = Storage::allocate(8 * kLarge + 20 * 1024, Device::cpu());
    big = s->data();
  }
  auto small = Storage::allocate(kLarge + 28 * 1024, Device::cpu());
  EXPECT_NE(small->data(), big) << "a 1 MiB request took the idle 8 MiB block";
  auto big_again = Storage::allocate(8 * kLarge + 20 * 1024, Device::cpu());
  EXPECT_EQ(big_again->data(), big);
}

}  // namespace
}  // namespace dplab
