// Norm kernels. (Family defined by its owner; see core/backend.h for the conventions.)
#pragma once
#include "dplab/core/tensor.h"

namespace dplab {

struct NormKernels {
  int placeholder_ = 0;  // replaced by the family's kernels
};

NormKernels ref_norm_kernels();
NormKernels cpu_norm_kernels();
NormKernels cuda_norm_kernels();

}  // namespace dplab
