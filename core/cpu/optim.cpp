#include "dplab/core/kernels/optim.h"

namespace dplab {

OptimKernels cpu_optim_kernels() { return {}; }

}  // namespace dplab
