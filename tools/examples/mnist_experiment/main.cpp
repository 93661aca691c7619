// A dplab experiment built from its own objects: mnist_cnn, SGD with Nesterov momentum, a
// synthetic data set (each class a bright square at its own place) and synchronous allreduce,
// handed to a Trainer (dplab/train/loop/trainer.h). The Trainer splits the data across the
// ranks, averages the gradients, evaluates every epoch and writes metrics.jsonl, checkpoints and
// final.safetensors to OUT; the experiment drives it one step at a time and prints its own line
// at each epoch's end.
//
//   ./mnist_experiment [EPOCHS [OUT]]            one process
//   mpiexec -n 2 ./mnist_experiment 3 runs/sq    two ranks, gradients averaged
//
// Exit status 0 when the final test accuracy is above 0.9 (chance is 0.1).
#include <cstdio>
#include <iostream>
#include <string>

#include "dplab/comm/algorithms/allreduce.h"
#include "dplab/comm/mpi_env.h"
#include "dplab/core/philox.h"
#include "dplab/models/registry.h"
#include "dplab/optim/sgd.h"
#include "dplab/train/loop/train_loop.h"
#include "dplab/train/loop/trainer.h"

namespace {

using namespace dplab;

// 28 x 28 images of 10 classes: class c lights a 6 x 6 square at row 2 + 2c over uniform noise.
class Squares : public Dataset {
 public:
  Squares(int64_t n, uint64_t seed) : n_(n), seed_(seed) {}
  int64_t size() const override { return n_; }
  Shape sample_shape() const override { return {1, 28, 28}; }
  int num_classes() const override { return 10; }
  std::string describe() const override { return "squares"; }
  int64_t get_into(int64_t index, float* out) const override {
    const int64_t label = index % 10;
    PhiloxStream rng(seed_, uint64_t(index));  // the same sample on every rank and epoch
    for (int p = 0; p < 784; ++p) out[p] = 0.3f * rng.uniform();
    for (int r = 0; r < 6; ++r)
      for (int c = 0; c < 6; ++c) out[(2 + 2 * label + r) * 28 + 11 + c] = 1.0f;
    return label;
  }

 private:
  int64_t n_;
  uint64_t seed_;
};

}  // namespace

int main(int argc, char** argv) {
  start_mpi_if_launched();  // under mpiexec: MPI before anything else (comm/mpi_env.h)
  const std::string epochs = argc > 1 ? argv[1] : "2";
  // The run's settings: the keys of `dplab train --help` other than the parts' own.
  Options opt;
  opt.set("epochs", epochs);
  opt.set("batch", "32");
  opt.set("threads", "1");
  opt.set("progress", "off");
  if (argc > 2) opt.set("out", argv[2]);

  TrainerParts parts;
  parts.model = make_model("mnist_cnn", /*seed=*/1);
  parts.model->train();
  parts.arena = std::make_unique<ParamArena>(parts.model->named_parameters());
  parts.optimizer = std::make_unique<SGD>(
      *parts.arena, SGDOptions{.lr = 0.02, .momentum = 0.9, .nesterov = true});
  parts.data = TrainData{std::make_shared<Squares>(1024, 7), std::make_shared<Squares>(200, 8)};
  // Built on the Trainer's Topology (MPI's world; one rank without mpiexec), reading its own
  // allreduce.* keys from the run's options.
  parts.make_strategy = [](std::shared_ptr<Topology> topo, const Options& o) {
    return std::unique_ptr<Strategy>(std::make_unique<AllReduceStrategy>(std::move(topo), o));
  };
  parts.averages_gradients = true;
  parts.model_name = "mnist_cnn";
  parts.data_name = "squares";
  parts.optimizer_name = "sgd";
  try {
    Trainer trainer(std::move(parts), opt, std::cout, std::cerr);
    int64_t epoch = trainer.state().epoch;
    while (trainer.step()) {
      if (trainer.state().epoch == epoch) continue;
      epoch = trainer.state().epoch;  // this step ended an epoch: its figures are in
      const TrainResult r = trainer.result();
      if (r.is_rank0)
        std::printf(
            "after epoch %lld (global step %lld): training loss %.4f (mean over the epoch's "
            "samples, all ranks), test accuracy %.4f (the run's model, whole test set)\n",
            static_cast<long long>(epoch), static_cast<long long>(trainer.state().global_step),
            r.train_loss, r.test_acc);
    }
    const TrainResult r = trainer.result();
    if (r.is_rank0) std::printf("test accuracy: %.4f\n", r.test_acc);
    return r.test_acc > 0.9 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mnist_experiment: error: %s\n", e.what());
    return 1;
  }
}
