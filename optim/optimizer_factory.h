// The optimizers `optim = lars | adamw` from option values (`optim = sgd` is SGD(arena,
// SGDOptions) itself). The shared values (lr, momentum, wd, nesterov, dampening) come in an
// SGDOptions the trainer read (train/loop/optimizer_options.h: each optimizer's own defaults for
// the keys left unset); the optimizer's own keys are read here through their declarations
// (optim/optimizer_options.h), which the structs' defaults (optim/lars.h, optim/adamw.h) come
// from too.
#pragma once
#include <memory>

#include "dplab/core/options.h"
#include "dplab/core/param_arena.h"
#include "dplab/optim/optimizer.h"
#include "dplab/optim/sgd.h"

namespace dplab {

// LARS from the shared values and lars.eta, lars.eps (refuses nesterov and dampening).
std::unique_ptr<Optimizer> make_lars_optimizer(const Options& opt, ParamArena& arena,
                                               const SGDOptions& sgd);

// AdamW from the shared lr and wd and adamw.beta1, adamw.beta2, adamw.eps (refuses nesterov and
// dampening).
std::unique_ptr<Optimizer> make_adamw_optimizer(const Options& opt, ParamArena& arena,
                                                const SGDOptions& sgd);

}  // namespace dplab
