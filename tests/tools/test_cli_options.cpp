// Every option key is reachable from help: `dplab options [PREFIX]`, `dplab train --help`
// (grouped by area) and `dplab train --algo NAME --help`. The reference list of keys is taken
// from the sources themselves (every literal key read through Options), not from the table.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <regex>
#include <set>

#include "data/temp_dir.h"
#include "run_cli.h"

namespace dplab {
namespace {

namespace fs = std::filesystem;
using test::run_dplab;
using test::ScopedTempDir;

#define EXPECT_HAS(text, what) EXPECT_NE((text).find(what), std::string::npos) << (text)
#define ASSERT_HAS(text, what) ASSERT_NE((text).find(what), std::string::npos) << (text)
#define EXPECT_LACKS(text, what) EXPECT_EQ((text).find(what), std::string::npos) << (text)

// The library's and the training driver's sources (.cpp and .h under comm, optim, train,
// models, data, layers, core), each as its path and text.
std::vector<std::pair<std::string, std::string>> library_sources() {
  const char* src = std::getenv("DPLAB_SOURCE_DIR");
  EXPECT_NE(src, nullptr);
  std::vector<std::pair<std::string, std::string>> files;
  if (!src) return files;
  for (const char* dir : {"comm", "optim", "train", "models", "data", "layers", "core"})
    for (const auto& e : fs::recursive_directory_iterator(fs::path(src) / dir)) {
      const std::string ext = e.path().extension().string();
      if (ext == ".cpp" || ext == ".h")
        files.emplace_back(e.path().lexically_relative(src).string(), test::slurp(e.path()));
    }
  return files;
}

// Keys read with a literal name: opt.get_int("k", ..), a declaration table's
// t.get_int(opt, "k") (core/option_decl.h), the driver's get(opt, "k") helpers and the link
// shorthand's link_option(opt, "k"). Only `dplab eval` reads "checkpoint".
std::set<std::string> keys_read_in_sources() {
  const std::regex pat(
      R"re(\bopt\.(?:get_int|get_double|get_string|get_bool|require_string)\("([^"]+)"|\b(?:get(?:_int|_double|_bool|_string)?|link_option)\(opt, "([^"]+)")re");
  std::set<std::string> keys;
  for (const auto& [path, text] : library_sources())
    for (std::sregex_iterator m(text.begin(), text.end(), pat), end; m != end; ++m)
      keys.insert((*m)[1].matched ? (*m)[1].str() : (*m)[2].str());
  keys.erase("checkpoint");
  return keys;
}

TEST(CliOptions, EveryKeyReadInTheSourcesIsInTheTableAndInTrainHelp) {
  ScopedTempDir dir("cli-options-all");
  const std::set<std::string> read = keys_read_in_sources();
  ASSERT_GT(read.size(), 80u);  // the scan found the algorithms' keys (daso.*, hybrid.*, ...)
  ASSERT_TRUE(read.count("daso.B_max") && read.count("lr.milestones") &&
              read.count("comm.timeout_s") && read.count("link.inter"));
  const auto json = run_dplab("options --json", dir.path);
  ASSERT_EQ(json.status, 0) << json.err;
  std::set<std::string> table;
  for (const auto& k : nlohmann::json::parse(json.out)) {
    table.insert(k["key"].get<std::string>());
    EXPECT_FALSE(k["help"].get<std::string>().empty()) << k.dump();
  }
  for (const auto& k : read) EXPECT_TRUE(table.count(k)) << k << " is read but not documented";
  const auto help = run_dplab("train --help", dir.path);
  ASSERT_EQ(help.status, 0) << help.err;
  for (const auto& k : table) EXPECT_HAS(help.out, "  " + k + " ") << " lacks " << k;
  for (const char* area : {"\nrun:\n", "\ndata:\n", "\noptimizer:\n", "\nschedule:\n",
                           "\ncheckpoint:\n", "\ncomm:\n", "\ndaso:\n", "\nhybrid:\n"})
    EXPECT_HAS(help.out, area);
}

// Each option is declared once (issue #35): no reader passes a default of its own for a key the
// table declares (opt.get_int("daso.B_max", 4)); it reads through the declaration instead
// (t.get_int(opt, "daso.B_max")), which holds the default, the range and the help. A reader
// naming the key of another layer's declaration reads through that table too.
TEST(CliOptions, NoReaderRepeatsADeclaredDefault) {
  ScopedTempDir dir("cli-options-once");
  const auto json = run_dplab("options --json", dir.path);
  ASSERT_EQ(json.status, 0) << json.err;
  std::set<std::string> declared;
  for (const auto& k : nlohmann::json::parse(json.out))
    declared.insert(k["key"].get<std::string>());
  ASSERT_TRUE(declared.count("daso.B_max") && declared.count("epochs"));
  const std::regex pat(R"re(\bopt\.get_(?:int|double|string|bool)\("([^"]+)",)re");
  size_t files = 0;
  for (const auto& [path, text] : library_sources()) {
    ++files;
    for (std::sregex_iterator m(text.begin(), text.end(), pat), end; m != end; ++m) {
      const std::string key = (*m)[1].str();
      const size_t line = 1 + std::count(text.begin(), text.begin() + m->position(), '\n');
      EXPECT_FALSE(declared.count(key))
          << path << ":" << line << ": reads declared option " << key
          << " with a default of its own; read it through its declaration's table";
    }
  }
  EXPECT_GT(files, 200u);  // the scan saw the sources
}

TEST(CliOptions, PrefixSelectsAnAlgorithmsKeys) {
  ScopedTempDir dir("cli-options-daso");
  auto r = run_dplab("options daso", dir.path);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_HAS(r.out, "daso.B_max");
  EXPECT_HAS(r.out, "[default: 4]");  // DasoConfig's B_max (comm/algorithms/daso.h)
  EXPECT_HAS(r.out, "daso.local.bucket_cap_mb");
  EXPECT_LACKS(r.out, "hybrid.W");
  EXPECT_LACKS(r.out, "\nlr ");
  r = run_dplab("options lr.", dir.path);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_HAS(r.out, "lr.milestones");
  EXPECT_HAS(r.out, "30,60,80");
  r = run_dplab("options nosuchthing", dir.path);
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_HAS(r.err, "no option key, area or built-in name starts with 'nosuchthing'");
  EXPECT_HAS(r.err,
             "an experiment binary's own algorithm, model or data set: that binary's "
             "--help lists it");
}

// `dplab options ALGO` (the unknown-key error's advice) lists every key that algorithm reads,
// those of the areas it shares too, for every built-in algorithm.
TEST(CliOptions, AnAlgorithmsNameListsEveryKeyItReads) {
  ScopedTempDir dir("cli-options-algorithm");
  auto r = run_dplab("options post_local_sgd", dir.path);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_HAS(r.out, "algorithm post_local_sgd reads these option keys");
  for (const char* k :
       {"post_local_sgd.switch_epoch", "local_sgd.H", "allreduce.bucket_cap_mb", "allreduce.wire"})
    EXPECT_HAS(r.out, "  " + std::string(k) + " ");
  EXPECT_LACKS(r.out, "daso.B_max");
  EXPECT_HAS(r.out, "post_local_sgd   allreduce SGD, then local SGD");  // its entry
  r = run_dplab("options local", dir.path);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_HAS(r.out, "algorithm local reads no option keys of its own");
  EXPECT_LACKS(r.out, "local_sgd.H");  // local_sgd's, not local's
  r = run_dplab("options local_sgd", dir.path);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_HAS(r.out, "  local_sgd.H ");
  EXPECT_LACKS(r.out, "post_local_sgd.switch_epoch");  // plain local SGD never reads it
  const auto help = run_dplab("train --help", dir.path);
  ASSERT_EQ(help.status, 0);
  const std::string algos = help.out.substr(help.out.find("algorithms (option algo):"));
  for (const char* algo : {"allreduce", "hybrid", "daso", "dcs3gd", "crossover", "sgp", "oscars",
                           "diloco", "slowmo", "streaming_diloco"}) {
    ASSERT_HAS(algos, std::string("\n  ") + algo + " ");
    r = run_dplab(std::string("options ") + algo, dir.path);
    EXPECT_EQ(r.status, 0) << algo << r.err;
    EXPECT_HAS(r.out, fmt::format("algorithm {} reads these option keys", algo));
    EXPECT_HAS(r.out, fmt::format("\n  {}.", algo));  // its own area's keys
  }
}

TEST(CliOptions, TrainHelpWithAnAlgorithmShowsItsKeysOnly) {
  ScopedTempDir dir("cli-options-algo-help");
  auto r = run_dplab("train --algo daso --help", dir.path);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_HAS(r.out, "daso.B_max");
  EXPECT_HAS(r.out, "comm.timeout_s");
  EXPECT_HAS(r.out, "lr.milestones");
  EXPECT_LACKS(r.out, "hybrid.W");
  EXPECT_LACKS(r.out, "dcs3gd.lambda0");
  for (const char* k : {"diloco.H", "slowmo.lr", "streaming_diloco.fragments"})
    EXPECT_LACKS(r.out, k);  // the later algorithms' areas are algorithms' areas too
  r = run_dplab("train --algo diloco --help", dir.path);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_HAS(r.out, "diloco.outer_lr");
  EXPECT_LACKS(r.out, "daso.B_max");
  r = run_dplab("train --algo=post_local_sgd --help", dir.path);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_HAS(r.out, "post_local_sgd.switch_epoch");
  EXPECT_HAS(r.out, "allreduce.bucket_cap_mb");  // its allreduce phase's buckets
  EXPECT_LACKS(r.out, "daso.B_max");
}

TEST(CliOptions, AlgorithmValuesAreCheckedBeforeTheRun) {
  ScopedTempDir dir("cli-options-values");
  auto r = run_dplab("train --algo daso --set daso.B_max=0", dir.path);
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_HAS(r.err, "option daso.B_max: expected an integer >= 1, got '0'");
  r = run_dplab("train --algo daso --set daso.S_reduction=halv", dir.path);
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_HAS(r.err, "did you mean 'halve'?");
  // An unknown key's error says where the keys are listed.
  r = run_dplab(
      "train --max-steps 1 --threads 1 --set data.train_limit=64 --set "
      "data.test_limit=10 --set progress=off --set daso.Bmax=3",
      dir.path);
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_HAS(r.err, "daso.Bmax (did you mean 'daso.B_max'?)");
  EXPECT_HAS(r.err, "dplab options");
}

// Every GradSync's keys have allreduce's rules (issue #35: hybrid's, DASO's node-local and
// Crossover's group buckets once exited 1 from inside GradSync, on every rank).
TEST(CliOptions, EveryGradSyncPrefixChecksItsBucketsAndWire) {
  ScopedTempDir dir("cli-options-grad-sync");
  for (const std::string p : {"allreduce.", "hybrid.", "daso.local.", "crossover.sync."}) {
    for (const std::string k : {"first_bucket_mb", "bucket_cap_mb"}) {
      const auto r = run_dplab("train --set " + p + k + "=-1", dir.path);
      EXPECT_EQ(r.status, 2) << p << k << ": " << r.err;
      EXPECT_HAS(r.err, "option " + p + k + ": expected a number >= 0, got '-1'");
    }
    const auto r = run_dplab("train --set " + p + "wire=f8", dir.path);
    EXPECT_EQ(r.status, 2) << p << "wire: " << r.err;
    EXPECT_HAS(r.err, "option " + p + "wire: unknown value 'f8'");
  }
}

}  // namespace
}  // namespace dplab
