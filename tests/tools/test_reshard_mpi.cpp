// `dplab train --resume DIR --reshard` through mpiexec (train/state/reshard.h, issue #37):
//   - allreduce 4 -> 2 -> 4 ranks ends where the uninterrupted 4-rank run ends. Both see the
//     same samples in every step (the global batch stays 64: 4 x 16, then 2 x 32), so the
//     only difference is the order of the f32 sums that form each step's mean gradient while 2
//     ranks train (each rank's mean over 32 samples, then the mean of 2, instead of means over
//     16 and the mean of 4). See kTolerance for the bound.
//   - every other algorithm goes 4 -> 2 from inside a round (or sync, or interval): the state the
//     2 ranks load is checked against its policy (docs/resharding.md), computed here from the
//     4 old files, and the run trains on.
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
std::string run_of(const std::string& model) {
  return "train --model " + model +
         " --data fashion-mnist --lr 0.05 --momentum 0.9 --threads 1 --epochs 2 "
         "--set data.train_limit=256 --set data.test_limit=40 --set progress=off "
         "--set checkpoint.keep=0";
}
const std::string kRun = run_of("mnist_cnn");

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

// The tensors of a safetensors file by name.
std::map<std::string, Tensor> tensors_of(const fs::path& f) {
  std::map<std::string, Tensor> r;
  for (auto& t : load_safetensors(f.string())) r[t.name] = t.tensor;
  return r;
}

