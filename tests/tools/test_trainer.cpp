// train/loop/trainer.h: the Trainer object API. A Trainer built from an experiment's own objects
// trains what the options-built one trains (the reference: run_training with the same model,
// data, optimizer values and algorithm by name, final weights bit for bit); step() is run()
// one step at a time (the same weights, each call one global step, an epoch's evaluation done
// by the step that ends it); bad parts are errors that say what is missing.
#include <gtest/gtest.h>

#include "common/harness.h"

#include <sstream>

#include "data/temp_dir.h"
#include "dplab/core/safetensors.h"
#include "dplab/core/usage_error.h"
#include "dplab/layers/flatten.h"
#include "dplab/layers/linear.h"
#include "dplab/layers/sequential.h"
#include "dplab/optim/sgd.h"
#include "dplab/train/loop/train_loop.h"
#include "dplab/train/loop/trainer.h"
#include "toy_registry.h"

namespace dplab {
namespace {

using test::error_of;
using test::ScopedTempDir;
using test::toy_registry;
using test::ToyDataset;
using test::usage_error_of;

// The run's settings. The SGD values are set explicitly so that the parts-built optimizer below
// (SGDOptions) and option optim = sgd are the same optimizer.
Options settings(const std::string& out) {
  Options o;
  o.set("epochs", "2");
  o.set("batch", "8");
  o.set("progress", "off");
  o.set("threads", "1");
  o.set("seed", "3");
  o.set("out", out);
  return o;
}
Options by_name(const std::string& out) {
  Options o = settings(out);
  o.set("model", "toy_linear");
  o.set("data", "toy");
  o.set("algo", "local");
  o.set("optim", "sgd");
  o.set("lr", "0.2");
  o.set("momentum", "0.9");
  o.set("nesterov", "false");
  o.set("dampening", "0");
  o.set("wd", "0.001");
  return o;
}

// toy_registry's toy_linear, initialised from the seed as the registry's factory does.
std::shared_ptr<Module> toy_model(uint64_t seed) {
  auto m = std::make_shared<Sequential>(std::initializer_list<std::shared_ptr<Module>>{
      std::make_shared<Flatten>(), std::make_shared<Linear>(32, 2)});
  initialize(*m, seed);
  m->train();
  return m;
}

TrainerParts toy_parts() {
  TrainerParts p;
  p.model = toy_model(3);
  p.arena = std::make_unique<ParamArena>(p.model->named_parameters());
  p.optimizer = std::make_unique<SGD>(
      *p.arena, SGDOptions{.lr = 0.2, .momentum = 0.9, .dampening = 0, .weight_decay = 0.001});
  p.data = TrainData{std::make_shared<ToyDataset>(32), std::make_shared<ToyDataset>(8), false};
  p.strategy = std::make_unique<LocalStrategy>();
  p.model_name = "toy_linear";
  p.data_name = "toy";
  p.optimizer_name = "sgd";
  return p;
}

std::vector<std::vector<float>> final_weights(const std::string& out) {
  std::vector<std::vector<float>> w;
  for (const NamedTensor& t : load_safetensors(out + "/final.safetensors"))
    w.push_back(t.tensor.to_vector());
  return w;
}

TEST(Trainer, FromPartsTrainsWhatTheOptionsRunTrainsBitwise) {
  ScopedTempDir dir("trainer-parts");
  std::ostringstream s1, p1, s2, p2;
  const TrainResult named = run_training(by_name(dir.file("named")), toy_registry(), s1, p1);
  Trainer trainer(toy_parts(), settings(dir.file("parts")), s2, p2);
  const TrainResult mine = trainer.run();
  EXPECT_EQ(mine.global_step, 8);  // 32 samples / batch 8, two epochs
  EXPECT_EQ(mine.epochs_done, 2);
  EXPECT_EQ(mine.test_acc, named.test_acc);
  EXPECT_EQ(mine.test_acc, 1.0) << s2.str();  // linearly separable: it learned
  EXPECT_EQ(final_weights(dir.file("parts")), final_weights(dir.file("named")));
  // The records name the parts: the header's model and algorithm.
  EXPECT_NE(s2.str().find("toy_linear"), std::string::npos) << s2.str();
  EXPECT_NE(s2.str().find("local"), std::string::npos) << s2.str();
}

// step() is run() a step at a time: each call trains one global step; the call that trains an
// epoch's last step also ends the epoch (its record is written); the first call after the last
// step finishes the run and returns false, as do later calls.
TEST(Trainer, StepIsRunOneStepAtATime) {
  ScopedTempDir dir("trainer-step");
  const Registry r = toy_registry();
  std::ostringstream s1, p1, s2, p2;
  const TrainResult whole = run_training(by_name(dir.file("run")), r, s1, p1);
  const std::unique_ptr<Trainer> t = Trainer::from_options(by_name(dir.file("step")), r, s2, p2);
  int64_t steps = 0;
  while (t->step()) {
    ++steps;
    EXPECT_EQ(t->state().global_step, steps);
    EXPECT_EQ(t->state().epoch, steps / 4) << "4 steps an epoch; after step " << steps;
    if (steps == 4) {  // the first epoch's line was printed by this step
      EXPECT_NE(s2.str().find("epoch 1/2"), std::string::npos) << s2.str();
      EXPECT_EQ(s2.str().find("epoch 2/2"), std::string::npos) << s2.str();
    }
  }
  EXPECT_EQ(steps, 8);
  EXPECT_FALSE(t->step());
  EXPECT_EQ(t->result().global_step, 8);
  EXPECT_EQ(t->result().test_acc, whole.test_acc);
  EXPECT_EQ(final_weights(dir.file("step")), final_weights(dir.file("run")));
}

// A Trainer from parts checkpoints and resumes as any run does: stopped after 6 of its 8 steps
// (max_steps) and resumed by a new Trainer on freshly built parts (option resume), it ends with
// the uninterrupted run's weights, bit for bit (the optimizer's momentum comes from the
// checkpoint: without it the weights would differ).
TEST(Trainer, FromPartsResumesBitwise) {
  ScopedTempDir dir("trainer-resume");
  std::ostringstream s1, p1, s2, p2, s3, p3;
  Trainer whole(toy_parts(), settings(dir.file("whole")), s1, p1);
  whole.run();
  Options part = settings(dir.file("part"));
  part.set("max_steps", "6");
  Trainer first(toy_parts(), part, s2, p2);
  EXPECT_EQ(first.run().global_step, 6);
  Options rest = settings(dir.file("part"));
  rest.set("resume", dir.file("part"));
  Trainer second(toy_parts(), rest, s3, p3);
  EXPECT_EQ(second.state().global_step, 6) << s3.str();
  EXPECT_EQ(second.run().global_step, 8);
  EXPECT_EQ(final_weights(dir.file("part")), final_weights(dir.file("whole")));
}

// A Trainer between steps is a live run whose parts the experiment can read: with its own
// schedule zeroing the lr after 4 steps (momentum 0), the final weights are the model's after
// step 4, read then through trainer.model().
TEST(Trainer, PartsCanBeReadBetweenSteps) {
  ScopedTempDir dir("trainer-between");
  std::ostringstream s, p;
  Options o = settings(dir.file("out"));
  o.set("checkpoint.keep", "0");
  TrainerParts parts = toy_parts();
  // momentum 0 so that lr 0 stops every change; the schedule below holds the factor at 1
  parts.optimizer = std::make_unique<SGD>(*parts.arena, SGDOptions{.lr = 0.2});
  struct Switch : LrSchedule {
    double factor(int64_t step, int64_t) const override { return step < 4 ? 1.0 : 0.0; }
    std::string describe() const override { return "1 for 4 steps, then 0"; }
  };
  parts.schedule = std::make_unique<Switch>();
  Trainer t(std::move(parts), o, s, p);
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(t.step());
  std::vector<std::vector<float>> after4;
  for (const NamedTensor& w : t.model().named_parameters()) after4.push_back(w.tensor.to_vector());
  while (t.step()) {
  }
  EXPECT_EQ(t.result().global_step, 8);
  EXPECT_EQ(final_weights(dir.file("out")), after4);
  EXPECT_EQ(t.optimizer().lr(), 0.0);
  EXPECT_EQ(t.strategy().name(), "local");
}

TEST(Trainer, MissingOrDoubledPartsAreNamed) {
  ScopedTempDir dir("trainer-bad");
  std::ostringstream s, p;
  auto build = [&](TrainerParts parts, Options o) { Trainer t(std::move(parts), o, s, p); };
  {
    TrainerParts parts = toy_parts();
    parts.strategy.reset();
    EXPECT_NE(error_of([&] {
                build(std::move(parts), settings(dir.file("a")));
              }).find("needs one of strategy and make_strategy (given neither)"),
              std::string::npos);
  }
  {
    TrainerParts parts = toy_parts();
    parts.make_strategy = [](std::shared_ptr<Topology>, const Options&) {
      return std::unique_ptr<Strategy>(std::make_unique<LocalStrategy>());
    };
    EXPECT_NE(
        error_of([&] { build(std::move(parts), settings(dir.file("b"))); }).find("(given both)"),
        std::string::npos);
  }
  {
    TrainerParts parts = toy_parts();
    parts.data.test.reset();
    EXPECT_NE(error_of([&] {
                build(std::move(parts), settings(dir.file("c")));
              }).find("needs a training and a test set"),
              std::string::npos);
  }
  // Options that name another model than the parts', or keys nobody reads (lr: the optimizer
  // object has its own), are usage errors.
  Options other = settings(dir.file("d"));
  other.set("model", "mnist_cnn");
  EXPECT_NE(usage_error_of([&] { build(toy_parts(), other); })
                .find("option model = mnist_cnn: a Trainer built from parts trains "
                      "TrainerParts::model_name = toy_linear"),
            std::string::npos);
  Options lr = settings(dir.file("e"));
  lr.set("lr", "0.5");
  EXPECT_NE(usage_error_of([&] { build(toy_parts(), lr); }).find("lr"), std::string::npos);
  // Summing micro-batches needs an algorithm that averages gradients: said by the parts.
  Options acc = settings(dir.file("f"));
  acc.set("accumulate_steps", "2");
  EXPECT_NE(usage_error_of([&] {
              build(toy_parts(), acc);
            }).find("option accumulate_steps = 2: algorithm 'local' does not average"),
            std::string::npos);
  TrainerParts averaging = toy_parts();
  averaging.averages_gradients = true;
  EXPECT_EQ(error_of([&] { build(std::move(averaging), acc); }), "(no error)");
}

}  // namespace
}  // namespace dplab
