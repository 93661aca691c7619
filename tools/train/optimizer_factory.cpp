#include "dplab/tools/train/optimizer_factory.h"

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

std::unique_ptr<Optimizer> make_train_optimizer(const Options& opt, ParamArena& arena,
                                                const SGDOptions& sgd) {
  const std::string name = opt.get_string("optim", option_default("optim"));
  if (name == "sgd") return std::make_unique<SGD>(arena, sgd);
  if (name == "lars") return make_lars_optimizer(opt, arena, sgd);
  throw UsageError(fmt::format("option optim: unknown optimizer '{}' (known: sgd, lars)", name));
}

}  // namespace dplab
