#include "dplab/core/kernels/loss.h"

namespace dplab {

LossKernels cpu_loss_kernels() { return {}; }

}  // namespace dplab
