// Fast CPU convolution: oneDNN convolution primitives on the plain NCHW / OIHW (GOIHW for
// groups) layouts, so dplab tensors are passed without copies. Each primitive is created once
// per (shape, parameters, thread count) and cached. If oneDNN has no implementation for a case,
// the kernels run the reference loops in parallel (omp_conv_kernels), never something else.
#include "dplab/core/kernels/conv.h"
#include "dplab/core/cpu/dnnl_common.h"

namespace dplab {
namespace {

using dnnl::memory;
using tag = dnnl::memory::format_tag;
namespace du = dnnl_util;

const ConvKernels& fallback() {
  static const ConvKernels k = omp_conv_kernels();
  return k;
}

enum class Pass : int64_t { forward, backward_data, backward_weight };

// Everything that identifies a convolution primitive.
struct Shapes {
  int64_t N, C, H, W, O, KH, KW, OH, OW;
};
using Key = std::array<int64_t, 20>;

Key make_key(Pass pass, const Shapes& s, const Conv2dParams& p, bool bias) {
  return {static_cast<int64_t>(pass),
          s.N,
          s.C,
          s.H,
          s.W,
          s.O,
          s.KH,
          s.KW,
          s.OH,
          s.OW,
          p.stride_h,
          p.stride_w,
          p.pad_h,
          p.pad_w,
          p.dilation_h,
          p.dilation_w,
          p.groups,
          bias ? 1 : 0,
          du::num_threads(),
          0};
}

// Descriptors and geometry shared by the three passes.
struct Descs {
  memory::desc src, weights, bias, dst;
  memory::dims strides, dilates, pad_l, pad_r;
};

Descs descs(const Shapes& s, const Conv2dParams& p) {
  Descs d;
  d.src = du::f32_desc({s.N, s.C, s.H, s.W}, tag::nchw);
  d.dst = du::f32_desc({s.N, s.O, s.OH, s.OW}, tag::nchw);
  const int64_t G = p.groups;
  // [O, C/G, KH, KW] in memory is exactly goihw's [G, O/G, C/G, KH, KW].
  d.weights = G == 1 ? du::f32_desc({s.O, s.C, s.KH, s.KW}, tag::oihw)
                     : du::f32_desc({G, s.O / G, s.C / G, s.KH, s.KW}, tag::goihw);
  d.bias = du::f32_desc({s.O}, tag::x);
  d.strides = {p.stride_h, p.stride_w};
  d.dilates = {p.dilation_h - 1, p.dilation_w - 1};  // oneDNN counts dilation from 0
  d.pad_l = {p.pad_h, p.pad_w};
  // PyTorch pads symmetrically and floors the output size; oneDNN's output rule with
  // pad_r == pad_l is the same formula.
  d.pad_r = {p.pad_h, p.pad_w};
  return d;
}

dnnl::convolution_forward::primitive_desc forward_pd(const Descs& d, bool bias) {
  using F = dnnl::convolution_forward;
  F::desc fd =
      bias ? F::desc(dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct, d.src,
                     d.weights, d.bias, d.dst, d.strides, d.dilates, d.pad_l, d.pad_r)
           : F::desc(dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct, d.src,
                     d.weights, d.dst, d.strides, d.dilates, d.pad_l, d.pad_r);
  return F::primitive_desc(fd, du::default_attr(), du::cpu_engine());
}

// A cached primitive, or ok == false when oneDNN has no implementation for the case.
template <typename Prim>
struct Entry {
  bool ok = false;
  Descs d;
  typename Prim::primitive_desc pd;
  Prim prim;
};

template <typename Prim, typename MakePd>
Entry<Prim> try_create(const Descs& d, MakePd&& make_pd) {
  Entry<Prim> e;
  e.d = d;
  try {
    e.pd = make_pd(d);
    e.prim = Prim(e.pd);
    e.ok = true;
  } catch (const dnnl::error& err) {
    if (!du::is_unimplemented(err)) throw;
  }
  return e;
}

Shapes shapes(const Tensor& x, const Tensor& w, const Tensor& y) {
  return {x.size(0), x.size(1), x.size(2), x.size(3), w.size(0),
          w.size(2), w.size(3), y.size(2), y.size(3)};
}

void forward(const Tensor& x, const Tensor& w, const Tensor& b, Tensor& y, const Conv2dParams& p) {
  using Prim = dnnl::convolution_forward;
  static du::PrimitiveCache<20, Entry<Prim>> cache;
  const Shapes s = shapes(x, w, y);
  const bool bias = b.defined();
  auto e = cache.get(make_key(Pass::forward, s, p, bias), [&] {
    return try_create<Prim>(descs(s, p), [&](const Descs& d) { return forward_pd(d, bias); });
  });
  if (!e->ok) return fallback().conv2d_forward(x, w, b, y, p);
  const Descs& d = e->d;
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, du::wrap(d.src, x)},
                                       {DNNL_ARG_WEIGHTS, du::wrap(d.weights, w)},
                                       {DNNL_ARG_DST, du::wrap(d.dst, y)}};
  if (bias) args.emplace(DNNL_ARG_BIAS, du::wrap(d.bias, b));
  du::execute(e->prim, e->pd, args);
}

