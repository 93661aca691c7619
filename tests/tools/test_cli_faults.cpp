// `dplab train` under numerical faults and pre-emption, end to end through the binary, at 1 and
// 2 ranks: exit statuses 3 and 4, messages that name step, rank and tensor, checkpoints that a
// diverged run never touches, and a pre-empted run whose resume equals the uninterrupted run.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <sstream>

#include "common/cuda_gate.h"
#include "data/temp_dir.h"
#include "dplab/core/safetensors.h"
#include "run_cli.h"
#include "spawn_cli.h"

namespace dplab {
namespace {

namespace fs = std::filesystem;
using test::run_dplab;
using test::ScopedTempDir;
using test::slurp;

// 256 training images (4 steps of 64 on one process, 2 per rank on two), 200 test images; lr
// is the default 0.01 unless a test gives --lr.
const std::string kJob =
    "train --model mnist_cnn --data fashion-mnist --batch 64 --momentum 0.9 "
    "--nesterov --threads 1 --set data.train_limit=256 --set data.test_limit=200 "
    "--set progress=off";

std::string mpiexec2() {
  return std::string(DPLAB_MPIEXEC) + " -n 2 ";
}

// `dplab ARGS` under mpiexec -n 2.
test::CliResult run_dplab2(const std::string& args, const fs::path& scratch) {
  return test::run_dplab_mpi(2, args, scratch);
}

std::vector<nlohmann::json> read_metrics(const fs::path& file) {
  std::vector<nlohmann::json> r;
  std::istringstream in(slurp(file));
  std::string line;
  while (std::getline(in, line)) r.push_back(nlohmann::json::parse(line));
  return r;
}

// Every file a run directory holds except its metrics (*.jsonl), run record (run.json,
// rewritten by every invocation) and lock file (.lock, train/state/run_lock.h), by relative
// path, with its bytes: the checkpoints, whatever their layout.
std::map<std::string, std::string> checkpoint_files(const fs::path& dir) {
  std::map<std::string, std::string> r;
  if (!fs::exists(dir)) return r;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file() && e.path().extension() != ".jsonl" &&
        e.path().filename() != "run.json" && e.path().filename() != ".lock")
      r[fs::relative(e.path(), dir).string()] = slurp(e.path());
  return r;
}

// The safetensors files of a checkpoint named by a path: a file (with its .state file when
// there is one) or a directory (every file in it).
std::vector<fs::path> checkpoint_parts(const fs::path& ckpt) {
  std::vector<fs::path> r;
  if (fs::is_directory(ckpt)) {
    for (const auto& e : fs::recursive_directory_iterator(ckpt))
      if (e.is_regular_file() && e.path().extension() == ".safetensors") r.push_back(e.path());
    return r;
  }
  r.push_back(ckpt);
  std::string state = ckpt.string();
  state.replace(state.size() - std::string(".safetensors").size(), std::string::npos,
                ".state.safetensors");
  if (fs::exists(state)) r.push_back(state);
  return r;
}

void expect_finite(const fs::path& file) {
  for (const NamedTensor& t : load_safetensors(file.string())) {
    if (t.tensor.dtype() != DType::f32) continue;
    for (float v : t.tensor.to_vector()) {
      ASSERT_TRUE(std::isfinite(v)) << t.name << " in " << file;
    }
  }
}

// The committed checkpoint directories of a run (DIR/checkpoints/step_<N>), oldest first.
std::vector<fs::path> checkpoint_dirs(const fs::path& run) {
  std::vector<fs::path> r;
  if (!fs::exists(run / "checkpoints")) return r;
  for (const auto& e : fs::directory_iterator(run / "checkpoints"))
    if (e.is_directory() && e.path().filename().string().starts_with("step_"))
      r.push_back(e.path());
  std::sort(r.begin(), r.end());  // zero-padded step numbers sort as numbers
  return r;
}

// Tensors of two checkpoint files, bit for bit (their metadata may differ).
void expect_same_tensors(const fs::path& a, const fs::path& b) {
  const auto ta = load_safetensors(a.string()), tb = load_safetensors(b.string());
  ASSERT_EQ(ta.size(), tb.size()) << a << " vs " << b;
  for (size_t i = 0; i < ta.size(); ++i) {
    EXPECT_EQ(ta[i].name, tb[i].name);
    ASSERT_EQ(ta[i].tensor.nbytes(), tb[i].tensor.nbytes()) << ta[i].name;
    EXPECT_EQ(std::memcmp(ta[i].tensor.raw_data(), tb[i].tensor.raw_data(), ta[i].tensor.nbytes()),
              0)
        << ta[i].name << " differs between " << a << " and " << b;
  }
}

// --lr 1e20: the first step runs on the initial weights (finite loss and gradients) and its
// update makes the weights so large that the next forward overflows: global step 1 (0-based) of
// a fresh run, and of a resumed run the second step after the resume point.
TEST(CliFaults, DivergenceStopsWithStatus3AndLeavesCheckpointsAlone) {
  ScopedTempDir dir("cli-nonfinite");
  const std::string run = dir.file("run");
  auto r = run_dplab(kJob + " --epochs 2 --out " + run, dir.path);
  ASSERT_EQ(r.status, 0) << r.err;
  const auto good = checkpoint_files(run);
  ASSERT_GE(good.size(), 2u);  // the epoch-1 checkpoint and the final model at least

  // A fresh run into the same directory diverges: status 3, nothing written.
  r = run_dplab(kJob + " --epochs 2 --lr 1e20 --out " + run, dir.path);
  EXPECT_EQ(r.status, 3) << r.out << r.err;
  EXPECT_NE(r.err.find("non-finite values at global step 1 "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("rank 0: loss"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("no checkpoint was written"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("test accuracy"), std::string::npos);
  EXPECT_TRUE(checkpoint_files(run) == good) << "a checkpoint file changed";
  auto m = read_metrics(fs::path(run) / "metrics.jsonl");
  ASSERT_FALSE(m.empty());
  EXPECT_EQ(m.back()["kind"], "stopped");
  EXPECT_EQ(m.back()["reason"], "nonfinite");
  EXPECT_EQ(m.back()["ranks"], nlohmann::json::array({0}));

  // Resumed from the epoch-1 checkpoint into the same directory, with the changed lr allowed:
  // global step 4 is the first after the resume point (finite), 5 overflows.
  const auto dirs = checkpoint_dirs(run);
  ASSERT_EQ(dirs.size(), 2u);  // after epoch 1 and at the end
  r = run_dplab(kJob + " --epochs 2 --lr 1e20 --resume " + dirs.front().string() +
                    " --resume-override lr --out " + run,
                dir.path);
  EXPECT_EQ(r.status, 3) << r.out << r.err;
  EXPECT_NE(r.err.find("non-finite values at global step 5 "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("rank 0: loss"), std::string::npos) << r.err;
  EXPECT_TRUE(checkpoint_files(run) == good) << "a checkpoint file changed";
}

// --lr 1e39 is inf in f32: the first step's loss and gradients are finite, its update is not.
// With --max-steps 1 the next thing the run does is write final.safetensors: the state check
// stops it before.
TEST(CliFaults, NonfiniteStateIsNeverWritten) {
  ScopedTempDir dir("cli-nonfinite-state");
  auto r =
      run_dplab(kJob + " --epochs 1 --max-steps 1 --lr 1e39 --out " + dir.file("run"), dir.path);
  EXPECT_EQ(r.status, 3) << r.out << r.err;
  EXPECT_NE(r.err.find("in the state to be written to a checkpoint after 1 step:"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("rank 0: non-finite 'cnn1.weight'"), std::string::npos) << r.err;
  EXPECT_TRUE(checkpoint_files(dir.path / "run").empty());
}

// nonfinite = skip drops every step after the first (all overflow): the weights and momentum
// are those of a run that stopped after its one finite step.
TEST(CliFaults, SkipDropsTheStepsAndCountsThem) {
  ScopedTempDir dir("cli-nonfinite-skip");
  auto r = run_dplab(kJob + " --epochs 1 --lr 1e20 --set nonfinite=skip --out " + dir.file("skip"),
                     dir.path);
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("3 non-finite steps skipped"), std::string::npos) << r.out;
  auto m = read_metrics(dir.path / "skip" / "metrics.jsonl");
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[0]["nonfinite_skipped_steps"], 3);
  EXPECT_EQ(m[1]["nonfinite_skipped_steps"], 3);
  EXPECT_EQ(m[1]["step"], 4);
  EXPECT_TRUE(std::isfinite(m[0]["loss"].get<double>()));  // dropped steps left out
  r = run_dplab(kJob + " --epochs 1 --max-steps 1 --lr 1e20 --out " + dir.file("one"), dir.path);
  ASSERT_EQ(r.status, 0) << r.err;
  expect_same_tensors(dir.path / "skip" / "final.safetensors",
                      dir.path / "one" / "final.safetensors");
  // Optimizer state too: the last checkpoints' rank files hold the same tensors.
  const auto skip_dirs = checkpoint_dirs(dir.path / "skip"),
             one_dirs = checkpoint_dirs(dir.path / "one");
  ASSERT_FALSE(skip_dirs.empty());
  ASSERT_FALSE(one_dirs.empty());
  expect_same_tensors(skip_dirs.back() / "rank_0.safetensors",
                      one_dirs.back() / "rank_0.safetensors");
}

// The count of dropped steps is part of the checkpoint: stopped after 2 steps (one dropped) and
// resumed, the run ends with the uninterrupted run's 3 (SkipDropsTheStepsAndCountsThem).
TEST(CliFaults, SkipCountSurvivesAResume) {
  ScopedTempDir dir("cli-nonfinite-skip-resume");
  const std::string job = kJob + " --epochs 1 --lr 1e20 --set nonfinite=skip";
  auto r = run_dplab(job + " --max-steps 2 --out " + dir.file("run"), dir.path);
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_EQ(read_metrics(dir.path / "run" / "metrics.jsonl").back()["nonfinite_skipped_steps"], 1);
  r = run_dplab(job + " --resume " + dir.file("run") + " --out " + dir.file("run"), dir.path);
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  const auto m = read_metrics(dir.path / "run" / "metrics.jsonl");
  EXPECT_EQ(m.back()["kind"], "final");
  EXPECT_EQ(m.back()["nonfinite_skipped_steps"], 3);
  EXPECT_EQ(m[m.size() - 2]["nonfinite_skipped_steps"], 3);  // the epoch's record, both parts
}

// With accumulate_steps = 2 the optimizer step is two batches: the second step's batches both
// overflow and the step is dropped whole (one skipped step, not two).
TEST(CliFaults, SkipDropsAnAccumulatedStepWhole) {
  ScopedTempDir dir("cli-nonfinite-accum");
  const std::string job = kJob + " --epochs 1 --lr 1e20 --set accumulate_steps=2";
  auto r = run_dplab(job + " --set nonfinite=skip --out " + dir.file("skip"), dir.path);
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_EQ(read_metrics(dir.path / "skip" / "metrics.jsonl").back()["nonfinite_skipped_steps"], 1);
  r = run_dplab(job + " --max-steps 1 --out " + dir.file("one"), dir.path);
  ASSERT_EQ(r.status, 0) << r.err;
  expect_same_tensors(dir.path / "skip" / "final.safetensors",
                      dir.path / "one" / "final.safetensors");
}

TEST(CliFaults, HelpDocumentsTheOptionsAndExitStatuses) {
  ScopedTempDir dir("cli-nonfinite-help");
  const auto r = run_dplab("train --help", dir.path);
  ASSERT_EQ(r.status, 0) << r.err;
  for (const char* s : {"nonfinite", "preempt.signals", "[default: TERM,USR1]", "[default: stop]",
                        "3 stopped on a non-finite loss", "4 pre-empted by a signal"})
    EXPECT_NE(r.out.find(s), std::string::npos) << s;
}

TEST(CliFaults, TwoRanksStopTogetherAndNameEachRank) {
  ScopedTempDir dir("cli-nonfinite-2");
  const std::string run = dir.file("run");
  const std::string job = kJob + " --algo allreduce";
  auto r = run_dplab2(job + " --epochs 2 --out " + run, dir.path);
  ASSERT_EQ(r.status, 0) << r.err;
  const auto good = checkpoint_files(run);
  ASSERT_GE(good.size(), 2u);

  // Both ranks hold the same (averaged) weights, so both see the overflow at global step 1.
  r = run_dplab2(job + " --epochs 2 --lr 1e20 --out " + run, dir.path);
  EXPECT_EQ(r.status, 3) << r.out << r.err;
  EXPECT_NE(r.err.find("non-finite values at global step 1 "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("rank 0: loss"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("rank 1: loss"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("aborting"), std::string::npos) << r.err;  // a stop, not an abort
  EXPECT_TRUE(checkpoint_files(run) == good) << "a checkpoint file changed";

  // Resumed (2 steps per epoch per rank: global step 2 is the first after the resume point).
  const auto dirs = checkpoint_dirs(run);
  ASSERT_EQ(dirs.size(), 2u);  // after epoch 1 and at the end
  r = run_dplab2(job + " --epochs 2 --lr 1e20 --resume " + dirs.front().string() +
                     " --resume-override lr --out " + run,
                 dir.path);
  EXPECT_EQ(r.status, 3) << r.out << r.err;
  EXPECT_NE(r.err.find("non-finite values at global step 3 "), std::string::npos) << r.err;
  EXPECT_TRUE(checkpoint_files(run) == good) << "a checkpoint file changed";

  // skip at two ranks: each drops the same step, as the one-step run shows.
  r = run_dplab2(job + " --epochs 1 --lr 1e20 --set nonfinite=skip --out " + dir.file("skip"),
                 dir.path);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(read_metrics(dir.path / "skip" / "metrics.jsonl").back()["nonfinite_skipped_steps"], 1);
  r = run_dplab2(job + " --epochs 1 --max-steps 1 --lr 1e20 --out " + dir.file("one"), dir.path);
  ASSERT_EQ(r.status, 0) << r.err;
  expect_same_tensors(dir.path / "skip" / "final.safetensors",
                      dir.path / "one" / "final.safetensors");
}

// ---- nonfinite_check = next_step (issue #34: no host wait per step on a GPU) -------------------
// auto picks it on CUDA only; these runs set it on the CPU, where the loop takes the same path.

// Without an inf or NaN the verdict's timing changes nothing: the same model and the same
// mid-epoch checkpoints (every 2 steps), bit for bit, as with every_step.
TEST(CliFaults, NextStepCheckTrainsTheSameModel) {
  ScopedTempDir dir("cli-nonfinite-next");
  const std::string job = kJob + " --epochs 2 --set checkpoint.every_steps=3";
  auto r = run_dplab(job + " --set nonfinite_check=every_step --out " + dir.file("now"), dir.path);
  ASSERT_EQ(r.status, 0) << r.err;
  r = run_dplab(job + " --set nonfinite_check=next_step --out " + dir.file("next"), dir.path);
  ASSERT_EQ(r.status, 0) << r.err;
  expect_same_tensors(dir.path / "now" / "final.safetensors",
                      dir.path / "next" / "final.safetensors");
  const auto now = checkpoint_dirs(dir.path / "now"), next = checkpoint_dirs(dir.path / "next");
  ASSERT_EQ(now.size(), next.size());
  ASSERT_GE(now.size(), 2u);
  for (size_t i = 0; i < now.size(); ++i)
    expect_same_tensors(now[i] / "rank_0.safetensors", next[i] / "rank_0.safetensors");
}

// The overflow at global step 1 (--lr 1e20, as above) is read at tick 2 and stops the run
// naming step 1, and what the flags say (the tensor is not known any more); nothing is written.
// With 2 steps per epoch step 1 is the epoch's last: its verdict is read at the epoch's end,
// before the epoch checkpoint, which is then not written either.
TEST(CliFaults, NextStepCheckStopsNamingTheStep) {
  ScopedTempDir dir("cli-nonfinite-next-stop");
  const std::string job = kJob + " --epochs 2 --lr 1e20 --set nonfinite_check=next_step";
  auto r = run_dplab(job + " --out " + dir.file("run"), dir.path);
  EXPECT_EQ(r.status, 3) << r.out << r.err;
  EXPECT_NE(r.err.find("non-finite values at global step 1 "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("rank 0: loss and at least one gradient of global step 1 "),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("nonfinite_check = every_step names the tensor"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("no checkpoint was written"), std::string::npos) << r.err;
  EXPECT_TRUE(checkpoint_files(dir.path / "run").empty());

  r = run_dplab(job + " --set data.train_limit=128 --out " + dir.file("epoch"), dir.path);
  EXPECT_EQ(r.status, 3) << r.out << r.err;
  EXPECT_NE(r.err.find("non-finite values at global step 1 (0-based; epoch 1, batch 2 of 2; its "
                       "check was read at the end of the epoch or before a checkpoint)"),
            std::string::npos)
      << r.err;
  EXPECT_TRUE(checkpoint_files(dir.path / "epoch").empty());
  const auto m = read_metrics(dir.path / "epoch" / "metrics.jsonl");
  ASSERT_FALSE(m.empty());
  EXPECT_EQ(m.back()["kind"], "stopped");

  // A mid-epoch checkpoint after global step 1 (checkpoint.every_steps = 2) reads its verdict
  // first: the same stop, before the state check (which would name a parameter instead).
  r = run_dplab(job + " --set checkpoint.every_steps=2 --out " + dir.file("ckpt"), dir.path);
  EXPECT_EQ(r.status, 3) << r.out << r.err;
  EXPECT_NE(r.err.find("non-finite values at global step 1 (0-based; epoch 1, batch 2 of 4; its "
                       "check was read at the end of the epoch or before a checkpoint)"),
            std::string::npos)
      << r.err;
  EXPECT_TRUE(checkpoint_files(dir.path / "ckpt").empty());
}

// Two ranks agree on the verdict as on any other (kLag ticks later, or at the flush).
TEST(CliFaults, NextStepCheckStopsTwoRanksTogether) {
  ScopedTempDir dir("cli-nonfinite-next-2");
  auto r = run_dplab2(kJob +
                          " --algo allreduce --epochs 2 --lr 1e20 --set "
                          "nonfinite_check=next_step --out " +
                          dir.file("run"),
                      dir.path);
  EXPECT_EQ(r.status, 3) << r.out << r.err;
  EXPECT_NE(r.err.find("non-finite values at global step 1 "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("rank 0: loss"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("rank 1: loss"), std::string::npos) << r.err;
  EXPECT_TRUE(checkpoint_files(dir.path / "run").empty());
}

// Under skip, next_step drops the failed step on the device (Optimizer::step_unless, the
// metrics' flags) and counts it when the verdict arrives: the same run as every_step, bit for
// bit, in the model, the checkpoints (optimizer state and its step count, the loop's sums and
// counts) and the records, for the overflowing runs of the skip tests above: 3 dropped steps of
// 4; accumulate_steps = 2 (a group dropped whole); a run stopped after 2 steps and resumed
// (the count and the epoch's sums in the checkpoint).
void expect_same_records(const fs::path& a, const fs::path& b) {
  const auto ma = read_metrics(a / "metrics.jsonl"), mb = read_metrics(b / "metrics.jsonl");
  ASSERT_EQ(ma.size(), mb.size());
  for (size_t i = 0; i < ma.size(); ++i)
    for (const char* k : {"kind", "epoch", "step", "images", "loss", "train_acc", "test_loss",
                          "test_acc", "nonfinite_skipped_steps"})
      EXPECT_EQ(ma[i].value(k, nlohmann::json()), mb[i].value(k, nlohmann::json()))
          << k << " of record " << i;
}

void expect_same_run(const fs::path& a, const fs::path& b) {
  expect_same_tensors(a / "final.safetensors", b / "final.safetensors");
  const auto ca = checkpoint_dirs(a), cb = checkpoint_dirs(b);
  ASSERT_EQ(ca.size(), cb.size());
  ASSERT_FALSE(ca.empty());
  for (size_t i = 0; i < ca.size(); ++i)
    expect_same_tensors(ca[i] / "rank_0.safetensors", cb[i] / "rank_0.safetensors");
  expect_same_records(a, b);
}

// `device`: "" (the CPU) or a --device flag; the CUDA twins below run it on a device.
void expect_next_step_skip_as_every_step(const std::string& device) {
  ScopedTempDir dir("cli-nonfinite-next-skip");
  const std::string job = kJob + device + " --epochs 1 --lr 1e20 --set nonfinite=skip";
  for (const std::string& extra : {std::string(""), std::string(" --set accumulate_steps=2"),
                                   std::string(" --set checkpoint.every_steps=1")}) {
    const std::string now = dir.file("now"), next = dir.file("next");
    fs::remove_all(now);
    fs::remove_all(next);
    auto r = run_dplab(job + extra + " --set nonfinite_check=every_step --out " + now, dir.path);
    ASSERT_EQ(r.status, 0) << r.out << r.err;
    r = run_dplab(job + extra + " --set nonfinite_check=next_step --out " + next, dir.path);
    ASSERT_EQ(r.status, 0) << r.out << r.err;
    EXPECT_NE(r.err.find("dropped the step at global step 3 (nonfinite = skip): loss and at "
                         "least one gradient of global step 3 "),
              std::string::npos)
        << r.err;
    SCOPED_TRACE(extra);
    expect_same_run(now, next);
    EXPECT_EQ(read_metrics(fs::path(next) / "metrics.jsonl").back()["nonfinite_skipped_steps"],
              extra.find("accumulate") != std::string::npos ? 1 : 3);
  }
  // Stopped after 2 steps (one dropped) and resumed: 3 in all, as SkipCountSurvivesAResume.
  const std::string next = job + " --set nonfinite_check=next_step";
  auto r = run_dplab(next + " --max-steps 2 --out " + dir.file("resumed"), dir.path);
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  r = run_dplab(next + " --resume " + dir.file("resumed") + " --out " + dir.file("resumed"),
                dir.path);
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_EQ(read_metrics(dir.path / "resumed" / "metrics.jsonl").back()["nonfinite_skipped_steps"],
            3);
  expect_same_tensors(dir.path / "resumed" / "final.safetensors",
                      dir.path / "now" / "final.safetensors");
}

TEST(CliFaults, NextStepCheckSkipsOnTheDeviceAsEveryStepDoes) {
  expect_next_step_skip_as_every_step("");
}

// The CUDA twin: the device drops the steps itself (the kernels' skip flags, the metric slots'
// flags), the same run as every_step on that device. Named DeviceTrain.Cuda* so the CUDA gate
// and the device kit take it (tests/tools/CMakeLists.txt).
TEST(DeviceTrain, CudaNextStepSkipIsEveryStepsRun) {
  DPLAB_CUDA_TEST_GATE();
  expect_next_step_skip_as_every_step(" --device cuda");
}

// A run resumed from its mid-epoch checkpoint (after step 2 of 4) writes the uninterrupted run's
// epoch record and model: the checkpoint holds the epoch's loss and accuracy sums so far. On a
// device they live in the metric slots until read back (StepMetrics), so the checkpoint reads
// them first; with progress off nothing else would have before it.
void expect_mid_epoch_resume_keeps_the_epoch_record(const std::string& device) {
  ScopedTempDir dir("cli-mid-epoch-resume");
  const std::string job = kJob + device + " --epochs 1 --set checkpoint.every_steps=2";
  auto r = run_dplab(job + " --out " + dir.file("full"), dir.path);
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  const auto dirs = checkpoint_dirs(dir.path / "full");
  ASSERT_EQ(dirs.size(), 2u);  // after step 2 and at the epoch's end
  r = run_dplab(job + " --resume " + dirs.front().string() + " --out " + dir.file("resumed"),
                dir.path);
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  const auto full = read_metrics(dir.path / "full" / "metrics.jsonl");
  const auto resumed = read_metrics(dir.path / "resumed" / "metrics.jsonl");
  ASSERT_FALSE(full.empty());
  ASSERT_FALSE(resumed.empty());
  for (const char* k : {"loss", "train_acc", "test_loss", "test_acc"})
    EXPECT_EQ(resumed.back()[k], full.back()[k]) << k;
  expect_same_tensors(dir.path / "full" / "final.safetensors",
                      dir.path / "resumed" / "final.safetensors");
}

TEST(CliFaults, MidEpochResumeKeepsTheEpochRecord) {
  expect_mid_epoch_resume_keeps_the_epoch_record("");
}

TEST(DeviceTrain, CudaMidEpochResumeKeepsTheEpochRecord) {
  DPLAB_CUDA_TEST_GATE();
  expect_mid_epoch_resume_keeps_the_epoch_record(" --device cuda");
}

// Two ranks, each dropping the same (averaged) step on its device, as under every_step.
TEST(CliFaults, NextStepCheckSkipsTwoRanksAsEveryStepDoes) {
  ScopedTempDir dir("cli-nonfinite-next-skip-2");
  const std::string job = kJob + " --algo allreduce --epochs 1 --lr 1e20 --set nonfinite=skip";
  auto r = run_dplab2(job + " --set nonfinite_check=every_step --out " + dir.file("now"), dir.path);
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  r = run_dplab2(job + " --set nonfinite_check=next_step --out " + dir.file("next"), dir.path);
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  expect_same_run(dir.path / "now", dir.path / "next");
  EXPECT_EQ(read_metrics(dir.path / "next" / "metrics.jsonl").back()["nonfinite_skipped_steps"], 1);
}

// ---- pre-emption ----------------------------------------------------------------------------

// Long enough to be signalled in the middle of its first epoch: 2048 images, batches of 32,
// progress lines every 5% (the test waits for one before signalling).
const std::string kLong =
    "train --model mnist_cnn --data fashion-mnist --batch 32 --lr 0.01 --momentum 0.9 "
    "--threads 1 --epochs 2 --set data.train_limit=2048 --set data.test_limit=100 "
    "--set progress=lines --set progress.every_percent=5";

// Waits until the run's progress shows a step of epoch 1 done.
bool wait_for_progress(const test::Spawned& s) {
  return test::wait_until([&] { return slurp(s.err).find("epoch 1/2") != std::string::npos; }, 240);
}

void expect_same_final(const fs::path& a, const fs::path& b) {
  for (const char* f : {"final.safetensors", "final.state.safetensors"}) {
    if (std::string(f) != "final.safetensors" && !fs::exists(a / f)) continue;
    const std::string x = slurp(a / f), y = slurp(b / f);
    ASSERT_FALSE(x.empty()) << a / f;
    EXPECT_TRUE(x == y) << f << " differs between " << a << " and " << b;
  }
}

// The pre-empted run's last record, checked, and the checkpoint it names (returned: the
// argument for --resume): every file of it complete (it parses) and finite.
std::string expect_preempted_record(const fs::path& run) {
  auto m = read_metrics(run / "metrics.jsonl");
  if (m.empty()) {
    ADD_FAILURE() << "no metrics in " << run;
    return {};
  }
  EXPECT_EQ(m.back()["kind"], "preempted");
  const std::string ckpt = m.back().value("checkpoint", std::string());
  EXPECT_TRUE(fs::exists(ckpt)) << ckpt;
  const auto parts = checkpoint_parts(ckpt);
  EXPECT_FALSE(parts.empty());
  for (const fs::path& f : parts) {
    EXPECT_NO_THROW(load_safetensors(f.string())) << f;
    expect_finite(f);
  }
  return ckpt;
}

TEST(CliPreemption, SigtermCheckpointsAndResumesExactly) {
  ScopedTempDir dir("cli-preempt-1");
  auto r = run_dplab(kLong + " --out " + dir.file("straight"), dir.path);
  ASSERT_EQ(r.status, 0) << r.err;

  test::Spawned s = test::spawn(test::dplab_exe() + " " + kLong + " --out " + dir.file("cut"),
                                dir.path / "cut-log");
  ASSERT_TRUE(wait_for_progress(s)) << slurp(s.err);
  kill(s.pid, SIGTERM);
  ASSERT_EQ(test::wait_exit(s.pid, 240), 4) << slurp(s.err);
  EXPECT_NE(slurp(s.err).find("pre-empted (rank 0 received SIGTERM)"), std::string::npos)
      << slurp(s.err);
  const std::string ckpt = expect_preempted_record(dir.path / "cut");
  EXPECT_FALSE(fs::exists(dir.path / "cut" / "final.safetensors"));

  r = run_dplab(kLong + " --resume " + ckpt + " --out " + dir.file("cut"), dir.path);
  ASSERT_EQ(r.status, 0) << r.err;
  expect_same_final(dir.path / "straight", dir.path / "cut");
}

// A signal to one rank only (rank 1, by its pid): both ranks stop at the same step, rank 0
// writes the checkpoint, and the resumed 2-rank run ends bitwise where the uninterrupted one
// does.
TEST(CliPreemption, SignalOnOneRankStopsBothAndResumesExactly) {
  ScopedTempDir dir("cli-preempt-2");
  const std::string job = kLong + " --algo allreduce";
  auto r = run_dplab2(job + " --out " + dir.file("straight"), dir.path);
  ASSERT_EQ(r.status, 0) << r.err;

  const std::string cut = dir.file("cut");
  test::Spawned s =
      test::spawn(mpiexec2() + test::dplab_exe() + " " + job + " --out " + cut, dir.path / "log");
  ASSERT_TRUE(wait_for_progress(s)) << slurp(s.err);
  const auto rank1 = test::find_processes({test::dplab_exe(), cut}, "PMI_RANK=1");
  ASSERT_EQ(rank1.size(), 1u);
  kill(rank1[0], SIGUSR1);
  ASSERT_EQ(test::wait_exit(s.pid, 240), 4) << slurp(s.err);
  EXPECT_NE(slurp(s.err).find("pre-empted (rank 1 received SIGUSR1)"), std::string::npos)
      << slurp(s.err);
  const std::string ckpt = expect_preempted_record(cut);

  r = run_dplab2(job + " --resume " + ckpt + " --out " + cut, dir.path);
  ASSERT_EQ(r.status, 0) << r.err;
  expect_same_final(dir.path / "straight", cut);
}

// SIGTERM to mpiexec, as a batch system or a user would send it: mpiexec forwards it to every
// rank.
TEST(CliPreemption, SigtermToMpiexecReachesEveryRank) {
  ScopedTempDir dir("cli-preempt-mpiexec");
  const std::string cut = dir.file("cut");
  test::Spawned s =
      test::spawn(mpiexec2() + test::dplab_exe() + " " + kLong + " --algo allreduce --out " + cut,
                  dir.path / "log");
  ASSERT_TRUE(wait_for_progress(s)) << slurp(s.err);
  kill(s.pid, SIGTERM);
  // The ranks exit with 4; mpiexec's own status after it was signalled is hydra's choice: it
  // passed the ranks' 4 on in quiet runs and returned 0 in some runs on a loaded machine, so
  // the test reads what every rank did from the message and the record instead.
  const int status = test::wait_exit(s.pid, 240);
  EXPECT_TRUE(status == 4 || status == 0) << status << slurp(s.err);
  // Which ranks are listed depends on when each got the signal relative to the agreed step.
  EXPECT_NE(slurp(s.err).find(" received SIGTERM"), std::string::npos) << slurp(s.err);
  EXPECT_NE(slurp(s.err).find("(exit status 4)"), std::string::npos) << slurp(s.err);
  expect_preempted_record(cut);
}

// preempt.signals empty: the signal keeps its default action (the process dies, nothing saved).
TEST(CliPreemption, EmptySignalListLeavesDefaultActions) {
  ScopedTempDir dir("cli-preempt-off");
  test::Spawned s = test::spawn(
      test::dplab_exe() + " " + kLong + " --set preempt.signals= --out " + dir.file("run"),
      dir.path / "log");
  ASSERT_TRUE(wait_for_progress(s)) << slurp(s.err);
  kill(s.pid, SIGUSR1);
  EXPECT_EQ(test::wait_exit(s.pid, 240), 128 + SIGUSR1);
  EXPECT_TRUE(checkpoint_files(dir.path / "run").empty());
}

}  // namespace
}  // namespace dplab
