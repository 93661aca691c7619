// Registry::with_builtins(): the library's own tables (models/registry.h, comm/registry.h,
// optim/schedule.h, optim/optimizer_factory.h, train/config/builtin_datasets.h) as
// registry entries. Each entry delegates to the function `dplab train` called before the
// registry existed, so a built-in name builds exactly what it built then.
#include <algorithm>
#include <map>

#include "dplab/comm/registry.h"
#include "dplab/models/registry.h"
#include "dplab/models/resnet_he_cifar.h"
#include "dplab/optim/optimizer_factory.h"
#include "dplab/train/config/builtin_datasets.h"
#include "dplab/train/config/option_keys.h"
#include "dplab/train/config/option_values.h"
#include "dplab/train/config/registry.h"
#include "dplab/train/loop/optimizer_options.h"

namespace dplab {

Registry Registry::with_builtins() {
  Registry r;
  for (const std::string& name : model_names()) {
    const ModelInfo info = model_info(name);
    std::string help = "a small convolutional net for 28x28 digits";
    // resnet<depth>_cifar: He et al.'s CIFAR family (models/resnet_he_cifar.h), else torchvision's
    const std::string depth = name.starts_with("resnet") && name.ends_with("_cifar")
                                  ? name.substr(6, name.size() - 12)
                                  : "";
    const auto& he = he_cifar_depths();
    if (!depth.empty() && std::find(he.begin(), he.end(), std::stoi(depth)) != he.end())
      help = "He et al.'s CIFAR ResNet-" + depth + ": " + depth +
             " layers in three stages of 16/32/64 channels (ResNet-20: 0.27 M parameters), for "
             "32x32 inputs";
    else if (name.ends_with("_cifar"))
      help = "torchvision's " + name.substr(0, name.size() - 6) +
             " with a 3x3 stride-1 stem and no max-pool, for 32x32 inputs";
    else if (name.starts_with("resnet"))
      help = "torchvision's " + name + " (7x7 stride-2 stem and max-pool, for ImageNet's 224x224)";
    r.add(ModelEntry{name,
                     help,
                     info.input_shape,
                     info.num_classes,
                     {"model.zero_init_residual"},
                     [name](const ModelArgs& a) {
                       return dplab::make_model(name, a.seed, a.num_classes, a.zero_init_residual,
                                                a.in_channels);
                     },
                     info.any_channels});
  }
  add_builtin_datasets(r);
  // make_strategy reads option algo itself and builds the same name. What the driver knows of
  // each algorithm is its declaration (comm/registry.h AlgorithmInfo), its keys those it reads
  // (comm/algorithms/algorithm_options.h).
  for (const AlgorithmInfo& a : builtin_algorithms()) {
    StrategyEntry e{a.name, a.help, algorithm_option_keys(a.name),
                    [](std::shared_ptr<Topology> topo, const Options& o) {
                      return make_strategy(std::move(topo), o);
                    }};
    e.averages_gradients = a.averages_gradients;
    e.single_process = a.single_process;
    e.exchanges = a.exchanges;
    if (a.run_note) e.run_note = a.run_note;
    r.add(std::move(e));
  }
  // Each optimizer's unset keys take its own defaults (OptimizerEntry::defaults): SGD and LARS
  // the option table's, AdamW PyTorch's (torch.optim.AdamW: lr 1e-3, weight_decay 1e-2; its
  // betas and eps are the table's adamw.* defaults, which are PyTorch's).
  OptimizerEntry sgd{"sgd",
                     "SGD with momentum, Nesterov, dampening and weight decay",
                     {"lr", "momentum", "nesterov", "dampening", "wd"},
                     [](const Options&, ParamArena& arena, const SGDOptions& so) {
                       return std::unique_ptr<Optimizer>(std::make_unique<SGD>(arena, so));
                     },
                     {},
                     "dplab's option table"};
  r.add(std::move(sgd));
  OptimizerEntry lars{"lars",
                      "LARS (You et al.): layer-wise trust ratio",
                      {"lr", "momentum", "wd", "lars.eta", "lars.eps"},
                      make_lars_optimizer,
                      {},
                      "dplab's option table"};
  r.add(std::move(lars));
  OptimizerEntry adamw{"adamw",
                       "AdamW (torch.optim.AdamW): Adam with decoupled weight decay; unset keys "
                       "take PyTorch's defaults (lr 0.001, wd 0.01, betas 0.9/0.999, eps 1e-8)",
                       {"lr", "wd", "adamw.beta1", "adamw.beta2", "adamw.eps"},
                       make_adamw_optimizer,
                       {{"lr", "0.001"}, {"wd", "0.01"}},
                       "PyTorch's torch.optim.AdamW"};
  r.add(std::move(adamw));
  // make_base_lr_schedule reads lr.schedule itself; Registry::add puts the warm-up
  // (lr.warmup_epochs) in front of each, as make_lr_schedule did.
  struct Sched {
    const char* name;
    const char* help;
    std::vector<std::string> keys;
  };
  const std::vector<Sched> schedules = {
      {"constant", "the base lr throughout", {}},
      {"step", "times lr.gamma every lr.step_size epochs", {"lr.step_size", "lr.gamma"}},
      {"multistep", "times lr.gamma at each epoch of lr.milestones", {"lr.milestones", "lr.gamma"}},
      {"poly",
       "(1 - t/T)^lr.power over the run, floored at lr.min_factor",
       {"lr.power", "lr.min_factor"}},
      {"cosine", "half a cosine from 1 to lr.min_factor over the run", {"lr.min_factor"}},
      {"plateau",
       "times lr.factor when the epoch loss stops improving (ReduceLROnPlateau)",
       {"lr.patience", "lr.factor", "lr.threshold", "lr.mode", "lr.min_factor"}}};
  for (const Sched& sc : schedules) {
    std::vector<std::string> k = sc.keys;
    k.push_back("lr.warmup_epochs");
    k.push_back("lr.warmup_start_factor");
    r.add(ScheduleEntry{sc.name, sc.help, k, make_base_lr_schedule});
  }
  return r;
}

std::vector<std::string> builtin_names_for(const std::string& key) {
  static const Registry builtins = Registry::with_builtins();
  return builtins.names_for(key).value_or(std::vector<std::string>{});
}

}  // namespace dplab