bool same_bytes(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.nbytes() == b.nbytes() &&
         std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

// One algorithm's resharding policy as docs/resharding.md states it, written out here apart
// from train/state/reshard.cpp: how the new ranks' value of each state entry follows from the
// old ranks' files.
//   same      rank 0's, and every old rank holds the same (global state)
//   rank0     rank 0's (per-rank statistics)
//   mean      the mean over the old ranks (f32; other tensors and values: every rank agrees)
//   wmean:K   model only: sum_i w_i x_i / sum_i w_i with w_i the old file's value algo.K
//   fresh     the new world's own value: not compared with the old files (`expect` names some)
//   =V        the value V
struct ReshardCase {
  std::string name{};
  std::string args{};              // the old run's options (global batch 64)
  std::string args2{};             // the new runs' options; "": `args`
  int64_t at = 3;                  // the checkpoint (global step) the new ranks resume from
  std::string model = "mean";      // rule of model.*
  std::string optimizer = "mean";  // rule of optim.* ("mean+rank0_steps": step counts rank 0's)
  std::vector<std::pair<std::string, std::string>> algo{};  // (key or prefix*, rule); else same
  std::map<std::string, std::string> expect{};              // algo values after the load
  std::string spread = "model.";  // f32 state that differs between the old ranks (so a mean is
                                  // tested, not a copy); "" for none
  int from = 4, to = 2;           // the old and the new world size
  std::string net = "mnist_cnn";  // the model trained
};

std::ostream& operator<<(std::ostream& os, const ReshardCase& c) {
  return os << c.name;
}

std::string rule_of(const ReshardCase& c, const std::string& name) {
  if (name.starts_with("model.")) return c.model;
  if (name.starts_with("optim.")) return c.optimizer;
  if (!name.starts_with("algo.")) return "rank0";
  const std::string key = name.substr(5);
  for (const auto& [k, rule] : c.algo)
    if (k.ends_with('*') ? key.starts_with(k.substr(0, k.size() - 1)) : key == k) return rule;
  return "same";
}

class ReshardEveryAlgorithm : public ::testing::TestWithParam<ReshardCase> {};

// docs/resharding.md: 4 -> 2 ranks for every algorithm (and 2 -> 4 for a few), from a
// checkpoint inside its round (where it has rounds). The state the new ranks load (their
// checkpoint at the step they resumed at, written before any step) is compared entry by entry
// with the old files under the policy above, the means computed here; then the run trains on
// to the end (finite loss).
TEST_P(ReshardEveryAlgorithm, LoadsThePolicysStateAndTrainsOn) {
  const ReshardCase& c = GetParam();
  ScopedTempDir dir("reshard-" + c.name);
  const std::string base = run_of(c.net) + " " + c.args;
  const std::string base2 = run_of(c.net) + " " + (c.args2.empty() ? c.args : c.args2);
  const int from = c.from, to = c.to;
  const std::string batch = fmt::format(" --batch {}", 64 / to);
  auto r = mpirun(from,
                  base + fmt::format(" --batch {} --set checkpoint.every_steps={} --max-steps {} "
                                     "--out {}",
                                     64 / from, c.at, c.at + 1, dir.file("run")),
                  dir.path / "a");
  ASSERT_EQ(r.status, 0) << r.err;
  const fs::path old_dir = dir.path / "run" / "checkpoints" / fmt::format("step_{:08d}", c.at);
  ASSERT_TRUE(fs::exists(old_dir / "manifest.json")) << old_dir;
  // The resumed run stops before its first step: --max-steps counts optimizer steps.
  const std::string stop = values_of(old_dir / "rank_0.safetensors").at("loop.optimizer_steps");
  r = mpirun(to,
             base2 + batch + " --max-steps " + stop + " --resume " + old_dir.string() +
                 " --reshard --out " + dir.file("loaded"),
             dir.path / "b");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(has(r.out, fmt::format("resharded: {} ranks -> {} ranks", from, to))) << r.out;

  std::vector<std::map<std::string, Tensor>> old;
  std::vector<std::map<std::string, std::string>> old_values;
  for (int rank = 0; rank < from; ++rank) {
    const fs::path f = old_dir / fmt::format("rank_{}.safetensors", rank);
    old.push_back(tensors_of(f));
    old_values.push_back(values_of(f));
  }
  double spread = 0;  // how much the old ranks' `c.spread` state differs
  int64_t compared = 0;
  for (int rank = 0; rank < to; ++rank) {
    const fs::path f = dir.path / "loaded" / "checkpoints" / fmt::format("step_{:08d}", c.at) /
                       fmt::format("rank_{}.safetensors", rank);
    const auto now = tensors_of(f);
    const auto now_values = values_of(f);
    EXPECT_EQ(now_values.at("loop.global_step"), std::to_string(c.at));
    // Every old tensor not re-derived is there, and nothing else is but re-derived ones.
    for (const auto& [name, t] : old[0]) {
      if (rule_of(c, name) != "fresh") {
        EXPECT_TRUE(now.count(name)) << name << " was lost";
      }
    }
    for (const auto& [name, t] : now) {
      const std::string rule = rule_of(c, name);
      const std::string at = name + " on new rank " + std::to_string(rank);
      if (rule == "fresh") continue;
      ASSERT_TRUE(old[0].count(name)) << at << ": not in the old files";
      const Tensor& t0 = old[0].at(name);
      const bool averaged =
          rule == "mean" || rule.starts_with("mean+") || rule.starts_with("wmean:");
      ++compared;
      if (!averaged || t.dtype() != DType::f32) {
        EXPECT_TRUE(same_bytes(t, t0)) << at << ": expected old rank 0's (" << rule << ")";
        const bool counts_rank0 = rule == "mean+rank0_steps";
        if (rule != "rank0" && !counts_rank0) {
          for (int o = 1; o < from; ++o) {
            EXPECT_TRUE(same_bytes(old[size_t(o)].at(name), t0))
                << at << ": old rank " << o << " differs from rank 0 (" << rule << ")";
          }
        }
        continue;
      }
      std::vector<double> w(size_t(from), 1.0);
      if (rule.starts_with("wmean:"))
        for (int o = 0; o < from; ++o)
          w[size_t(o)] = std::stod(old_values[size_t(o)].at("algo." + rule.substr(6)));
      const float* y = t.data<float>();
      for (int64_t k = 0; k < t.numel(); ++k) {
        double sum = 0, total = 0;
        for (int o = 0; o < from; ++o) {
          sum += w[size_t(o)] * double(old[size_t(o)].at(name).data<float>()[k]);
          total += w[size_t(o)];
        }
        const double mean = sum / total;
        // One f32 rounding of the mean (the sum is in double).
        ASSERT_NEAR(double(y[k]), mean, 1e-7 * std::abs(mean) + 1e-30) << at << "[" << k << "]";
        if (!c.spread.empty() && name.starts_with(c.spread))
          for (int o = 1; o < from; ++o)
            spread = std::max(spread, std::abs(double(old[size_t(o)].at(name).data<float>()[k]) -
                                               double(t0.data<float>()[k])));
      }
    }
    // The algorithm's values.
    for (const auto& [key, v0] : old_values[0]) {
      if (!key.starts_with("algo.")) continue;
      const std::string rule = rule_of(c, key);
      if (rule == "fresh") continue;
      ASSERT_TRUE(now_values.count(key)) << key << " was lost";
      ++compared;
      if (rule.starts_with("=")) {
        EXPECT_EQ(now_values.at(key), rule.substr(1)) << key;
        continue;
      }
      EXPECT_EQ(now_values.at(key), v0) << key << " on new rank " << rank << " (" << rule << ")";
      if (rule != "rank0") {
        for (int o = 1; o < from; ++o) {
          EXPECT_EQ(old_values[size_t(o)].at(key), v0) << key << ": old rank " << o << " differs";
        }
      }
    }
    for (const auto& [key, v] : c.expect) {
      ASSERT_TRUE(now_values.count("algo." + key)) << key;
      EXPECT_EQ(now_values.at("algo." + key), v) << key << " on new rank " << rank;
    }
  }
  EXPECT_GT(compared, 0);
  if (!c.spread.empty()) {
    EXPECT_GT(spread, 0) << "the old ranks' " << c.spread << "* state is alike: the mean is not "
                         << "tested";
  }
  std::printf("%s: largest |%s* difference| between the old ranks: %.3g\n", c.name.c_str(),
              c.spread.c_str(), spread);
  // Trains on to the end of the 2 epochs (8 steps).
  r = mpirun(to,
             base2 + batch + " --resume " + old_dir.string() + " --reshard --out " + dir.file("on"),
             dir.path / "c");
  ASSERT_EQ(r.status, 0) << r.err;
  const auto e2 = epoch_record(dir.path / "on", 2);
  ASSERT_FALSE(e2.is_null()) << slurp(dir.path / "on" / "metrics.jsonl");
  EXPECT_TRUE(std::isfinite(e2["loss"].get<double>())) << e2.dump();
  EXPECT_EQ(spans(nlohmann::json::parse(slurp(dir.path / "on" / "run.json"))["world_sizes"]),
            fmt::format("{}@0 {}@{} ", from, to, c.at));
}

// SGP's policy (push-sum consensus weighted by push_sum_weight, the graph re-derived), on
// `from` -> `to` ranks.
ReshardCase sgp_case(std::string name, std::string args, int from, int to) {
  return ReshardCase{.name = std::move(name),
                     .args = std::move(args),
                     .model = "wmean:push_sum_weight",
                     .algo = {{"ranks", "fresh"},
                              {"weights", "fresh"},
                              {"last_hop", "fresh"},
                              {"push_sum_weight", "=1"}},
                     .expect = {{"ranks", std::to_string(to)}},
                     .from = from,
                     .to = to};
}

// DC-S3GD's policy (the update pending; V and S means; per-rank statistics rank 0's).
ReshardCase dcs3gd_case(std::string name, int from, int to) {
  return ReshardCase{.name = std::move(name),
                     .args = "--algo dcs3gd",
                     .algo = {{"ranks", "fresh"},
                              {"V", "mean"},
                              {"S", "mean"},
                              {"epoch_corrected_steps", "rank0"},
                              {"epoch_compute_s", "rank0"},
                              {"epoch_lambda_sum", "rank0"},
                              {"epoch_d_rel_sum", "rank0"}},
                     .expect = {{"ranks", std::to_string(to)}, {"pending", "true"}},
                     .from = from,
                     .to = to};
}

// H = 2 (or its kind): the checkpoint at step 3 is inside a round, where the replicas differ.
INSTANTIATE_TEST_SUITE_P(
    Algorithms, ReshardEveryAlgorithm,
    ::testing::Values(
        ReshardCase{.name = "allreduce_topk",
                    .args = "--algo allreduce --set allreduce.compress=topk "
                            "--set allreduce.topk.ratio=0.05",
                    .model = "rank0",
                    .optimizer = "rank0",
                    .algo = {{"sync.*", "mean"}},
                    .spread = "algo.sync."},
        ReshardCase{.name = "allreduce_powersgd",
                    .args = "--algo allreduce --set allreduce.compress=powersgd "
                            "--set allreduce.powersgd.start_step=1",
                    .model = "rank0",
                    .optimizer = "rank0",
                    .algo = {{"sync.*", "mean"}},
                    .spread = "algo.sync."},
        ReshardCase{.name = "local_sgd",
                    .args = "--algo local_sgd --set local_sgd.H=2",
                    .algo = {{"sync.*", "mean"}}},
        ReshardCase{.name = "post_local_sgd",
                    .args = "--algo post_local_sgd --set post_local_sgd.switch_epoch=0 "
                            "--set local_sgd.H=2",
                    .algo = {{"sync.*", "mean"}}},
        ReshardCase{.name = "diloco",
                    .args = "--algo diloco --set optim=adamw --wd 0.01 --set diloco.H=2"},
        ReshardCase{.name = "streaming_diloco",
                    .args = "--algo streaming_diloco --set streaming_diloco.H=4 "
                            "--set streaming_diloco.fragment_sync_delay=1",
                    .at = 2,  // fragment 0 in flight: its averaged delta is global
                    .expect = {{"pending_fragment", "0"}}},
        ReshardCase{
            .name = "slowmo",
            .args = "--algo slowmo --set slowmo.frequency=2 --set slowmo.node_workers=false"},
        ReshardCase{.name = "slowmo_sgp",
                    .args = "--algo slowmo --set slowmo.base=sgp --set slowmo.frequency=2",
                    .model = "wmean:sgp.push_sum_weight",
                    .algo = {{"sgp.ranks", "fresh"},
                             {"sgp.weights", "fresh"},
                             {"sgp.last_hop", "fresh"},
                             {"sgp.push_sum_weight", "=1"}},
                    .expect = {{"sgp.ranks", "2"}}},
        sgp_case("sgp", "--algo sgp", 4, 2),
        ReshardCase{.name = "hybrid",
                    // Epoch 0 is stage 2 (accumulation, W = 3), epoch 1 stage 3 (local steps,
                    // averaged every R = 3): step 5 is inside stage 3.
                    .args = "--algo hybrid --set hybrid.W=3 --set hybrid.R=3 "
                            "--set hybrid.split=thirds",
                    .at = 5,
                    .algo = {{"grad", "mean"}, {"sync.*", "mean"}},
                    .expect = {{"stage", "3"}}},
        ReshardCase{.name = "daso",
                    // 2 nodes x 2 ranks, a sync in flight at step 3; then 2 nodes x 1 rank.
                    .args = "--algo daso --ranks-per-node 2 --set daso.warmup_epochs=0 "
                            "--set daso.cooldown_epochs=0 --set daso.B_max=2",
                    .args2 = "--algo daso --ranks-per-node 1 --resume-override ranks_per_node "
                             "--set daso.warmup_epochs=0 --set daso.cooldown_epochs=0 "
                             "--set daso.B_max=2",
                    .algo = {{"nodes", "fresh"},
                             {"ranks_per_node", "fresh"},
                             {"schedule_epoch", "fresh"},
                             {"schedule", "fresh"},
                             {"schedule_next", "fresh"},
                             {"epoch_syncs", "fresh"},
                             {"pending*", "fresh"},
                             {"sync.*", "mean"}},
                    .expect = {{"nodes", "2"}, {"ranks_per_node", "1"}, {"pending", ""}}},
        dcs3gd_case("dcs3gd", 4, 2),
        ReshardCase{.name = "crossover",
                    // Interval 2: step 5 is inside an interval (a gradient accumulated).
                    .args = "--algo crossover --set crossover.interval=2",
                    .at = 5,
                    .algo = {{"grad", "mean"}, {"peer_sum", "rank0"}, {"sync.*", "mean"}},
                    .expect = {{"micro", "1"}}},
        ReshardCase{.name = "oscars",
                    .args = "--algo oscars --set oscars.t_us=1000,2000,1000,3000",
                    .args2 = "--algo oscars --set oscars.t_us=1000,2000 "
                             "--resume-override oscars.t_us",
                    .at = 2,  // inside a round of tau = 3, 1, 3, 1
                    .optimizer = "mean+rank0_steps",
                    .algo = {{"rounds", "rank0"},
                             {"averages", "rank0"},
                             {"searches", "rank0"},
                             {"*", "fresh"}},
                    .expect = {{"ranks", "2"}, {"plan_t_us", "1000,2000"}, {"round_pos", "0"}}},
        // Scaling up: 2 -> 4 (the mean of 2 replicas on 4 ranks).
        // 2 ranks average exactly at every gossip: gossip every 2nd step, so the replicas
        // differ after the local step in between.
        sgp_case("sgp_2to4", "--algo sgp --set sgp.interval=2", 2, 4),
        dcs3gd_case("dcs3gd_2to4", 2, 4),
        ReshardCase{.name = "local_sgd_2to4",
                    .args = "--algo local_sgd --set local_sgd.H=2",
                    .algo = {{"sync.*", "mean"}},
                    .from = 2,
                    .to = 4},
        // BatchNorm: the running statistics (f32, different on every rank: each normalises its
        // own batches) are in the model's mean; num_batches_tracked (i64) must agree.
        ReshardCase{.name = "local_sgd_batchnorm",
                    .args = "--algo local_sgd --set local_sgd.H=2",
                    .algo = {{"sync.*", "mean"}},
                    .spread = "model.layer1.0.bn1.running_",
                    .net = "resnet20_cifar"}),
    [](const ::testing::TestParamInfo<ReshardCase>& i) { return i.param.name; });

}  // namespace
}  // namespace dplab
