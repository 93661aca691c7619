// Loss kernels. (Family defined by its owner; see core/backend.h for the conventions.)
#pragma once
#include "dplab/core/tensor.h"

namespace dplab {

struct LossKernels {
  int placeholder_ = 0;  // replaced by the family's kernels
};

LossKernels ref_loss_kernels();
LossKernels cpu_loss_kernels();
LossKernels cuda_loss_kernels();

}  // namespace dplab
