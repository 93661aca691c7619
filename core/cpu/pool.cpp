// Fast CPU pooling: oneDNN pooling_v2 primitives on plain NCHW tensors (no copies), created
// once per (shape, parameters, thread count) and cached. Max pooling keeps oneDNN's workspace
// (a u8/s32 buffer, private to this backend) for backward. Cases oneDNN rejects, and average
// pooling whose PyTorch divisor oneDNN cannot express (ceil-mode windows hanging past the
// right padding with count_include_pad), run the reference loops in parallel
// (omp_pool_kernels); their max-pool workspace is then the reference i64 argmax tensor, which
// backward recognises by dtype. Adaptive average pooling is an OpenMP loop (omp_pool_kernels):
// its variable windows have no oneDNN primitive. Max and average pooling also run on blocked
// nChw16c activations (x, y, dx, dy all in that layout), natively in oneDNN.
#include "dplab/core/kernels/pool.h"
#include "dplab/core/cpu/dnnl_common.h"

namespace dplab {
namespace {

using dnnl::memory;
using tag = dnnl::memory::format_tag;
namespace du = dnnl_util;

const PoolKernels& fallback() {
  static const PoolKernels k = omp_pool_kernels();
  return k;
}

enum class Kind : int64_t { max, avg_include_pad, avg_exclude_pad };

struct Geometry {
  memory::desc src, dst;
  memory::dims strides, kernel, dilation, pad_l, pad_r;
};

// oneDNN derives the output extent as (in + pad_l + pad_r - eff_k) / stride + 1 (floor).
// Returns the right padding that reproduces PyTorch's `out` (which may come from ceil mode):
// the smallest non-negative pad_r in the range that floors to `out`.
int64_t right_pad(int64_t in, int64_t out, int64_t k, int64_t stride, int64_t pad,
                  int64_t dilation) {
  const int64_t eff = (k - 1) * dilation + 1;
  const int64_t lo = (out - 1) * stride + eff - in - pad;
  return std::max<int64_t>(lo, 0);
}

Geometry geometry(const Tensor& x, const Tensor& y, const Pool2dParams& p, Kind kind) {
  Geometry g;
  const int64_t H = x.size(2), W = x.size(3), OH = y.size(2), OW = y.size(3);
  const int64_t dh = kind == Kind::max ? p.dilation_h : 1;
  const int64_t dw = kind == Kind::max ? p.dilation_w : 1;
  DPLAB_CHECK(x.layout() == y.layout(), "pooling: {} and {} must share one layout", x.str(),
              y.str());
  const tag t = x.is_blocked() ? tag::nChw16c : tag::nchw;
  g.src = du::f32_desc({x.size(0), x.size(1), H, W}, t);
  g.dst = du::f32_desc({y.size(0), y.size(1), OH, OW}, t);
  g.strides = {p.stride_h, p.stride_w};
  g.kernel = {p.kernel_h, p.kernel_w};
  g.dilation = {dh - 1, dw - 1};  // oneDNN counts dilation from 0
  g.pad_l = {p.pad_h, p.pad_w};
  g.pad_r = {right_pad(H, OH, p.kernel_h, p.stride_h, p.pad_h, dh),
             right_pad(W, OW, p.kernel_w, p.stride_w, p.pad_w, dw)};
  return g;
}

struct Entry {
  bool ok = false;
  Geometry g;
  dnnl::pooling_v2_forward::primitive_desc train_pd, infer_pd;
  dnnl::pooling_v2_forward train, infer;
  dnnl::pooling_v2_backward::primitive_desc bwd_pd;
  dnnl::pooling_v2_backward bwd;
};

dnnl::algorithm algorithm_of(Kind k) {
  switch (k) {
    case Kind::max:
      return dnnl::algorithm::pooling_max;
    case Kind::avg_include_pad:
      return dnnl::algorithm::pooling_avg_include_padding;
    case Kind::avg_exclude_pad:
      return dnnl::algorithm::pooling_avg_exclude_padding;
  }
  DPLAB_FAIL("bad pooling kind");
}

// Creates forward (training and inference) and backward primitives together, so a case is
// either wholly oneDNN or wholly fallback: a workspace from one path is never handed to the
// other. Any oneDNN error here means "no implementation": the fallback computes the same
// function.
Entry create(const Tensor& x, const Tensor& y, const Pool2dParams& p, Kind kind) {
  Entry e;
  e.g = geometry(x, y, p, kind);
  const Geometry& g = e.g;
  const dnnl::algorithm alg = algorithm_of(kind);
  try {
    using F = dnnl::pooling_v2_forward;
    using B = dnnl::pooling_v2_backward;
    const auto attr = du::default_attr();
    F::desc td(dnnl::prop_kind::forward_training, alg, g.src, g.dst, g.strides, g.kernel,
               g.dilation, g.pad_l, g.pad_r);
    e.train_pd = F::primitive_desc(td, attr, du::cpu_engine());
    F::desc id(dnnl::prop_kind::forward_inference, alg, g.src, g.dst, g.strides, g.kernel,
               g.dilation, g.pad_l, g.pad_r);
    e.infer_pd = F::primitive_desc(id, attr, du::cpu_engine());
    B::desc bd(alg, g.src, g.dst, g.strides, g.kernel, g.dilation, g.pad_l, g.pad_r);
    e.bwd_pd = B::primitive_desc(bd, attr, du::cpu_engine(), e.train_pd);
    e.train = F(e.train_pd);
    e.infer = F(e.infer_pd);
    e.bwd = B(e.bwd_pd);
    e.ok = true;
  } catch (const dnnl::error&) {
    e.ok = false;
  }
  return e;
}

// x is the input (or dx), y the output (or dy): both give the geometry.
std::shared_ptr<const Entry> lookup(const Tensor& x, const Tensor& y, const Pool2dParams& p,
                                    Kind kind) {
  static du::PrimitiveCache<18, Entry> cache;
  const bool max = kind == Kind::max;
  const du::PrimitiveCache<18, Entry>::Key key{static_cast<int64_t>(kind),
                                               x.size(0),
                                               x.size(1),
                                               x.size(2),
                                               x.size(3),
                                               y.size(2),
                                               y.size(3),
                                               p.kernel_h,
                                               p.kernel_w,
                                               p.stride_h,
                                               p.stride_w,
                                               p.pad_h,
                                               p.pad_w,
                                               max ? p.dilation_h : 1,
                                               max ? p.dilation_w : 1,
                                               du::num_threads(),
                                               static_cast<int64_t>(x.layout()),
                                               0};
  return cache.get(key, [&] { return create(x, y, p, kind); });
}

// oneDNN's include-padding average divides by the full kernel area; PyTorch clips the window
// to [-pad, in + pad). They agree unless a (ceil-mode) window reaches past in + pad.
bool window_past_right_pad(int64_t in, int64_t out, int64_t k, int64_t stride, int64_t pad) {
  return (out - 1) * stride - pad + k > in + pad;
}

Kind avg_kind(const Tensor& x, const Tensor& y, const Pool2dParams& p, bool* use_fallback) {
  if (!p.count_include_pad) return Kind::avg_exclude_pad;
  *use_fallback = window_past_right_pad(x.size(2), y.size(2), p.kernel_h, p.stride_h, p.pad_h) ||
                  window_past_right_pad(x.size(3), y.size(3), p.kernel_w, p.stride_w, p.pad_w);
  return Kind::avg_include_pad;
}

// A oneDNN memory over an activation's buffer, in its own layout (which `md` describes).
memory act(const memory::desc& md, const Tensor& t) {
  return memory(md, du::cpu_engine(), t.raw_data_any_layout());
}

// The fallback loops read and write NCHW: run one on NCHW copies of blocked operands and copy
// the result back into `out`'s layout.
template <typename Run>
void on_plain(Tensor& out, Run&& run) {
  if (!out.is_blocked()) return run(out);
  Tensor plain = Tensor::empty(out.shape());
  run(plain);
  out.copy_(plain);
}

void max_forward(const Tensor& x, Tensor& y, Tensor* workspace, const Pool2dParams& p) {
  auto e = lookup(x, y, p, Kind::max);
  if (!e->ok)
    return on_plain(y, [&](Tensor& out) {
      fallback().max_pool2d_forward(x.contiguous_if_blocked(), out, workspace, p);
    });
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, act(e->g.src, x)},
                                       {DNNL_ARG_DST, act(e->g.dst, y)}};
  if (!workspace) return du::execute(e->infer, e->infer_pd, args);
  const memory::desc wd = e->train_pd.workspace_desc();
  *workspace = Tensor::empty({static_cast<int64_t>(wd.get_size())}, DType::u8);
  args.emplace(DNNL_ARG_WORKSPACE, du::wrap(wd, *workspace));
  du::execute(e->train, e->train_pd, args);
}

