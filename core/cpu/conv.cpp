// Fast CPU convolution: oneDNN convolution primitives. dplab tensors are plain NCHW / OIHW
// (GOIHW for groups), but oneDNN's direct JIT kernels want blocked layouts (nChw16c, OIhw16i16o
// on AVX-512): on the plain layouts oneDNN falls back to im2col + GEMM, measured 3-5x slower on
// mnist_cnn's shapes. So each primitive is created with format `any`, and operands whose plain
// layout differs from the chosen one are reordered into (inputs) or out of (outputs) per-thread
// staging buffers: a reorder is one memory pass, far cheaper than the GEMM path. If oneDNN
// cannot build a blocked-layout primitive we try the plain layouts; if that fails too the
// kernels run the reference loops in parallel (omp_conv_kernels), never something else.
// Every primitive and reorder is created once per (shape, parameters, thread count) and cached.
//
// Under autocast the activations are bf16 (x, y, dx, dy) beside f32 master weights (w, dw). On a
// CPU with AVX512-BF16 (or AMX) oneDNN's bf16 kernels run: the f32 weights are reordered into
// bf16 blocks (one pass, as the f32 path reorders them into f32 blocks), products accumulate in
// f32, dw is written f32. Elsewhere the convolution is the f32 one on widened copies of the bf16
// activations (dplab's own vectorised casts, one pass each: oneDNN 2.6's reorders between bf16
// and f32 layouts run its generic loops there, measured 11.6 s of a 14 s ResNet-50 step with
// AVX2), so a bf16 run costs about what an f32 one does.
//
// Activations may also arrive in, and leave in, oneDNN's blocked nChw16c layout itself
// (Layout::nChw16c, core/tensor.h): when the primitive chose that layout for its output,
// conv2d_output_layout says so, the op allocates y blocked, and batch norm, ReLU and the
// residual add keep it blocked until the next convolution reads it as it is. Then the staging
// reorders vanish from a ResNet's step (they cost ~15% of it).
#include "dplab/core/kernels/conv.h"

#include <atomic>
#include <cstdlib>
#include <string>
#include <type_traits>
#include <vector>

#include "dplab/core/cpu/conv_algorithm.h"
#include "dplab/core/cpu/dnnl_common.h"
#include "dplab/core/cpu/weight_unblock.h"

namespace dplab {
namespace {

// -1: not decided yet (DPLAB_CPU_WINOGRAD is read on first use); 0 or 1 afterwards.
std::atomic<int> winograd_setting{-1};

bool winograd_from_environment() {
  const char* e = std::getenv("DPLAB_CPU_WINOGRAD");
  if (!e || !*e) return true;
  const std::string v(e);
  DPLAB_CHECK(v == "0" || v == "1",
              "DPLAB_CPU_WINOGRAD={}: expected 0 (direct convolutions only) or 1 (Winograd for "
              "3x3 stride-1 convolutions, the default)",
              v);
  return v == "1";
}

}  // namespace

bool cpu_winograd_enabled() {
  int v = winograd_setting.load(std::memory_order_relaxed);
  if (v < 0) {
    int expected = -1;
    winograd_setting.compare_exchange_strong(expected, winograd_from_environment() ? 1 : 0);
    v = winograd_setting.load(std::memory_order_relaxed);
  }
  return v == 1;
}

void set_cpu_winograd(bool enabled) {
  winograd_setting.store(enabled ? 1 : 0, std::memory_order_relaxed);
}

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
using Key = std::array<int64_t, 22>;
using dt = memory::data_type;

// The dtypes of a call's operands as dplab holds them: activations (x, y, dx, dy) and weights
// (w, dw).
struct Types {
  dt act = dt::f32, weights = dt::f32;
};

dt dnnl_type(DType d) {
  switch (d) {
    case DType::f32:
      return dt::f32;
    case DType::bf16:
      return dt::bf16;
    default:
      DPLAB_FAIL("conv2d (cpu): dtype {} is not supported (f32, or bf16 activations)",
                 dtype_name(d));
  }
}

Types types_of(const Tensor& act, const Tensor& weights) {
  return {dnnl_type(act.dtype()), dnnl_type(weights.dtype())};
}

// Whether this CPU runs oneDNN's bf16 convolutions natively (AVX512-BF16 or AMX): asked of
// oneDNN once, by the implementation it picks for a small bf16 convolution.
bool native_bf16() {
  static const bool yes = [] {
    try {
      const memory::dims src{1, 16, 8, 8}, wei{16, 16, 3, 3}, one{1, 1};
      const memory::desc a(src, dt::bf16, tag::any), w(wei, dt::bf16, tag::any);
      const dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_training,
                                              dnnl::algorithm::convolution_direct, a, w, a, one,
                                              {0, 0}, one, one);
      const std::string impl =
          dnnl::convolution_forward::primitive_desc(d, du::cpu_engine()).impl_info_str();
      return impl.find("avx512_core_bf16") != std::string::npos ||
             impl.find("amx") != std::string::npos;
    } catch (const dnnl::error&) {
      return false;
    }
  }();
  return yes;
}

