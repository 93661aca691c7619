#include "dplab/core/kernels/norm.h"

namespace dplab {

NormKernels cpu_norm_kernels() { return {}; }

}  // namespace dplab
