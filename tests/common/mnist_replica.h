// One mnist_cnn training replica for multi-rank tests: model, ParamArena and SGD built the way
// the trainer builds them, so a test can also run every rank's steps serially as a reference.
#pragma once
#include <memory>

#include "dplab/core/param_arena.h"
#include "dplab/models/registry.h"
#include "dplab/optim/sgd.h"

namespace dplab::test {

struct MnistReplica {
  std::shared_ptr<Module> model;
  std::unique_ptr<ParamArena> arena;
  std::unique_ptr<SGD> sgd;
  explicit MnistReplica(uint64_t seed, double lr = 0.05, double momentum = 0.9,
                        double weight_decay = 0.0) {
    model = make_model("mnist_cnn", seed);
    arena = std::make_unique<ParamArena>(model->named_parameters());
    SGDOptions o;
    o.lr = lr;
    o.momentum = momentum;
    o.weight_decay = weight_decay;
    sgd = std::make_unique<SGD>(*arena, o);
  }
};

}  // namespace dplab::test
