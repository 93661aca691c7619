#include "dplab/core/kernels/pool.h"

namespace dplab {

PoolKernels ref_pool_kernels() { return {}; }

}  // namespace dplab
