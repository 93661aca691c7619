#include "dplab/optim/optimizer_factory.h"

#include "dplab/core/error.h"
#include "dplab/optim/adamw.h"
#include "dplab/optim/lars.h"

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
  lo.trust_coefficient = opt.get_double("lars.eta", lo.trust_coefficient);
  lo.eps = opt.get_double("lars.eps", lo.eps);
  return std::make_unique<LARS>(arena, lo);
}

std::unique_ptr<Optimizer> make_adamw_optimizer(const Options& opt, ParamArena& arena,
                                                const SGDOptions& sgd) {
  refuse_sgd_only_options("adamw", sgd);
  AdamWOptions ao;
  ao.lr = sgd.lr;
  ao.weight_decay = sgd.weight_decay;  // the shared key wd (unset: AdamW's 1e-2, PyTorch's)
  ao.beta1 = opt.get_double("adamw.beta1", ao.beta1);
  ao.beta2 = opt.get_double("adamw.beta2", ao.beta2);
  ao.eps = opt.get_double("adamw.eps", ao.eps);
  return std::make_unique<AdamW>(arena, ao);
}

}  // namespace dplab
