#include "dplab/core/kernels/pool.h"

namespace dplab {

PoolKernels cpu_pool_kernels() { return {}; }

}  // namespace dplab
