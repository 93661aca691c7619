// Random kernels. (Family defined by its owner; see core/backend.h for the conventions.)
#pragma once
#include "dplab/core/tensor.h"

namespace dplab {

struct RandomKernels {
  int placeholder_ = 0;  // replaced by the family's kernels
};

RandomKernels ref_random_kernels();
RandomKernels cpu_random_kernels();
RandomKernels cuda_random_kernels();

}  // namespace dplab
