// The `dplab` command end to end: help, exit statuses, metrics, eval, bitwise resume.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <sstream>

#include "checkpoint_files.h"
#include "data/temp_dir.h"
#include "run_cli.h"

namespace dplab {
namespace {

using test::run_dplab;
using test::ScopedTempDir;
using test::slurp;

// A small, fast job: 256 training images (4 steps of 64), 200 test images, 2 threads.
const std::string kSmall =
    "train --model mnist_cnn --data fashion-mnist --batch 64 --lr 0.01 --momentum 0.9 "
    "--nesterov --threads 2 --set data.train_limit=256 --set data.test_limit=200 "
    "--set progress=off";

std::vector<nlohmann::json> read_metrics(const std::filesystem::path& file) {
  std::vector<nlohmann::json> r;
  std::istringstream in(slurp(file));
  std::string line;
  while (std::getline(in, line)) r.push_back(nlohmann::json::parse(line));
  return r;
}

TEST(Cli, HelpExplainsFlagsWithDefaults) {
  ScopedTempDir dir("cli-help");
  auto r = run_dplab("train --help", dir.path);
  EXPECT_EQ(r.status, 0) << r.err;
  for (const char* s :
       {"--model",     "--data",     "--epochs",      "--batch", "--lr",
        "--momentum",  "--nesterov", "--wd",          "--seed",  "--threads",
        "--max-steps", "--set",      "--config",      "--out",   "--resume",
        "--algo",      "mnist_cnn",  "fashion-mnist", "0.01",    "data.train_limit"})
    EXPECT_NE(r.out.find(s), std::string::npos) << "help lacks " << s << "\n" << r.out;
  r = run_dplab("--help", dir.path);
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.out.find("eval"), std::string::npos);
}

TEST(Cli, UsageErrorsExitWith2) {
  ScopedTempDir dir("cli-usage");
  auto r = run_dplab("train --no-such-flag", dir.path);
  EXPECT_EQ(r.status, 2) << r.err;
  r = run_dplab("", dir.path);  // no subcommand
  EXPECT_EQ(r.status, 2) << r.err;
  r = run_dplab("train --set novalue", dir.path);
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_NE(r.err.find("--set 'novalue': expected KEY=VALUE"), std::string::npos) << r.err;
  r = run_dplab(kSmall + " --max-steps 1 --set optimizr.lr=3 --set data.wrokers=2", dir.path);
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_NE(r.err.find("unknown options data.wrokers (did you mean 'data.workers'?), optimizr.lr"),
            std::string::npos)
      << r.err;
  r = run_dplab("data fetch cifar10", dir.path);
  EXPECT_EQ(r.status, 2) << r.err;
}

TEST(Cli, RuntimeErrorsExitWith1WithoutATrace) {
  ScopedTempDir dir("cli-runtime");
  auto r = run_dplab(
      "eval --model mnist_cnn --data fashion-mnist --checkpoint " + dir.file("missing.safetensors"),
      dir.path);
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("dplab: error:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("missing.safetensors"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("terminate"), std::string::npos) << r.err;
  r = run_dplab(kSmall + " --max-steps 1 --set data.dir=" + dir.file("nowhere"), dir.path);
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("nowhere"), std::string::npos) << r.err;
}

TEST(Cli, TrainMaxStepsWritesMetricsAndCheckpoint) {
  ScopedTempDir dir("cli-train");
  auto r = run_dplab(kSmall + " --max-steps 3 --out " + dir.file("run"), dir.path);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("test accuracy:"), std::string::npos) << r.out;
  auto m = read_metrics(dir.path / "run" / "metrics.jsonl");
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[0]["kind"], "epoch");
  EXPECT_EQ(m[1]["kind"], "final");
  for (const auto& rec : m)
    for (const char* f : {"epoch", "loss", "train_acc", "test_acc"})
      EXPECT_TRUE(rec.contains(f)) << f << " missing in " << rec.dump();
  for (const char* f : {"images_per_s", "time_s", "elapsed_s", "comm_bytes", "comm_allreduces",
                        "comm_exposed_wait_s"})
    EXPECT_TRUE(m[0].contains(f)) << f << " missing in " << m[0].dump();
  // The final record's totals under their own names, never an epoch's (docs/metrics_schema.md).
  for (const char* f : {"total_images_per_s", "total_train_time_s", "total_time_s"})
    EXPECT_TRUE(m[1].contains(f)) << f << " missing in " << m[1].dump();
  for (const char* f : {"images_per_s", "time_s"})
    EXPECT_FALSE(m[1].contains(f)) << f << " in " << m[1].dump();
  for (const auto& rec : m)  // the old duplicates of comm_bytes, ... are gone
    for (const char* f : {"bytes_sent", "allreduces", "exposed_wait_s"})
      EXPECT_FALSE(rec.contains(f)) << f << " in " << rec.dump();
  EXPECT_EQ(m[0]["step"], 3);
  EXPECT_EQ(m[0]["complete"], false);
  for (const char* f : {"train_acc", "test_acc"}) {
    EXPECT_GE(m[1][f].get<double>(), 0.0);
    EXPECT_LE(m[1][f].get<double>(), 1.0);
  }
  EXPECT_GT(m[1]["loss"].get<double>(), 0.0);
  EXPECT_GT(m[1]["total_images_per_s"].get<double>(), 0.0);
  ASSERT_TRUE(std::filesystem::exists(dir.path / "run" / "final.safetensors"));
  // The checkpoint of the stop: one directory named for the global step, manifest last.
  ASSERT_TRUE(std::filesystem::exists(dir.path / "run" / "checkpoints" / "step_00000003" /
                                      "manifest.json"));
  ASSERT_TRUE(std::filesystem::exists(dir.path / "run" / "checkpoints" / "step_00000003" /
                                      "rank_0.safetensors"));

  // dplab eval on the checkpoint reproduces the final test accuracy.
  r = run_dplab(
      "eval --model mnist_cnn --data fashion-mnist --threads 2 --set "
      "data.test_limit=200 --checkpoint " +
          dir.file("run/final.safetensors"),
      dir.path);
  ASSERT_EQ(r.status, 0) << r.err;
  const double acc = m[1]["test_acc"].get<double>();
  EXPECT_NE(
      r.out.find(fmt::format("test accuracy: {:.4f} ({}/200)", acc, int(std::lround(acc * 200)))),
      std::string::npos)
      << r.out;
}

