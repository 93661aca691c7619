// Gemm kernels. (Family defined by its owner; see core/backend.h for the conventions.)
#pragma once
#include "dplab/core/tensor.h"

namespace dplab {

struct GemmKernels {
  int placeholder_ = 0;  // replaced by the family's kernels
};

GemmKernels ref_gemm_kernels();
GemmKernels cpu_gemm_kernels();
GemmKernels cuda_gemm_kernels();

}  // namespace dplab
