// Index arithmetic of the non-strided layouts (Layout::nChw16c and Layout::nhwc, core/tensor.h),
// shared by the reference and fast kernels so all place an element in the same spot.
#pragma once
#include <cstdint>

#include "dplab/core/tensor.h"

namespace dplab {

// Offset (in elements) of (n, c, h·W + w) in an nChw16c tensor of C channels and HW = H·W.
inline int64_t nChw16c_offset(int64_t n, int64_t c, int64_t hw, int64_t C, int64_t HW) {
  return ((n * (C / kBlock16c) + c / kBlock16c) * HW + hw) * kBlock16c + c % kBlock16c;
}

// Offset (in elements) of (n, c, h·W + w) in an nhwc tensor of C channels and HW = H·W.
inline int64_t nhwc_offset(int64_t n, int64_t c, int64_t hw, int64_t C, int64_t HW) {
  return (n * HW + hw) * C + c;
}

// The strides [H·W·C, 1, W·C, C] of a strided view that places every element of an nhwc
// tensor of `shape` [N, C, H, W] where the layout does: how stride-driven kernels read it.
inline Shape nhwc_strides(const Shape& shape) {
  const int64_t C = shape[1], H = shape[2], W = shape[3];
  return {H * W * C, 1, W * C, C};
}

// The strides by which stride-driven kernels read t: its own when strided, nhwc_strides when
// nhwc. nChw16c has none (its kernels read it through nChw16c_offset).
inline Shape element_strides(const Tensor& t) {
  if (t.layout() == Layout::nhwc) return nhwc_strides(t.shape());
  DPLAB_CHECK(t.layout() == Layout::strided, "{}: the {} layout has no strides", t.str(),
              layout_name(t.layout()));
  return t.strides();
}

}  // namespace dplab
