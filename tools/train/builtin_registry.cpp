// Registry::with_builtins(): the library's own tables (models/registry.h, comm/registry.h,
// optim/schedule.h, tools/train/optimizer_factory.h, tools/train/builtin_datasets.h) as
// registry entries. Each entry delegates to the function `dplab train` called before the
// registry existed, so a built-in name builds exactly what it built then.
#include "dplab/comm/registry.h"
#include "dplab/models/registry.h"
#include "dplab/tools/train/builtin_datasets.h"
#include "dplab/tools/train/optimizer_factory.h"
#include "dplab/tools/train/registry.h"

namespace dplab {

Registry Registry::with_builtins() {
  Registry r;
  for (const std::string& name : model_names()) {
    const ModelInfo info = model_info(name);
    r.add(ModelEntry{name,
                     name.starts_with("resnet") ? "torchvision's ResNet (_cifar: 3x3 stem, no "
                                                  "maxpool, for 32x32 inputs)"
                                                : "a small convolutional net for 28x28 digits",
                     info.input_shape,
                     info.num_classes,
                     {"model.zero_init_residual"},
                     [name](const ModelArgs& a) {
                       return dplab::make_model(name, a.seed, a.num_classes, a.zero_init_residual);
                     }});
  }
  add_builtin_datasets(r);
  // make_strategy reads option algo itself and builds the same name.
  for (const std::string& name : strategy_names())
    r.add(StrategyEntry{name,
                        "built-in algorithm (ALGORITHMS.md; keys under " + name + ".)",
                        {},
                        [](const Options& o) { return make_strategy(o); }});
  r.add(OptimizerEntry{"sgd",
                       "SGD with momentum, Nesterov, dampening and weight decay",
                       {"lr", "momentum", "nesterov", "dampening", "wd"},
                       [](const Options&, ParamArena& arena, const SGDOptions& sgd) {
                         return std::unique_ptr<Optimizer>(std::make_unique<SGD>(arena, sgd));
                       }});
  r.add(OptimizerEntry{"lars",
                       "LARS (You et al.): layer-wise trust ratio",
                       {"lr", "momentum", "wd", "lars.eta", "lars.eps"},
                       make_lars_optimizer});
  r.add(OptimizerEntry{"adamw",
                       "AdamW (torch.optim.AdamW): Adam with decoupled weight decay",
                       {"lr", "wd", "adamw.beta1", "adamw.beta2", "adamw.eps"},
                       make_adamw_optimizer});
  // make_lr_schedule reads lr.schedule itself (and wraps any schedule in lr.warmup_epochs).
  const std::vector<std::pair<std::string, std::vector<std::string>>> schedules = {
      {"constant", {}},
      {"step", {"lr.step_size", "lr.gamma"}},
      {"multistep", {"lr.milestones", "lr.gamma"}},
      {"poly", {"lr.power", "lr.min_factor"}},
      {"cosine", {"lr.min_factor"}},
      {"plateau", {"lr.patience", "lr.factor", "lr.threshold", "lr.mode", "lr.min_factor"}}};
  for (const auto& [name, keys] : schedules) {
    std::vector<std::string> k = keys;
    k.push_back("lr.warmup_epochs");
    k.push_back("lr.warmup_start_factor");
    r.add(ScheduleEntry{name, "optim/schedule.h", k, make_lr_schedule});
  }
  return r;
}

}  // namespace dplab
