#include "dplab/core/kernels/random.h"

namespace dplab {

RandomKernels cpu_random_kernels() { return {}; }

}  // namespace dplab
