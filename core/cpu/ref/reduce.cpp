#include "dplab/core/kernels/reduce.h"

namespace dplab {

ReduceKernels ref_reduce_kernels() { return {}; }

}  // namespace dplab
