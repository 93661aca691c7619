// Warnings for settings that do nothing (train/config/setting_warnings.h): the rules on hand-made
// run shapes, then the command printing them once, on rank 0.
#include <gtest/gtest.h>

#include "data/temp_dir.h"
#include "dplab/train/config/setting_warnings.h"
#include "run_cli.h"

namespace dplab {
namespace {

using test::ScopedTempDir;

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

Options opts(std::initializer_list<std::pair<const char*, const char*>> kv) {
  Options o;
  for (const auto& [k, v] : kv) o.set(k, v);
  return o;
}

// (DASO on one node is DASO's own warning, DasoStrategy::plan_notes: the CLI test below.)
TEST(SettingWarnings, LinkOnOneNode) {
  const Options o = opts({{"link.inter", "20us,1GB/s"}, {"algo", "daso"}});
  // 4 ranks on one host, no virtual nodes: one node.
  auto w = ineffective_settings(o, {4, 4, 8});
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].find("link.inter = 20us,1GB/s does nothing"), std::string::npos) << w[0];
  // Virtual nodes of 2: two nodes, the setting acts.
  Options two = o;
  two.set("ranks_per_node", "2");
  EXPECT_TRUE(ineffective_settings(two, {4, 4, 8}).empty());
  // Virtual nodes as large as the world: one node again.
  two.set("ranks_per_node", "4");
  EXPECT_EQ(ineffective_settings(two, {4, 4, 8}).size(), 1u);
  // Two hosts of 2 ranks: two real nodes.
  EXPECT_TRUE(ineffective_settings(o, {4, 2, 8}).empty());
  // link = off is not a setting.
  EXPECT_TRUE(ineffective_settings(opts({{"link.inter", "off"}}), {1, 1, 8}).empty());
  // The values were only looked at: nothing marked read.
  EXPECT_EQ(o.unused_keys().size(), 2u);
}

TEST(SettingWarnings, ThreadsBeyondCoresAndBatchBeyondShard) {
  // 3 threads x 2 ranks = 6 > 4 cores; 2 x 2 = 4 is not.
  auto w = ineffective_settings(opts({{"threads", "3"}}), {2, 2, 4});
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].find("6 threads on 4 cores"), std::string::npos) << w[0];
  EXPECT_TRUE(ineffective_settings(opts({{"threads", "2"}}), {2, 2, 4}).empty());
  EXPECT_TRUE(ineffective_settings(opts({{"threads", "0"}}), {2, 2, 4}).empty());
  // On a virtual cluster 64 ranks on 2 cores are the point, not a mistake: measured compute is
  // thread CPU time, which oversubscription does not change.
  EXPECT_TRUE(ineffective_settings(opts({{"threads", "1"}, {"cluster", "gpu4-25gbe"}}), {64, 64, 2})
                  .empty());
  EXPECT_FALSE(ineffective_settings(opts({{"threads", "1"}}), {64, 64, 2}).empty());
  // Measured virtual compute on a host loaded beyond its cores: warned, naming the load and the
  // way out; a profile, a quiet host or no cluster: nothing.
  auto loaded = ineffective_settings(opts({{"cluster", "gpu4-25gbe"}}), {8, 8, 2, 6.7});
  ASSERT_EQ(loaded.size(), 1u);
  EXPECT_NE(loaded[0].find("load average 6.7 on 2 cores"), std::string::npos) << loaded[0];
  EXPECT_NE(loaded[0].find("cluster.compute = profile:FILE"), std::string::npos) << loaded[0];
  EXPECT_TRUE(ineffective_settings(opts({{"cluster", "gpu4-25gbe"}}), {8, 8, 2, 1.5}).empty());
  EXPECT_TRUE(
      ineffective_settings(opts({{"cluster", "gpu4-25gbe"}, {"cluster.compute", "profile:p.json"}}),
                           {8, 8, 2, 6.7})
          .empty());
  EXPECT_TRUE(ineffective_settings(opts({}), {8, 8, 2, 6.7}).empty());
  EXPECT_EQ(batch_warning(64, 64), "");
  EXPECT_NE(batch_warning(128, 32).find("batch = 128 is larger than the 32 training samples"),
            std::string::npos);
}

const std::string kTiny =
    "train --threads 1 --max-steps 1 --set data.train_limit=64 --set data.test_limit=10 "
    "--set progress=off";

TEST(SettingWarnings, PrintedOnceByTheCommand) {
  ScopedTempDir dir("setting-warnings");
  // (The link.* warning is checked on run shapes above: link.* now stands for a virtual
  // cluster, which dplab train does not run yet, issue #20.)
  auto r = test::run_dplab(kTiny + " --algo allreduce --batch 100", dir.path);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(count(r.err, "warning: batch = 100 is larger than the 64 training samples"), 1u)
      << r.err;
  // With algo local nobody reads comm.timeout_s: the run refuses it, saying it is a known key.
  r = test::run_dplab(kTiny + " --set comm.timeout_s=30", dir.path / "local");
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_NE(r.err.find("comm.timeout_s (an option of area comm, not read by this run)"),
            std::string::npos)
      << r.err;
#ifdef DPLAB_MPIEXEC
  // Two ranks on this host: the warning once (rank 0), and 32 samples per rank.
  r = test::run_dplab_mpi(2, kTiny + " --algo daso --batch 40", dir.path / "mpi");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(count(r.err, "warning: algo = daso on one node"), 1u) << r.err;
  EXPECT_EQ(count(r.err, "warning: batch = 40 is larger than the 32 training samples"), 1u)
      << r.err;
#endif
}

}  // namespace
}  // namespace dplab
