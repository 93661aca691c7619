// Optim kernels. (Family defined by its owner; see core/backend.h for the conventions.)
#pragma once
#include "dplab/core/tensor.h"

namespace dplab {

struct OptimKernels {
  int placeholder_ = 0;  // replaced by the family's kernels
};

OptimKernels ref_optim_kernels();
OptimKernels cpu_optim_kernels();
OptimKernels cuda_optim_kernels();

}  // namespace dplab
