#include "dplab/optim/optimizer_factory.h"

#include "dplab/core/error.h"
#include "dplab/optim/adamw.h"
#include "dplab/optim/lars.h"
#include "dplab/optim/optimizer_options.h"

namespace dplab {
namespace {

// nesterov and dampening are SGD's alone.
void refuse_sgd_only_options(const char* optim, const SGDOptions& sgd) {
  DPLAB_CHECK(!sgd.nesterov && sgd.dampening == 0,
              "optim = {}: nesterov and dampening are SGD options (got nesterov {}, dampening {})",
              optim, sgd.nesterov, sgd.dampening);
}

}  // namespace

std::unique_ptr<Optimizer> make_lars_optimizer(const Options& opt, ParamArena& arena,
                                               const SGDOptions& sgd) {
  refuse_sgd_only_options("lars", sgd);
  LARSOptions lo;
  lo.lr = sgd.lr;
  lo.momentum = sgd.momentum;
  lo.weight_decay = sgd.weight_decay;
  lo.trust_coefficient = lars_option_table().get_double(opt, "lars.eta");
  lo.eps = lars_option_table().get_double(opt, "lars.eps");
  return std::make_unique<LARS>(arena, lo);
}

std::unique_ptr<Optimizer> make_adamw_optimizer(const Options& opt, ParamArena& arena,
                                                const SGDOptions& sgd) {
  refuse_sgd_only_options("adamw", sgd);
  AdamWOptions ao;
  ao.lr = sgd.lr;
  ao.weight_decay = sgd.weight_decay;  // the shared key wd (unset: AdamW's 1e-2, PyTorch's)
  const OptionTable& t = adamw_option_table();
  ao.beta1 = t.get_double(opt, "adamw.beta1");
  ao.beta2 = t.get_double(opt, "adamw.beta2");
  ao.eps = t.get_double(opt, "adamw.eps");
  return std::make_unique<AdamW>(arena, ao);
}

}  // namespace dplab
