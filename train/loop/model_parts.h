// The trainable parts of a run, built from the options and a Registry (train/config/registry.h):
// the model (checked against the data's sample shape, initialised from the seed or from
// init_from, moved to the device), its parameter arena, the optimizer (option optim) with the
// shared SGD-family values (lr, momentum, nesterov, dampening, wd) and the f16 loss scaler;
// and the algorithm set up on them. Trainer::from_options builds these; an experiment's own
// loop can too.
#pragma once
#include <memory>
#include <string>

#include "dplab/comm/cluster/virtual_time.h"
#include "dplab/comm/strategy.h"
#include "dplab/core/device.h"
#include "dplab/core/options.h"
#include "dplab/core/param_arena.h"
#include "dplab/core/trace/tracer.h"
#include "dplab/layers/module.h"
#include "dplab/optim/grad_scaler.h"
#include "dplab/optim/optimizer.h"
#include "dplab/train/config/registry.h"

namespace dplab {

struct ModelParts {
  std::shared_ptr<Module> model;      // in training mode, on the device
  std::unique_ptr<ParamArena> arena;  // the model's parameters (the optimizer points into it)
  std::unique_ptr<Optimizer> optimizer;
  std::unique_ptr<GradScaler> scaler;  // amp = f16 only: dynamic loss scaling
  double base_lr = 0;                  // option lr: the schedule multiplies it
};

// `init_from`: a checkpoint whose weights replace the initialisation ("" for none). `f16`:
// amp = f16 (f16 gradients need loss scaling; bf16 has f32's exponent range and needs none).
ModelParts build_model_parts(const Options& opt, const Registry& registry,
                             const std::string& model_name, const TrainData& data, uint64_t seed,
                             const std::string& init_from, Device device, bool f16);

// Sets up `strategy` on the run's parts (collective for distributed algorithms: it broadcasts
// rank 0's parameters and buffers). `tracer` may be nullptr. `time`: the run's time base
// (TrainContext::time; a virtual cluster's clock); null: the wall clock.
void set_up_strategy(Strategy& strategy, const Options& opt, Module& model, ParamArena& arena,
                     Optimizer& optimizer, trace::Tracer* tracer,
                     std::shared_ptr<TimeSource> time = nullptr);

}  // namespace dplab
