#include "dplab/core/kernels/conv.h"

namespace dplab {

ConvKernels cpu_conv_kernels() { return {}; }

}  // namespace dplab
