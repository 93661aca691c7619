// The trainer's optimizer by option `optim`: "sgd" (optim/sgd.h) or "lars" (optim/lars.h).
// Both read lr, momentum and wd; SGD also nesterov and dampening, LARS lars.eta and lars.eps.
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

}  // namespace dplab
