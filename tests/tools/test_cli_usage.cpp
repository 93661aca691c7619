// The `dplab` command's usage errors: exit status 2 with a message naming the flag or option,
// the value and what is expected, "did you mean" by edit distance, PyTorch-style aliases,
// `dplab --version`, and usage errors under mpiexec printed once.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <fstream>

#include "data/temp_dir.h"
#include "dplab/core/suggest.h"
#include "run_cli.h"

namespace dplab {
namespace {

using test::run_dplab;
using test::ScopedTempDir;

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

#define EXPECT_HAS(text, what) EXPECT_NE((text).find(what), std::string::npos) << (text)
#define EXPECT_LACKS(text, what) EXPECT_EQ((text).find(what), std::string::npos) << (text)

TEST(Suggest, EditDistanceByHand) {
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);  // k->s, e->i, +g
  EXPECT_EQ(edit_distance("dasso", "daso"), 1u);
  EXPECT_EQ(edit_distance("ab", "ba"), 1u);  // a transposition is one edit
  EXPECT_EQ(edit_distance("daso.Bmax", "daso.B_max"), 1u);
  EXPECT_EQ(edit_distance("LR", "lr"), 0u);  // case-insensitive
  EXPECT_EQ(edit_distance("", "abc"), 3u);
}

TEST(Suggest, ClosestNameWithinTypoDistance) {
  const std::vector<std::string> algos = {"local", "allreduce", "hybrid", "daso", "dcs3gd"};
  EXPECT_EQ(closest_name("dasso", algos), "daso");
  EXPECT_EQ(closest_name("allredcue", algos), "allreduce");
  EXPECT_EQ(closest_name("sgd", algos), "");  // 3 edits from every name: no guess
  EXPECT_EQ(did_you_mean("hybird", algos), " (did you mean 'hybrid'?)");
  EXPECT_EQ(did_you_mean("zzzzzz", algos), "");
}

// Every value error: status 2, the option's name, the value and what was expected.
TEST(CliUsage, BadValuesExitWith2NamingOptionValueAndExpectation) {
  ScopedTempDir dir("cli-usage-values");
  struct Case {
    std::string args;
    std::vector<std::string> says;
  };
  const std::vector<Case> cases = {
      {"train --lr abc", {"dplab: error: --lr: option lr: expected a number >= 0, got 'abc'"}},
      {"train --batch 0", {"--batch", "'0'", "expected an integer >= 1"}},
      {"train --epochs 1.5", {"--epochs", "'1.5'", "expected an integer >= 1"}},
      {"train --model resnet19", {"unknown value 'resnet19'", "did you mean 'resnet18'?"}},
      {"train --algo dasso", {"unknown value 'dasso'", "did you mean 'daso'?", "allreduce"}},
      {"train --set batch=abc", {"option batch", "'abc'", "expected an integer >= 1"}},
      {"train --set label_smoothing=1.5", {"option label_smoothing", "in [0, 1]", "'1.5'"}},
      {"train --set amp=fp16", {"option amp", "'fp16'", "off, bf16 or f16"}},
      {"train --set lr.schedule=cosin", {"did you mean 'cosine'?"}},
      {"train --set nesterov=maybe", {"option nesterov", "expected true or false", "'maybe'"}},
      // PyTorch-style aliases reach the same options.
      {"train --batch-size 0", {"--batch", "expected an integer >= 1"}},
      {"train --weight-decay -1", {"option wd", "expected a number >= 0", "'-1'"}},
  };
  for (const Case& c : cases) {
    const auto r = run_dplab(c.args, dir.path);
    EXPECT_EQ(r.status, 2) << c.args << "\n" << r.err;
    for (const auto& s : c.says) EXPECT_HAS(r.err, s) << " for: " << c.args;
  }
}

TEST(CliUsage, FlagsAreTypedInHelp) {
  ScopedTempDir dir("cli-usage-help");
  const auto r = run_dplab("train --help", dir.path);
  ASSERT_EQ(r.status, 0) << r.err;
  for (const char* s : {"--epochs INT=1", "--batch,--batch-size INT=64", "--lr FLOAT=0.01",
                        "--wd,--weight-decay FLOAT=0", "--wait spin|backoff|auto=auto"})
    EXPECT_HAS(r.out, s);
  EXPECT_LACKS(r.out, "--epochs TEXT");
}

TEST(CliUsage, ConfigFileValuesAreCheckedLikeFlags) {
  ScopedTempDir dir("cli-usage-config");
  std::ofstream(dir.file("job.toml")) << "epochs = 1\n[data]\nworkers = -2\n";
  const auto r = run_dplab("train --config " + dir.file("job.toml"), dir.path);
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_HAS(r.err, "option data.workers: expected an integer >= 0, got '-2'");
}

TEST(CliUsage, UnknownFlagsAndCommandsGetTheNearestName) {
  ScopedTempDir dir("cli-usage-flags");
  auto r = run_dplab("train --batch-sise 32", dir.path);
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_HAS(r.err, "unknown flag --batch-sise for dplab train (did you mean '--batch-size'?)");
  r = run_dplab("train --epoch=3", dir.path);
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_HAS(r.err, "unknown flag --epoch for dplab train (did you mean '--epochs'?)");
  r = run_dplab("bench loader --wokers 1", dir.path);  // a nested command's flags
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_HAS(r.err, "unknown flag --wokers for dplab bench loader (did you mean '--workers'?)");
  r = run_dplab("trian --epochs 1", dir.path);
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_HAS(r.err, "unknown command 'trian' (did you mean 'train'?)");
  r = run_dplab("--verison", dir.path);
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_HAS(r.err, "unknown flag --verison (did you mean '--version'?)");
}

TEST(CliUsage, UnknownKeysGetTheNearestKey) {
  ScopedTempDir dir("cli-usage-keys");
  const auto r = run_dplab(
      "train --max-steps 1 --threads 1 --set data.train_limit=64 --set data.test_limit=10 "
      "--set progress=off --set data.wrokers=2 --set chekpoint.keep=1",
      dir.path);
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_HAS(r.err, "chekpoint.keep (did you mean 'checkpoint.keep'?)");
  EXPECT_HAS(r.err, "data.wrokers (did you mean 'data.workers'?)");
}

TEST(CliUsage, VersionNamesTheCommit) {
  ScopedTempDir dir("cli-usage-version");
  const auto r = run_dplab("--version", dir.path);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out.rfind("dplab 0.", 0), 0u) << r.out;
  EXPECT_HAS(r.out, "oneDNN: ");
  EXPECT_HAS(r.out, "MPI: ");
  // The commit is one of this repository's, asked of git here (the binary read it at build
  // time; later commits may have followed).
  const size_t at = r.out.find("(commit ");
  ASSERT_NE(at, std::string::npos) << r.out;
  const std::string hash = r.out.substr(at + 8, r.out.find_first_of(",)", at) - at - 8);
  const char* src = std::getenv("DPLAB_SOURCE_DIR");
  ASSERT_NE(src, nullptr);
  std::string type;
  if (FILE* p = popen(
          ("git -C '" + std::string(src) + "' cat-file -t '" + hash + "' 2>/dev/null").c_str(),
          "r")) {
    char buf[64] = {};
    if (std::fgets(buf, sizeof buf, p)) type = buf;
    const int rc = pclose(p);
    if (rc != 0 && type.empty()) type = "no git";  // not a checkout: then the commit is unknown
  }
  if (type == "no git")
    EXPECT_EQ(hash, "unknown");
  else {
    EXPECT_EQ(hash.size(), 40u) << hash;
    EXPECT_EQ(type, "commit\n") << hash;
  }
}

