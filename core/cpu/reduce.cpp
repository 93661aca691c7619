#include "dplab/core/kernels/reduce.h"

namespace dplab {

ReduceKernels cpu_reduce_kernels() { return {}; }

}  // namespace dplab
