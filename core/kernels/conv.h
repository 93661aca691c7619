// Conv kernels. (Family defined by its owner; see core/backend.h for the conventions.)
#pragma once
#include "dplab/core/tensor.h"

namespace dplab {

struct ConvKernels {
  int placeholder_ = 0;  // replaced by the family's kernels
};

ConvKernels ref_conv_kernels();
ConvKernels cpu_conv_kernels();
ConvKernels cuda_conv_kernels();

}  // namespace dplab