#ifdef DPLAB_MPIEXEC
// Every rank has the same command line: the error is printed once (rank 0's) and every rank
// exits 2 at once, whether CLI11 refused it before MPI started, the option check after, or the
// training driver once the algorithm's ranks exist.
TEST(CliUsage, UsageErrorsUnderMpiexecArePrintedOnceAndExit2) {
  ScopedTempDir dir("cli-usage-mpi");
  const std::string small =
      " --threads 1 --max-steps 1 --set data.train_limit=64 --set data.test_limit=10 "
      "--set progress=off";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"train --lr abc", "expected a number >= 0, got 'abc'"},
      {"train --set batch=0", "option batch: expected an integer >= 1, got '0'"},
      {"train --algo allreduce --set data.wrokers=1" + small, "did you mean 'data.workers'?"},
      {"train --algo local" + small,
       "this algorithm runs in one process, but the launcher "
       "started 2 ranks"},
  };
  for (const auto& [args, says] : cases) {
    const auto t0 = std::chrono::steady_clock::now();
    const auto r = test::run_dplab_mpi(2, args, dir.path);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_EQ(r.status, 2) << args << "\n" << r.err;
    EXPECT_EQ(count(r.err, says), 1u) << args << "\n" << r.err;
    EXPECT_EQ(count(r.err, "error"), 1u) << args << "\n" << r.err;
    EXPECT_LT(s, 60.0) << args;  // no rank waited for another
  }
}
#endif

}  // namespace
}  // namespace dplab
