// What it shows: an experiment's own model given to the full training driver with a few lines.
// "small_vgg" (two VGG blocks of 3x3 convolutions, BatchNorm and ReLU, each ending in a 2x2
// max-pool, then a linear classifier) is added to the built-in registry and trained on
// Fashion-MNIST exactly as `dplab train` trains its own models: data split across the ranks,
// any --algo, metrics, trace, checkpoints and resume, evaluation every epoch.
//
//   mpiexec -n 2 ./vgg_fashion algo=allreduce epochs=2 out=runs/vgg
//
// Arguments are KEY=VALUE option keys (those of `dplab train --help`); --help lists the models,
// datasets, algorithms, optimizers and schedules this binary knows, small_vgg among them.
#include "dplab/layers/batchnorm2d.h"
#include "dplab/layers/conv2d.h"
#include "dplab/layers/flatten.h"
#include "dplab/layers/linear.h"
#include "dplab/layers/maxpool2d.h"
#include "dplab/layers/relu.h"
#include "dplab/layers/sequential.h"
#include "dplab/train/loop/experiment_main.h"

namespace {

using namespace dplab;

// conv3x3-BN-ReLU twice, then 2x2 max-pool: halves H and W.
void vgg_block(Sequential& s, int64_t in, int64_t out) {
  Conv2dOptions same;
  same.padding = {1, 1};
  s.push_back(std::make_shared<Conv2d>(in, out, 3, same, /*bias=*/false));
  s.push_back(std::make_shared<BatchNorm2d>(out));
  s.push_back(std::make_shared<ReLU>());
  s.push_back(std::make_shared<Conv2d>(out, out, 3, same, /*bias=*/false));
  s.push_back(std::make_shared<BatchNorm2d>(out));
  s.push_back(std::make_shared<ReLU>());
  s.push_back(std::make_shared<MaxPool2d>(2));
}

std::shared_ptr<Module> make_small_vgg(int num_classes) {
  auto s = std::make_shared<Sequential>();
  vgg_block(*s, 1, 16);   // 28 -> 14
  vgg_block(*s, 16, 32);  // 14 -> 7
  s->push_back(std::make_shared<Flatten>());
  s->push_back(std::make_shared<Linear>(32 * 7 * 7, num_classes));
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  Registry registry = Registry::with_builtins();
  registry.add_model("small_vgg", {1, 28, 28}, 10, make_small_vgg,
                     "two VGG blocks (16, 32 channels) and a linear classifier");
  Options defaults;
  defaults.set("model", "small_vgg");
  defaults.set("data", "fashion-mnist");
  defaults.set("lr", "0.05");
  defaults.set("momentum", "0.9");
  defaults.set("batch", "64");
  // experiment_main: KEY=VALUE arguments, --help (this registry's names), run_training, exit codes.
  return experiment_main(argc, argv, registry,
                         {"vgg_fashion", "A small VGG-style model on Fashion-MNIST.", defaults});
}
