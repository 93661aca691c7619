// CUDA element-wise kernel family: validation, error context and the strided walk description
// here, kernels in elementwise_kernels.cu. Every launch goes to the compute stream of the
// tensors' device (core/cuda/stream.h); nothing here waits for the device. An nhwc tensor is
// walked through the strides that place its elements (element_strides, core/layout.h), so a
// copy between nhwc and NCHW is a strided copy, and math on nhwc operands keeps their order.
#include <cstring>

#include "dplab/core/cuda/check.h"
#include "dplab/core/cuda/kernel_scope.h"
#include "dplab/core/cuda/launch.h"
#include "dplab/core/kernels/elementwise.h"
#include "dplab/core/layout.h"

namespace dplab {
namespace {

// The walk of a kernel over its operands: over `shape` by each operand's element strides, or,
// when every operand is nhwc (one dense order, element k of each at offset k), flat over the
// buffers. Walked by shape, nhwc operands would put neighbouring threads C elements apart.
struct Walk {
  Shape shape;
  std::vector<Shape> strides;  // one per operand
  template <size_t N>
  std::array<const Shape*, N> pointers() const {
    std::array<const Shape*, N> p{};
    for (size_t i = 0; i < N; ++i) p[i] = &strides[i];
    return p;
  }
};
Walk walk(const Shape& shape, std::initializer_list<const Tensor*> ts,
          std::vector<Shape> strides = {}) {
  bool flat = true;
  for (const Tensor* t : ts) flat = flat && t->layout() == Layout::nhwc && t->shape() == shape;
  if (flat) return {Shape{shape_numel(shape)}, std::vector<Shape>(ts.size(), Shape{1})};
  if (strides.empty())
    for (const Tensor* t : ts) strides.push_back(element_strides(*t));
  return {shape, std::move(strides)};
}

void fill(Tensor& y, double value) {
  cuda::KernelScope scope(y, "fill");
  // The element's bytes exactly as ref fill builds them (integers from the double, floats
  // through store_from_f32), placed at every position by the kernel.
  alignas(8) unsigned char elem[8] = {};
  const DType t = y.dtype();
  if (t == DType::i64) {
    const int64_t v = static_cast<int64_t>(value);
    memcpy(elem, &v, 8);
  } else if (t == DType::i32) {
    const int32_t v = static_cast<int32_t>(value);
    memcpy(elem, &v, 4);
  } else {
    store_from_f32(elem, t, 0, static_cast<float>(value));
  }
  uint64_t bits = 0;
  memcpy(&bits, elem, 8);
  const Walk w = walk(y.shape(), {&y});
  const auto ix = cuda::indexer_for<1>(w.shape, w.pointers<1>(), "fill");
  DPLAB_CUDA_CHECK(cuda::launch_fill(y.raw_data_any_layout(), static_cast<int>(dtype_size(t)), bits,
                                     ix, y.numel(), scope.stream()));
}

// NCHW-contiguous <-> nhwc between float dtypes: a batch of transposes of [C][H·W] (or back),
// tiled (launch_transpose). False where it does not apply or the grid would be too large: the
// strided walk then does it.
bool relayout(const Tensor& src, Tensor& dst, cudaStream_t stream) {
  const bool to_nhwc = dst.layout() == Layout::nhwc && src.is_contiguous();
  const bool to_nchw = src.layout() == Layout::nhwc && dst.is_contiguous();
  if (!(to_nhwc || to_nchw) || !is_floating(src.dtype()) || !is_floating(dst.dtype())) return false;
  const int64_t N = src.size(0), C = src.size(1), HW = src.size(2) * src.size(3);
  const int64_t R = to_nhwc ? C : HW, S = to_nhwc ? HW : C;
  if (!cuda::transpose_fits(N, R, S)) return false;
  DPLAB_CUDA_CHECK(cuda::launch_transpose(src.raw_data_any_layout(), src.dtype(),
                                          dst.raw_data_any_layout(), dst.dtype(), N, R, S, stream));
  return true;
}

void copy(const Tensor& src, Tensor& dst) {
  DPLAB_CHECK(src.shape() == dst.shape(), "CUDA copy: shape {} into {}", shape_str(src.shape()),
              shape_str(dst.shape()));
  check_same_device(src, dst, "CUDA copy");
  cuda::KernelScope scope(dst, "copy");
  const int64_t n = src.numel();
  if (n == 0) return;
  // One dense order on both sides (both NCHW-contiguous, or both nhwc): the bytes as they lie.
  const bool same_order = src.is_blocked() || dst.is_blocked()
                              ? src.layout() == dst.layout()
                              : src.is_contiguous() && dst.is_contiguous();
  if (src.dtype() == dst.dtype() && same_order) {
    DPLAB_CUDA_CHECK(cudaMemcpyAsync(dst.raw_data_any_layout(), src.raw_data_any_layout(),
                                     src.nbytes(), cudaMemcpyDeviceToDevice, scope.stream()));
    return;
  }
  if (relayout(src, dst, scope.stream())) return;
  const Walk w = walk(src.shape(), {&src, &dst});
  const auto ix = cuda::indexer_for<2>(w.shape, w.pointers<2>(), "copy");
  if (src.dtype() == dst.dtype()) {
    DPLAB_CUDA_CHECK(cuda::launch_copy_bytes(src.raw_data_any_layout(), dst.raw_data_any_layout(),
                                             static_cast<int>(dtype_size(src.dtype())), ix, n,
                                             scope.stream()));
    return;
  }
  DPLAB_CUDA_CHECK(cuda::launch_convert(src.raw_data_any_layout(), src.dtype(),
                                        dst.raw_data_any_layout(), dst.dtype(), ix, n,
                                        scope.stream()));
}

void axpy(float alpha, const Tensor& x, Tensor& y) {
  DPLAB_CHECK(x.shape() == y.shape(), "CUDA axpy: x {} and y {} differ in shape",
              shape_str(x.shape()), shape_str(y.shape()));
  check_dtype(y, DType::f32, "CUDA axpy output");
  check_same_device(x, y, "CUDA axpy");
  cuda::KernelScope scope(y, "axpy");
  const Walk w = walk(x.shape(), {&x, &y});
  const auto ix = cuda::indexer_for<2>(w.shape, w.pointers<2>(), "axpy");
  DPLAB_CUDA_CHECK(cuda::launch_axpy(alpha, x.raw_data_any_layout(), x.dtype(),
                                     y.data_any_layout<float>(), ix, x.numel(), scope.stream()));
}

void unary(UnaryOp op, float s, const Tensor& x, Tensor& y) {
  DPLAB_CHECK(x.shape() == y.shape(), "CUDA unary: x {} and y {} differ in shape",
              shape_str(x.shape()), shape_str(y.shape()));
  DPLAB_CHECK(is_floating(y.dtype()), "CUDA unary: output {} must be a float tensor", y.str());
  check_same_device(x, y, "CUDA unary");
  cuda::KernelScope scope(y, "unary");
  const Walk w = walk(x.shape(), {&x, &y});
  const auto ix = cuda::indexer_for<2>(w.shape, w.pointers<2>(), "unary");
  DPLAB_CUDA_CHECK(cuda::launch_unary(op, s, x.raw_data_any_layout(), x.dtype(),
                                      y.raw_data_any_layout(), y.dtype(), ix, x.numel(),
                                      scope.stream()));
}

void binary(BinaryOp op, const Tensor& a, const Tensor& b, Tensor& y) {
  check_shape(y, broadcast_shapes(a.shape(), b.shape(), "CUDA binary"), "CUDA binary output");
  DPLAB_CHECK(is_floating(y.dtype()), "CUDA binary: output {} must be a float tensor", y.str());
  check_same_device(a, y, "CUDA binary");
  check_same_device(b, y, "CUDA binary");
  cuda::KernelScope scope(y, "binary");
  // a and b read through broadcast strides (stride 0 along the dims they are broadcast over);
  // nhwc operands (same shape as y) through the strides that place their elements.
  const auto read_strides = [&](const Tensor& t) {
    return t.is_blocked() ? element_strides(t) : broadcast_strides(t, y.shape());
  };
  DPLAB_CHECK(
      (!a.is_blocked() || a.shape() == y.shape()) && (!b.is_blocked() || b.shape() == y.shape()),
      "CUDA binary: an nhwc operand is not broadcast ({}, {} into {})", a.str(), b.str(), y.str());
  const Walk w =
      walk(y.shape(), {&a, &b, &y}, {read_strides(a), read_strides(b), element_strides(y)});
  const auto ix = cuda::indexer_for<3>(w.shape, w.pointers<3>(), "binary");
  DPLAB_CUDA_CHECK(cuda::launch_binary(op, a.raw_data_any_layout(), a.dtype(),
                                       b.raw_data_any_layout(), b.dtype(), y.raw_data_any_layout(),
                                       y.dtype(), ix, y.numel(), scope.stream()));
}

void add_int(Tensor& y, int64_t v) {
  DPLAB_CHECK(y.dtype() == DType::i64 || y.dtype() == DType::i32,
              "CUDA add_int: {} must be an i64 or i32 tensor", y.str());
  cuda::KernelScope scope(y, "add_int");
  const auto ix = cuda::indexer_for<1>(y.shape(), {&y.strides()}, "add_int");
  DPLAB_CUDA_CHECK(cuda::launch_add_int(y.raw_data(), y.dtype() == DType::i64, v, ix, y.numel(),
                                        scope.stream()));
}

}  // namespace

ElementwiseKernels cuda_elementwise_kernels() {
  ElementwiseKernels k{};
  k.fill = fill;
  k.copy = copy;
  k.axpy = axpy;
  k.unary = unary;
  k.binary = binary;
  k.add_int = add_int;
  return k;
}

}  // namespace dplab
