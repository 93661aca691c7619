// One interface shared by the ranks of a node (comm/cluster/nic_schedule.h): processor sharing
// among the ranks with a message on the wire, each rank's own messages in order. Expected ends
// are hand arithmetic (work in seconds alone on the wire).
#include <gtest/gtest.h>

#include "dplab/comm/cluster/nic_schedule.h"

namespace dplab::cluster {
namespace {

#define EXPECT_T(a, b) EXPECT_NEAR((a), (b), 1e-12)

TEST(ClusterNicSchedule, OneAloneTakesItsWork) {
  const auto e = nic_schedule({{0, 0, 2.0, 1.0}});
  EXPECT_T(e[0], 3.0);
}

TEST(ClusterNicSchedule, TwoRanksAtOnceEachGetHalf) {
  // n/B = 1 each, posted together: both on the wire at rate 1/2, both end at 2.
  const auto e = nic_schedule({{0, 0, 0.0, 1.0}, {1, 0, 0.0, 1.0}});
  EXPECT_T(e[0], 2.0);
  EXPECT_T(e[1], 2.0);
}

TEST(ClusterNicSchedule, ALaterMessageSharesWhatIsLeft) {
  // Rank 0: work 2 from t = 0; rank 1: work 1 from t = 1. Alone until 1 (1 left), then both
  // at 1/2: rank 1's unit ends at 1 + 2 = 3, rank 0's remaining 1 likewise at 3.
  auto e = nic_schedule({{0, 0, 0.0, 2.0}, {1, 0, 1.0, 1.0}});
  EXPECT_T(e[0], 3.0);
  EXPECT_T(e[1], 3.0);
  // Rank 1 with work 0.5 instead: shares from 1 to 2 (0.5 done each), then rank 0 alone
  // for its last 0.5: 2.5.
  e = nic_schedule({{0, 0, 0.0, 2.0}, {1, 0, 1.0, 0.5}});
  EXPECT_T(e[1], 2.0);
  EXPECT_T(e[0], 2.5);
  // A message posted after another ended does not touch it (causality).
  e = nic_schedule({{0, 0, 0.0, 1.0}, {1, 0, 5.0, 1.0}});
  EXPECT_T(e[0], 1.0);
  EXPECT_T(e[1], 6.0);
}

TEST(ClusterNicSchedule, ARanksOwnMessagesQueue) {
  // Rank 0 posts two at t = 0 (work 1 each): the second starts when the first ends (1), alone:
  // 2. With rank 1 posting one at 0 too: the first two share until 2; then rank 0's second
  // alone: 3.
  auto e = nic_schedule({{0, 0, 0.0, 1.0}, {0, 1, 0.0, 1.0}});
  EXPECT_T(e[0], 1.0);
  EXPECT_T(e[1], 2.0);
  e = nic_schedule({{0, 1, 0.0, 1.0}, {1, 0, 0.0, 1.0}, {0, 0, 0.0, 1.0}});
  EXPECT_T(e[2], 2.0);  // rank 0's first (seq 0), listed last
  EXPECT_T(e[1], 2.0);
  EXPECT_T(e[0], 3.0);
  // An empty message ends when it may start.
  e = nic_schedule({{0, 0, 0.0, 1.0}, {0, 1, 0.5, 0.0}});
  EXPECT_T(e[1], 1.0);
}

TEST(ClusterNicSchedule, ThreeRanksStaggered) {
  // Work 3 at 0 (rank 0), 3 at 0 (rank 1), 1 at 1 (rank 2). 0..1: two share, 0.5 done each
  // (2.5 left). From 1: three at 1/3; rank 2's unit ends at 1 + 3 = 4 (ranks 0, 1: 1.5 left),
  // then two at 1/2: 4 + 3 = 7.
  const auto e = nic_schedule({{0, 0, 0.0, 3.0}, {1, 0, 0.0, 3.0}, {2, 0, 1.0, 1.0}});
  EXPECT_T(e[2], 4.0);
  EXPECT_T(e[0], 7.0);
  EXPECT_T(e[1], 7.0);
}

}  // namespace
}  // namespace dplab::cluster
