// `dplab train --resume DIR --reshard` through mpiexec (tools/train/reshard.h, issue #37):
//   - allreduce 4 -> 2 -> 4 ranks ends where the uninterrupted 4-rank run ends. Both see the
//     same samples in every step (the global batch stays 64: 4 x 16, then 2 x 32), so the
//     only difference is the order of the f32 sums that form each step's mean gradient while 2
//     ranks train (each rank's mean over 32 samples, then the mean of 2, instead of means over
//     16 and the mean of 4). See kTolerance for the bound.
//   - every other algorithm refuses 4 -> 2 naming itself and the state that cannot move
//     (docs/resharding.md), and writes nothing.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "checkpoint_files.h"
#include "data/temp_dir.h"
#include "dplab/core/safetensors.h"
#include "run_cli.h"

namespace dplab {
namespace {

namespace fs = std::filesystem;
using test::ScopedTempDir;
using test::slurp;

// 256 training images, global batch 64: 4 iterations per epoch, 8 in 2 epochs.
const std::string kRun =
    "train --model mnist_cnn --data fashion-mnist --lr 0.05 --momentum 0.9 --threads 1 "
    "--epochs 2 --set data.train_limit=256 --set data.test_limit=40 --set progress=off "
    "--set checkpoint.keep=0";

// The resharded run differs from the uninterrupted one only by the rounding of the f32 sums
// in the gradients of the three steps on 2 ranks (steps 4-6); every sample, weight and
// learning rate is the same. One rounding is at most 2^-24 relative (6e-8); a mean over 64
// samples summed in another grouping differs by at most ~log2(64) = 6 roundings of partial
// sums, about 4e-7 of the gradient's magnitude. The gradients of mnist_cnn here are below 1
// per element, lr 0.05 and momentum 0.9 sum at most 1/(1-0.9) = 10 steps' worth, so a weight
// moves by at most 0.05 x 10 x 4e-7 = 2e-7 per perturbed step; 3 steps plus the growth through
// 2 later steps (the loss's curvature times lr is below 1 here) stay below 1e-6. The tolerance
// is 10 x that bound, and the control below shows the runs' states move by more than 100 x
// the tolerance over the same steps, so a repeated or skipped batch could not pass.
constexpr double kTolerance = 1e-5;

bool has(const std::string& text, const std::string& what) {
  return text.find(what) != std::string::npos;
}

test::CliResult mpirun(int ranks, const std::string& args, const fs::path& scratch) {
  return test::run_dplab_mpi(ranks, args, scratch);
}

// The largest |x - y| over the f32 tensors of two safetensors files whose names start with
// `prefix` (every other tensor must be byte-equal); -1 when the tensor names differ.
double max_difference(const fs::path& x, const fs::path& y, const std::string& prefix = "") {
  const auto tx = load_safetensors(x.string()), ty = load_safetensors(y.string());
  if (tx.size() != ty.size()) return -1;
  double worst = 0;
  for (size_t i = 0; i < tx.size(); ++i) {
    const auto& a = tx[i];
    auto it =
        std::find_if(ty.begin(), ty.end(), [&](const NamedTensor& t) { return t.name == a.name; });
    if (it == ty.end() || it->tensor.nbytes() != a.tensor.nbytes()) return -1;
    if (!a.name.starts_with(prefix)) continue;
    if (a.tensor.dtype() != DType::f32) {
      if (std::memcmp(a.tensor.raw_data(), it->tensor.raw_data(), a.tensor.nbytes()) != 0)
        return -1;
      continue;
    }
    const float* p = a.tensor.data<float>();
    const float* q = it->tensor.data<float>();
    for (int64_t k = 0; k < a.tensor.numel(); ++k)
      worst = std::max(worst, std::abs(double(p[k]) - double(q[k])));
  }
  return worst;
}

std::map<std::string, std::string> values_of(const fs::path& f) {
  std::map<std::string, std::string> meta;
  load_safetensors(f.string(), &meta);
  return meta;
}

// The "kind": "epoch" record of `epoch` in OUT/metrics.jsonl.
nlohmann::json epoch_record(const fs::path& out, int epoch) {
  std::istringstream in(slurp(out / "metrics.jsonl"));
  std::string line;
  while (std::getline(in, line)) {
    const auto j = nlohmann::json::parse(line);
    if (j.value("kind", "") == "epoch" && j.value("epoch", 0) == epoch) return j;
  }
  return nullptr;
}

std::string spans(const nlohmann::json& a) {
  std::string s;
  for (const auto& w : a)
    s += fmt::format("{}@{} ", w["world_size"].get<int>(), w["from_step"].get<int64_t>());
  return s;
}

TEST(ReshardAllreduce, FourToTwoToFourEndsWhereTheUninterruptedRunEnds) {
  ScopedTempDir dir("reshard-allreduce");
  const std::string base = kRun + " --algo allreduce";
  const std::string at4 = base + " --batch 16", at2 = base + " --batch 32";
  auto r = mpirun(4, at4 + " --out " + dir.file("straight"), dir.path / "s");
  ASSERT_EQ(r.status, 0) << r.err;
  // 4 ranks to step 3 (in the first epoch), 2 ranks from there to step 6 (across the epoch's
  // end, into the second), 4 ranks to the end.
  r = mpirun(4, at4 + " --set checkpoint.every_steps=3 --max-steps 3 --out " + dir.file("p1"),
             dir.path / "p1");
  ASSERT_EQ(r.status, 0) << r.err;
  r = mpirun(2,
             at2 + " --set checkpoint.every_steps=3 --max-steps 6 --resume " + dir.file("p1") +
                 " --reshard --out " + dir.file("p2"),
             dir.path / "p2");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(has(r.out, "resharded: 4 ranks -> 2 ranks") &&
              has(r.out, "after its first 192 samples"))
      << r.out;
  r = mpirun(4, at4 + " --resume " + dir.file("p2") + " --reshard --out " + dir.file("p3"),
             dir.path / "p3");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(has(r.out, "resharded: 2 ranks -> 4 ranks") &&
              has(r.out, "after its first 128 samples"))
      << r.out;

  const fs::path straight = dir.path / "straight" / "checkpoints";
  // On 2 ranks: the replicas are identical, and at the epoch's end (step 4) equal to the
  // uninterrupted run's within the tolerance.
  const fs::path p2 = dir.path / "p2" / "checkpoints";
  for (const char* part : {"model.", "optim."})
    EXPECT_EQ(max_difference(p2 / "step_00000006" / "rank_0.safetensors",
                             p2 / "step_00000006" / "rank_1.safetensors", part),
              0.0)
        << part;
  const double at_4 = max_difference(straight / "step_00000004" / "rank_0.safetensors",
                                     p2 / "step_00000004" / "rank_0.safetensors", "model.");
  EXPECT_GE(at_4, 0);
  EXPECT_LE(at_4, kTolerance);
  // The epoch that 4 and 2 ranks shared: its loss over all 256 samples, from the checkpoint's
  // partial sums (every old rank's) and the 2 ranks' last step. Its per-sample losses are those
  // of the same weights (bitwise equal up to step 3, within the tolerance at step 4).
  const auto e1 = epoch_record(dir.path / "p2", 1), e1s = epoch_record(dir.path / "straight", 1);
  ASSERT_FALSE(e1.is_null());
  ASSERT_FALSE(e1s.is_null());
  EXPECT_NEAR(e1["loss"].get<double>(), e1s["loss"].get<double>(), 1e-5)
      << "epoch 1's mean train loss";

  // Back on 4 ranks: every rank's final state and the final model.
  const fs::path p3 = dir.path / "p3" / "checkpoints";
  double worst = 0;
  for (int rank = 0; rank < 4; ++rank) {
    const std::string f = fmt::format("rank_{}.safetensors", rank);
    const double d = max_difference(straight / "step_00000008" / f, p3 / "step_00000008" / f);
    EXPECT_GE(d, 0) << f << ": other tensors, or a non-f32 tensor differs";
    EXPECT_LE(d, kTolerance) << f;
    worst = std::max(worst, d);
    const auto a = values_of(straight / "step_00000008" / f),
               b = values_of(p3 / "step_00000008" / f);
    for (const char* k : {"loop.epoch", "loop.step_in_epoch", "loop.global_step",
                          "loop.optimizer_steps", "loop.epoch_seen", "optim.step"})
      if (a.count(k)) {
        EXPECT_EQ(a.at(k), b.count(k) ? b.at(k) : "(none)") << f << " " << k;
      }
  }
  const double final_d = max_difference(dir.path / "straight" / "final.safetensors",
                                        dir.path / "p3" / "final.safetensors");
  EXPECT_GE(final_d, 0);
  EXPECT_LE(final_d, kTolerance);
  std::printf(
      "largest |weight difference| to the uninterrupted run: step 4 (2 ranks) %.3g, "
      "step 8 (4 ranks, any state tensor) %.3g, final model %.3g; tolerance %.1g\n",
      at_4, worst, final_d, kTolerance);
  // Control: over the same steps the state moves by far more than the tolerance.
  const double moved =
      max_difference(dir.path / "p1" / "checkpoints" / "step_00000003" / "rank_0.safetensors",
                     straight / "step_00000008" / "rank_0.safetensors", "model.");
  std::printf("largest |weight change| from step 3 to step 8: %.3g\n", moved);
  EXPECT_GT(moved, 100 * kTolerance);

  // The history of world sizes, in the manifest and in run.json.
  const auto manifest = nlohmann::json::parse(slurp(p3 / "step_00000008" / "manifest.json"));
  EXPECT_EQ(spans(manifest["world_sizes"]), "4@0 2@3 4@6 ");
  EXPECT_EQ(manifest["samples_in_epoch"], 0) << "the epoch is over";
  EXPECT_EQ(
      nlohmann::json::parse(slurp(p2 / "step_00000006" / "manifest.json"))["samples_in_epoch"],
      128);
  EXPECT_EQ(spans(nlohmann::json::parse(slurp(dir.path / "p3" / "run.json"))["world_sizes"]),
            "4@0 2@3 4@6 ");
  EXPECT_EQ(spans(nlohmann::json::parse(slurp(dir.path / "straight" / "run.json"))["world_sizes"]),
            "4@0 ");
}

TEST(ReshardAllreduce, RefusalsNameWhatToChange) {
  ScopedTempDir dir("reshard-refusals");
  const std::string base = kRun + " --algo allreduce";
  auto r = mpirun(4, base + " --batch 16 --max-steps 2 --out " + dir.file("run"), dir.path / "a");
  ASSERT_EQ(r.status, 0) << r.err;
  // Without --reshard: refused as before, now naming --reshard.
  r = mpirun(2, base + " --batch 32 --resume " + dir.file("run"), dir.path / "b");
  EXPECT_NE(r.status, 0);
  EXPECT_TRUE(has(r.err, "written by 4 ranks, this run has 2") && has(r.err, "--reshard")) << r.err;
  // Another global batch: the sample position would not start a step.
  r = mpirun(2, base + " --batch 16 --resume " + dir.file("run") + " --reshard", dir.path / "c");
  EXPECT_NE(r.status, 0);
  EXPECT_TRUE(has(r.err, "the global batch must stay 64") && has(r.err, "use --batch 32")) << r.err;
  // A damaged file of an old rank that no longer exists (rank 3 of 4, resumed on 2): the
  // consensus reads it, so its CRC-32 is checked too.
  const fs::path ck = dir.path / "run" / "checkpoints" / "step_00000002";
  fs::copy(ck, dir.path / "damaged", fs::copy_options::recursive);
  {
    const fs::path f = dir.path / "damaged" / "rank_3.safetensors";
    std::string bytes = slurp(f);
    bytes[bytes.size() - 5] ^= 0x40;  // a byte of the last tensor's data, size unchanged
    std::ofstream(f, std::ios::binary | std::ios::trunc) << bytes;
  }
  r = mpirun(2, base + " --batch 32 --resume " + dir.file("damaged") + " --reshard",
             dir.path / "e");
  EXPECT_NE(r.status, 0);
  EXPECT_TRUE(has(r.err, dir.file("damaged/rank_3.safetensors")) && has(r.err, "corrupted"))
      << r.err;
  // --reshard without --resume.
  r = mpirun(2, base + " --batch 32 --reshard --max-steps 1", dir.path / "d");
  EXPECT_NE(r.status, 0);
  EXPECT_TRUE(has(r.err, "--reshard") && has(r.err, "needs resume")) << r.err;
}

struct Refusal {
  std::string name;        // the test's name
  std::string algo;        // --algo
  std::string args;        // its options
  std::string why;         // a phrase of the documented reason
  std::string args2 = "";  // the 2-rank run's options instead of `args` (per-rank lists)
};

std::ostream& operator<<(std::ostream& os, const Refusal& r) {
  return os << r.name;
}

class ReshardRefusal : public ::testing::TestWithParam<Refusal> {};

// docs/resharding.md: each of these algorithms keeps state per rank that a resume on 2 ranks
// cannot take over, so --reshard refuses it, naming the algorithm and the state, before
// anything is trained or written.
TEST_P(ReshardRefusal, FourToTwoRefusesNamingTheState) {
  const Refusal& p = GetParam();
  ScopedTempDir dir("reshard-refuse-" + p.name);
  const std::string base = kRun + " --algo " + p.algo + " ";
  auto r = mpirun(4, base + p.args + " --batch 16 --max-steps 2 --out " + dir.file("run"),
                  dir.path / "a");
  ASSERT_EQ(r.status, 0) << r.err;
  r = mpirun(2,
             base + (p.args2.empty() ? p.args : p.args2) + " --batch 32 --resume " +
                 dir.file("run") + " --reshard --out " + dir.file("two"),
             dir.path / "b");
  EXPECT_NE(r.status, 0);
  EXPECT_TRUE(has(r.err, "algorithm " + p.algo +
                             " cannot continue on 2 ranks from a checkpoint "
                             "of 4") &&
              has(r.err, p.why))
      << r.err;
  EXPECT_FALSE(fs::exists(dir.path / "two" / "checkpoints")) << "a refused run wrote a checkpoint";
}

INSTANTIATE_TEST_SUITE_P(
    EveryOtherAlgorithm, ReshardRefusal,
    ::testing::Values(
        Refusal{"allreduce_topk", "allreduce",
                "--set allreduce.compress=topk --set allreduce.topk.ratio=0.05",
                "residuals per rank"},
        Refusal{"hybrid", "hybrid", "--set hybrid.W=2 --set hybrid.R=3", "hybrid stage"},
        Refusal{"daso", "daso",
                "--ranks-per-node 2 --set daso.warmup_epochs=0 --set daso.cooldown_epochs=0 "
                "--set daso.B_max=3",
                "DASO's phase"},
        Refusal{"dcs3gd", "dcs3gd", "", "W_bar, V, S"},
        Refusal{"crossover", "crossover", "", "derangement schedule"},
        Refusal{"sgp", "sgp", "", "push-sum weights"},
        Refusal{"oscars", "oscars", "--set oscars.t_us=1000,2000,1000,3000", "per-rank schedule",
                "--set oscars.t_us=1000,2000"},
        Refusal{"post_local_sgd", "post_local_sgd", "--set local_sgd.H=3", "local-SGD round"},
        Refusal{"slowmo", "slowmo", "--set slowmo.frequency=3", "slow momentum"},
        Refusal{"streaming_diloco", "streaming_diloco",
                "--set streaming_diloco.H=4 --set streaming_diloco.fragment_sync_delay=1",
                "fragment in flight"}),
    [](const ::testing::TestParamInfo<Refusal>& i) { return i.param.name; });

// The tensors of a safetensors file by name.
std::map<std::string, Tensor> tensors_of(const fs::path& f) {
  std::map<std::string, Tensor> r;
  for (auto& t : load_safetensors(f.string())) r[t.name] = t.tensor;
  return r;
}

bool same_bytes(const Tensor& a, const Tensor& b) {
  return a.nbytes() == b.nbytes() && std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

struct RoundAlgo {
  std::string name;
  std::string args;       // H = 2: rounds end after steps 2 and 4 of each epoch
  std::string round_key;  // the algorithm state value counting steps into the round
};

std::ostream& operator<<(std::ostream& os, const RoundAlgo& a) {
  return os << a.name;
}

class ReshardAtRoundEnd : public ::testing::TestWithParam<RoundAlgo> {};

// docs/resharding.md: diloco and local_sgd reshard at a round's end. Every replica is then the
// same (DiLoCo: theta; local SGD: the average), so the new ranks take rank 0's model and
// algorithm state (theta and the outer optimizer's, global), and the optimizer's state, each
// rank's own, is averaged. Checked on the state the 2-rank run loads (its checkpoint at the
// step it resumed at, before any step), against the 4 files it came from: the mean is computed
// here. Then the run trains on; a checkpoint inside a round is refused.
TEST_P(ReshardAtRoundEnd, FourToTwoTakesTheReplicaAndTheAverageOptimizerState) {
  const RoundAlgo& p = GetParam();
  ScopedTempDir dir("reshard-round-" + p.name);
  const std::string base = kRun + " --algo " + p.name + " " + p.args;
  auto r = mpirun(4, base + " --batch 16 --max-steps 2 --out " + dir.file("run"), dir.path / "a");
  ASSERT_EQ(r.status, 0) << r.err;
  r = mpirun(2,
             base + " --batch 32 --max-steps 2 --resume " + dir.file("run") + " --reshard --out " +
                 dir.file("loaded"),
             dir.path / "b");
  ASSERT_EQ(r.status, 0) << r.err;
  const fs::path old_dir = dir.path / "run" / "checkpoints" / "step_00000002";
  std::vector<std::map<std::string, Tensor>> old;
  for (int rank = 0; rank < 4; ++rank)
    old.push_back(tensors_of(old_dir / fmt::format("rank_{}.safetensors", rank)));
  EXPECT_EQ(values_of(old_dir / "rank_0.safetensors").at("algo." + p.round_key), "0")
      << "the checkpoint is at a round's end";
  double optimizer_spread = 0;  // how much the ranks' optimizer states differ
  for (int rank = 0; rank < 2; ++rank) {
    const auto now = tensors_of(dir.path / "loaded" / "checkpoints" / "step_00000002" /
                                fmt::format("rank_{}.safetensors", rank));
    ASSERT_EQ(now.size(), old[0].size());
    for (const auto& [name, t] : now) {
      ASSERT_TRUE(old[0].count(name)) << name;
      if (!name.starts_with("optim.") || t.dtype() != DType::f32) {
        // Model, algorithm state, step counts: the replica's (every old rank's model alike).
        EXPECT_TRUE(same_bytes(t, old[0].at(name))) << name << " on new rank " << rank;
        if (name.starts_with("model.")) {
          for (int o = 1; o < 4; ++o)
            EXPECT_TRUE(same_bytes(old[0].at(name), old[size_t(o)].at(name)))
                << name << ": old rank " << o << " differs from rank 0 at the round's end";
        }
        continue;
      }
      const float* y = t.data<float>();
      for (int64_t k = 0; k < t.numel(); ++k) {
        double mean = 0;
        for (int o = 0; o < 4; ++o) mean += double(old[size_t(o)].at(name).data<float>()[k]);
        mean /= 4;
        // One f32 rounding of the mean (the sum is in double).
        EXPECT_NEAR(double(y[k]), mean, 1e-7 * std::abs(mean) + 1e-30) << name << "[" << k << "]";
        optimizer_spread =
            std::max(optimizer_spread, std::abs(double(old[1].at(name).data<float>()[k]) -
                                                double(old[0].at(name).data<float>()[k])));
      }
    }
  }
  EXPECT_GT(optimizer_spread, 0) << "the old ranks' optimizer states are alike: the mean is "
                                    "not tested";
  std::printf("largest |optimizer state difference| between old ranks 0 and 1: %.3g\n",
              optimizer_spread);
  // Trains on, across the epoch's end.
  r = mpirun(2,
             base + " --batch 32 --max-steps 6 --resume " + dir.file("run") + " --reshard --out " +
                 dir.file("on"),
             dir.path / "c");
  ASSERT_EQ(r.status, 0) << r.err;
  const auto e1 = epoch_record(dir.path / "on", 1);
  ASSERT_FALSE(e1.is_null());
  EXPECT_TRUE(std::isfinite(e1["loss"].get<double>())) << e1.dump();
  EXPECT_TRUE(fs::exists(dir.path / "on" / "checkpoints" / "step_00000006" / "manifest.json"));
  // Inside a round (H = 3, 2 steps in) the replicas differ: refused.
  r = mpirun(4,
             base + " --set " + p.name + ".H=3 --batch 16 --max-steps 2 --out " + dir.file("mid"),
             dir.path / "d");
  ASSERT_EQ(r.status, 0) << r.err;
  r = mpirun(2,
             base + " --set " + p.name + ".H=3 --batch 32 --resume " + dir.file("mid") +
                 " --reshard --out " + dir.file("mid2"),
             dir.path / "e");
  EXPECT_NE(r.status, 0);
  EXPECT_TRUE(has(r.err, "reshards only at a round's end") && has(r.err, "2 steps into a round"))
      << r.err;
}

INSTANTIATE_TEST_SUITE_P(
    PeriodicAveraging, ReshardAtRoundEnd,
    ::testing::Values(RoundAlgo{"diloco", "--set optim=adamw --wd 0.01 --set diloco.H=2",
                                "inner_steps"},
                      RoundAlgo{"local_sgd", "--set local_sgd.H=2", "since_average"}),
    [](const ::testing::TestParamInfo<RoundAlgo>& i) { return i.param.name; });

}  // namespace
}  // namespace dplab
