#include "dplab/core/kernels/random.h"

namespace dplab {

RandomKernels ref_random_kernels() { return {}; }

}  // namespace dplab
