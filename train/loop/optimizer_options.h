// The trainer's shared optimizer values for option `optim`: "sgd" (optim/sgd.h), "lars"
// (optim/lars.h) or "adamw" (optim/adamw.h; the last two built by optim/optimizer_factory.h). All
// read lr and wd; SGD also momentum, nesterov and dampening, LARS momentum, lars.eta and
// lars.eps, AdamW adamw.beta1, adamw.beta2 and adamw.eps (momentum is unused by AdamW). Each
// optimizer's unset keys take that optimizer's defaults (OptimizerEntry::defaults,
// train/config/builtin_registry.cpp): SGD and LARS the option table's (lr 0.01, wd 0), AdamW
// PyTorch's (lr 1e-3, wd 1e-2, betas 0.9/0.999, eps 1e-8). A key set by --lr, --wd, --set or the
// config always wins.
#pragma once
#include <map>
#include <memory>
#include <string>

#include "dplab/core/options.h"
#include "dplab/optim/sgd.h"
#include "dplab/train/config/registry.h"

namespace dplab {

// The default an unset key of `entry` takes: the optimizer's own where it declares one
// (OptimizerEntry::defaults), else the option table's.
std::string optimizer_key_default(const OptimizerEntry& entry, const std::string& key);

// The shared SGD-family values (lr, momentum, nesterov, dampening, wd) for `entry`'s factory,
// each unset one at optimizer_key_default.
SGDOptions read_shared_optimizer_options(const Options& opt, const OptimizerEntry& entry);

// The optimizer's keys the run left unset, with the values they took (read already): what the
// run header and run.json report as defaulted by the optimizer.
std::map<std::string, std::string> optimizer_defaulted(const Options& opt,
                                                       const OptimizerEntry& entry);

}  // namespace dplab
