// Reduce kernels. (Family defined by its owner; see core/backend.h for the conventions.)
#pragma once
#include "dplab/core/tensor.h"

namespace dplab {

struct ReduceKernels {
  int placeholder_ = 0;  // replaced by the family's kernels
};

ReduceKernels ref_reduce_kernels();
ReduceKernels cpu_reduce_kernels();
ReduceKernels cuda_reduce_kernels();

}  // namespace dplab
