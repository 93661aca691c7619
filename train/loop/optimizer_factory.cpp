#include "dplab/train/loop/optimizer_factory.h"

#include "dplab/optim/adamw.h"
#include "dplab/optim/lars.h"
#include "dplab/train/config/config.h"

namespace dplab {

std::string optimizer_key_default(const OptimizerEntry& entry, const std::string& key) {
  if (auto it = entry.defaults.find(key); it != entry.defaults.end()) return it->second;
  return option_default(key);
}

SGDOptions read_shared_optimizer_options(const Options& opt, const OptimizerEntry& entry) {
  auto number = [&](const std::string& key) {
    return opt.get_double(key, std::stod(optimizer_key_default(entry, key)));
  };
  SGDOptions so;
  so.lr = number("lr");
  so.momentum = number("momentum");
  so.nesterov = opt.get_bool("nesterov", optimizer_key_default(entry, "nesterov") == "true");
  so.dampening = number("dampening");
  so.weight_decay = number("wd");
  return so;
}

std::map<std::string, std::string> optimizer_defaulted(const Options& opt,
                                                       const OptimizerEntry& entry) {
  const std::map<std::string, std::string> read = opt.read_values();
  std::map<std::string, std::string> r;
  for (const std::string& key : entry.keys)
    if (!opt.has(key))
      if (auto it = read.find(key); it != read.end()) r[key] = it->second;
  return r;
}

std::unique_ptr<Optimizer> make_lars_optimizer(const Options& opt, ParamArena& arena,
                                               const SGDOptions& sgd) {
  DPLAB_CHECK(!sgd.nesterov && sgd.dampening == 0,
              "optim = lars: nesterov and dampening are SGD options (got nesterov {}, "
              "dampening {})",
              sgd.nesterov, sgd.dampening);
  LARSOptions lo;
  lo.lr = sgd.lr;
  lo.momentum = sgd.momentum;
  lo.weight_decay = sgd.weight_decay;
  lo.trust_coefficient = opt.get_double("lars.eta", std::stod(option_default("lars.eta")));
  lo.eps = opt.get_double("lars.eps", std::stod(option_default("lars.eps")));
  return std::make_unique<LARS>(arena, lo);
}

std::unique_ptr<Optimizer> make_adamw_optimizer(const Options& opt, ParamArena& arena,
                                                const SGDOptions& sgd) {
  DPLAB_CHECK(!sgd.nesterov && sgd.dampening == 0,
              "optim = adamw: nesterov and dampening are SGD options (got nesterov {}, "
              "dampening {})",
              sgd.nesterov, sgd.dampening);
  AdamWOptions ao;
  ao.lr = sgd.lr;
  ao.weight_decay = sgd.weight_decay;  // the shared key wd (unset: AdamW's 1e-2, PyTorch's)
  ao.beta1 = opt.get_double("adamw.beta1", std::stod(option_default("adamw.beta1")));
  ao.beta2 = opt.get_double("adamw.beta2", std::stod(option_default("adamw.beta2")));
  ao.eps = opt.get_double("adamw.eps", std::stod(option_default("adamw.eps")));
  return std::make_unique<AdamW>(arena, ao);
}

std::unique_ptr<Optimizer> make_train_optimizer(const Options& opt, ParamArena& arena,
                                                const SGDOptions& sgd) {
  const std::string name = opt.get_string("optim", option_default("optim"));
  if (name == "sgd") return std::make_unique<SGD>(arena, sgd);
  if (name == "lars") return make_lars_optimizer(opt, arena, sgd);
  if (name == "adamw") return make_adamw_optimizer(opt, arena, sgd);
  throw UsageError(
      fmt::format("option optim: unknown optimizer '{}' (known: sgd, lars, adamw)", name));
}

}  // namespace dplab
