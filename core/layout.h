// Index arithmetic of the blocked nChw16c layout (Layout::nChw16c, core/tensor.h), shared by the
// reference and fast CPU kernels so both place an element in the same spot.
#pragma once
#include <cstdint>

#include "dplab/core/tensor.h"

namespace dplab {

// Offset (in elements) of (n, c, h·W + w) in an nChw16c tensor of C channels and HW = H·W.
inline int64_t nChw16c_offset(int64_t n, int64_t c, int64_t hw, int64_t C, int64_t HW) {
  return ((n * (C / kBlock16c) + c / kBlock16c) * HW + hw) * kBlock16c + c % kBlock16c;
}

}  // namespace dplab
