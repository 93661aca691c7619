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
#include "dplab/train/report/dcs3gd_note.h"

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
  // make_strategy reads option algo itself and builds the same name. The keys come from the
  // option table (train/config/option_keys.h), the help from docs/algorithms/README.md.
  const std::map<std::string, std::string> algo_help = {
      {"local", "one process: forward, backward, optimizer step; no communication"},
      {"allreduce", "averaged gradients every step (DDP, Horovod; docs/algorithms/allreduce.md)"},
      {"hybrid", "gradients averaged in three stages of decreasing frequency (hybrid.md)"},
      {"daso", "node-local gradients every step, parameters across nodes every B steps (daso.md)"},
      {"dcs3gd", "the last update, one step stale, with delay compensation (dcs3gd.md)"},
      {"crossover", "parameter segments gossiped with random peers (crossover.md)"},
      {"sgp", "stochastic gradient push: parameters and push-sum weights (sgp.md)"},
      {"oscars", "parameters averaged after tau_i local steps per rank (oscars.md)"},
      {"local_sgd", "parameters averaged every local_sgd.H steps (local_sgd.md)"},
      {"post_local_sgd", "allreduce SGD, then local SGD from post_local_sgd.switch_epoch"},
      {"diloco",
       "H inner steps, then an outer Nesterov step on the averaged outer gradient "
       "(diloco.md)"},
      {"slowmo",
       "local SGD (an average every slowmo.localsgd_frequency steps, a node's ranks one worker) "
       "with an exact average and slow momentum every tau steps (slowmo.md)"},
      {"streaming_diloco",
       "DiLoCo by fragments on a staggered, overlapped schedule "
       "(streaming_diloco.md)"}};
  // What those without a GradSync exchange instead of gradients (compress_refusal.h).
  const std::map<std::string, std::string> exchanges = {
      {"local", "trains on one rank's gradients without communication"},
      {"local_sgd", "averages parameters every local_sgd.H steps, not gradients"},
      {"dcs3gd",
       "allreduces its delayed updates (the momentum step) itself, not gradients through GradSync"},
      {"sgp", "gossips parameters (push-sum) and averages no gradients"},
      {"oscars", "averages parameters after every round of local steps, not gradients"},
      {"diloco", "averages outer gradients (parameter differences) once per round"},
      {"streaming_diloco",
       "averages outer gradients (parameter differences) per fragment; "
       "streaming_diloco.quantize sends them in 8 or 4 bits (int8, int4, fp8_e4m3, fp4_e2m1)"},
      {"slowmo", "averages parameters once per round (with a local SGD or SGP base)"},
  };
  for (const std::string& name : strategy_names()) {
    StrategyEntry e{name, "", algorithm_option_keys(name),
                    [](std::shared_ptr<Topology> topo, const Options& o) {
                      return make_strategy(std::move(topo), o);
                    }};
    if (auto it = algo_help.find(name); it != algo_help.end()) e.help = it->second;
    e.averages_gradients = name == "local" || name == "allreduce";
    e.single_process = name == "local";
    if (auto it = exchanges.find(name); it != exchanges.end()) e.exchanges = it->second;
    if (name == "dcs3gd") e.run_note = dcs3gd_run_note;  // the paper's peak lr
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
