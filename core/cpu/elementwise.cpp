// Fast element-wise kernels: contiguous OpenMP loops whose inner loops are templated on the
// functors of core/functors.h (so they inline and vectorise). Broadcast binary ops collapse
// their dims to at most three and specialise the innermost loop for the stride patterns that
// matter (same shape, row-vector bias, scalar); anything else goes through the reference loops.
#include <algorithm>

#include "dplab/core/kernels/elementwise.h"
#include "dplab/core/layout.h"

namespace dplab {
namespace {

const ElementwiseKernels& spec() {
  static const ElementwiseKernels k = ref_elementwise_kernels();
  return k;
}

constexpr int64_t kParallelMin = 32768;  // below this, threads cost more than they save
constexpr int64_t kChunk = 16384;        // elements per parallel task along a long inner dim

void fill(Tensor& y, double value) {
  if (!y.is_contiguous() || y.dtype() != DType::f32) return spec().fill(y, value);
  float* p = y.data<float>();
  const int64_t n = y.numel();
  const float v = static_cast<float>(value);
#pragma omp parallel for simd schedule(static) if (n > 65536)
  for (int64_t i = 0; i < n; ++i) p[i] = v;
}

template <typename Src, typename Dst>
void cast_loop(const void* s, void* d, int64_t n) {
  const Src* src = static_cast<const Src*>(s);
  Dst* dst = static_cast<Dst*>(d);
  const fn::Cast<Src, Dst> f;
#pragma omp parallel for simd schedule(static) if (n > 65536)
  for (int64_t i = 0; i < n; ++i) dst[i] = f(src[i]);
}

// Typed contiguous float casts: one loop per dtype pair, no per-element dtype switch.
template <typename Src>
void cast_from(const void* s, DType dt, void* d, int64_t n) {
  switch (dt) {
    case DType::f32:
      return cast_loop<Src, float>(s, d, n);
    case DType::bf16:
      return cast_loop<Src, bf16_t>(s, d, n);
    case DType::f16:
      return cast_loop<Src, f16_t>(s, d, n);
    default:
      break;
  }
}

// n contiguous elements of float dtype st at s, converted into dtype dt at d.
void cast_any(const void* s, DType st, void* d, DType dt, int64_t n) {
  switch (st) {
    case DType::f32:
      return cast_from<float>(s, dt, d, n);
    case DType::bf16:
      return cast_from<bf16_t>(s, dt, d, n);
    case DType::f16:
      return cast_from<f16_t>(s, dt, d, n);
    default:
      break;
  }
}

// NCHW <-> nChw16c, one element type on both sides (f32 or bf16's bits): one task per (n,
// channel block); within it 16 channel rows of H·W elements on one side, H·W rows of 16 on the
// other.
template <typename T>
void convert_layout(const Tensor& src, Tensor& dst) {
  const int64_t N = src.size(0), C = src.size(1), HW = src.size(2) * src.size(3);
  const int64_t CB = C / kBlock16c;
  const bool to_blocked = dst.is_blocked();
  const T* s = static_cast<const T*>(src.raw_data_any_layout());
  T* d = static_cast<T*>(dst.raw_data_any_layout());
#pragma omp parallel for schedule(static) if (N * C * HW > 65536)
  for (int64_t t = 0; t < N * CB; ++t) {
    const int64_t plain0 = t * kBlock16c * HW;    // (n, cb·16, 0) in NCHW
    const int64_t blocked0 = t * HW * kBlock16c;  // (n, cb, 0, 0) in nChw16c
    for (int64_t i = 0; i < HW; ++i)
#pragma omp simd
      for (int64_t j = 0; j < kBlock16c; ++j) {
        if (to_blocked)
          d[blocked0 + i * kBlock16c + j] = s[plain0 + j * HW + i];
        else
          d[plain0 + j * HW + i] = s[blocked0 + i * kBlock16c + j];
      }
  }
}

void copy(const Tensor& src, Tensor& dst) {
  if (src.is_blocked() || dst.is_blocked()) {
    const DType t = src.dtype();
    const bool same = t == dst.dtype() && (t == DType::f32 || t == DType::bf16);
    if (same && src.layout() == dst.layout() && src.shape() == dst.shape()) {
      memcpy(dst.raw_data_any_layout(), src.raw_data_any_layout(), src.nbytes());
      return;
    }
    const bool nchw_blocked = (src.layout() == Layout::nChw16c && dst.is_contiguous()) ||
                              (dst.layout() == Layout::nChw16c && src.is_contiguous());
    if (same && src.shape() == dst.shape() && nchw_blocked)
      return t == DType::f32 ? convert_layout<float>(src, dst) : convert_layout<uint16_t>(src, dst);
    // One blocked layout, two float dtypes: the elements sit in the same order, one flat cast.
    if (src.layout() == dst.layout() && src.shape() == dst.shape() && is_floating(src.dtype()) &&
        is_floating(dst.dtype()))
      return cast_any(src.raw_data_any_layout(), src.dtype(), dst.raw_data_any_layout(),
                      dst.dtype(), src.numel());
    return spec().copy(src, dst);
  }
  if (!(src.is_contiguous() && dst.is_contiguous() && src.shape() == dst.shape()))
    return spec().copy(src, dst);
  const int64_t n = src.numel();
  if (src.dtype() == dst.dtype()) {
    if (n > 0) memcpy(dst.raw_data(), src.raw_data(), src.nbytes());
    return;
  }
  if (!is_floating(src.dtype()) || !is_floating(dst.dtype())) return spec().copy(src, dst);
  cast_any(src.raw_data(), src.dtype(), dst.raw_data(), dst.dtype(), n);
}

// a and b hold the same elements in the same memory order: both NCHW-contiguous, or both in
// one blocked layout. Element-wise math over such a pair is one flat loop over the buffers.
bool same_dense_order(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape()) return false;
  if (a.is_blocked() || b.is_blocked()) return a.layout() == b.layout();
  return a.is_contiguous() && b.is_contiguous();
}

void axpy(float alpha, const Tensor& x, Tensor& y) {
  if (!(same_dense_order(x, y) && x.dtype() == DType::f32 && y.dtype() == DType::f32))
    return spec().axpy(alpha, x, y);
  const float* xs = x.data_any_layout<float>();
  float* yd = y.data_any_layout<float>();
  const int64_t n = x.numel();
#pragma omp parallel for simd schedule(static) if (n > 65536)
  for (int64_t i = 0; i < n; ++i) yd[i] += alpha * xs[i];
}

// The loop lives in a function taking plain pointers (not in a lambda capturing them by
// reference): with captured references GCC reloads the pointers every iteration, does not
// vectorise, and the two OpenMP threads measured 100x slower. X and Y are float or bf16_t (a
// bf16 activation under autocast): computed in f32, stored rounded once.
template <typename F, typename X, typename Y>
void unary_loop(F f, const X* x, Y* y, int64_t n) {
  const fn::ToF32<X> load;
  const fn::FromF32<Y> store;
#pragma omp parallel for simd schedule(static) if (n > kParallelMin)
  for (int64_t i = 0; i < n; ++i) y[i] = store(f(load(x[i])));
}

// The element types the fast loops take: f32, or bf16 for every operand of the call.
bool all_f32(std::initializer_list<const Tensor*> ts) {
  for (const Tensor* t : ts)
    if (t->dtype() != DType::f32) return false;
  return true;
}
bool all_bf16(std::initializer_list<const Tensor*> ts) {
  for (const Tensor* t : ts)
    if (t->dtype() != DType::bf16) return false;
  return true;
}

// Calls f(T{}) with T = float or bf16_t when every tensor has that dtype; false otherwise.
template <typename F>
bool with_float_type(std::initializer_list<const Tensor*> ts, F&& f) {
  if (all_f32(ts)) return f(float{}), true;
  if (all_bf16(ts)) return f(bf16_t{}), true;
  return false;
}

void unary(UnaryOp op, float s, const Tensor& x, Tensor& y) {
  const int64_t n = x.numel();
  if (same_dense_order(x, y) && with_float_type({&x, &y}, [&](auto t) {
        using T = decltype(t);
        const T* xs = static_cast<const T*>(x.raw_data_any_layout());
        T* yd = static_cast<T*>(y.raw_data_any_layout());
        dispatch_unary(op, s, [=](auto f) { unary_loop(f, xs, yd, n); });
      }))
    return;
  spec().unary(op, s, x, y);
}

// y[0:n] = f(a[i*sa], b[i*sb]); the three stride patterns of real broadcasts get their own
// loop so each is a plain vectorisable loop.
template <typename F>
inline void binary_row(F f, const float* a, int64_t sa, const float* b, int64_t sb, float* y,
                       int64_t n) {
  if (sa == 1 && sb == 1) {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) y[i] = f(a[i], b[i]);
  } else if (sa == 1 && sb == 0) {
    const float bv = *b;
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) y[i] = f(a[i], bv);
  } else if (sa == 0 && sb == 1) {
    const float av = *a;
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) y[i] = f(av, b[i]);
  } else {
    for (int64_t i = 0; i < n; ++i) y[i] = f(a[i * sa], b[i * sb]);
  }
}

