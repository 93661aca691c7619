// The registry as the source of help, value checks and capabilities (train/config/registry.h,
// registry_help.h, option_values.h): a registered name shows up with its help and keys; the
// built-in algorithms list their keys from the option table; an experiment's names are valid
// values of model/algo/optim/lr.schedule/data; accumulate_steps and the NCCL choice follow the
// entries' capabilities; every schedule entry, an experiment's too, takes the warm-up.
#include <gtest/gtest.h>

#include "common/harness.h"

#include <set>

#include "data/temp_dir.h"
#include "dplab/core/usage_error.h"
#include "dplab/train/config/option_values.h"
#include "dplab/train/config/registry.h"
#include "dplab/train/config/registry_help.h"
#include "run_cli.h"

namespace dplab {
namespace {

using test::usage_error_of;

#define EXPECT_HAS(text, what) EXPECT_NE((text).find(what), std::string::npos) << (text)
#define EXPECT_LACKS(text, what) EXPECT_EQ((text).find(what), std::string::npos) << (text)

struct Half : LrSchedule {
  double factor(int64_t, int64_t) const override { return 0.5; }
  std::string describe() const override { return "half"; }
};

Registry with_experiment_entries() {
  Registry r = Registry::with_builtins();
  r.add(StrategyEntry{
      "topk",
      "top-k with error feedback",
      {"topk.ratio"},
      [](std::shared_ptr<Topology>, const Options&) { return std::make_unique<LocalStrategy>(); }});
  r.add(ScheduleEntry{"half", "0.5 x lr", {}, [](const Options&, int64_t) {
                        return std::unique_ptr<LrSchedule>(std::make_unique<Half>());
                      }});
  return r;
}

TEST(RegistryHelp, ARegisteredNameShowsUpWithItsHelpAndKeys) {
  const std::string all = registry_reference(with_experiment_entries());
  EXPECT_HAS(all, "algorithms (option algo):\n");
  EXPECT_HAS(all, "  topk             top-k with error feedback [keys: topk.ratio]\n");
  EXPECT_HAS(all, "  half             0.5 x lr\n");
  EXPECT_HAS(all, "models (option model):\n");
  EXPECT_HAS(all, "  mnist_cnn ");
  EXPECT_HAS(all, "datasets (option data):\n");
  EXPECT_HAS(all, "  shards: ");
  EXPECT_HAS(all, "optimizers (option optim):\n");
  EXPECT_HAS(all, "  lars ");
  EXPECT_HAS(all, "schedules (option lr.schedule):\n");
  // The built-in registry does not have the experiment's names.
  EXPECT_LACKS(registry_reference(Registry::with_builtins()), "\n  topk ");
  // A prefix selects names, a kind or an option.
  const std::string topk = registry_reference(with_experiment_entries(), "top");
  EXPECT_HAS(topk, "topk");
  EXPECT_LACKS(topk, "allreduce");
  EXPECT_LACKS(topk, "models");
  const std::string lr = registry_reference(with_experiment_entries(), "lr.");
  EXPECT_HAS(lr, "schedules (option lr.schedule):\n");
  EXPECT_HAS(lr, "cosine");
  EXPECT_HAS(lr, "half");
  EXPECT_LACKS(lr, "algorithms");
  EXPECT_EQ(registry_reference(with_experiment_entries(), "zzz"), "");
}

TEST(RegistryHelp, BuiltinAlgorithmsListTheirKeysFromTheOptionTable) {
  const Registry r = Registry::with_builtins();
  auto keys = [&](const std::string& algo) {
    const auto& k = r.strategy(algo).keys;
    return std::set<std::string>(k.begin(), k.end());
  };
  // GradSync's bucket, wire, compression and reducer keys (docs/algorithms/compression.md,
  // comm/bucket_reducer.h).
  const std::set<std::string> allreduce = {"allreduce.first_bucket_mb",
                                           "allreduce.bucket_cap_mb",
                                           "allreduce.wire",
                                           "allreduce.hierarchical",
                                           "allreduce.compress",
                                           "allreduce.powersgd.rank",
                                           "allreduce.powersgd.start_step",
                                           "allreduce.powersgd.min_compression_rate",
                                           "allreduce.powersgd.warm_start",
                                           "allreduce.topk.ratio",
                                           "allreduce.reducer"};
  std::set<std::string> own = allreduce;
  own.insert("allreduce.ft");  // on fail events (docs/virtual_cluster.md, "Failures")
  EXPECT_EQ(keys("allreduce"), own);
  EXPECT_TRUE(keys("local").empty());
  std::set<std::string> post = allreduce;
  post.insert({"local_sgd.H", "local_sgd.round_spans_epochs", "post_local_sgd.switch_epoch"});
  EXPECT_EQ(keys("post_local_sgd"), post);
  post.erase("post_local_sgd.switch_epoch");
  EXPECT_EQ(keys("local_sgd"), post);
  EXPECT_TRUE(keys("daso").count("daso.B_max"));
  EXPECT_TRUE(keys("daso").count("daso.local.bucket_cap_mb"));
  EXPECT_FALSE(keys("daso").count("hybrid.W"));
  for (const StrategyEntry& e : r.strategies()) EXPECT_FALSE(e.help.empty()) << e.name;
}

TEST(RegistryCapabilities, AccumulationAndCommunicatorFollowTheEntry) {
  const Registry r = with_experiment_entries();
  EXPECT_NO_THROW(check_accumulation(r.strategy("local"), 4));
  EXPECT_NO_THROW(check_accumulation(r.strategy("allreduce"), 4));
  EXPECT_NO_THROW(check_accumulation(r.strategy("daso"), 1));
  for (const char* algo : {"daso", "hybrid", "topk"}) {
    const std::string m = usage_error_of([&] { check_accumulation(r.strategy(algo), 2); });
    EXPECT_HAS(m, "option accumulate_steps = 2");
    EXPECT_HAS(m, std::string("'") + algo + "'");
  }
  EXPECT_FALSE(uses_communicator(r.strategy("local")));
  EXPECT_TRUE(uses_communicator(r.strategy("allreduce")));
  EXPECT_TRUE(uses_communicator(r.strategy("topk")));  // an experiment's entry: the default
}

TEST(RegistryValues, NamesAreCheckedAgainstTheGivenRegistry) {
  const Registry mine = with_experiment_entries();
  Options o;
  o.set("algo", "topk");
  o.set("lr.schedule", "half");
  EXPECT_NO_THROW(check_option_values(o, mine));
  EXPECT_HAS(usage_error_of([&] { check_option_values(o, Registry::with_builtins()); }),
             "option algo: unknown value 'topk'");
  EXPECT_HAS(usage_error_of([&] { check_option_values(o); }), "option algo: unknown value 'topk'");
  o.set("algo", "topkk");
  EXPECT_HAS(usage_error_of([&] { check_option_values(o, mine); }), "did you mean 'topk'?");
  Options m;
  m.set("model", "resnet19");
  EXPECT_HAS(usage_error_of([&] { check_option_values(m, mine); }),
             "option model: unknown value 'resnet19' (did you mean 'resnet18'?)");
  Options opt;
  opt.set("optim", "adam");
  EXPECT_HAS(usage_error_of([&] { check_option_values(opt, mine); }), "option optim");
  Options b;  // the other keys keep their rules
  b.set("batch", "0");
  EXPECT_HAS(usage_error_of([&] { check_option_values(b, mine); }),
             "option batch: expected an integer >= 1, got '0'");
  // data: exact names and prefixes of this registry (no "*" entry here: nothing else matches).
  Registry csv;
  csv.add(DatasetEntry{
      "csv:", "a csv", {}, [](const std::string&, const Options&) { return TrainData{}; }});
  Options d;
  d.set("data", "csv:/tmp/x");
  EXPECT_NO_THROW(check_option_values(d, csv));
  d.set("data", "mnist");
  EXPECT_HAS(usage_error_of([&] { check_option_values(d, csv); }),
             "option data: unknown dataset 'mnist'");
}

// lr.warmup_epochs = 2, lr.warmup_start_factor = 0.1, 4 steps per epoch: the factor is the
// schedule's times 0.1 + 0.9 s / 8 for steps s < 8, the schedule's alone from step 8 on.
TEST(RegistryWarmup, EveryScheduleEntryTakesTheWarmup) {
  const Registry r = with_experiment_entries();
  Options o;
  o.set("lr.warmup_epochs", "2");
  o.set("lr.warmup_start_factor", "0.1");
  const auto half = r.schedule("half").make(o, 10);
  EXPECT_DOUBLE_EQ(half->factor(0, 4), 0.05);     // 0.5 x 0.1
  EXPECT_DOUBLE_EQ(half->factor(4, 4), 0.275);    // 0.5 x (0.1 + 0.45)
  EXPECT_DOUBLE_EQ(half->factor(7, 4), 0.44375);  // 0.5 x (0.1 + 0.7875)
  EXPECT_DOUBLE_EQ(half->factor(8, 4), 0.5);
  EXPECT_DOUBLE_EQ(half->factor(100, 4), 0.5);
  // A built-in schedule is wrapped once, not twice: step (size 1, gamma 0.5) with the warm-up.
  o.set("lr.schedule", "step");
  o.set("lr.step_size", "1");
  o.set("lr.gamma", "0.5");
  const auto step = r.schedule("step").make(o, 10);
  EXPECT_DOUBLE_EQ(step->factor(0, 4), 0.1);
  EXPECT_DOUBLE_EQ(step->factor(2, 4), 0.1 + 0.9 * 2 / 8);          // epoch 0: 1 x ramp
  EXPECT_DOUBLE_EQ(step->factor(6, 4), 0.5 * (0.1 + 0.9 * 6 / 8));  // epoch 1: 0.5 x ramp
  EXPECT_DOUBLE_EQ(step->factor(8, 4), 0.25);                       // epoch 2, warm-up over
  const std::string d = step->describe();
  EXPECT_EQ(d.find("warmup"), d.rfind("warmup")) << d;
  // Without lr.warmup_epochs the entry's own schedule.
  EXPECT_DOUBLE_EQ(r.schedule("half").make(Options{}, 10)->factor(0, 4), 0.5);
}

TEST(RegistryHelp, CliListsTheRegistrysNames) {
  test::ScopedTempDir dir("cli-registry-help");
  auto r = test::run_dplab("options algo", dir.path);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_HAS(r.out, "algorithms (option algo):\n");
  EXPECT_HAS(r.out, "  daso ");
  EXPECT_HAS(r.out, "daso.B_max");
  r = test::run_dplab("options", dir.path);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_HAS(r.out, "models (option model):\n  mnist_cnn ");
  EXPECT_HAS(r.out, "schedules (option lr.schedule):\n");
  r = test::run_dplab("train --help", dir.path);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_HAS(r.out, "optimizers (option optim):\n");
  EXPECT_HAS(r.out, "  lars ");
}

}  // namespace
}  // namespace dplab
