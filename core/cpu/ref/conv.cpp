#include "dplab/core/kernels/conv.h"

namespace dplab {

ConvKernels ref_conv_kernels() { return {}; }

}  // namespace dplab
