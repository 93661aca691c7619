#include "dplab/layers/relu.h"

#include "dplab/core/ops/elementwise.h"

namespace dplab {

Tensor ReLU::forward(const Tensor& x) {
  return relu(x);
}

}  // namespace dplab
