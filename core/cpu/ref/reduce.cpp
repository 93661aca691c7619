// Reference reductions: walk every input element once and accumulate in double.
#include <vector>

#include "dplab/core/cpu/ref/strided.h"
#include "dplab/core/kernels/reduce.h"

namespace dplab {
namespace {

// Checks that y is x's shape with some dims reduced to 1.
void check_keepdim_shape(const Tensor& x, const Tensor& y, const char* what) {
  bool ok = x.dim() == y.dim();
  for (int d = 0; ok && d < x.dim(); ++d) ok = y.shape()[d] == x.shape()[d] || y.shape()[d] == 1;
  DPLAB_CHECK(ok, "{}: output shape {} is not input shape {} with reduced dims set to 1", what,
              shape_str(y.shape()), shape_str(x.shape()));
}

void sum(const Tensor& x, Tensor& y, float scale) {
  check_keepdim_shape(x, y, "sum");
  check_dtype(y, DType::f32, "sum output");
  // acc is y's elements in row-major order; reduced dims get stride 0 so every x element
  // lands on the accumulator of its output.
  std::vector<double> acc(y.numel(), 0.0);
  Shape acc_strides = contiguous_strides(y.shape());
  for (int d = 0; d < x.dim(); ++d)
    if (y.shape()[d] != x.shape()[d]) acc_strides[d] = 0;
  const void* xp = x.raw_data();
  const DType xt = x.dtype();
  ref::for_each_index<2>(
      x.shape(), {&x.strides(), &acc_strides},
      [&](const std::array<int64_t, 2>& o) { acc[o[1]] += load_as_f32(xp, xt, o[0]); });
  const Shape dense = contiguous_strides(y.shape());
  float* yp = y.data<float>();
  ref::for_each_index<2>(y.shape(), {&dense, &y.strides()}, [&](const std::array<int64_t, 2>& o) {
    yp[o[1]] = static_cast<float>(scale * acc[o[0]]);
  });
}

void argmax(const Tensor& x, int dim, Tensor& out) {
  DPLAB_CHECK(dim >= 0 && dim < x.dim(), "argmax: dim {} of a {}-d tensor", dim, x.dim());
  Shape expect = x.shape();
  expect[dim] = 1;
  check_shape(out, expect, "argmax output");
  check_dtype(out, DType::i64, "argmax output");
  DPLAB_CHECK(x.shape()[dim] > 0, "argmax over an empty dim of {}", x.str());
  const void* xp = x.raw_data();
  const DType xt = x.dtype();
  const int64_t len = x.shape()[dim], step = x.strides()[dim];
  int64_t* op = out.data<int64_t>();
  ref::for_each_index<2>(expect, {&x.strides(), &out.strides()},
                         [&](const std::array<int64_t, 2>& o) {
                           int64_t best_i = 0;
                           float best = load_as_f32(xp, xt, o[0]);
                           for (int64_t k = 1; k < len; ++k) {
                             const float v = load_as_f32(xp, xt, o[0] + k * step);
                             if (best != best) break;  // a NaN is the maximum
                             if (v > best || v != v) {
                               best = v;
                               best_i = k;
                             }
                           }
                           op[o[1]] = best_i;
                         });
}

double sum_of_squares(const Tensor& x) {
  const void* xp = x.raw_data();
  const DType xt = x.dtype();
  double acc = 0;
  ref::for_each_index<1>(x.shape(), {&x.strides()}, [&](const std::array<int64_t, 1>& o) {
    const double v = load_as_f32(xp, xt, o[0]);
    acc += v * v;
  });
  return acc;
}

}  // namespace

ReduceKernels ref_reduce_kernels() {
  ReduceKernels k{};
  k.sum = sum;
  k.argmax = argmax;
  k.sum_of_squares = sum_of_squares;
  return k;
}

}  // namespace dplab
