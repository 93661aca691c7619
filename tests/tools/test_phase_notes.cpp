// Issue #33 items 4 and 7 through `dplab train` (one process):
//   - no silent no-op: the run header says from which step gradient compression compresses,
//     step and epoch records say whether it did (algo.compress_active), and a phase that never
//     starts within the planned steps is warned about, naming its option (PowerSGD's
//     start_step, post-local SGD's switch_epoch, DASO's cycling, hybrid's stages, a round
//     longer than the run);
//   - `epochs` on resume: refused while something is planned from it (naming it), allowed with
//     --resume-override epochs and a warning, free where nothing depends on it.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <vector>

#include "data/temp_dir.h"
#include "run_cli.h"

namespace dplab {
namespace {

namespace fs = std::filesystem;
using test::run_dplab;
using test::ScopedTempDir;

// 128 training images in batches of 32: 4 steps per epoch.
const std::string kTiny =
    "train --model mnist_cnn --data fashion-mnist --batch 32 --lr 0.01 --momentum 0.9 "
    "--threads 1 --set data.train_limit=128 --set data.test_limit=50 --set progress=off";

bool has(const std::string& text, const std::string& what) {
  return text.find(what) != std::string::npos;
}

std::vector<nlohmann::json> records(const fs::path& metrics, const std::string& kind) {
  std::vector<nlohmann::json> v;
  std::ifstream in(metrics);
  for (std::string line; std::getline(in, line);) {
    nlohmann::json r = nlohmann::json::parse(line);
    if (r.value("kind", "") == kind) v.push_back(r);
  }
  return v;
}

TEST(PhaseNotes, PowerSgdThatNeverStartsIsWarnedNamingTheOption) {
  ScopedTempDir dir("notes-powersgd-off");
  // PyTorch's default start_step (1000) in a run of 4 steps: plain allreduce throughout.
  const auto r = run_dplab(kTiny +
                               " --algo allreduce --set allreduce.compress=powersgd --epochs 1 "
                               "--set metrics.every_steps=2 --out " +
                               dir.file("run"),
                           dir.path);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(has(r.err,
                  "warning: allreduce.powersgd.start_step = 1000 but the run plans at most 4 "
                  "synchronised steps: PowerSGD never starts and every step is a plain allreduce"))
      << r.err;
  EXPECT_TRUE(has(r.out,
                  "gradient compression: PowerSGD (allreduce.compress = powersgd, rank 1) from "
                  "synchronised step 1001 (allreduce.powersgd.start_step)"))
      << r.out;
  const auto steps = records(dir.path / "run" / "metrics.jsonl", "step");
  ASSERT_EQ(steps.size(), 2u);
  for (const auto& s : steps) EXPECT_EQ(s.value("algo.compress_active", -1.0), 0.0) << s.dump();
}

TEST(PhaseNotes, StepRecordsSayWhenCompressionIsActive) {
  ScopedTempDir dir("notes-powersgd-on");
  // start_step 2: synchronised steps 1 and 2 are plain, 3 and 4 compressed.
  const auto r = run_dplab(kTiny +
                               " --algo allreduce --set allreduce.compress=powersgd "
                               "--set allreduce.powersgd.start_step=2 --epochs 1 "
                               "--set metrics.every_steps=1 --out " +
                               dir.file("run"),
                           dir.path);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_FALSE(has(r.err, "warning:")) << r.err;
  EXPECT_TRUE(has(r.out, "from synchronised step 3 (allreduce.powersgd.start_step)")) << r.out;
  const auto steps = records(dir.path / "run" / "metrics.jsonl", "step");
  ASSERT_EQ(steps.size(), 4u);
  const double expect[4] = {0, 0, 1, 1};
  for (size_t i = 0; i < 4; ++i)
    EXPECT_EQ(steps[i].value("algo.compress_active", -1.0), expect[i]) << steps[i].dump();
  const auto epochs = records(dir.path / "run" / "metrics.jsonl", "epoch");
  ASSERT_EQ(epochs.size(), 1u);
  EXPECT_EQ(epochs[0].value("algo.compress_active", -1.0), 1.0) << epochs[0].dump();
  // Without compression the key is absent (nothing to say).
  const auto plain = run_dplab(
      kTiny + " --algo allreduce --epochs 1 --set metrics.every_steps=4 --out " + dir.file("plain"),
      dir.path / "p");
  ASSERT_EQ(plain.status, 0) << plain.err;
  for (const auto& s : records(dir.path / "plain" / "metrics.jsonl", "step"))
    EXPECT_FALSE(s.contains("algo.compress_active")) << s.dump();
}

TEST(PhaseNotes, PhasesThatNeverStartAreWarnedNamingTheirOption) {
  ScopedTempDir dir("notes-phases");
  struct Case {
    std::string args, warning;
  };
  const std::vector<Case> cases = {
      // switch_epoch 1 (the default) in a 1-epoch run: AllReduce-SGD only.
      {"--algo post_local_sgd --epochs 1",
       "warning: post_local_sgd.switch_epoch = 1 but the run plans 1 epoch (4 steps): the local "
       "SGD phase never starts"},
      // Warm-up 4 + cool-down 4 epochs cover a 2-epoch run.
      {"--algo daso --epochs 2",
       "warning: DASO's cycling phase never runs: daso.warmup_epochs = 4 and "
       "daso.cooldown_epochs = 4 cover all 2 epochs"},
      // Thirds of 2 epochs: stage 1 in epoch 1, stage 2 in epoch 2, no stage 3.
      {"--algo hybrid --epochs 2", "warning: hybrid stage 3 (local steps, hybrid.R) never starts"},
      // A round of 50 steps spanning epochs in a run of 8.
      {"--algo diloco --epochs 2 --set diloco.round_spans_epochs=true",
       "warning: diloco.H = 50 is longer than the run's 8 planned steps and rounds span epochs "
       "(diloco.round_spans_epochs = true)"},
      {"--algo dcs3gd --epochs 1 --set dcs3gd.correct_from=warmup_end --set dcs3gd.warmup_epochs=2",
       "warning: dcs3gd.correct_from = warmup_end and the warm-up (dcs3gd.warmup_epochs = 2) "
       "lasts 8 steps, the run plans 4: the delay compensation never starts"},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    const auto r = run_dplab(kTiny + " " + cases[i].args, dir.path / std::to_string(i));
    ASSERT_EQ(r.status, 0) << cases[i].args << "\n" << r.err;
    EXPECT_TRUE(has(r.err, cases[i].warning)) << cases[i].args << "\n" << r.err;
  }
  // The same algorithms with room for every phase: no warning of the kind.
  const std::vector<std::string> fine = {
      "--algo post_local_sgd --epochs 2",
      "--algo daso --epochs 3 --set daso.warmup_epochs=1 --set daso.cooldown_epochs=1",
      // The thesis split (ceil): stage 3 only from epochs = 6 (epochs 1-2, 3-5, 6).
      "--algo hybrid --epochs 6",
      "--algo diloco --epochs 2 --set diloco.round_spans_epochs=true --set diloco.H=8"};
  for (size_t i = 0; i < fine.size(); ++i) {
    const auto r = run_dplab(kTiny + " " + fine[i], dir.path / ("fine" + std::to_string(i)));
    ASSERT_EQ(r.status, 0) << fine[i] << "\n" << r.err;
    EXPECT_FALSE(has(r.err, "never")) << fine[i] << "\n" << r.err;
  }
}

TEST(ResumeEpochs, RefusedWhilePlannedFromItAllowedByOverrideFreeOtherwise) {
  ScopedTempDir dir("resume-epochs");
  // A cosine schedule ends at the last epoch: 2 epochs planned, stopped after 2 steps.
  const std::string cosine = kTiny + " --set lr.schedule=cosine";
  auto r = run_dplab(cosine + " --epochs 2 --max-steps 2 --out " + dir.file("cos"), dir.path);
  ASSERT_EQ(r.status, 0) << r.err;
  r = run_dplab(cosine + " --epochs 3 --resume " + dir.file("cos"), dir.path / "refused");
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_TRUE(has(r.err,
                  "option epochs was '2' in the checkpointed run, now '3', and the run plans from "
                  "it: the learning-rate schedule (lr.schedule = cosine: it ends at the last "
                  "epoch)"))
      << r.err;
  EXPECT_TRUE(has(r.err, "--resume-override")) << r.err;
  // Unchanged epochs resume as before.
  r = run_dplab(cosine + " --epochs 2 --max-steps 3 --resume " + dir.file("cos") + " --out " +
                    dir.file("same"),
                dir.path / "same");
  EXPECT_EQ(r.status, 0) << r.err;
  // Allowed explicitly: runs, with a warning.
  r = run_dplab(cosine + " --epochs 3 --max-steps 3 --resume-override epochs --resume " +
                    dir.file("cos") + " --out " + dir.file("over"),
                dir.path / "over");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(has(r.err,
                  "warning: --resume-override epochs: option epochs was '2' in the "
                  "checkpointed run, now '3'"))
      << r.err;
  // An algorithm's plan counts too: hybrid's stages are thirds of the epochs.
  r = run_dplab(kTiny + " --algo hybrid --epochs 3 --max-steps 2 --out " + dir.file("hyb"),
                dir.path / "hyb");
  ASSERT_EQ(r.status, 0) << r.err;
  r = run_dplab(kTiny + " --algo hybrid --epochs 6 --resume " + dir.file("hyb"),
                dir.path / "hyb_refused");
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_TRUE(has(r.err, "hybrid's stages (hybrid.mode = hybrid")) << r.err;
  // Nothing planned from epochs (constant lr, one process): epochs is a [run] option.
  r = run_dplab(kTiny + " --epochs 2 --max-steps 2 --out " + dir.file("const"), dir.path / "c");
  ASSERT_EQ(r.status, 0) << r.err;
  r = run_dplab(kTiny + " --epochs 3 --max-steps 3 --resume " + dir.file("const") + " --out " +
                    dir.file("const3"),
                dir.path / "c3");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_FALSE(has(r.err, "warning")) << r.err;
}

}  // namespace
}  // namespace dplab