void backward_data(const Tensor& dy, const Tensor& w, Tensor& dx, const Conv2dParams& p) {
  using Prim = dnnl::convolution_backward_data;
  static du::PrimitiveCache<20, Entry<Prim>> cache;
  const Shapes s = shapes(dx, w, dy);
  auto e = cache.get(make_key(Pass::backward_data, s, p, false), [&] {
    return try_create<Prim>(descs(s, p), [&](const Descs& d) {
      Prim::desc bd(dnnl::algorithm::convolution_direct, d.src, d.weights, d.dst, d.strides,
                    d.dilates, d.pad_l, d.pad_r);
      return Prim::primitive_desc(bd, du::default_attr(), du::cpu_engine(), forward_pd(d, false));
    });
  });
  if (!e->ok) return fallback().conv2d_backward_data(dy, w, dx, p);
  const Descs& d = e->d;
  std::unordered_map<int, memory> args{{DNNL_ARG_DIFF_DST, du::wrap(d.dst, dy)},
                                       {DNNL_ARG_WEIGHTS, du::wrap(d.weights, w)},
                                       {DNNL_ARG_DIFF_SRC, du::wrap(d.src, dx)}};
  du::execute(e->prim, e->pd, args);
}

void backward_weight(const Tensor& x, const Tensor& dy, Tensor& dw, Tensor& db,
                     const Conv2dParams& p) {
  using Prim = dnnl::convolution_backward_weights;
  static du::PrimitiveCache<20, Entry<Prim>> cache;
  const Shapes s = shapes(x, dw, dy);
  const bool bias = db.defined();
  auto e = cache.get(make_key(Pass::backward_weight, s, p, bias), [&] {
    return try_create<Prim>(descs(s, p), [&](const Descs& d) {
      Prim::desc bd = bias ? Prim::desc(dnnl::algorithm::convolution_direct, d.src, d.weights,
                                        d.bias, d.dst, d.strides, d.dilates, d.pad_l, d.pad_r)
                           : Prim::desc(dnnl::algorithm::convolution_direct, d.src, d.weights,
                                        d.dst, d.strides, d.dilates, d.pad_l, d.pad_r);
      return Prim::primitive_desc(bd, du::default_attr(), du::cpu_engine(), forward_pd(d, bias));
    });
  });
  if (!e->ok) return fallback().conv2d_backward_weight(x, dy, dw, db, p);
  const Descs& d = e->d;
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, du::wrap(d.src, x)},
                                       {DNNL_ARG_DIFF_DST, du::wrap(d.dst, dy)},
                                       {DNNL_ARG_DIFF_WEIGHTS, du::wrap(d.weights, dw)}};
  if (bias) args.emplace(DNNL_ARG_DIFF_BIAS, du::wrap(d.bias, db));
  du::execute(e->prim, e->pd, args);
}

}  // namespace

ConvKernels cpu_conv_kernels() {
  ConvKernels k{};
  k.conv2d_forward = forward;
  k.conv2d_backward_data = backward_data;
  k.conv2d_backward_weight = backward_weight;
  return k;
}

}  // namespace dplab
