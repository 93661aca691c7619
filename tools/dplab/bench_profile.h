// `dplab bench train --profile-out FILE`: a compute profile of the benchmarked training step
// (comm/cluster/compute_profile.h) for the virtual cluster's `cluster.compute = profile:FILE`.
#pragma once
#include <functional>

#include "dplab/comm/cluster/compute_profile.h"
#include "dplab/core/device.h"
#include "dplab/core/param_arena.h"
#include "dplab/layers/module.h"
#include "dplab/optim/optimizer.h"
#include "dplab/train/loop/forward_backward.h"

namespace dplab::cli {

// Times `steps` training steps phase by phase: the training loop's forward, loss and backward
// (train/loop/forward_backward.h, with `how`'s autocast and loss), the driver's non-finite
// check of loss and gradients (train/loop/nonfinite_guard.h) and the optimizer, the device
// synchronised at each boundary (`sync`); and, through grad-ready hooks on the arena's tensors,
// when each gradient is ready (the device synchronised in the hook, so a device's ready time is
// its kernels' end, not their launch). Medians over the steps, and the steps' spread
// (cluster::step_log_sigma).
cluster::ComputeProfile profile_train_steps(Module& model, ParamArena& arena, Optimizer& opt,
                                            const Tensor& x, const Tensor& y, const StepLoss& how,
                                            int64_t steps, const std::function<void()>& sync);

}  // namespace dplab::cli
