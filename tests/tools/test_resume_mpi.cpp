// Resume at 4 ranks through `mpiexec -n 4 dplab train`, for every algorithm: a run interrupted
// at an epoch boundary or in the middle of an epoch and resumed ends bitwise identical to the
// uninterrupted run, on every rank (each rank's file of the final checkpoint, and the exported
// final model). The uninterrupted run writes only its epoch-end checkpoints; the interrupted
// one also one in the middle of an epoch (checkpoint.every_steps = 3), which must not change
// its course. Plus the multi-rank checkpoint checks: a failed
// write on one rank leaves nothing, a missing rank file is refused naming it, and a different
// world size is refused.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <filesystem>

#include "checkpoint_files.h"
#include "data/temp_dir.h"
#include "dplab/core/safetensors.h"
#include "run_cli.h"

namespace dplab {
namespace {

namespace fs = std::filesystem;
using test::entries;
using test::ScopedTempDir;
using test::slurp;
using test::state_difference;

// 256 training images over 4 ranks in batches of 16: 4 iterations per epoch, 8 in 2 epochs.
const std::string kRun =
    "train --model mnist_cnn --data fashion-mnist --batch 16 --lr 0.05 --momentum 0.9 "
    "--threads 1 --epochs 2 --set data.train_limit=256 --set data.test_limit=40 "
    "--set progress=off --set checkpoint.keep=0";

test::CliResult mpirun(int ranks, const std::string& args, const fs::path& scratch,
                       const std::string& env = "") {
  return test::run_dplab_mpi(ranks, args, scratch, env);
}

bool has(const std::string& text, const std::string& what) {
  return text.find(what) != std::string::npos;
}

struct Algo {
  std::string name;
  std::string args;        // extra options
  std::string label = {};  // the test's name when not the algorithm's (a variant)
  std::string id() const { return label.empty() ? name : label; }
};

std::ostream& operator<<(std::ostream& os, const Algo& a) {
  return os << a.id();
}

class ResumeAt4Ranks : public ::testing::TestWithParam<Algo> {};

// Every rank's state in the final checkpoint, and the final model, are the same.
void expect_same_end(const fs::path& a, const fs::path& b, const std::string& what) {
  const fs::path ca = a / "checkpoints" / "step_00000008", cb = b / "checkpoints" / "step_00000008";
  ASSERT_TRUE(fs::exists(ca / "manifest.json")) << ca;
  ASSERT_TRUE(fs::exists(cb / "manifest.json")) << cb;
  for (int r = 0; r < 4; ++r) {
    const std::string f = fmt::format("rank_{}.safetensors", r);
    EXPECT_EQ(state_difference(ca / f, cb / f), "")
        << what << ": " << f << " differs between " << a << " and " << b;
  }
  EXPECT_TRUE(slurp(a / "final.safetensors") == slurp(b / "final.safetensors"))
      << what << ": final.safetensors differs";
}

TEST_P(ResumeAt4Ranks, FromEpochBoundaryAndMidEpochIsBitwiseIdentical) {
  const Algo& algo = GetParam();
  ScopedTempDir dir("resume4-" + algo.id());
  const std::string base = kRun + " --algo " + algo.name + " " + algo.args;
  auto r = mpirun(4, base + " --out " + dir.file("straight"), dir.path / "s");
  ASSERT_EQ(r.status, 0) << r.err;
  // Interrupted after 6 optimizer steps (epoch 2, step 2 for most algorithms: those with
  // iterations without a step stop later); its checkpoints: steps 3 (mid-epoch), 4 (the epoch's
  // end) and the stop's.
  r = mpirun(4, base + " --set checkpoint.every_steps=3 --max-steps 6 --out " + dir.file("part"),
             dir.path / "p");
  ASSERT_EQ(r.status, 0) << r.err;
  if (has(algo.args, "compress=")) {
    // The mid-epoch checkpoint holds the compression state (residuals; PowerSGD's Q and step).
    std::map<std::string, std::string> meta;
    load_safetensors(dir.path / "part" / "checkpoints" / "step_00000003" / "rank_0.safetensors",
                     &meta);
    bool found = false;
    for (const auto& [k, v] : meta) found = found || k.ends_with("sync.compress");
    EXPECT_TRUE(found) << algo.id() << ": no compression state in the step-3 checkpoint";
  }
  // From the middle of the first epoch, written while the run went on.
  r = mpirun(4,
             base + " --resume " + dir.file("part/checkpoints/step_00000003") + " --out " +
                 dir.file("from3"),
             dir.path / "r3");
  ASSERT_EQ(r.status, 0) << r.err;
  expect_same_end(dir.path / "straight", dir.path / "from3", "resumed mid-epoch (step 3)");
  // From the epoch boundary (step 4, written while the run went on).
  r = mpirun(4,
             base + " --resume " + dir.file("part/checkpoints/step_00000004") + " --out " +
                 dir.file("from4"),
             dir.path / "r4");
  ASSERT_EQ(r.status, 0) << r.err;
  expect_same_end(dir.path / "straight", dir.path / "from4", "resumed at the epoch boundary");
  // From the stop in the middle of the second epoch (the run directory: its newest checkpoint).
  r = mpirun(4, base + " --resume " + dir.file("part") + " --out " + dir.file("from_stop"),
             dir.path / "rs");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(has(r.out, "at epoch 2 step ") && !has(r.out, "at epoch 2 step 0")) << r.out;
  expect_same_end(dir.path / "straight", dir.path / "from_stop", "resumed mid-epoch (the stop)");
  // The test can fail: the interrupted run's state differs from the end.
  EXPECT_NE(slurp(dir.path / "part" / "checkpoints" / "step_00000004" / "rank_0.safetensors"),
            slurp(dir.path / "straight" / "checkpoints" / "step_00000008" / "rank_0.safetensors"));
}

INSTANTIATE_TEST_SUITE_P(
    EveryAlgorithm, ResumeAt4Ranks,
    ::testing::Values(
        Algo{"allreduce", ""},
        // Gradient compression (comm/grad_compress.h): residuals and PowerSGD's Q and step count
        // travel in the algorithm's state ("sync."); compression starts at step 2, before the
        // mid-epoch checkpoint.
        Algo{"allreduce", "--set allreduce.compress=powersgd --set allreduce.powersgd.start_step=2",
             "allreduce_powersgd"},
        Algo{"allreduce", "--set allreduce.compress=topk --set allreduce.topk.ratio=0.05",
             "allreduce_topk"},
        // Hierarchical (2 nodes x 2): the node's first rank holds the node's residuals and Q.
        Algo{"allreduce",
             "--ranks-per-node 2 --set allreduce.hierarchical=true "
             "--set allreduce.compress=powersgd --set allreduce.powersgd.start_step=1",
             "allreduce_hierarchical_powersgd"},
        Algo{"hybrid", "--set hybrid.W=2 --set hybrid.R=3"},
        Algo{"daso",
             "--ranks-per-node 2 --set daso.warmup_epochs=0 --set "
             "daso.cooldown_epochs=0 --set daso.B_max=3"},
        Algo{"dcs3gd", ""}, Algo{"crossover", ""}, Algo{"sgp", ""},
        // Compression in every other algorithm that averages gradients through GradSync
        // (docs/algorithms/compression.md): its state under the algorithm's "sync.", saved
        // mid-epoch and at the epoch's end.
        Algo{"post_local_sgd",
             "--set local_sgd.H=3 --set allreduce.compress=topk --set allreduce.topk.ratio=0.05",
             "post_local_sgd_topk"},
        Algo{"hybrid",
             "--set hybrid.W=2 --set hybrid.R=3 --set hybrid.compress=powersgd "
             "--set hybrid.powersgd.start_step=1",
             "hybrid_powersgd"},
        Algo{"daso",
             "--ranks-per-node 2 --set daso.warmup_epochs=0 --set daso.cooldown_epochs=0 "
             "--set daso.B_max=3 --set daso.local.compress=topk --set daso.local.topk.ratio=0.05",
             "daso_topk"},
        Algo{"crossover",
             "--ranks-per-node 2 --set crossover.hierarchical=true "
             "--set crossover.sync.compress=powersgd --set crossover.sync.powersgd.start_step=1",
             "crossover_powersgd"},
        Algo{"oscars", "--set oscars.t_us=1000,2000,1000,3000"},
        Algo{"local_sgd", "--set local_sgd.H=3"}, Algo{"post_local_sgd", "--set local_sgd.H=3"},
        Algo{"diloco", "--set optim=adamw --wd 0.01 --set diloco.H=3"},
        // Rounds spanning epochs (comm/algorithms/periodic_sync.h): H = 3 over epochs of 4
        // iterations, rounds end after steps 3, 6 and 8 (the end of training); the epoch-end
        // checkpoint (step 4) is one step into a round that goes on into the next epoch.
        Algo{"local_sgd", "--set local_sgd.H=3 --set local_sgd.round_spans_epochs=true",
             "local_sgd_round_spans_epochs"},
        Algo{"diloco",
             "--set optim=adamw --wd 0.01 --set diloco.H=3 --set diloco.round_spans_epochs=true",
             "diloco_round_spans_epochs"},
        // The outer Adam's moments and step count (issue #33).
        Algo{"diloco", "--set optim=adamw --set diloco.H=3 --set diloco.outer_optim=adam",
             "diloco_outer_adam"},
        Algo{"slowmo", "--set slowmo.frequency=3"},
        // fairscale's default algorithm on 2 nodes x 2 ranks: node gradient averages every
        // step, a LocalSGD average after step 2 of each round of 4.
        Algo{"slowmo",
             "--ranks-per-node 2 --set slowmo.frequency=4 --set slowmo.localsgd_frequency=2",
             "slowmo_nodes"},
        Algo{"slowmo", "--set slowmo.frequency=3 --set slowmo.base=sgp", "slowmo_sgp"},
        Algo{"streaming_diloco",
             "--set streaming_diloco.H=4 --set streaming_diloco.fragment_sync_delay=1"},
        Algo{"streaming_diloco",
             "--set streaming_diloco.H=4 --set streaming_diloco.fragment_sync_delay=1 "
             "--set streaming_diloco.quantize=int8",
             "streaming_diloco_int8"}),
    [](const ::testing::TestParamInfo<Algo>& i) { return i.param.id(); });

TEST(CheckpointAt4Ranks, FailedWriteOnOneRankLeavesNothingAndNamesIt) {
  ScopedTempDir dir("ckpt4-fail");
  const std::string base = kRun + " --algo allreduce";
  auto r = mpirun(4, base + " --max-steps 2 --out " + dir.file("run"), dir.path / "a");
  ASSERT_EQ(r.status, 0) << r.err;
  const auto before = test::tree(dir.path / "run" / "checkpoints");
  ASSERT_EQ(entries(dir.path / "run" / "checkpoints"), (std::vector<std::string>{"step_00000002"}));
  r = mpirun(4, base + " --max-steps 4 --resume " + dir.file("run") + " --out " + dir.file("run"),
             dir.path / "b", "DPLAB_CHECKPOINT_FAIL_RANK=2");
  EXPECT_NE(r.status, 0);
  EXPECT_TRUE(has(r.err, "rank 2: injected failure") && has(r.err, "nothing was committed"))
      << r.err;
  // Every rank learnt of the failure and stopped in order: one message (rank 0's), no abort.
  EXPECT_EQ(r.err.find("nothing was committed"), r.err.rfind("nothing was committed")) << r.err;
  EXPECT_FALSE(has(r.err, "aborting all ranks")) << r.err;
  EXPECT_EQ(test::tree(dir.path / "run" / "checkpoints"), before);
  // A missing rank file is refused naming it.
  const fs::path ck = dir.path / "run" / "checkpoints" / "step_00000002";
  fs::copy(ck, dir.path / "norank2", fs::copy_options::recursive);
  fs::remove(dir.path / "norank2" / "rank_2.safetensors");
  r = mpirun(4, base + " --resume " + dir.file("norank2"), dir.path / "c");
  EXPECT_NE(r.status, 0);
  EXPECT_TRUE(has(r.err, dir.file("norank2/rank_2.safetensors")) && has(r.err, "missing")) << r.err;
  // Another world size is refused: every rank resumes its own state.
  r = mpirun(2, base + " --resume " + dir.file("run"), dir.path / "d");
  EXPECT_NE(r.status, 0);
  EXPECT_TRUE(has(r.err, "written by 4 ranks, this run has 2")) << r.err;
}

}  // namespace
}  // namespace dplab
