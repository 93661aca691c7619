// The trainer's optimizer by option `optim`: "sgd" (optim/sgd.h), "lars" (optim/lars.h) or
// "adamw" (optim/adamw.h). All read lr and wd; SGD also momentum, nesterov and dampening, LARS
// momentum, lars.eta and lars.eps, AdamW adamw.beta1, adamw.beta2 and adamw.eps (momentum is
// unused by AdamW). lr and wd keep the project's defaults (0.01 and 0) for every optimizer, so
// PyTorch's AdamW defaults (lr 1e-3, weight_decay 1e-2) are --lr 0.001 --wd 0.01.
#pragma once
#include <memory>

#include "dplab/core/options.h"
#include "dplab/optim/optimizer.h"
#include "dplab/optim/sgd.h"

namespace dplab {

// `sgd` carries the SGD-family values the trainer already read (lr, momentum, wd, ...).
std::unique_ptr<Optimizer> make_train_optimizer(const Options& opt, ParamArena& arena,
                                                const SGDOptions& sgd);
// LARS from the shared values and lars.eta, lars.eps (refuses nesterov and dampening).
std::unique_ptr<Optimizer> make_lars_optimizer(const Options& opt, ParamArena& arena,
                                               const SGDOptions& sgd);

// AdamW from the shared lr and wd and adamw.beta1, adamw.beta2, adamw.eps (refuses nesterov and
// dampening).
std::unique_ptr<Optimizer> make_adamw_optimizer(const Options& opt, ParamArena& arena,
                                                const SGDOptions& sgd);

}  // namespace dplab