// Without native bf16 kernels: a bf16 activation is widened to f32 in its own layout, and a
// bf16 output is computed into an f32 stand-in in its layout, then narrowed.
bool widen(const Tensor& act) {
  return act.dtype() == DType::bf16 && !native_bf16();
}
Tensor as_f32(const Tensor& t) {
  if (t.dtype() == DType::f32) return t;
  Tensor f = t.is_blocked() ? Tensor::empty(t.shape(), t.layout()) : Tensor::empty(t.shape());
  f.copy_(t);
  return f;
}
Tensor f32_like(const Tensor& t) {
  return t.is_blocked() ? Tensor::empty(t.shape(), t.layout()) : Tensor::empty(t.shape());
}

}  // namespace

bool cpu_bf16_activations() {
  static const bool yes = [] {
    using I = dnnl::cpu_isa;
    const I isa = dnnl::get_effective_cpu_isa();
    return isa == I::avx512_core || isa == I::avx512_core_vnni || isa == I::avx512_core_bf16 ||
           isa == I::avx512_core_amx;
  }();
  return yes;
}

namespace {

Key make_key(Pass pass, const Shapes& s, const Conv2dParams& p, bool bias, const Types& ty) {
  return {static_cast<int64_t>(pass),
          static_cast<int64_t>(ty.act),
          static_cast<int64_t>(ty.weights),
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
          cpu_winograd_enabled() ? 1 : 0};  // a switch of set_cpu_winograd takes effect
}

// Descriptors and geometry shared by the three passes. diff_weights: what backward-weights
// writes (f32 for f32 master weights, even when the convolution computes in bf16).
struct Descs {
  memory::desc src, weights, diff_weights, bias, dst;
  memory::dims strides, dilates, pad_l, pad_r;
  dnnl::algorithm alg = dnnl::algorithm::convolution_direct;
};

// 3x3, stride 1, no dilation, no groups: oneDNN's Winograd F(4x4, 3x3) kernels do these with
// 2.25x fewer multiplications (measured on ResNet-50's 13 such convolutions, batch 8, 2
// threads: 146 ms per step against 208 ms direct, all three passes). Its rounding differs from
// direct summation by ~1e-6 relative, as cuDNN's Winograd does on GPUs. Where oneDNN has no
// Winograd kernel for a shape (or the CPU) the direct algorithm takes over.
// DPLAB_CPU_WINOGRAD=0 keeps every convolution direct (bit-for-bit comparisons with oneDNN's
// direct path, as PyTorch takes it); unset or 1: Winograd where it applies.
bool winograd_candidate(const Shapes& s, const Conv2dParams& p) {
  return cpu_winograd_enabled() && s.KH == 3 && s.KW == 3 && p.stride_h == 1 && p.stride_w == 1 &&
         p.dilation_h == 1 && p.dilation_w == 1 && p.groups == 1;
}

// The plain layouts of dplab's tensors, or (`any_layout`) the same shapes with format `any`,
// letting oneDNN choose; activations and weights computed in `compute`, weight gradients
// written in `diff_weights`.
Descs descs(const Shapes& s, const Conv2dParams& p, bool any_layout, dnnl::algorithm alg,
            dt compute = dt::f32, dt diff_weights = dt::f32) {
  Descs d;
  d.alg = alg;
  auto f = [&](const memory::dims& dims, tag plain, dt type) {
    return memory::desc(dims, type, any_layout ? tag::any : plain);
  };
  d.src = f({s.N, s.C, s.H, s.W}, tag::nchw, compute);
  d.dst = f({s.N, s.O, s.OH, s.OW}, tag::nchw, compute);
  const int64_t G = p.groups;
  // [O, C/G, KH, KW] in memory is exactly goihw's [G, O/G, C/G, KH, KW].
  const memory::dims wd =
      G == 1 ? memory::dims{s.O, s.C, s.KH, s.KW} : memory::dims{G, s.O / G, s.C / G, s.KH, s.KW};
  const tag wt = G == 1 ? tag::oihw : tag::goihw;
  d.weights = f(wd, wt, compute);
  d.diff_weights = f(wd, wt, diff_weights);
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
  F::desc fd = bias ? F::desc(dnnl::prop_kind::forward_training, d.alg, d.src, d.weights, d.bias,
                              d.dst, d.strides, d.dilates, d.pad_l, d.pad_r)
                    : F::desc(dnnl::prop_kind::forward_training, d.alg, d.src, d.weights, d.dst,
                              d.strides, d.dilates, d.pad_l, d.pad_r);
  return F::primitive_desc(fd, du::default_attr(), du::cpu_engine());
}

// One operand of a cached primitive as one dplab layout holds it: the user layout, the layout
// the primitive chose, and the reorder from the first to the second (inputs) or back (outputs)
// when they differ.
struct Stage {
  memory::desc user, prim;
  bool differs = false;
  dnnl::reorder reorder;
  // f32 weight gradients from ABcd16b16a into OIHW: dplab's own loop instead of `reorder`
  // (core/cpu/weight_unblock.h); O, I and the taps K = H·W.
  bool unblock16 = false;
  int64_t O = 0, I = 0, K = 0;
};

// An activation operand (src/dst) in each dplab layout it may come in: [0] NCHW, [1] nChw16c
// (only when its channel count allows it). Weights are always plain.
struct ActStage {
  Stage by_layout[2];
  bool blockable = false;
  const Stage& of(const Tensor& t) const {
    DPLAB_CHECK(!t.is_blocked() || blockable, "conv2d: {} cannot be in a blocked layout", t.str());
    return by_layout[t.is_blocked() ? 1 : 0];
  }
};

Stage make_stage(const memory::desc& user, const memory::desc& prim, bool input) {
  Stage st;
  st.user = user;
  st.prim = prim;
  st.differs = user != prim;
  if (!st.differs) return st;
  const memory::dims d = user.dims();
  if (!input && d.size() == 4 && d[0] % 16 == 0 && d[1] % 16 == 0 &&
      user == memory::desc(d, dt::f32, tag::abcd) &&
      prim == memory::desc(d, dt::f32, tag::ABcd16b16a)) {
    st.unblock16 = true;
    st.O = d[0];
    st.I = d[1];
    st.K = d[2] * d[3];
    return st;
  }
  const auto& eng = du::cpu_engine();
  st.reorder = input ? dnnl::reorder(dnnl::reorder::primitive_desc(eng, user, eng, prim))
                     : dnnl::reorder(dnnl::reorder::primitive_desc(eng, prim, eng, user));
  return st;
}

// A oneDNN memory over t's own buffer, in t's own layout (which `md` describes).
memory wrap_as(const memory::desc& md, const Tensor& t) {
  return memory(md, du::cpu_engine(), t.raw_data_any_layout());
}

// The memory the primitive reads for input `t`: t itself, or t reordered into staging `slot`.
memory stage_in(const Stage& st, const Tensor& t, int slot) {
  memory user = wrap_as(st.user, t);
  if (!st.differs) return user;
  memory staged(st.prim, du::cpu_engine(), du::thread_buffer(slot, st.prim.get_size()));
  st.reorder.execute(du::thread_stream(), user, staged);
  return staged;
}

// The memory the primitive writes for output `t`: t itself, or staging `slot` that
// stage_out_finish then reorders into t.
memory stage_out(const Stage& st, const Tensor& t, int slot) {
  if (!st.differs) return wrap_as(st.user, t);
  return memory(st.prim, du::cpu_engine(), du::thread_buffer(slot, st.prim.get_size()));
}

void stage_out_finish(const Stage& st, memory& staged, const Tensor& t) {
  if (!st.differs) return;
  if (st.unblock16) {
    du::thread_stream().wait();  // the primitive has written `staged`
    unblock_weights_16b16a(static_cast<const float*>(staged.get_data_handle()),
                           static_cast<float*>(t.raw_data_any_layout()), st.O, st.I, st.K);
    return;
  }
  memory user = wrap_as(st.user, t);
  st.reorder.execute(du::thread_stream(), staged, user);
  du::thread_stream().wait();
}

// A cached primitive with its three staged operands (in the order the pass names them: src or
// diff_src, weights or diff_weights, dst or diff_dst), or ok == false when oneDNN has no
// implementation for the case. The bias is always the plain vector.
template <typename Prim>
struct Entry {
  bool ok = false;
  memory::desc bias;
  typename Prim::primitive_desc pd;
  Prim prim;
  ActStage src, dst;
  Stage weights;
};

// Both layouts of an activation operand [n, c, h, w] of dplab dtype `type` as stages towards
// `prim`.
ActStage make_act_stage(const memory::dims& dims, const memory::desc& prim, bool input, dt type) {
  ActStage a;
  a.by_layout[0] = make_stage(memory::desc(dims, type, tag::nchw), prim, input);
  a.blockable = dims[1] % kBlock16c == 0;
  if (a.blockable) a.by_layout[1] = make_stage(memory::desc(dims, type, tag::nChw16c), prim, input);
  return a;
}

template <typename PD>
memory::desc chosen_src(const PD& pd) {
  if constexpr (std::is_same_v<PD, dnnl::convolution_backward_data::primitive_desc>)
    return pd.diff_src_desc();
  else
    return pd.src_desc();
}
template <typename PD>
memory::desc chosen_weights(const PD& pd) {  // weights, or diff_weights for backward-weights
  if constexpr (std::is_same_v<PD, dnnl::convolution_backward_weights::primitive_desc>)
    return pd.diff_weights_desc();
  else
    return pd.weights_desc();
}
template <typename PD>
memory::desc chosen_dst(const PD& pd) {
  if constexpr (std::is_same_v<PD, dnnl::convolution_forward::primitive_desc>)
    return pd.dst_desc();
  else
    return pd.diff_dst_desc();
}

// `outputs`: which of src / weights / dst this pass writes (the others are read). `ty`: the
// dtypes of dplab's operands; the staging reorders convert to whatever the primitive computes in.
template <typename Prim, typename MakePd>
Entry<Prim> try_create(const Shapes& s, const Conv2dParams& p, MakePd&& make_pd,
                       std::array<bool, 3> outputs, const Types& ty) {
  Entry<Prim> e;
  using A = dnnl::algorithm;
  // dplab's own weight layout in its own dtype: the user side of the weight stage.
  const Descs plain = descs(s, p, false, A::convolution_direct, ty.weights, ty.weights);
  e.bias = plain.bias;
  // In order of preference: bf16 direct in blocked layouts (bf16 activations on a CPU with
  // native bf16), then in f32: Winograd (blocked layouts), direct in blocked layouts, direct in
  // dplab's plain layouts.
  struct Attempt {
    A alg;
    bool any_layout;
    dt compute;
  };
  std::vector<Attempt> attempts = {{A::convolution_direct, true, dt::f32},
                                   {A::convolution_direct, false, dt::f32}};
  if (winograd_candidate(s, p))
    attempts.insert(attempts.begin(), {A::convolution_winograd, true, dt::f32});
  if (ty.act == dt::bf16 && native_bf16())
    attempts.insert(attempts.begin(), {A::convolution_direct, true, dt::bf16});
  for (const auto& [alg, any_layout, compute] : attempts) {
    try {
      e.pd = make_pd(
          descs(s, p, any_layout, alg, compute, compute == dt::bf16 ? ty.weights : dt::f32));
      e.prim = Prim(e.pd);
      e.src = make_act_stage({s.N, s.C, s.H, s.W}, chosen_src(e.pd), !outputs[0], ty.act);
      e.weights = make_stage(plain.weights, chosen_weights(e.pd), !outputs[1]);
      e.dst = make_act_stage({s.N, s.O, s.OH, s.OW}, chosen_dst(e.pd), !outputs[2], ty.act);
      e.ok = true;
      return e;
    } catch (const dnnl::error& err) {
      if (!du::is_unimplemented(err)) throw;
    }
  }
  return e;
}

Shapes shapes(const Tensor& x, const Tensor& w, const Tensor& y) {
  return {x.size(0), x.size(1), x.size(2), x.size(3), w.size(0),
          w.size(2), w.size(3), y.size(2), y.size(3)};
}

std::shared_ptr<const Entry<dnnl::convolution_forward>> forward_entry(const Shapes& s,
                                                                      const Conv2dParams& p,
                                                                      bool bias, const Types& ty) {
  using Prim = dnnl::convolution_forward;
  static du::PrimitiveCache<22, Entry<Prim>> cache;
  return cache.get(make_key(Pass::forward, s, p, bias, ty), [&] {
    return try_create<Prim>(
        s, p, [&](const Descs& d) { return forward_pd(d, bias); }, {false, false, true}, ty);
  });
}

// The blocked layout in y's own dtype is what the forward primitive writes (then y is
// allocated in it and no reorder follows the convolution, or only a dtype conversion).
bool writes_blocked(const memory::desc& prim) {
  const memory::dims dims = prim.dims();
  return prim == memory::desc(dims, prim.data_type(), tag::nChw16c);
}

// nChw16c when the forward primitive writes that layout itself, else NCHW.
Layout output_layout(const Tensor& x, const Tensor& w, const Conv2dParams& p, bool bias) {
  if ((x.dtype() != DType::f32 && x.dtype() != DType::bf16) ||
      (w.dtype() != DType::f32 && w.dtype() != DType::bf16))
    return Layout::strided;
  const int64_t OH = conv_out_size(x.size(2), w.size(2), p.stride_h, p.pad_h, p.dilation_h);
  const int64_t OW = conv_out_size(x.size(3), w.size(3), p.stride_w, p.pad_w, p.dilation_w);
  const Shapes s{x.size(0), x.size(1), x.size(2), x.size(3), w.size(0),
                 w.size(2), w.size(3), OH,        OW};
  const Types ty = widen(x) ? Types{} : types_of(x, w);  // widened: what the f32 one writes
  const auto e = forward_entry(s, p, bias, ty);
  if (!e->ok || !e->dst.blockable) return Layout::strided;
  return writes_blocked(e->dst.by_layout[1].prim) ? Layout::nChw16c : Layout::strided;
}

void forward(const Tensor& x, const Tensor& w, const Tensor& b, Tensor& y, const Conv2dParams& p) {
  if (widen(x)) {
    Tensor yf = f32_like(y);
    forward(as_f32(x), as_f32(w), b, yf, p);
    return y.copy_(yf);
  }
  const Shapes s = shapes(x, w, y);
  const bool bias = b.defined();
  auto e = forward_entry(s, p, bias, types_of(x, w));
  if (!e->ok) return fallback().conv2d_forward(x, w, b, y, p);  // converts what it must
  const Stage &src_st = e->src.of(x), &dst_st = e->dst.of(y);
  memory dst = stage_out(dst_st, y, 2);
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, stage_in(src_st, x, 0)},
                                       {DNNL_ARG_WEIGHTS, stage_in(e->weights, w, 1)},
                                       {DNNL_ARG_DST, dst}};
  if (bias) args.emplace(DNNL_ARG_BIAS, du::wrap(e->bias, b));
  du::execute(e->prim, e->pd, args);
  stage_out_finish(dst_st, dst, y);
}

