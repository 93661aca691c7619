#include "dplab/tools/train/optimizer_factory.h"

#include "dplab/optim/adamw.h"
#include "dplab/optim/lars.h"
#include "dplab/tools/train/config.h"

namespace dplab {

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
  ao.weight_decay = sgd.weight_decay;  // the shared key wd (default 0, not PyTorch's 1e-2)
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
