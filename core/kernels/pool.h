// Pool kernels. (Family defined by its owner; see core/backend.h for the conventions.)
#pragma once
#include "dplab/core/tensor.h"

namespace dplab {

struct PoolKernels {
  int placeholder_ = 0;  // replaced by the family's kernels
};

PoolKernels ref_pool_kernels();
PoolKernels cpu_pool_kernels();
PoolKernels cuda_pool_kernels();

}  // namespace dplab