void backward_data(const Tensor& dy, const Tensor& w, Tensor& dx, const Conv2dParams& p) {
  if (widen(dy)) {
    Tensor dxf = f32_like(dx);
    backward_data(as_f32(dy), as_f32(w), dxf, p);
    return dx.copy_(dxf);
  }
  using Prim = dnnl::convolution_backward_data;
  static du::PrimitiveCache<22, Entry<Prim>> cache;
  const Shapes s = shapes(dx, w, dy);
  const Types ty = types_of(dy, w);
  auto e = cache.get(make_key(Pass::backward_data, s, p, false, ty), [&] {
    return try_create<Prim>(
        s, p,
        [&](const Descs& d) {
          Prim::desc bd(d.alg, d.src, d.weights, d.dst, d.strides, d.dilates, d.pad_l, d.pad_r);
          return Prim::primitive_desc(bd, du::default_attr(), du::cpu_engine(),
                                      forward_pd(d, false));
        },
        {true, false, false}, ty);
  });
  if (!e->ok) return fallback().conv2d_backward_data(dy, w, dx, p);
  const Stage &src_st = e->src.of(dx), &dst_st = e->dst.of(dy);
  memory diff_src = stage_out(src_st, dx, 0);
  std::unordered_map<int, memory> args{{DNNL_ARG_DIFF_DST, stage_in(dst_st, dy, 2)},
                                       {DNNL_ARG_WEIGHTS, stage_in(e->weights, w, 1)},
                                       {DNNL_ARG_DIFF_SRC, diff_src}};
  du::execute(e->prim, e->pd, args);
  stage_out_finish(src_st, diff_src, dx);
}

