#include "dplab/train/loop/model_parts.h"

#include "dplab/train/config/config.h"
#include "dplab/train/loop/optimizer_options.h"
#include "dplab/train/state/checkpoint.h"

namespace dplab {
namespace {

std::string get(const Options& opt, const std::string& key) {
  return train_option_table().get_string(opt, key);
}
bool get_bool(const Options& opt, const std::string& key) {
  return train_option_table().get_bool(opt, key);
}

}  // namespace

ModelParts build_model_parts(const Options& opt, const Registry& registry,
                             const std::string& model_name, const TrainData& data, uint64_t seed,
                             const std::string& init_from, Device device, bool f16) {
  const ModelEntry& info = registry.model(model_name);
  // Image data: the model's channels must match; convolutional models take any H x W. The
  // ResNets (any_channels) take any C x H x W sample: their stem adapts to C (Fashion-MNIST's 1).
  const Shape& sample = data.train->sample_shape();
  const bool chw = sample.size() == 3;
  const bool shape_ok = info.any_channels ? chw
                        : data.images
                            ? !info.input_shape.empty() && info.input_shape[0] == sample[0]
                            : info.input_shape == sample;
  DPLAB_CHECK(shape_ok, "model {} takes inputs of shape {}, dataset {} has samples of shape {}",
              model_name, shape_str(info.input_shape), get(opt, "data"),
              shape_str(data.train->sample_shape()));
  ModelParts p;
  p.model =
      registry.make_model(model_name, ModelArgs{seed, data.train->num_classes(),
                                                get_bool(opt, "model.zero_init_residual"), &opt,
                                                chw ? static_cast<int>(sample[0]) : -1});
  p.model->train();
  // --init-from: a new run from a checkpoint's weights (before setup, which broadcasts them).
  if (!init_from.empty()) load_model_weights(init_from, *p.model);
  // Parameters and buffers move first, so the arena, the optimizer state and every
  // activation live on the device.
  p.model->to(device);
  p.arena = std::make_unique<ParamArena>(p.model->named_parameters());
  p.arena->mark_norm_parameters(norm_parameter_names(*p.model));
  // optim = sgd | lars | adamw (optim/optimizer_factory.h) | an experiment's; the shared
  // keys left unset take that optimizer's defaults (AdamW's are PyTorch's).
  const OptimizerEntry& optim = registry.optimizer(get(opt, "optim"));
  const SGDOptions so = read_shared_optimizer_options(opt, optim);
  p.base_lr = so.lr;
  p.optimizer = optim.make(opt, *p.arena, so);
  if (f16) p.scaler = std::make_unique<GradScaler>(p.optimizer->arena());
  return p;
}

void set_up_strategy(Strategy& strategy, const Options& opt, Module& model, ParamArena& arena,
                     Optimizer& optimizer, trace::Tracer* tracer,
                     std::shared_ptr<TimeSource> time) {
  TrainContext ctx;
  ctx.model = &model;
  ctx.arena = &arena;
  ctx.optimizer = &optimizer;
  ctx.options = &opt;
  ctx.buffers = model.named_buffers();  // broadcast at setup, averaged before evaluation
  ctx.tracer = tracer;
  if (time) ctx.time = std::move(time);
  strategy.setup(ctx);
}

}  // namespace dplab