void max_backward(const Tensor& dy, const Tensor& workspace, Tensor& dx, const Pool2dParams& p) {
  if (workspace.dtype() == DType::i64)
    return on_plain(dx, [&](Tensor& out) {
      fallback().max_pool2d_backward(dy.contiguous_if_blocked(), workspace, out, p);
    });
  auto e = lookup(dx, dy, p, Kind::max);
  const memory::desc wd = e->bwd_pd ? e->bwd_pd.workspace_desc() : memory::desc();
  DPLAB_CHECK(e->ok && workspace.dtype() == DType::u8 && workspace.nbytes() == wd.get_size(),
              "max_pool2d_backward: workspace {} was not produced by the cpu backend's "
              "max_pool2d_forward for dx {} dy {}",
              workspace.str(), dx.str(), dy.str());
  std::unordered_map<int, memory> args{{DNNL_ARG_DIFF_DST, act(e->g.dst, dy)},
                                       {DNNL_ARG_DIFF_SRC, act(e->g.src, dx)},
                                       {DNNL_ARG_WORKSPACE, du::wrap(wd, workspace)}};
  du::execute(e->bwd, e->bwd_pd, args);
}

void avg_forward(const Tensor& x, Tensor& y, const Pool2dParams& p) {
  bool use_fallback = false;
  const Kind kind = avg_kind(x, y, p, &use_fallback);
  auto e = use_fallback ? nullptr : lookup(x, y, p, kind);
  if (!e || !e->ok)
    return on_plain(
        y, [&](Tensor& out) { fallback().avg_pool2d_forward(x.contiguous_if_blocked(), out, p); });
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, act(e->g.src, x)},
                                       {DNNL_ARG_DST, act(e->g.dst, y)}};
  du::execute(e->infer, e->infer_pd, args);
}

void avg_backward(const Tensor& dy, Tensor& dx, const Pool2dParams& p) {
  bool use_fallback = false;
  const Kind kind = avg_kind(dx, dy, p, &use_fallback);
  auto e = use_fallback ? nullptr : lookup(dx, dy, p, kind);
  if (!e || !e->ok)
    return on_plain(dx, [&](Tensor& out) {
      fallback().avg_pool2d_backward(dy.contiguous_if_blocked(), out, p);
    });
  std::unordered_map<int, memory> args{{DNNL_ARG_DIFF_DST, act(e->g.dst, dy)},
                                       {DNNL_ARG_DIFF_SRC, act(e->g.src, dx)}};
  du::execute(e->bwd, e->bwd_pd, args);
}

}  // namespace

PoolKernels cpu_pool_kernels() {
  PoolKernels k{};
  k.max_pool2d_forward = max_forward;
  k.max_pool2d_backward = max_backward;
  k.avg_pool2d_forward = avg_forward;
  k.avg_pool2d_backward = avg_backward;
  k.adaptive_avg_pool2d_forward = fallback().adaptive_avg_pool2d_forward;
  k.adaptive_avg_pool2d_backward = fallback().adaptive_avg_pool2d_backward;
  return k;
}

}  // namespace dplab
