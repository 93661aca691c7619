// Checkpoints through the `dplab train` command (one process): one committed directory per
// checkpoint, checked on resume (manifest, sizes, CRC-32s, every loaded value), nothing left
// behind by a failed write, checkpoint.keep, the trajectory check with --resume-override, and
// --init-from. Multi-rank resume: test_resume_mpi.cpp.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "checkpoint_files.h"
#include "data/temp_dir.h"
#include "dplab/core/safetensors.h"
#include "run_cli.h"

namespace dplab {
namespace {

namespace fs = std::filesystem;
using test::entries;
using test::run_dplab;
using test::ScopedTempDir;
using test::slurp;

// 128 training images in batches of 32: 4 steps per epoch; a checkpoint after every step.
const std::string kTiny =
    "train --model mnist_cnn --data fashion-mnist --batch 32 --lr 0.01 --momentum 0.9 "
    "--threads 1 --set data.train_limit=128 --set data.test_limit=50 --set progress=off "
    "--set checkpoint.every_steps=1";

bool has(const std::string& text, const std::string& what) {
  return text.find(what) != std::string::npos;
}

TEST(Checkpoint, KeepLeavesTheNewestKAndNoTemporaries) {
  ScopedTempDir dir("ckpt-keep");
  auto r =
      run_dplab(kTiny + " --epochs 2 --set checkpoint.keep=2 --out " + dir.file("k2"), dir.path);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(entries(dir.path / "k2" / "checkpoints"),
            (std::vector<std::string>{"step_00000007", "step_00000008"}));
  EXPECT_EQ(entries(dir.path / "k2" / "checkpoints" / "step_00000008"),
            (std::vector<std::string>{"manifest.json", "rank_0.safetensors"}));
  // The default keeps 3 (documented in --help).
  r = run_dplab(kTiny + " --epochs 2 --max-steps 5 --out " + dir.file("kdef"), dir.path);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(entries(dir.path / "kdef" / "checkpoints"),
            (std::vector<std::string>{"step_00000003", "step_00000004", "step_00000005"}));
  r = run_dplab("train --help", dir.path);
  EXPECT_TRUE(has(r.out, "checkpoint.keep")) << r.out;
  EXPECT_TRUE(has(r.out, "checkpoint.every_steps")) << r.out;
  EXPECT_TRUE(has(r.out, "--resume-override")) << r.out;
  EXPECT_TRUE(has(r.out, "--init-from")) << r.out;
  EXPECT_TRUE(has(r.out, "[default: 3] [run]")) << r.out;  // checkpoint.keep: not trajectory
  // dplab eval takes a run directory: its newest checkpoint's model, which for algo local is
  // the final model, so the accuracy equals the one of final.safetensors.
  const std::string eval =
      "eval --model mnist_cnn --data fashion-mnist --threads 1 --set data.test_limit=50 "
      "--checkpoint ";
  auto a = run_dplab(eval + dir.file("kdef"), dir.path);
  auto b = run_dplab(eval + dir.file("kdef/final.safetensors"), dir.path);
  ASSERT_EQ(a.status, 0) << a.err;
  ASSERT_EQ(b.status, 0) << b.err;
  EXPECT_EQ(a.out, b.out);
}

TEST(Checkpoint, RefusesUncommittedTruncatedCorruptedOrMissingFilesNamingThem) {
  ScopedTempDir dir("ckpt-refuse");
  auto r = run_dplab(kTiny + " --max-steps 3 --out " + dir.file("run"), dir.path);
  ASSERT_EQ(r.status, 0) << r.err;
  const fs::path good = dir.path / "run" / "checkpoints" / "step_00000003";
  auto variant = [&](const std::string& name) {
    const fs::path v = dir.path / name;
    fs::copy(good, v, fs::copy_options::recursive);
    return v;
  };
  auto resume = [&](const fs::path& ckpt) {
    return run_dplab(kTiny + " --epochs 2 --resume " + ckpt.string(), dir.path);
  };
  const fs::path nomanifest = variant("nomanifest");
  fs::remove(nomanifest / "manifest.json");
  r = resume(nomanifest);
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(has(r.err, (nomanifest / "manifest.json").filename().string()) &&
              has(r.err, "never committed") && has(r.err, nomanifest.string()))
      << r.err;

  const fs::path truncated = variant("truncated");
  fs::resize_file(truncated / "rank_0.safetensors", fs::file_size(good / "rank_0.safetensors") - 7);
  r = resume(truncated);
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(has(r.err, (truncated / "rank_0.safetensors").string()) && has(r.err, "bytes"))
      << r.err;

  const fs::path corrupted = variant("corrupted");
  {
    std::fstream f(corrupted / "rank_0.safetensors",
                   std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(std::streamoff(fs::file_size(good / "rank_0.safetensors") / 2));
    f.put('\x5a');
  }
  r = resume(corrupted);
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(has(r.err, (corrupted / "rank_0.safetensors").string()) && has(r.err, "CRC-32"))
      << r.err;

  const fs::path missing = variant("missing");
  fs::remove(missing / "rank_0.safetensors");
  r = resume(missing);
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(has(r.err, (missing / "rank_0.safetensors").string()) && has(r.err, "missing"))
      << r.err;

  // A run directory: the newest valid checkpoint is taken, the ones skipped are reported.
  fs::remove(good / "manifest.json");
  fs::resize_file(good.parent_path() / "step_00000002" / "rank_0.safetensors", 100);
  r = run_dplab(kTiny + " --max-steps 4 --resume " + dir.file("run"), dir.path);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(has(r.out, "resumed from " + (good.parent_path() / "step_00000001").string()))
      << r.out;
  EXPECT_TRUE(has(r.err, "skipping " + good.string()) &&
              has(r.err, "skipping " + (good.parent_path() / "step_00000002").string()))
      << r.err;
  // A model file is not a checkpoint to resume.
  r = run_dplab(kTiny + " --resume " + dir.file("run/final.safetensors"), dir.path);
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(has(r.err, "--init-from")) << r.err;
}

TEST(Checkpoint, FailedWriteLeavesNoTemporariesAndKeepsCommittedOnes) {
  ScopedTempDir dir("ckpt-fail");
  auto r = run_dplab(kTiny + " --max-steps 2 --out " + dir.file("run"), dir.path);
  ASSERT_EQ(r.status, 0) << r.err;
  const auto before = test::tree(dir.path / "run" / "checkpoints");
  ASSERT_EQ(entries(dir.path / "run" / "checkpoints"),
            (std::vector<std::string>{"step_00000001", "step_00000002"}));
  // The write of step 3 fails after the rank file is written: nothing of it remains.
  const std::string cmd = "env DPLAB_CHECKPOINT_FAIL_RANK=0 " + test::dplab_exe() + " " + kTiny +
                          " --max-steps 4 --resume " + dir.file("run") + " --out " +
                          dir.file("run") + " >" + dir.file("o.txt") + " 2>" + dir.file("e.txt");
  const int rc = std::system(cmd.c_str());
  ASSERT_TRUE(WIFEXITED(rc)) << rc;
  EXPECT_EQ(WEXITSTATUS(rc), 1);
  const std::string err = slurp(dir.path / "e.txt");
  EXPECT_TRUE(has(err, "step_00000003") && has(err, "rank 0: injected failure") &&
              has(err, "nothing was committed"))
      << err;
  EXPECT_EQ(test::tree(dir.path / "run" / "checkpoints"), before);
  // The committed checkpoint still resumes.
  r = run_dplab(kTiny + " --max-steps 3 --resume " + dir.file("run"), dir.path);
  EXPECT_EQ(r.status, 0) << r.err;
  // An unwritable checkpoints location (a file in the way): an error, nothing created.
  fs::create_directories(dir.path / "blocked");
  std::ofstream(dir.file("blocked/checkpoints")) << "x";
  r = run_dplab(kTiny + " --max-steps 1 --out " + dir.file("blocked"), dir.path);
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(has(r.err, "checkpoint") && has(r.err, "nothing was committed")) << r.err;
  EXPECT_EQ(entries(dir.path / "blocked"),
            (std::vector<std::string>{".lock", "checkpoints", "metrics.jsonl", "run.json"}));
}

TEST(Checkpoint, ResumeRefusesChangedTrajectoryOptionsUnlessOverridden) {
  ScopedTempDir dir("ckpt-options");
  auto r = run_dplab(kTiny + " --nesterov --max-steps 2 --out " + dir.file("run"), dir.path);
  ASSERT_EQ(r.status, 0) << r.err;
  // Resuming without --nesterov would silently change the run.
  r = run_dplab(kTiny + " --max-steps 3 --resume " + dir.file("run"), dir.path);
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(has(r.err, "option nesterov was 'true' in the checkpointed run, now 'false'"))
      << r.err;
  r = run_dplab(kTiny + " --nesterov --set lr=0.02 --max-steps 3 --resume " + dir.file("run"),
                dir.path);
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(has(r.err, "option lr was '0.01' in the checkpointed run, now '0.02'")) << r.err;
  EXPECT_TRUE(has(r.err, "--resume-override")) << r.err;
  // A schedule key that was only defaulted before is compared too.
  r = run_dplab(
      kTiny + " --nesterov --set lr.schedule=cosine --max-steps 3 --resume " + dir.file("run"),
      dir.path);
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(has(r.err,
                  "option lr.schedule was 'constant' in the checkpointed run, now "
                  "'cosine'"))
      << r.err;
  // Allowed explicitly: runs and says so.
  r = run_dplab(kTiny + " --nesterov --set lr=0.02 --resume-override lr --max-steps 3 --resume " +
                    dir.file("run"),
                dir.path);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(has(r.out, "option lr was '0.01' in the checkpointed run, now '0.02' (allowed"))
      << r.out;
  // Keys that do not change the trajectory may change freely.
  r = run_dplab(kTiny +
                    " --nesterov --set threads=2 --set eval.batch=7 --set data.test_limit=20 "
                    "--max-steps 3 --resume " +
                    dir.file("run"),
                dir.path);
  EXPECT_EQ(r.status, 0) << r.err;
  // --resume and --init-from exclude each other: a usage error (exit status 2).
  r = run_dplab(kTiny + " --resume " + dir.file("run") + " --init-from " + dir.file("run"),
                dir.path);
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(has(r.err, "init_from")) << r.err;
}

// The loss scaler (amp = f16) and the plateau schedule's detector are checkpointed too: resumed
// from the middle of the first epoch and from the epoch boundary, the run ends with the same
// bytes as the uninterrupted one.
TEST(Checkpoint, LossScalerAndPlateauScheduleResumeBitwise) {
  ScopedTempDir dir("ckpt-amp");
  const std::string job = kTiny +
                          " --epochs 3 --set amp=f16 --set lr.schedule=plateau --set lr.patience=0 "
                          "--set lr.threshold=0.5";
  auto r = run_dplab(job + " --out " + dir.file("straight"), dir.path);
  ASSERT_EQ(r.status, 0) << r.err;
  r = run_dplab(job + " --max-steps 6 --out " + dir.file("part"), dir.path);
  ASSERT_EQ(r.status, 0) << r.err;
  for (const char* from : {"part/checkpoints/step_00000004", "part"}) {
    const std::string out = dir.file(std::string("from_") + (from[4] ? "4" : "6"));
    r = run_dplab(job + " --resume " + dir.file(from) + " --out " + out, dir.path);
    ASSERT_EQ(r.status, 0) << r.err;
    const std::string a = slurp(dir.path / "straight" / "final.safetensors"),
                      b = slurp(fs::path(out) / "final.safetensors");
    ASSERT_FALSE(a.empty());
    EXPECT_TRUE(a == b) << "final.safetensors differs after resuming from " << from;
    const char* ck = "checkpoints/step_00000012/rank_0.safetensors";
    EXPECT_EQ(test::state_difference(dir.path / "straight" / ck, fs::path(out) / ck), "")
        << ck << " after resuming from " << from;
  }
  // The plateau detector did act (its factor fell), so its state mattered.
  std::map<std::string, std::string> meta;
  load_safetensors(dir.file("straight/checkpoints/step_00000012/rank_0.safetensors"), &meta);
  EXPECT_NE(meta["schedule.plateau.factor"], "1") << meta["schedule.plateau.factor"];
  EXPECT_TRUE(meta.count("schedule.plateau.best"));
}

// Tensors of a model file by name (the metadata differs between runs).
std::map<std::string, std::string> tensor_bytes(const fs::path& f) {
  std::map<std::string, std::string> r;
  for (const auto& nt : load_safetensors(f.string()))
    r[nt.name] = std::string(static_cast<const char*>(nt.tensor.raw_data()), nt.tensor.nbytes());
  return r;
}

TEST(Checkpoint, InitFromTakesTheWeightsOnly) {
  ScopedTempDir dir("ckpt-init");
  auto r = run_dplab(kTiny + " --epochs 1 --out " + dir.file("a"), dir.path);
  ASSERT_EQ(r.status, 0) << r.err;
  // lr 0: the weights never move, so the new run's final weights are the loaded ones.
  r = run_dplab(
      kTiny + " --set lr=0 --epochs 1 --init-from " + dir.file("a") + " --out " + dir.file("b"),
      dir.path);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(tensor_bytes(dir.path / "b" / "final.safetensors"),
            tensor_bytes(dir.path / "a" / "final.safetensors"));
  // ...and without --init-from they are the fresh initialisation, which differs.
  r = run_dplab(kTiny + " --set lr=0 --epochs 1 --out " + dir.file("c"), dir.path);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(tensor_bytes(dir.path / "c" / "final.safetensors"),
            tensor_bytes(dir.path / "a" / "final.safetensors"));
  // A fresh loop and optimizer: one epoch is 4 steps from 0 (not 8), and the optimizer has
  // taken 4 steps.
  const fs::path ck = dir.path / "b" / "checkpoints" / "step_00000004";
  ASSERT_TRUE(fs::exists(ck / "manifest.json"));
  std::map<std::string, std::string> meta;
  for (const auto& nt : load_safetensors((ck / "rank_0.safetensors").string(), &meta))
    if (nt.name == "optim.steps") {
      EXPECT_EQ(nt.tensor.to_vector_i64(), std::vector<int64_t>{4});
    }
  EXPECT_EQ(meta["loop.global_step"], "4");
  EXPECT_TRUE(has(slurp(ck / "manifest.json"), dir.file("a"))) << "init_from not recorded";
  // Weights of a model file work too (the same weights as a's run directory).
  r = run_dplab(kTiny + " --set lr=0 --epochs 1 --init-from " + dir.file("a/final.safetensors") +
                    " --out " + dir.file("d"),
                dir.path);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(tensor_bytes(dir.path / "d" / "final.safetensors"),
            tensor_bytes(dir.path / "a" / "final.safetensors"));
}

// Values behind a valid manifest are checked too: a negative step_in_epoch crashed the loader
// (SIGSEGV in BatchLoader::make_batch) before; now it is an error naming the file and key.
TEST(Checkpoint, LoadedValuesAreValidatedNamingFileAndKey) {
  ScopedTempDir dir("ckpt-values");
  auto r = run_dplab(kTiny + " --max-steps 2 --out " + dir.file("run"), dir.path);
  ASSERT_EQ(r.status, 0) << r.err;
  const fs::path good = dir.path / "run" / "checkpoints" / "step_00000002";
  struct Case {
    std::map<std::string, std::string> values;
    std::string expect;
  };
  const std::vector<Case> cases = {
      {{{"loop.step_in_epoch", "-3"}}, "state value 'loop.step_in_epoch' = -3"},
      {{{"loop.step_in_epoch", "4"}}, "state value 'loop.step_in_epoch' = 4: expected 0 to 3"},
      {{{"loop.epoch", "-1"}}, "state value 'loop.epoch' = -1"},
      {{{"loop.global_step", "5"}}, "state value 'loop.global_step' = 5"},
      {{{"loop.epoch_correct", "999"}}, "state value 'loop.epoch_correct' = 999"},
      {{{"loop.step_in_epoch", "x"}},
       "state value 'loop.step_in_epoch' = 'x': expected an integer"},
  };
  int i = 0;
  for (const auto& c : cases) {
    const fs::path bad = dir.path / fmt::format("bad{}", i++);
    fs::copy(good, bad, fs::copy_options::recursive);
    test::set_rank_values(bad, 0, c.values);
    r = run_dplab(kTiny + " --epochs 2 --resume " + bad.string(), dir.path);
    EXPECT_EQ(r.status, 1) << c.expect << "\n" << r.err;  // an error, not a crash
    EXPECT_TRUE(has(r.err, (bad / "rank_0.safetensors").string()) && has(r.err, c.expect))
        << c.expect << "\n"
        << r.err;
  }
}

}  // namespace
}  // namespace dplab
