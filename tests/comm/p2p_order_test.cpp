// The issue order of queued NCCL point-to-point operations (comm/p2p_order.h, issue #19 item 7),
// on the CPU. The NCCL side (a collective of another communicator posted before the wait) is in
// tests/comm/test_nccl_communicator.cpp.
#include <gtest/gtest.h>

#include "dplab/comm/p2p_order.h"

namespace dplab {
namespace {

using Groups = std::vector<std::vector<size_t>>;

TEST(P2pOrder, OneGroupPerCommunicatorInOrderOfFirstQueuedOperation) {
  // Posted: B send, A recv, B recv, A send.
  const std::vector<QueuedP2p> q = {{7, 1, 0}, {3, 2, 0}, {7, 2, 0}, {3, 1, 0}};
  // B (7) was queued first, so its group is issued first; each sorted by peer.
  EXPECT_EQ(p2p_issue_groups(q), (Groups{{0, 2}, {3, 1}}));
}

TEST(P2pOrder, SortedByPeerThenTagKeepingPostingOrderForEqualTags) {
  const std::vector<QueuedP2p> q = {{0, 2, 5}, {0, 1, 9}, {0, 2, 1}, {0, 1, 9}, {0, 1, 4}};
  EXPECT_EQ(p2p_issue_groups(q), (Groups{{4, 1, 3, 2, 0}}));
}

TEST(P2pOrder, TheSamePostingsGiveTheSameIssueOrderWhateverTheArrival) {
  // Rank 0 posts its send to 1 then its recv from 1; rank 1 posts the recv from 0 first. Within
  // one communicator the issue order depends on (peer, tag) only, so the two match up.
  const std::vector<QueuedP2p> r0 = {{0, 1, 2}, {0, 1, 1}};
  const std::vector<QueuedP2p> r1 = {{0, 0, 1}, {0, 0, 2}};
  EXPECT_EQ(p2p_issue_groups(r0), (Groups{{1, 0}}));  // tag 1 first
  EXPECT_EQ(p2p_issue_groups(r1), (Groups{{0, 1}}));  // tag 1 first
  EXPECT_TRUE(p2p_issue_groups({}).empty());
}

}  // namespace
}  // namespace dplab
