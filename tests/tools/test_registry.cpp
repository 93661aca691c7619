// train/config/registry.h: the names the training driver resolves, extended by an experiment.
// Built-in entries build what the library's own factories build; unknown names are usage
// errors listing the known ones; an experiment's model and dataset go through the whole driver
// (checkpoints and a bitwise resume against an uninterrupted run).
#include <gtest/gtest.h>

#include "common/harness.h"

#include <sstream>

#include "data/temp_dir.h"
#include "dplab/core/safetensors.h"
#include "dplab/layers/flatten.h"
#include "dplab/layers/linear.h"
#include "dplab/layers/sequential.h"
#include "dplab/models/registry.h"
#include "dplab/optim/sgd.h"
#include "dplab/train/config/config.h"
#include "dplab/train/config/registry.h"
#include "dplab/train/loop/trainer.h"
#include "dplab/train/state/checkpoint.h"
#include "toy_registry.h"

namespace dplab {
namespace {

using test::usage_error_of;

using test::ScopedTempDir;
using test::toy_registry;
using test::ToyDataset;

bool has(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}
template <class Entry>
std::vector<std::string> names(const std::vector<Entry>& entries) {
  std::vector<std::string> r;
  for (const Entry& e : entries) r.push_back(e.name);
  return r;
}

TEST(Registry, BuiltinsNameWhatDplabTrainKnows) {
  const Registry r = Registry::with_builtins();
  for (const char* m : {"mnist_cnn", "resnet18", "resnet50_cifar"})
    EXPECT_TRUE(has(names(r.models()), m)) << m;
  for (const char* a : {"local", "allreduce", "daso", "sgp", "post_local_sgd", "diloco", "slowmo",
                        "streaming_diloco"})
    EXPECT_TRUE(has(names(r.strategies()), a)) << a;
  EXPECT_EQ(names(r.optimizers()), (std::vector<std::string>{"sgd", "lars", "adamw"}));
  EXPECT_EQ(names(r.schedules()), (std::vector<std::string>{"constant", "step", "multistep", "poly",
                                                            "cosine", "plateau"}));
  EXPECT_EQ(r.model("resnet18_cifar").input_shape, (Shape{3, 32, 32}));
  EXPECT_EQ(r.model("resnet18").num_classes, 1000);
  // Data specs: prefixes, and any other name is IDX data.
  EXPECT_EQ(r.dataset("shards:/x/train-*.tar").name, "shards:");
  EXPECT_EQ(r.dataset("folder:/imagenet").name, "folder:");
  EXPECT_EQ(r.dataset("fashion-mnist").name, "*");
}

TEST(Registry, BuiltinModelIsTheLibrarysModelBitwise) {
  const Registry r = Registry::with_builtins();
  auto a = r.make_model("mnist_cnn", ModelArgs{5, 10, false, nullptr});
  auto b = make_model("mnist_cnn", 5, 10);
  const auto pa = a->named_parameters(), pb = b->named_parameters();
  ASSERT_EQ(pa.size(), pb.size());
  for (size_t i = 0; i < pa.size(); ++i) {
    EXPECT_EQ(pa[i].name, pb[i].name);
    EXPECT_EQ(pa[i].tensor.to_vector(), pb[i].tensor.to_vector()) << pa[i].name;
  }
}

TEST(Registry, UnknownNamesAreUsageErrorsListingTheKnownOnes) {
  const Registry r = toy_registry();
  const std::string m = usage_error_of([&] { r.model("resnet19"); });
  EXPECT_NE(m.find("option model: unknown model 'resnet19'"), std::string::npos) << m;
  EXPECT_NE(m.find("toy_linear"), std::string::npos) << m;
  const std::string a = usage_error_of([&] { r.strategy("topk"); });
  EXPECT_NE(a.find("option algo: unknown algorithm 'topk'"), std::string::npos) << a;
  const std::string o = usage_error_of([&] { r.optimizer("adam"); });
  EXPECT_NE(o.find("option optim: unknown optimizer 'adam' (known: sgd, lars, adamw)"),
            std::string::npos)
      << o;
  const std::string s = usage_error_of([&] { r.schedule("linear"); });
  EXPECT_NE(s.find("option lr.schedule: unknown lr schedule 'linear'"), std::string::npos) << s;
  // Without a "*" entry, an unmatched data spec is unknown.
  Registry empty;
  const std::string d = usage_error_of([&] { empty.dataset("toy"); });
  EXPECT_NE(d.find("option data: unknown dataset 'toy'"), std::string::npos) << d;
}

TEST(Registry, AddingATakenNameThrows) {
  Registry r = Registry::with_builtins();
  EXPECT_THROW(r.add_model("mnist_cnn", {1, 28, 28}, 10,
                           [](int c) { return make_model("mnist_cnn", 0, c); }),
               Error);
  EXPECT_THROW(r.add(OptimizerEntry{"sgd", "", {}, nullptr}), Error);  // taken and no factory
  // Registries are values: an entry added to one is not in another.
  Registry other = Registry::with_builtins();
  r.add_model("mine", {1, 28, 28}, 10, [](int c) { return make_model("mnist_cnn", 0, c); });
  EXPECT_NO_THROW(r.model("mine"));
  EXPECT_THROW(other.model("mine"), UsageError);
}

TEST(Registry, AddedModelIsInitialisedFromTheSeed) {
  const Registry r = toy_registry();
  auto a = r.make_model("toy_linear", ModelArgs{3, -1, false, nullptr});
  auto b = r.make_model("toy_linear", ModelArgs{3, 2, false, nullptr});
  auto c = r.make_model("toy_linear", ModelArgs{4, 2, false, nullptr});
  const Tensor wa = a->named_parameters()[0].tensor, wb = b->named_parameters()[0].tensor,
               wc = c->named_parameters()[0].tensor;
  EXPECT_EQ(wa.shape(), (Shape{2, 32}));  // -1: the entry's 2 classes
  EXPECT_EQ(wa.to_vector(), wb.to_vector());
  EXPECT_NE(wa.to_vector(), wc.to_vector());
  // Not all zero: initialize() ran.
  double sum = 0;
  for (float v : wa.to_vector()) sum += std::abs(v);
  EXPECT_GT(sum, 0);
  EXPECT_THROW(r.make_model("toy_linear", ModelArgs{3, 2, true, nullptr}), Error);
}

Options toy_options(const std::string& out) {
  Options o;
  o.set("model", "toy_linear");
  o.set("data", "toy");
  o.set("epochs", "2");
  o.set("batch", "8");
  o.set("lr", "0.2");
  o.set("progress", "off");
  o.set("threads", "1");
  o.set("out", out);
  return o;
}

std::vector<NamedTensor> final_weights(const std::string& out, std::string* model) {
  std::map<std::string, std::string> meta;
  auto t = load_safetensors(out + "/final.safetensors", &meta);
  *model = meta["dplab.model"];
  return t;
}

// An experiment's model and dataset through run_training: it learns the separable toy data,
// the final checkpoint names the model, and a run stopped after 6 of its 8 steps and resumed
// ends with the same weights, bit for bit, as the uninterrupted run.
TEST(Registry, ExperimentModelAndDataRunThroughTheDriverAndResume) {
  ScopedTempDir dir("registry-run");
  const Registry r = toy_registry();
  std::ostringstream s1, p1, s2, p2, s3, p3;
  const TrainResult whole = run_training(toy_options(dir.file("whole")), r, s1, p1);
  EXPECT_EQ(whole.epochs_done, 2);
  EXPECT_EQ(whole.global_step, 8);  // 32 samples / batch 8, two epochs
  EXPECT_EQ(whole.test_acc, 1.0) << s1.str();

  Options part = toy_options(dir.file("part"));
  part.set("max_steps", "6");
  const TrainResult stopped = run_training(part, r, s2, p2);
  EXPECT_EQ(stopped.global_step, 6);
  Options rest = toy_options(dir.file("part"));
  rest.set("resume", dir.file("part"));
  const TrainResult resumed = run_training(rest, r, s3, p3);
  EXPECT_EQ(resumed.global_step, 8) << s3.str();

  // The weights of a run directory (its last checkpoint) come with that file's metadata: a
  // run of one rank wrote dplab.world_size 1 (read_model_weights once returned it empty).
  const ModelWeights w = read_model_weights(dir.file("whole"));
  ASSERT_TRUE(w.meta.count("dplab.world_size")) << w.file;
  EXPECT_EQ(w.meta.at("dplab.world_size"), "1");
  EXPECT_EQ(w.model, "toy_linear");

  std::string model_a, model_b;
  const auto a = final_weights(dir.file("whole"), &model_a);
  const auto b = final_weights(dir.file("part"), &model_b);
  EXPECT_EQ(model_a, "toy_linear");
  EXPECT_EQ(model_b, "toy_linear");
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].name, b[i].name);
    EXPECT_EQ(a[i].tensor.to_vector(), b[i].tensor.to_vector()) << a[i].name;
  }
}

