// The CUDA backend table. Only the element-wise memory kernels exist so far; every other family
// is empty (null) until the CUDA backend issue lands, and backend_for() refuses the device
// before a null kernel could be reached (see cuda_backend_complete()).
#include "dplab/core/backend.h"

namespace dplab {

const Backend& cuda_backend_impl() {
  static const Backend b{"cuda", cuda_elementwise_kernels(), {}, {}, {}, {}, {}, {}, {}, {}};
  return b;
}

}  // namespace dplab
