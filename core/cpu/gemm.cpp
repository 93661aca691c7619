#include "dplab/core/kernels/gemm.h"

namespace dplab {

GemmKernels cpu_gemm_kernels() { return {}; }

}  // namespace dplab