// A single-process algorithm of the experiment's own: the loop's call points, counted.
class CountingStrategy : public Strategy {
 public:
  explicit CountingStrategy(std::shared_ptr<int64_t> steps) : steps_(std::move(steps)) {}
  std::string name() const override { return "counting"; }
  void after_step(const StepInfo&) override { ++*steps_; }

 private:
  std::shared_ptr<int64_t> steps_;
};

// An experiment's algorithm, optimizer and lr schedule are the ones the driver uses: "counting"
// sees every step; "plain_sgd" is SGD under another name; "half" multiplies the lr by 0.5
// throughout. With lr 0.2 the run is, bit for bit, the built-in local + sgd + constant run with
// lr 0.1 (0.2 x 0.5 is exactly 0.1 in binary floating point).
TEST(Registry, ExperimentAlgorithmOptimizerAndScheduleAreTheOnesUsed) {
  ScopedTempDir dir("registry-parts");
  Registry r = toy_registry();
  auto steps = std::make_shared<int64_t>(0);
  r.add(StrategyEntry{
      "counting", "counts steps", {}, [steps](std::shared_ptr<Topology>, const Options&) {
        return std::unique_ptr<Strategy>(std::make_unique<CountingStrategy>(steps));
      }});
  r.add(OptimizerEntry{
      "plain_sgd", "SGD", {}, [](const Options&, ParamArena& a, const SGDOptions& so) {
        return std::unique_ptr<Optimizer>(std::make_unique<SGD>(a, so));
      }});
  struct Half : LrSchedule {
    double factor(int64_t, int64_t) const override { return 0.5; }
    std::string describe() const override { return "half"; }
  };
  r.add(ScheduleEntry{"half", "0.5 x lr", {}, [](const Options&, int64_t) {
                        return std::unique_ptr<LrSchedule>(std::make_unique<Half>());
                      }});
  std::ostringstream s1, p1, s2, p2;
  Options builtin = toy_options(dir.file("builtin"));
  builtin.set("lr", "0.1");
  run_training(builtin, r, s1, p1);
  Options mine = toy_options(dir.file("mine"));
  mine.set("algo", "counting");
  mine.set("optim", "plain_sgd");
  mine.set("lr.schedule", "half");
  const TrainResult res = run_training(mine, r, s2, p2);
  EXPECT_EQ(*steps, 8);  // 2 epochs x 4 batches
  EXPECT_EQ(res.global_step, 8);
  std::string ma, mb;
  const auto a = final_weights(dir.file("builtin"), &ma);
  const auto b = final_weights(dir.file("mine"), &mb);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i)
    EXPECT_EQ(a[i].tensor.to_vector(), b[i].tensor.to_vector()) << a[i].name;
  // The learning rate did change something: a run at lr 0.2 without "half" differs.
  std::ostringstream s3, p3;
  Options faster = toy_options(dir.file("faster"));
  run_training(faster, r, s3, p3);
  std::string mc;
  const auto c = final_weights(dir.file("faster"), &mc);
  EXPECT_NE(a[0].tensor.to_vector(), c[0].tensor.to_vector());
}

// The registry's names are what the driver resolves: the built-in driver does not know the
// experiment's model (a usage error naming it and the known models).
TEST(Registry, BuiltinDriverDoesNotKnowTheExperimentsModel) {
  ScopedTempDir dir("registry-unknown");
  std::ostringstream s, p;
  Options o = toy_options(dir.file("out"));
  o.set("data", "fashion-mnist");
  o.set("data.train_limit", "16");
  o.set("data.test_limit", "16");
  const std::string m = usage_error_of([&] { run_training(o, s, p); });
  EXPECT_NE(m.find("option model: unknown model 'toy_linear' (known: mnist_cnn, resnet18"),
            std::string::npos)
      << m;
}

}  // namespace
}  // namespace dplab
