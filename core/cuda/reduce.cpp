// CUDA reduction family: validation and the row/chunk description here, kernels in
// reduce_kernels.cu. All launches go to the device's compute stream.
//
// Host synchronisation: sum_of_squares returns a double to the host, so it copies its result
// back on the compute stream and waits for that stream; that is the one place this family
// blocks the host. sum and argmax only enqueue work.
//
// Scratch (the double partial sums of long rows) comes from the caching allocator as i64
// tensors (8-byte elements; dplab has no f64 dtype) and is handed back when the wrapper returns:
// the allocator's next user is ordered after these kernels on the same compute stream.
#include "dplab/core/kernels/reduce.h"
#include "dplab/core/cuda/check.h"
#include "dplab/core/cuda/kernel_scope.h"
#include "dplab/core/cuda/launch_reduce.h"
#include "dplab/core/cuda/stream_wait.h"

namespace dplab {
namespace {

// Checks that y is x's shape with some dims reduced to 1 (ref's check and message).
void check_keepdim_shape(const Tensor& x, const Tensor& y, const char* what) {
  bool ok = x.dim() == y.dim();
  for (int d = 0; ok && d < x.dim(); ++d) ok = y.shape()[d] == x.shape()[d] || y.shape()[d] == 1;
  DPLAB_CHECK(ok, "{}: output shape {} is not input shape {} with reduced dims set to 1", what,
              shape_str(y.shape()), shape_str(x.shape()));
}

double* as_doubles(const Tensor& scratch) {
  static_assert(sizeof(double) == sizeof(int64_t));
  return static_cast<double*>(scratch.raw_data());
}

void sum(const Tensor& x, Tensor& y, float scale) {
  check_keepdim_shape(x, y, "CUDA sum");
  check_dtype(y, DType::f32, "CUDA sum output");
  check_same_device(x, y, "CUDA sum");
  cuda::KernelScope scope(y, "sum");
  // Kept dims (y's size equals x's) index the rows, reduced dims (y's size 1, x's not) the
  // elements within a row.
  Shape kept_size, kept_xs, kept_ys, red_size, red_xs;
  int64_t len = 1;
  for (int d = 0; d < x.dim(); ++d) {
    if (y.shape()[d] == x.shape()[d]) {
      kept_size.push_back(x.shape()[d]);
      kept_xs.push_back(x.strides()[d]);
      kept_ys.push_back(y.strides()[d]);
    } else {
      red_size.push_back(x.shape()[d]);
      red_xs.push_back(x.strides()[d]);
      len *= x.shape()[d];
    }
  }
  const int64_t outputs = y.numel();
  if (outputs == 0) return;
  const auto kept = cuda::indexer_for<2>(kept_size, {&kept_xs, &kept_ys}, "sum (kept dims)");
  const auto red = cuda::indexer_for<1>(red_size, {&red_xs}, "sum (reduced dims)");
  const int64_t chunks = cuda::sum_chunks(outputs, len);
  Tensor scratch;
  if (chunks > 0) scratch = Tensor::empty({outputs * chunks}, DType::i64, y.device());
  DPLAB_CUDA_CHECK(cuda::launch_sum(x.raw_data(), x.dtype(), y.data<float>(), kept, red, outputs,
                                    len, scale, chunks, chunks > 0 ? as_doubles(scratch) : nullptr,
                                    scope.stream()));
}

void argmax(const Tensor& x, int dim, Tensor& out) {
  DPLAB_CHECK(dim >= 0 && dim < x.dim(), "CUDA argmax: dim {} of a {}-d tensor", dim, x.dim());
  Shape expect = x.shape();
  expect[dim] = 1;
  check_shape(out, expect, "CUDA argmax output");
  check_dtype(out, DType::i64, "CUDA argmax output");
  DPLAB_CHECK(x.shape()[dim] > 0, "CUDA argmax over an empty dim of {}", x.str());
  check_same_device(x, out, "CUDA argmax");
  cuda::KernelScope scope(out, "argmax");
  const auto kept = cuda::indexer_for<2>(expect, {&x.strides(), &out.strides()}, "argmax");
  DPLAB_CUDA_CHECK(cuda::launch_argmax(x.raw_data(), x.dtype(), out.data<int64_t>(), kept,
                                       out.numel(), x.shape()[dim], x.strides()[dim],
                                       scope.stream()));
}

double sum_of_squares(const Tensor& x) {
  cuda::KernelScope scope(x, "sum_of_squares");
  const auto ix = cuda::indexer_for<1>(x.shape(), {&x.strides()}, "sum_of_squares");
  const int64_t n = x.numel();
  const int64_t chunks = cuda::sum_of_squares_chunks(n);
  // chunks partials, then the total.
  const Tensor scratch = Tensor::empty({chunks + 1}, DType::i64, x.device());
  double* partials = as_doubles(scratch);
  DPLAB_CUDA_CHECK(cuda::launch_sum_of_squares(x.raw_data(), x.dtype(), ix, n, chunks, partials,
                                               partials + chunks, scope.stream()));
  // The family's one host synchronisation: the caller wants the number now.
  double total = 0;
  cuda::copy_to_host(&total, partials + chunks, sizeof(double), scope.stream(),
                     fmt::format("sum_of_squares of {}", x.str()));
  return total;
}

}  // namespace

ReduceKernels cuda_reduce_kernels() {
  ReduceKernels k{};
  k.sum = sum;
  k.argmax = argmax;
  k.sum_of_squares = sum_of_squares;
  return k;
}

}  // namespace dplab