TEST(Cli, ConfigFileAndSetCompose) {
  ScopedTempDir dir("cli-config");
  std::ofstream(dir.file("job.toml")) << "model = \"mnist_cnn\"\nbatch = 32\nmax_steps = 2\n"
                                         "[data]\ntrain_limit = 100\ntest_limit = 50\n"
                                         "[lr]\nschedule = \"constant\"\n";
  auto r = run_dplab("train --config " + dir.file("job.toml") +
                         " --threads 2 --set progress=off --set batch=16 --out " + dir.file("run"),
                     dir.path);
  ASSERT_EQ(r.status, 0) << r.err;
  auto m = read_metrics(dir.path / "run" / "metrics.jsonl");
  ASSERT_FALSE(m.empty());
  EXPECT_EQ(m.back()["step"], 2);
  // A typo inside the file is reported with its dotted name.
  std::ofstream(dir.file("bad.toml")) << "max_steps = 1\n[data]\ntrain_limt = 100\n";
  r = run_dplab("train --config " + dir.file("bad.toml") + " --set progress=off", dir.path);
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("data.train_limt"), std::string::npos) << r.err;
  // A TOML syntax error names the file and line.
  std::ofstream(dir.file("syntax.toml")) << "batch = 32\nlr = = 1\n";
  r = run_dplab("train --config " + dir.file("syntax.toml"), dir.path);
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("syntax.toml:2"), std::string::npos) << r.err;
}

// Resume must be bitwise identical to an uninterrupted run: the final model has the same
// bytes, and the final checkpoint (8 iterations: step_00000008) the same weights, momentum
// buffers and step counters (every value but the measured wall time loop.elapsed_s).
void expect_same_files(const std::filesystem::path& a, const std::filesystem::path& b) {
  const std::string x = slurp(a / "final.safetensors"), y = slurp(b / "final.safetensors");
  ASSERT_FALSE(x.empty()) << a / "final.safetensors";
  EXPECT_TRUE(x == y) << "final.safetensors differs between " << a << " and " << b;
  const char* ck = "checkpoints/step_00000008/rank_0.safetensors";
  EXPECT_EQ(test::state_difference(a / ck, b / ck), "") << ck << ": " << a << " vs " << b;
}

TEST(Cli, ResumeAtEpochBoundaryIsBitwiseIdentical) {
  ScopedTempDir dir("cli-resume");
  auto r = run_dplab(kSmall + " --epochs 2 --out " + dir.file("straight"), dir.path);
  ASSERT_EQ(r.status, 0) << r.err;
  r = run_dplab(kSmall + " --epochs 1 --out " + dir.file("first"), dir.path);
  ASSERT_EQ(r.status, 0) << r.err;
  r = run_dplab(
      kSmall + " --epochs 2 --resume " + dir.file("first") + " --out " + dir.file("resumed"),
      dir.path);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("resumed from"), std::string::npos) << r.out;
  expect_same_files(dir.path / "straight", dir.path / "resumed");
  // And the first half really differs from the end (the test can fail).
  EXPECT_NE(slurp(dir.path / "first" / "final.safetensors"),
            slurp(dir.path / "straight" / "final.safetensors"));
}

TEST(Cli, ResumeMidEpochIsBitwiseIdentical) {
  ScopedTempDir dir("cli-resume-mid");
  auto r = run_dplab(kSmall + " --epochs 2 --out " + dir.file("straight"), dir.path);
  ASSERT_EQ(r.status, 0) << r.err;
  r = run_dplab(kSmall + " --epochs 2 --max-steps 6 --out " + dir.file("part"), dir.path);
  ASSERT_EQ(r.status, 0) << r.err;
  r = run_dplab(kSmall + " --epochs 2 --resume " + dir.file("part/checkpoints/step_00000006") +
                    " --out " + dir.file("resumed"),
                dir.path);
  ASSERT_EQ(r.status, 0) << r.err;
  expect_same_files(dir.path / "straight", dir.path / "resumed");
  // A changed batch size cannot resume (the data order would differ).
  r = run_dplab(kSmall + " --set batch=32 --epochs 2 --resume " + dir.file("part"), dir.path);
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("option batch was '64' in the checkpointed run, now '32'"),
            std::string::npos)
      << r.err;
}

}  // namespace
}  // namespace dplab
