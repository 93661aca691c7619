#include "dplab/core/kernels/optim.h"

namespace dplab {

OptimKernels ref_optim_kernels() { return {}; }

}  // namespace dplab
