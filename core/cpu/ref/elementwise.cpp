// Reference element-wise kernels: one plain loop per definition.
#include <algorithm>

#include "dplab/core/cpu/ref/strided.h"
#include "dplab/core/kernels/elementwise.h"
#include "dplab/core/layout.h"

namespace dplab {
namespace {

void fill(Tensor& y, double value) {
  char* base = static_cast<char*>(y.raw_data_any_layout());
  const DType t = y.dtype();
  const size_t es = dtype_size(t);
  // Build one element's bytes, then place it at every (strided) position.
  alignas(8) unsigned char elem[8];
  if (t == DType::i64) {
    int64_t v = static_cast<int64_t>(value);
    memcpy(elem, &v, 8);
  } else if (t == DType::i32) {
    int32_t v = static_cast<int32_t>(value);
    memcpy(elem, &v, 4);
  } else {
    store_from_f32(elem, t, 0, static_cast<float>(value));
  }
  // A non-strided layout fills its dense buffer, whose order does not matter here.
  const Shape flat{y.numel()}, unit{1};
  const bool dense = y.is_blocked();
  ref::for_each_index<1>(
      dense ? flat : y.shape(), {dense ? &unit : &y.strides()},
      [&](const std::array<int64_t, 1>& o) { memcpy(base + o[0] * es, elem, es); });
}

// A copy between layouts: element (n, c, h, w) of one goes to (n, c, h, w) of the other, each
// placed by its own layout (float dtypes, converted through f32; same shape).
void copy_between_layouts(const Tensor& src, Tensor& dst) {
  DPLAB_CHECK(is_floating(src.dtype()) && is_floating(dst.dtype()) && src.dim() == 4,
              "copy between layouts: {} into {} (float [N, C, H, W] only)", src.str(), dst.str());
  const int64_t N = src.size(0), C = src.size(1), H = src.size(2), W = src.size(3);
  auto offset = [&](const Tensor& t, int64_t n, int64_t c, int64_t h, int64_t w) {
    if (t.layout() == Layout::nChw16c) return nChw16c_offset(n, c, h * W + w, C, H * W);
    if (t.layout() == Layout::nhwc) return nhwc_offset(n, c, h * W + w, C, H * W);
    return n * t.stride(0) + c * t.stride(1) + h * t.stride(2) + w * t.stride(3);
  };
  const void* s = src.raw_data_any_layout();
  void* d = dst.raw_data_any_layout();
  const DType st = src.dtype(), dt = dst.dtype();
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t w = 0; w < W; ++w)
          store_from_f32(d, dt, offset(dst, n, c, h, w),
                         load_as_f32(s, st, offset(src, n, c, h, w)));
}

void copy(const Tensor& src, Tensor& dst) {
  DPLAB_CHECK(src.shape() == dst.shape(), "copy: shape {} into {}", shape_str(src.shape()),
              shape_str(dst.shape()));
  if (src.is_blocked() || dst.is_blocked()) return copy_between_layouts(src, dst);
  const void* s = src.raw_data();
  void* d = dst.raw_data();
  const DType st = src.dtype(), dt = dst.dtype();
  ref::for_each_index<2>(
      src.shape(), {&src.strides(), &dst.strides()}, [&](const std::array<int64_t, 2>& o) {
        if (st == dt) {
          const size_t es = dtype_size(st);
          memcpy(static_cast<char*>(d) + o[1] * es, static_cast<const char*>(s) + o[0] * es, es);
        } else if (st == DType::i64 && dt == DType::i32) {
          static_cast<int32_t*>(d)[o[1]] =
              static_cast<int32_t>(static_cast<const int64_t*>(s)[o[0]]);
        } else if (st == DType::i32 && dt == DType::i64) {
          static_cast<int64_t*>(d)[o[1]] = static_cast<const int32_t*>(s)[o[0]];
        } else {
          store_from_f32(d, dt, o[1], load_as_f32(s, st, o[0]));
        }
      });
}

void axpy(float alpha, const Tensor& x, Tensor& y) {
  DPLAB_CHECK(x.shape() == y.shape(), "axpy: x {} and y {} differ in shape", shape_str(x.shape()),
              shape_str(y.shape()));
  check_dtype(y, DType::f32, "axpy output");
  const void* xs = x.raw_data();
  float* yd = y.data<float>();
  const DType xt = x.dtype();
  ref::for_each_index<2>(
      x.shape(), {&x.strides(), &y.strides()},
      [&](const std::array<int64_t, 2>& o) { yd[o[1]] += alpha * load_as_f32(xs, xt, o[0]); });
}

void unary(UnaryOp op, float s, const Tensor& x, Tensor& y) {
  DPLAB_CHECK(x.shape() == y.shape(), "unary: x {} and y {} differ in shape", shape_str(x.shape()),
              shape_str(y.shape()));
  DPLAB_CHECK(is_floating(y.dtype()), "unary: output {} must be a float tensor", y.str());
  const void* xs = x.raw_data();
  void* yd = y.raw_data();
  const DType xt = x.dtype(), yt = y.dtype();
  dispatch_unary(op, s, [&](auto f) {
    ref::for_each_index<2>(x.shape(), {&x.strides(), &y.strides()},
                           [&](const std::array<int64_t, 2>& o) {
                             store_from_f32(yd, yt, o[1], f(load_as_f32(xs, xt, o[0])));
                           });
  });
}

void binary(BinaryOp op, const Tensor& a, const Tensor& b, Tensor& y) {
  check_shape(y, broadcast_shapes(a.shape(), b.shape(), "binary"), "binary output");
  DPLAB_CHECK(is_floating(y.dtype()), "binary: output {} must be a float tensor", y.str());
  const Shape sa = broadcast_strides(a, y.shape()), sb = broadcast_strides(b, y.shape());
  const void* ap = a.raw_data();
  const void* bp = b.raw_data();
  const DType at = a.dtype(), bt = b.dtype(), yt = y.dtype();
  void* yd = y.raw_data();
  dispatch_binary(op, [&](auto f) {
    ref::for_each_index<3>(
        y.shape(), {&sa, &sb, &y.strides()}, [&](const std::array<int64_t, 3>& o) {
          store_from_f32(yd, yt, o[2], f(load_as_f32(ap, at, o[0]), load_as_f32(bp, bt, o[1])));
        });
  });
}

void add_int(Tensor& y, int64_t v) {
  DPLAB_CHECK(y.dtype() == DType::i64 || y.dtype() == DType::i32,
              "add_int: {} must be an i64 or i32 tensor", y.str());
  char* base = static_cast<char*>(y.raw_data());
  const bool wide = y.dtype() == DType::i64;
  ref::for_each_index<1>(y.shape(), {&y.strides()}, [&](const std::array<int64_t, 1>& o) {
    if (wide) {
      int64_t* p = reinterpret_cast<int64_t*>(base) + o[0];
      *p = add_int_wrapping(*p, v);
    } else {
      int32_t* p = reinterpret_cast<int32_t*>(base) + o[0];
      *p = static_cast<int32_t>(add_int_wrapping(*p, v));
    }
  });
}

}  // namespace

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* what) {
  const size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    // i counts from the last dimension
    const int64_t da = i < a.size() ? a[a.size() - 1 - i] : 1;
    const int64_t db = i < b.size() ? b[b.size() - 1 - i] : 1;
    DPLAB_CHECK(da == db || da == 1 || db == 1,
                "{}: shapes {} and {} do not broadcast (size {} vs {} at dim -{})", what,
                shape_str(a), shape_str(b), da, db, i + 1);
    out[n - 1 - i] = da == 1 ? db : da;
  }
  return out;
}

Shape broadcast_strides(const Tensor& t, const Shape& out) {
  DPLAB_CHECK(static_cast<size_t>(t.dim()) <= out.size(), "cannot broadcast {} to {}", t.str(),
              shape_str(out));
  Shape st(out.size(), 0);
  const size_t lead = out.size() - t.dim();
  for (size_t i = 0; i < static_cast<size_t>(t.dim()); ++i) {
    const int64_t d = t.shape()[i];
    DPLAB_CHECK(d == out[lead + i] || d == 1, "cannot broadcast {} to {}", t.str(), shape_str(out));
    st[lead + i] = (d == 1 && out[lead + i] != 1) ? 0 : t.strides()[i];
  }
  return st;
}

ElementwiseKernels ref_elementwise_kernels() {
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
