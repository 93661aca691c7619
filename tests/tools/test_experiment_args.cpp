// An experiment binary's command line (train/config/train_flags.h, experiment_main.h): option
// keys as KEY=VALUE, --set KEY=VALUE and dplab train's flags, in order; the errors name the
// forms it takes. And the unknown-key message names where the keys are listed: `dplab options
// ALGO` for a built-in algorithm (which then lists them), the keys themselves for an
// experiment's own algorithm, which `dplab options` does not know.
#include <gtest/gtest.h>

#include <filesystem>

#include "data/temp_dir.h"
#include "dplab/core/usage_error.h"
#include "dplab/train/config/config.h"
#include "dplab/train/config/registry.h"
#include "dplab/train/config/train_flags.h"
#include "run_cli.h"

namespace dplab {
namespace {

using test::run_dplab;
using test::ScopedTempDir;

#define EXPECT_HAS(text, what) EXPECT_NE((text).find(what), std::string::npos) << (text)
#define EXPECT_LACKS(text, what) EXPECT_EQ((text).find(what), std::string::npos) << (text)

Options parsed(const std::vector<std::string>& args) {
  Options o;
  apply_experiment_args(args, o, "exp");
  return o;
}

std::string error_of(const std::vector<std::string>& args) {
  try {
    parsed(args);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(ExperimentArgs, DplabTrainFlagsAndKeyValuesAreOneCommandLine) {
  const Options o = parsed({"--threads", "1", "--epochs=2", "--batch-size", "32", "--trace",
                            "--no-nesterov", "--set", "lr=0.5", "seed=7", "--wait", "spin",
                            "--set=momentum=0.8", "--out", "/tmp/x", "--max-steps", "3"});
  EXPECT_EQ(o.get_string("threads", ""), "1");
  EXPECT_EQ(o.get_string("epochs", ""), "2");
  EXPECT_EQ(o.get_string("batch", ""), "32");
  EXPECT_EQ(o.get_string("trace", ""), "true");
  EXPECT_EQ(o.get_string("nesterov", ""), "false");
  EXPECT_EQ(o.get_string("lr", ""), "0.5");
  EXPECT_EQ(o.get_string("seed", ""), "7");
  EXPECT_EQ(o.get_string("comm.wait", ""), "spin");
  EXPECT_EQ(o.get_string("momentum", ""), "0.8");
  EXPECT_EQ(o.get_string("out", ""), "/tmp/x");
  EXPECT_EQ(o.get_string("max_steps", ""), "3");
  // In order: the later argument wins, whatever its form.
  EXPECT_EQ(parsed({"threads=2", "--threads", "1"}).get_string("threads", ""), "1");
  EXPECT_EQ(parsed({"--threads", "1", "threads=3"}).get_string("threads", ""), "3");
  EXPECT_EQ(parsed({"--nesterov"}).get_string("nesterov", ""), "true");
}

TEST(ExperimentArgs, ErrorsNameTheFormsItTakes) {
  const std::string forms =
      "exp takes option keys as KEY=VALUE (threads=1), --set KEY=VALUE, or "
      "dplab train's flags (--threads 1";
  std::string e = error_of({"--threads"});
  EXPECT_HAS(e, "'--threads' needs a value (--threads VALUE)");
  EXPECT_HAS(e, forms);
  e = error_of({"--threads", "--epochs", "1"});
  EXPECT_HAS(e, "'--threads' needs a value");
  e = error_of({"--thread", "1"});
  EXPECT_HAS(e, "'--thread': not a flag of exp (give option keys as KEY=VALUE, e.g. thread=VALUE)");
  EXPECT_HAS(e, forms);
  e = error_of({"threads"});
  EXPECT_HAS(e, "argument 'threads': expected KEY=VALUE");
  EXPECT_HAS(e, forms);
  e = error_of({"--trace=false"});
  EXPECT_HAS(e,
             "'--trace=false' takes no value (it sets trace = true; another value: trace=VALUE)");
  EXPECT_HAS(error_of({"--set", "novalue"}), "--set 'novalue': expected KEY=VALUE");
}

// The table is dplab train's: every flag in it is in `dplab train --help`, setting its key.
TEST(ExperimentArgs, TheFlagsAreDplabTrains) {
  ScopedTempDir dir("experiment-flags-help");
  const auto r = run_dplab("train --help", dir.path);
  ASSERT_EQ(r.status, 0) << r.err;
  for (const TrainFlag& f : train_flags()) {
    size_t at = 0;
    for (size_t comma; at <= f.names.size(); at = comma + 1) {
      comma = f.names.find(',', at);
      const std::string name = f.names.substr(at, comma - at);
      EXPECT_HAS(r.out, name);
      if (comma == std::string::npos) break;
    }
    if (!f.is_switch) {
      EXPECT_HAS(r.out, "(option " + f.key + ")");
    }
  }
}

std::string experiment_exe() {
#ifdef DPLAB_TEST_EXPERIMENT_PATH
  return DPLAB_TEST_EXPERIMENT_PATH;
#else
  return "";
#endif
}

test::CliResult run_experiment(const std::string& args, const std::filesystem::path& scratch) {
  std::filesystem::create_directories(scratch);
  const auto out = scratch / "stdout.txt", err = scratch / "stderr.txt";
  const std::string cmd =
      experiment_exe() + " " + args + " >" + out.string() + " 2>" + err.string();
  const int rc = std::system(cmd.c_str());
  test::CliResult r;
  r.status = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  r.out = test::slurp(out);
  r.err = test::slurp(err);
  return r;
}

const std::string kSmall =
    "--threads 1 --batch 64 --max-steps 1 data.train_limit=64 data.test_limit=10 progress=off";

// `./exp --threads 1` trains (it used to say "--set '--threads': expected KEY=VALUE").
TEST(ExperimentBinary, TakesDplabTrainsFlags) {
  if (!std::filesystem::exists(experiment_exe())) GTEST_SKIP() << "no experiment binary here";
  ScopedTempDir dir("experiment-binary-flags");
  auto r = run_experiment(kSmall + " --out " + dir.file("run"), dir.path / "o");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_HAS(r.out, "test accuracy:");
  EXPECT_TRUE(std::filesystem::exists(dir.path / "run" / "metrics.jsonl"));
  r = run_experiment("--threads", dir.path / "o");
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_HAS(r.err, "test_experiment: '--threads' needs a value (--threads VALUE)");
  EXPECT_LACKS(r.err, "--set '--threads'");
  r = run_experiment("--help", dir.path / "o");
  EXPECT_EQ(r.status, 0);
  EXPECT_HAS(r.out, "dplab train's flags (--threads 1");
}

// The unknown-key message of an experiment's own algorithm lists that algorithm's keys (dplab
// options does not know it); of a built-in one it names `dplab options ALGO`, which lists them.
TEST(ExperimentBinary, UnknownKeyMessagesPointWhereTheKeysAre) {
  if (!std::filesystem::exists(experiment_exe())) GTEST_SKIP() << "no experiment binary here";
  ScopedTempDir dir("experiment-binary-unknown");
  auto r = run_experiment(kSmall + " algo=own_local own_local.kk=3", dir.path / "o");
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_HAS(r.err, "unknown option own_local.kk (did you mean 'own_local.k'?)");
  EXPECT_HAS(r.err, "algorithm 'own_local' is this program's own and reads own_local.k");
  EXPECT_LACKS(r.err, "dplab options own_local");
  r = run_dplab("options own_local", dir.path / "o");
  EXPECT_EQ(r.status, 2);
  EXPECT_HAS(r.err, "that binary's --help lists it");

  r = run_experiment(kSmall + " algo=local local_sgd.HH=3", dir.path / "o");
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_HAS(r.err, "algorithm local's: dplab options local");
}

TEST(ExperimentArgs, UnknownKeyHintOfAnExperimentsAlgorithm) {
  Registry reg = Registry::with_builtins();
  StrategyEntry own = reg.strategy("local");
  own.name = "dpsgd";
  own.keys = {"dpsgd.neighbours", "dpsgd.interval"};
  reg.add(own);
  Options o;
  o.set("algo", "dpsgd");
  o.set("dpsgd.neighbors", "2");
  o.get_string("algo", "");
  o.get_int("dpsgd.interval", 1);
  std::string m;
  try {
    check_no_unknown_options(o, &reg);
  } catch (const UsageError& e) {
    m = e.what();
  }
  EXPECT_HAS(m, "unknown option dpsgd.neighbors");
  EXPECT_HAS(m,
             "algorithm 'dpsgd' is this program's own and reads dpsgd.neighbours, "
             "dpsgd.interval (its --help lists every name's keys); the driver's keys: dplab "
             "options");
  // A built-in algorithm: dplab options ALGO.
  Options b;
  b.set("algo", "post_local_sgd");
  b.set("local_sgd.HH", "2");
  b.get_string("algo", "");
  try {
    check_no_unknown_options(b, &reg);
  } catch (const UsageError& e) {
    m = e.what();
  }
  EXPECT_HAS(m,
             "every key: dplab options, algorithm post_local_sgd's: dplab options "
             "post_local_sgd");
}

}  // namespace
}  // namespace dplab
