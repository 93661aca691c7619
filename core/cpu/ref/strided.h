// Walks every element of a (possibly strided) shape in row-major order, giving the element
// offsets of up to N tensors that share the shape. The reference kernels use it so they read
// like the definition: "for every index i: y[i] = f(x[i])".
#pragma once
#include <array>
#include <vector>

#include "dplab/core/tensor.h"

namespace dplab::ref {

template <size_t N, typename F>
void for_each_index(const Shape& shape, const std::array<const Shape*, N>& strides, F&& f) {
  const int d = static_cast<int>(shape.size());
  const int64_t n = shape_numel(shape);
  if (n == 0) return;
  std::vector<int64_t> idx(d, 0);
  std::array<int64_t, N> off{};
  for (int64_t k = 0; k < n; ++k) {
    f(off);
    for (int j = d - 1; j >= 0; --j) {
      if (++idx[j] < shape[j]) {
        for (size_t t = 0; t < N; ++t) off[t] += (*strides[t])[j];
        break;
      }
      for (size_t t = 0; t < N; ++t) off[t] -= (*strides[t])[j] * (shape[j] - 1);
      idx[j] = 0;
    }
  }
}

}  // namespace dplab::ref