// y = f(a, b) over three tensors of one shape in one memory order (both NCHW-contiguous or
// one blocked layout), elements of type T (float or bf16_t: computed in f32, rounded once).
template <typename F, typename T>
void dense_binary_loop(F f, const T* a, const T* b, T* y, int64_t n) {
  const fn::ToF32<T> load;
  const fn::FromF32<T> store;
#pragma omp parallel for simd schedule(static) if (n > kParallelMin)
  for (int64_t i = 0; i < n; ++i) y[i] = store(f(load(a[i]), load(b[i])));
}

void binary(BinaryOp op, const Tensor& a, const Tensor& b, Tensor& y) {
  if (same_dense_order(a, b) && same_dense_order(a, y)) {
    const int64_t n = y.numel();
    const bool done = with_float_type({&a, &b, &y}, [&](auto t) {
      using T = decltype(t);
      const T* ap = static_cast<const T*>(a.raw_data_any_layout());
      const T* bp = static_cast<const T*>(b.raw_data_any_layout());
      T* yp = static_cast<T*>(y.raw_data_any_layout());
      dispatch_binary(op, [&](auto f) { dense_binary_loop(f, ap, bp, yp, n); });
    });
    if (done) return;
  }
  if (a.is_blocked() || b.is_blocked() || y.is_blocked())
    return spec().binary(op, a, b, y);  // refuses the blocked operand, naming it
  const Shape out = broadcast_shapes(a.shape(), b.shape(), "binary");
  if (!(y.shape() == out && y.is_contiguous() && y.dtype() == DType::f32 &&
        a.dtype() == DType::f32 && b.dtype() == DType::f32))
    return spec().binary(op, a, b, y);
  const Shape sa_full = broadcast_strides(a, out), sb_full = broadcast_strides(b, out);
  // Collapse: drop size-1 dims, then merge dim j into j-1 when both inputs (and y, which is
  // contiguous) step through them as one dimension.
  Shape sh, sa, sb;
  for (size_t j = 0; j < out.size(); ++j) {
    if (out[j] == 1) continue;
    if (!sh.empty() && sa.back() == sa_full[j] * out[j] && sb.back() == sb_full[j] * out[j]) {
      sh.back() *= out[j];
      sa.back() = sa_full[j];
      sb.back() = sb_full[j];
    } else {
      sh.push_back(out[j]);
      sa.push_back(sa_full[j]);
      sb.push_back(sb_full[j]);
    }
  }
  if (sh.size() > 3) return spec().binary(op, a, b, y);
  while (sh.size() < 3) {
    sh.insert(sh.begin(), 1);
    sa.insert(sa.begin(), 0);
    sb.insert(sb.begin(), 0);
  }
  const float* ap = a.data<float>();
  const float* bp = b.data<float>();
  float* yp = y.data<float>();
  const int64_t d0 = sh[0], d1 = sh[1], d2 = sh[2];
  const int64_t chunks = (d2 + kChunk - 1) / kChunk;
  const int64_t tasks = d0 * d1 * chunks;
  const int64_t n = d0 * d1 * d2;
  dispatch_binary(op, [&](auto f) {
#pragma omp parallel for schedule(static) if (n > kParallelMin)
    for (int64_t t = 0; t < tasks; ++t) {
      const int64_t c = t % chunks, row = t / chunks;
      const int64_t i1 = row % d1, i0 = row / d1;
      const int64_t start = c * kChunk, len = std::min(kChunk, d2 - start);
      binary_row(f, ap + i0 * sa[0] + i1 * sa[1] + start * sa[2], sa[2],
                 bp + i0 * sb[0] + i1 * sb[1] + start * sb[2], sb[2], yp + row * d2 + start, len);
    }
  });
}

}  // namespace

ElementwiseKernels cpu_elementwise_kernels() {
  ElementwiseKernels k{};
  k.fill = fill;
  k.copy = copy;
  k.axpy = axpy;
  k.unary = unary;
  k.binary = binary;
  k.add_int = spec().add_int;  // counters: a handful of elements, no fast path needed
  return k;
}

}  // namespace dplab