void backward_weight(const Tensor& x, const Tensor& dy, Tensor& dw, Tensor& db,
                     const Conv2dParams& p) {
  if (widen(x)) {
    Tensor dwf = f32_like(dw);
    backward_weight(as_f32(x), as_f32(dy), dwf, db, p);
    return dw.copy_(dwf);
  }
  using Prim = dnnl::convolution_backward_weights;
  static du::PrimitiveCache<22, Entry<Prim>> cache;
  const Shapes s = shapes(x, dw, dy);
  const bool bias = db.defined();
  const Types ty = types_of(x, dw);
  auto e = cache.get(make_key(Pass::backward_weight, s, p, bias, ty), [&] {
    return try_create<Prim>(
        s, p,
        [&](const Descs& d) {
          Prim::desc bd = bias ? Prim::desc(d.alg, d.src, d.diff_weights, d.bias, d.dst, d.strides,
                                            d.dilates, d.pad_l, d.pad_r)
                               : Prim::desc(d.alg, d.src, d.diff_weights, d.dst, d.strides,
                                            d.dilates, d.pad_l, d.pad_r);
          return Prim::primitive_desc(bd, du::default_attr(), du::cpu_engine(),
                                      forward_pd(d, bias));
        },
        {false, true, false}, ty);
  });
  if (!e->ok) return fallback().conv2d_backward_weight(x, dy, dw, db, p);
  memory diff_weights = stage_out(e->weights, dw, 1);
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, stage_in(e->src.of(x), x, 0)},
                                       {DNNL_ARG_DIFF_DST, stage_in(e->dst.of(dy), dy, 2)},
                                       {DNNL_ARG_DIFF_WEIGHTS, diff_weights}};
  if (bias) args.emplace(DNNL_ARG_DIFF_BIAS, du::wrap(e->bias, db));
  du::execute(e->prim, e->pd, args);
  stage_out_finish(e->weights, diff_weights, dw);
}

}  // namespace

ConvKernels cpu_conv_kernels() {
  ConvKernels k{};
  k.conv2d_forward = forward;
  k.conv2d_backward_data = backward_data;
  k.conv2d_backward_weight = backward_weight;
  k.conv2d_output_layout = output_layout;
  return k;
}

}  // namespace dplab
