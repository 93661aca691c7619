// CUDA conv family through cuDNN 9 (legacy convolution API): forward, backward data, backward
// filter, with dplab's own kernels (conv_kernels.cu) for the bias and its gradient.
//
// Algorithm choice: per key (direction, device, dtype, every dim, every parameter, whether the
// operands are 16-byte aligned, the workspace limit) the first call runs cudnnFind*AlgorithmEx
// once on the call's own tensors (Find overwrites only the output, which the call then
// computes anyway) and caches the choice for the life of the process. The
// choice is the fastest algorithm that (1) succeeded, (2) needs at most conv_workspace_limit()
// bytes of workspace (256 MiB unless DPLAB_CUDNN_WORKSPACE_MIB says otherwise), (3) is
// deterministic, so a rerun gives the same bits, and (4) for f32 does not use tensor cores
// (TF32 would round operands to 10 mantissa bits; the descriptor is set to CUDNN_FMA_MATH).
// When no algorithm meets (1)-(4) within the limit but a deterministic one of the right math
// asked for more workspace (Find reports it failed: it was given only the limit), Find runs
// once more with the least such workspace and the choice is made under that larger limit.
// Seen on an H200: resnet50's f32 backward filter of the strided 1x1 conv at batch 256 has one
// deterministic algorithm (ALGO_1), which needs 302 MiB. PyTorch's cudnn.benchmark gives Find
// the free memory, so a fixed limit with no way past it would fail where PyTorch runs.
// Workspaces (the Find scratch of the limit's size and each call's own) are tensors from the
// caching allocator, never cudaMalloc in the loop; they are released right after the call is
// enqueued, which is safe because every user of the allocator's compute-stream blocks is
// ordered on that same stream.
//
// Accepted dtypes: x, w, y (forward), dy, w, dx (backward data), x, dy, dw (backward filter)
// all f32, all bf16 or all f16; accumulation is f32 (computeType CUDNN_DATA_FLOAT) in every
// case; bf16/f16 use tensor-op math. Beside bf16 activations, w and dw may also be f32 (master
// weights): they are rounded to bf16, or dw computed in bf16 and widened (master_weights below).
// The bias b and its gradient db are the dtype of the other operands or f32. Anything else
// throws naming the combination.
//
// Layouts: activations are NCHW-contiguous or nhwc (Layout::nhwc, channels-last). cuDNN's
// tensor-core kernels are channels-last: handed NCHW they transpose around the call, so bf16
// convolutions write y in nhwc (output_layout) and the ops keep it so through batch norm, ReLU,
// the residual add and pooling (Backend::activation_layout). f32 stays NCHW (FMA kernels, no
// TF32), as do grouped convolutions (not measured on a device here). Each call computes in one
// layout, the output side's (y forward, dy backward): an operand in the other layout is copied
// into it first, an output into it after, and an nhwc call
// describes the filter as nhwc too (KRSC), so the weights are copied into that order, rounded to
// the activations' dtype in the same pass (as_operand). Where no algorithm meets (1)-(4) above
// for a call in nhwc, that call computes in NCHW instead (remembered per key; the algorithm
// report says "none in nhwc: computed in NCHW"), so a layout cuDNN lacks a deterministic kernel
// for costs copies, not the run. Not yet seen on a device.
#include <cudnn.h>

#include <array>
#include <climits>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <mutex>
#include <string>

#include "dplab/core/conv_algo_log.h"
#include "dplab/core/cuda/check.h"
#include "dplab/core/cuda/cudnn_handle.h"
#include "dplab/core/cuda/device_guard.h"
#include "dplab/core/cuda/launch_conv.h"
#include "dplab/core/cuda/stream.h"
#include "dplab/core/kernels/conv.h"

namespace dplab {
namespace {

enum class Dir : int64_t { forward = 0, backward_data = 1, backward_filter = 2 };

const char* dir_name(Dir d) {
  switch (d) {
    case Dir::forward:
      return "conv2d_forward";
    case Dir::backward_data:
      return "conv2d_backward_data";
    case Dir::backward_filter:
      return "conv2d_backward_weight";
  }
  return "conv2d";
}

struct Geometry {
  int64_t N, C, H, W;  // input
  int64_t O, KH, KW;   // filter [O, C/groups, KH, KW]
  int64_t OH, OW;      // output
};

// x-like [N, C, H, W], w-like [O, C/groups, KH, KW], y-like [N, O, OH, OW]: shapes agree with
// each other and with PyTorch's output-size rule; all on one CUDA device, contiguous, one
// floating dtype (f32, bf16 or f16).
Geometry check_conv(Dir dir, const Tensor& x, const Tensor& w, const Tensor& y,
                    const Conv2dParams& p, const char* xn, const char* wn, const char* yn) {
  const char* k = dir_name(dir);
  const std::array<std::pair<const Tensor*, const char*>, 3> ts{{{&x, xn}, {&w, wn}, {&y, yn}}};
  for (const auto& [t, name] : ts) {
    DPLAB_CHECK(t->defined() && t->dim() == 4, "CUDA {}: {} must be a 4-D tensor, got {}", k, name,
                t->defined() ? t->str() : "undefined");
    DPLAB_CHECK(t->is_contiguous() || t->layout() == Layout::nhwc,
                "CUDA {}: {} {} must be contiguous or nhwc", k, name, t->str());
    DPLAB_CHECK(t->layout() == x.layout(), "CUDA {}: {} {} and {} {} are in different layouts", k,
                name, t->str(), xn, x.str());
    DPLAB_CHECK(t->device().is_cuda() && t->device() == x.device(),
                "CUDA {}: {} {} is not on the CUDA device of {} {}", k, name, t->str(), xn,
                x.str());
  }
  const DType dt = x.dtype();
  DPLAB_CHECK((dt == DType::f32 || dt == DType::bf16 || dt == DType::f16) && w.dtype() == dt &&
                  y.dtype() == dt,
              "CUDA {}: unsupported dtype combination {} {}, {} {}, {} {} (accepted: all f32, "
              "all bf16 or all f16)",
              k, xn, dtype_name(x.dtype()), wn, dtype_name(w.dtype()), yn, dtype_name(y.dtype()));
  DPLAB_CHECK(p.groups >= 1 && p.stride_h >= 1 && p.stride_w >= 1 && p.dilation_h >= 1 &&
                  p.dilation_w >= 1 && p.pad_h >= 0 && p.pad_w >= 0,
              "CUDA {}: invalid parameters stride {}x{} pad {}x{} dilation {}x{} groups {}", k,
              p.stride_h, p.stride_w, p.pad_h, p.pad_w, p.dilation_h, p.dilation_w, p.groups);
  Geometry g{x.size(0), x.size(1), x.size(2), x.size(3), w.size(0),
             w.size(2), w.size(3), y.size(2), y.size(3)};
  DPLAB_CHECK(g.C % p.groups == 0 && g.O % p.groups == 0 && w.size(1) * p.groups == g.C &&
                  y.size(0) == g.N && y.size(1) == g.O &&
                  g.OH == conv_out_size(g.H, g.KH, p.stride_h, p.pad_h, p.dilation_h) &&
                  g.OW == conv_out_size(g.W, g.KW, p.stride_w, p.pad_w, p.dilation_w),
              "CUDA {}: {} {}, {} {} and {} {} do not fit stride {}x{} pad {}x{} dilation {}x{} "
              "groups {}",
              k, xn, shape_str(x.shape()), wn, shape_str(w.shape()), yn, shape_str(y.shape()),
              p.stride_h, p.stride_w, p.pad_h, p.pad_w, p.dilation_h, p.dilation_w, p.groups);
  return g;
}

void check_bias(const Tensor& b, int64_t O, const Tensor& x, const char* name, const char* k) {
  DPLAB_CHECK(b.dim() == 1 && b.size(0) == O && b.is_contiguous() && b.device() == x.device(),
              "CUDA {}: {} {} must be a contiguous [{}] on {}", k, name, b.str(), O,
              x.device().str());
  DPLAB_CHECK(b.dtype() == x.dtype() || b.dtype() == DType::f32,
              "CUDA {}: unsupported dtype combination {} {} with operands {} (the bias is the "
              "operands' dtype or f32)",
              k, name, dtype_name(b.dtype()), dtype_name(x.dtype()));
}

int to_int(int64_t v, const char* what) {
  DPLAB_CHECK(v >= 0 && v <= INT_MAX, "CUDA conv: {} = {} exceeds cuDNN's int range", what, v);
  return static_cast<int>(v);
}

cudnnDataType_t cudnn_type(DType t) {
  switch (t) {
    case DType::f32:
      return CUDNN_DATA_FLOAT;
    case DType::bf16:
      return CUDNN_DATA_BFLOAT16;
    case DType::f16:
      return CUDNN_DATA_HALF;
    default:
      break;
  }
  DPLAB_FAIL("CUDA conv: dtype {} has no cuDNN type here", dtype_name(t));
}

// RAII owners of the cuDNN descriptors of one call.
class TensorDesc {
 public:
  TensorDesc() { DPLAB_CUDNN_CHECK(cudnnCreateTensorDescriptor(&d_)); }
  ~TensorDesc() { cudnnDestroyTensorDescriptor(d_); }
  TensorDesc(const TensorDesc&) = delete;
  TensorDesc& operator=(const TensorDesc&) = delete;
  cudnnTensorDescriptor_t get() const { return d_; }

 private:
  cudnnTensorDescriptor_t d_ = nullptr;
};

class FilterDesc {
 public:
  FilterDesc() { DPLAB_CUDNN_CHECK(cudnnCreateFilterDescriptor(&d_)); }
  ~FilterDesc() { cudnnDestroyFilterDescriptor(d_); }
  FilterDesc(const FilterDesc&) = delete;
  FilterDesc& operator=(const FilterDesc&) = delete;
  cudnnFilterDescriptor_t get() const { return d_; }

 private:
  cudnnFilterDescriptor_t d_ = nullptr;
};

class ConvDesc {
 public:
  ConvDesc() { DPLAB_CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&d_)); }
  ~ConvDesc() { cudnnDestroyConvolutionDescriptor(d_); }
  ConvDesc(const ConvDesc&) = delete;
  ConvDesc& operator=(const ConvDesc&) = delete;
  cudnnConvolutionDescriptor_t get() const { return d_; }

 private:
  cudnnConvolutionDescriptor_t d_ = nullptr;
};

// The descriptors of one convolution: x [N, C, H, W], w [O, C/groups, KH, KW], y [N, O, OH, OW].
struct Setup {
  TensorDesc x, y;
  FilterDesc w;
  ConvDesc conv;
};

// nhwc: x, w and y all channels-last (the filter KRSC); else all NCHW.
void describe(Setup& s, const Geometry& g, const Conv2dParams& p, DType dt, bool nhwc,
              const char* k) {
  const cudnnDataType_t t = cudnn_type(dt);
  const cudnnTensorFormat_t f = nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
  DPLAB_CUDNN_CHECK(cudnnSetTensor4dDescriptor(s.x.get(), f, t, to_int(g.N, "N"), to_int(g.C, "C"),
                                               to_int(g.H, "H"), to_int(g.W, "W")));
  DPLAB_CUDNN_CHECK(cudnnSetTensor4dDescriptor(s.y.get(), f, t, to_int(g.N, "N"), to_int(g.O, "O"),
                                               to_int(g.OH, "OH"), to_int(g.OW, "OW")));
  DPLAB_CUDNN_CHECK(cudnnSetFilter4dDescriptor(s.w.get(), t, f, to_int(g.O, "O"),
                                               to_int(g.C / p.groups, "C/groups"),
                                               to_int(g.KH, "KH"), to_int(g.KW, "KW")));
  // Cross-correlation (what deep-learning frameworks call convolution), f32 accumulation.
  DPLAB_CUDNN_CHECK(cudnnSetConvolution2dDescriptor(
      s.conv.get(), to_int(p.pad_h, "pad_h"), to_int(p.pad_w, "pad_w"),
      to_int(p.stride_h, "stride_h"), to_int(p.stride_w, "stride_w"),
      to_int(p.dilation_h, "dilation_h"), to_int(p.dilation_w, "dilation_w"),
      CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
  DPLAB_CUDNN_CHECK(cudnnSetConvolutionGroupCount(s.conv.get(), to_int(p.groups, "groups")));
  // f32: FMA kernels only (no TF32). bf16/f16: tensor cores allowed.
  DPLAB_CUDNN_CHECK(cudnnSetConvolutionMathType(
      s.conv.get(), dt == DType::f32 ? CUDNN_FMA_MATH : CUDNN_TENSOR_OP_MATH));
  // cuDNN's own output-size rule must agree with the contract's (checked against y already).
  int n = 0, c = 0, h = 0, w = 0;
  DPLAB_CUDNN_CHECK(
      cudnnGetConvolution2dForwardOutputDim(s.conv.get(), s.x.get(), s.w.get(), &n, &c, &h, &w));
  DPLAB_CHECK(n == g.N && c == g.O && h == g.OH && w == g.OW,
              "CUDA {}: cuDNN computes output [{}, {}, {}, {}], the contract [{}, {}, {}, {}]", k,
              n, c, h, w, g.N, g.O, g.OH, g.OW);
}

// ---- the per-shape algorithm cache ----

using Key = std::array<int64_t, 20>;

// Some algorithms (vectorised and tensor-op kernels) need 16-byte aligned operands, so a choice
// made for aligned buffers is not reused for a view at an odd offset, and vice versa.
int64_t aligned16(std::initializer_list<const Tensor*> ts) {
  for (const Tensor* t : ts)
    if (reinterpret_cast<uintptr_t>(t->raw_data_any_layout()) % 16 != 0) return 0;
  return 1;
}

Key make_key(Dir dir, int device, DType dt, const Geometry& g, const Conv2dParams& p,
             int64_t aligned, bool nhwc) {
  return {static_cast<int64_t>(dir),
          aligned,
          nhwc ? 1 : 0,
          device,
          static_cast<int64_t>(dt),
          g.N,
          g.C,
          g.H,
          g.W,
          g.O,
          g.KH,
          g.KW,
          p.stride_h,
          p.stride_w,
          p.pad_h,
          p.pad_w,
          p.dilation_h,
          p.dilation_w,
          p.groups,
          static_cast<int64_t>(cuda::conv_workspace_limit())};
}

struct Choice {
  int algo = 0;
  size_t workspace = 0;
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
  // False: no algorithm qualifies in nhwc, and the call computes in NCHW instead (choose).
  bool usable = true;
};

// cuDNN's names for the algorithms (cudnn_ops.h), without the common prefix.
const char* algo_name(Dir dir, int algo) {
  static const char* const fwd[] = {
      "IMPLICIT_GEMM", "IMPLICIT_PRECOMP_GEMM", "GEMM", "DIRECT", "FFT", "FFT_TILING",
      "WINOGRAD",      "WINOGRAD_NONFUSED"};
  static const char* const data[] = {"ALGO_0",     "ALGO_1",   "FFT",
                                     "FFT_TILING", "WINOGRAD", "WINOGRAD_NONFUSED"};
  static const char* const filter[] = {
      "ALGO_0", "ALGO_1", "FFT", "ALGO_3", "WINOGRAD", "WINOGRAD_NONFUSED", "FFT_TILING"};
  auto at = [algo](const char* const* names, int n) {
    return algo >= 0 && algo < n ? names[algo] : "?";
  };
  switch (dir) {
    case Dir::forward:
      return at(fwd, 8);
    case Dir::backward_data:
      return at(data, 6);
    case Dir::backward_filter:
      return at(filter, 7);
  }
  return "?";
}

const char* log_direction(Dir d) {
  switch (d) {
    case Dir::forward:
      return "forward";
    case Dir::backward_data:
      return "backward_data";
    case Dir::backward_filter:
      return "backward_filter";
  }
  return "?";
}

const char* math_name(cudnnMathType_t m);

class AlgoCache {
 public:
  bool lookup(const Key& k, Choice* c) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = map_.find(k);
    if (it == map_.end()) return false;
    *c = it->second.first;
    ++stats_.hits;
    log_.used(it->second.second);
    return true;
  }
  void insert(const Key& k, const Choice& c, Dir dir, const std::string& shape) {
    std::lock_guard<std::mutex> lock(mu_);
    const size_t at =
        log_.chose(log_direction(dir), shape,
                   c.usable ? algo_name(dir, c.algo) : "none in nhwc: computed in NCHW",
                   c.usable ? math_name(c.math) : "-", c.workspace);
    map_.emplace(k, std::make_pair(c, at));
    ++stats_.finds;
    stats_.entries = map_.size();
  }
  cuda::ConvAlgoCacheStats stats() {
    std::lock_guard<std::mutex> lock(mu_);
    return stats_;
  }
  std::vector<ConvAlgoUse> choices() {
    std::lock_guard<std::mutex> lock(mu_);
    return log_.entries();
  }

 private:
  std::mutex mu_;
  std::map<Key, std::pair<Choice, size_t>> map_;  // the choice and its entry in log_
  cuda::ConvAlgoCacheStats stats_;
  ConvAlgoLog log_;  // what was chosen per (direction, shape), for reports
};

AlgoCache& algo_cache() {
  static AlgoCache cache;
  return cache;
}

const char* math_name(cudnnMathType_t m) {
  switch (m) {
    case CUDNN_DEFAULT_MATH:
      return "default";
    case CUDNN_TENSOR_OP_MATH:
      return "tensor_op";
    case CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION:
      return "tensor_op_allow_conversion";
    case CUDNN_FMA_MATH:
      return "fma";
  }
  return "?";
}

// What the rule of the file header makes of Find's results (sorted fastest first) under a
// workspace limit: the choice, or none with the least larger workspace that some deterministic
// algorithm of the right math asked for (0: none did), and Find's results for the error.
struct Picked {
  bool ok = false;
  Choice choice;
  size_t larger_need = 0;
  std::string tried;
};

template <class Perf>
Picked pick(const Perf* results, int n, DType dt, size_t limit) {
  Picked out;
  for (int i = 0; i < n; ++i) {
    const Perf& r = results[i];
    out.tried += fmt::format(
        " [algo {} {} {} B {} math {}]", static_cast<int>(r.algo), cudnnGetErrorString(r.status),
        r.memory, r.determinism == CUDNN_DETERMINISTIC ? "deterministic" : "non-deterministic",
        math_name(r.mathType));
    if (r.determinism != CUDNN_DETERMINISTIC) continue;
    if (dt == DType::f32 &&
        (r.mathType == CUDNN_TENSOR_OP_MATH || r.mathType == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION))
      continue;
    if (r.memory > limit) {
      if (out.larger_need == 0 || r.memory < out.larger_need) out.larger_need = r.memory;
      continue;
    }
    if (r.status != CUDNN_STATUS_SUCCESS || out.ok) continue;
    out.ok = true;
    out.choice = {static_cast<int>(r.algo), r.memory, r.mathType};
  }
  return out;
}

// What a failed cudnnFind*AlgorithmEx means. cuDNN may refuse an nhwc call as a whole (a status
// of the BAD_PARAM or NOT_SUPPORTED categories from Find itself, not per algorithm): that is "no
// algorithm in nhwc", and the caller computes the call in NCHW. Any other status (an allocation
// failure, an error a kernel left behind), or any status for an NCHW call, throws: it must not
// be cached as the shape's answer.
Picked find_failed(cudnnStatus_t st, bool nhwc, const char* call) {
  const int category = CUDNN_STATUS_CATEGORY(static_cast<int>(st));
  if (nhwc && (category == CUDNN_STATUS_BAD_PARAM || category == CUDNN_STATUS_NOT_SUPPORTED)) {
    Picked none;
    none.tried = fmt::format(" [Find refused the nhwc call: {}]", cudnnGetErrorString(st));
    return none;
  }
  char msg[512] = {0};
  cudnnGetLastErrorString(msg, sizeof(msg));
  throw_error(__FILE__, __LINE__,
              fmt::format("cuDNN call {} failed: {} ({})", call, cudnnGetErrorString(st), msg));
}

// A device buffer of `bytes` from the caching allocator (undefined when bytes == 0).
Tensor workspace(size_t bytes, Device d) {
  if (bytes == 0) return Tensor();
  return Tensor::empty({static_cast<int64_t>(bytes)}, DType::u8, d);
}
void* ptr(const Tensor& t) {
  return t.defined() ? t.raw_data() : nullptr;
}

// Cached choice for this call, running Find (with the call's own buffers) on a miss: under the
// limit first, then once under the least larger workspace a qualifying algorithm asked for.
// When none qualifies: an nhwc call gets an unusable choice (its caller computes it in NCHW, and
// the report names it), an NCHW call throws with Find's results.
template <class FindFn>
Choice choose(Dir dir, std::initializer_list<const Tensor*> operands, const Geometry& g,
              const Conv2dParams& p, FindFn find) {
  const Tensor& anchor = **operands.begin();
  const DType dt = anchor.dtype();
  const bool nhwc = anchor.layout() == Layout::nhwc;
  const Key key = make_key(dir, anchor.device().index, dt, g, p, aligned16(operands), nhwc);
  Choice c;
  if (algo_cache().lookup(key, &c)) return c;
  const auto find_within = [&](size_t bytes) {
    Tensor scratch = workspace(bytes, anchor.device());
    return find(ptr(scratch), scratch.defined() ? bytes : size_t{0});
  };
  const size_t limit = cuda::conv_workspace_limit();
  Picked r = find_within(limit);
  std::string tried = r.tried;
  if (!r.ok && r.larger_need > 0) {
    const size_t need = r.larger_need;
    r = find_within(need);
    tried += fmt::format(" | again with {} B:{}", need, r.tried);
  }
  const std::string shape =
      conv_shape_string(dt, g.N, g.C, g.H, g.W, g.O, g.KH, g.KW, p.stride_h, p.stride_w, p.pad_h,
                        p.pad_w, p.dilation_h, p.dilation_w, p.groups) +
      (nhwc ? " nhwc" : "");
  if (!r.ok && nhwc) {  // the caller computes this call in NCHW, every time (remembered)
    c.usable = false;
    algo_cache().insert(key, c, dir, shape);
    return c;
  }
  DPLAB_CHECK(
      r.ok,
      "CUDA {}: no cuDNN algorithm is usable for {} x [{}, {}, {}, {}], w [{}, {}, {}, {}], "
      "stride {}x{} pad {}x{} dilation {}x{} groups {} (need: success, workspace <= {} B or the "
      "least a deterministic algorithm asks for, deterministic{}); Find returned:{}",
      dir_name(dir), dtype_name(dt), g.N, g.C, g.H, g.W, g.O, g.C / p.groups, g.KH, g.KW,
      p.stride_h, p.stride_w, p.pad_h, p.pad_w, p.dilation_h, p.dilation_w, p.groups, limit,
      dt == DType::f32 ? ", no tensor-op math" : "", tried.empty() ? " nothing" : tried);
  c = r.choice;
  algo_cache().insert(key, c, dir, shape);
  return c;
}

// The math type the call runs with: f32 stays FMA-only; 16-bit follows Find's choice, as the
// cuDNN documentation asks for algorithms returned by Find.
void apply_math(const Setup& s, DType dt, const Choice& c) {
  if (dt != DType::f32) DPLAB_CUDNN_CHECK(cudnnSetConvolutionMathType(s.conv.get(), c.math));
}

// Zero bits are 0.0 in f32, bf16 and f16 alike.
void fill_zero(Tensor& t, int dev) {
  DPLAB_CUDA_CHECK(
      cudaMemsetAsync(t.raw_data_any_layout(), 0, t.nbytes(), cuda::launch_stream(dev)));
}

// The layout a call computes in: its output side's (y forward, dy backward).
Layout call_layout(const Tensor& out_side) {
  return out_side.layout() == Layout::nhwc ? Layout::nhwc : Layout::strided;
}

// t in layout l (strided meaning NCHW-contiguous) and dtype dt: t itself when it already is,
// else a scratch copy made in one pass (relayout and rounding together).
Tensor as_operand(const Tensor& t, Layout l, DType dt) {
  const bool laid_out = l == Layout::strided ? t.is_contiguous() : t.layout() == l;
  if (laid_out && t.dtype() == dt) return t;
  Tensor o = Tensor::empty(t.shape(), l, dt, t.device());
  o.copy_(t);
  return o;
}

// f32 master weights beside bf16 activations (autocast, Backend::bf16_activations): cuDNN's
// legacy API takes one dtype for x, w and y, so the weights are rounded to bf16 into a scratch
// copy first, as autocast's cast would (a product of two bf16 values is exact in f32, so the
// convolution is the CPU's up to f32 summation order).
bool master_weights(const Tensor& act, const Tensor& w) {
  return act.defined() && w.defined() && act.dtype() == DType::bf16 && w.dtype() == DType::f32;
}
// The filter operand of a call in layout l beside activations `act`: rounded to bf16 beside
// master weights, KRSC (nhwc) when l is.
Tensor operand_weights(const Tensor& act, const Tensor& w, Layout l) {
  return as_operand(w, l, master_weights(act, w) ? DType::bf16 : w.dtype());
}

// An output of a call in layout l and dtype dt: `out` itself when it already is, else a scratch
// the call writes and finish() copies into `out`.
class CallOutput {
 public:
  CallOutput(Tensor& out, Layout l, DType dt) : out_(out) {
    const bool laid_out = l == Layout::strided ? out.is_contiguous() : out.layout() == l;
    op_ = laid_out && out.dtype() == dt ? out : Tensor::empty(out.shape(), l, dt, out.device());
  }
  Tensor& operand() { return op_; }
  void finish() {
    if (op_.impl_ptr() != out_.impl_ptr()) out_.copy_(op_);
  }

 private:
  Tensor& out_;
  Tensor op_;
};

bool forward_in(Layout l, const Tensor& x_in, const Tensor& w_in, const Tensor& b, Tensor& y_out,
                const Conv2dParams& p) {
  const Tensor x = as_operand(x_in, l, x_in.dtype());
  const Tensor w = operand_weights(x, w_in, l);
  CallOutput out(y_out, l, y_out.dtype());
  Tensor& y = out.operand();
  const Geometry g = check_conv(Dir::forward, x, w, y, p, "x", "w", "y");
  if (b.defined()) check_bias(b, g.O, x, "bias", "conv2d_forward");
  if (y.numel() == 0) return true;
  const int dev = x.device().index;
  cuda::ScopedDevice guard(dev);
  cudnnHandle_t h = cuda::cudnn_handle(dev);
  const bool nhwc = l == Layout::nhwc;
  if (x.numel() == 0 || w.numel() == 0) {
    fill_zero(y, dev);  // an empty sum (C == 0 or an empty filter), plus the bias below
  } else {
    Setup s;
    describe(s, g, p, x.dtype(), nhwc, "conv2d_forward");
    const Choice c = choose(Dir::forward, {&x, &w, &y}, g, p, [&](void* ws, size_t ws_bytes) {
      cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
      int n = 0;
      const cudnnStatus_t st = cudnnFindConvolutionForwardAlgorithmEx(
          h, s.x.get(), x.raw_data_any_layout(), s.w.get(), w.raw_data_any_layout(), s.conv.get(),
          s.y.get(), y.raw_data_any_layout(), CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &n, perf, ws,
          ws_bytes);
      if (st != CUDNN_STATUS_SUCCESS)
        return find_failed(st, nhwc, "cudnnFindConvolutionForwardAlgorithmEx");
      return pick(perf, n, x.dtype(), ws_bytes);
    });
    if (!c.usable) return false;
    apply_math(s, x.dtype(), c);
    Tensor ws = workspace(c.workspace, x.device());
    const float alpha = 1.0f, beta = 0.0f;  // float scaling factors for f32/bf16/f16 data
    DPLAB_CUDNN_CHECK(cudnnConvolutionForward(
        h, &alpha, s.x.get(), x.raw_data_any_layout(), s.w.get(), w.raw_data_any_layout(),
        s.conv.get(), static_cast<cudnnConvolutionFwdAlgo_t>(c.algo), ptr(ws), c.workspace, &beta,
        s.y.get(), y.raw_data_any_layout()));
  }
  if (b.defined())
    DPLAB_CUDA_CHECK(cuda::launch_add_channel_bias(y.raw_data_any_layout(), y.dtype(), g.N, g.O,
                                                   g.OH * g.OW, b.raw_data(), b.dtype(), nhwc,
                                                   cuda::launch_stream(dev)));
  out.finish();
  return true;
}

bool backward_data_in(Layout l, const Tensor& dy, const Tensor& w_in, Tensor& dx_out,
                      const Conv2dParams& p) {
  const Tensor dyc = as_operand(dy, l, dy.dtype());
  const Tensor w = operand_weights(dyc, w_in, l);
  CallOutput out(dx_out, l, dx_out.dtype());
  Tensor& dx = out.operand();
  const Geometry g = check_conv(Dir::backward_data, dx, w, dyc, p, "dx", "w", "dy");
  if (dx.numel() == 0) return true;
  const int dev = dx.device().index;
  cuda::ScopedDevice guard(dev);
  if (dyc.numel() == 0 || w.numel() == 0) {
    fill_zero(dx, dev);  // no output depends on x
    out.finish();
    return true;
  }
  cudnnHandle_t h = cuda::cudnn_handle(dev);
  Setup s;
  describe(s, g, p, dx.dtype(), l == Layout::nhwc, "conv2d_backward_data");
  const Choice c =
      choose(Dir::backward_data, {&dx, &w, &dyc}, g, p, [&](void* ws, size_t ws_bytes) {
        cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
        int n = 0;
        const cudnnStatus_t st = cudnnFindConvolutionBackwardDataAlgorithmEx(
            h, s.w.get(), w.raw_data_any_layout(), s.y.get(), dyc.raw_data_any_layout(),
            s.conv.get(), s.x.get(), dx.raw_data_any_layout(),
            CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &n, perf, ws, ws_bytes);
        if (st != CUDNN_STATUS_SUCCESS)
          return find_failed(st, l == Layout::nhwc, "cudnnFindConvolutionBackwardDataAlgorithmEx");
        return pick(perf, n, dx.dtype(), ws_bytes);
      });
  if (!c.usable) return false;
  apply_math(s, dx.dtype(), c);
  Tensor ws = workspace(c.workspace, dx.device());
  const float alpha = 1.0f, beta = 0.0f;  // overwrite dx
  DPLAB_CUDNN_CHECK(cudnnConvolutionBackwardData(
      h, &alpha, s.w.get(), w.raw_data_any_layout(), s.y.get(), dyc.raw_data_any_layout(),
      s.conv.get(), static_cast<cudnnConvolutionBwdDataAlgo_t>(c.algo), ptr(ws), c.workspace, &beta,
      s.x.get(), dx.raw_data_any_layout()));
  out.finish();
  return true;
}

// dw in the call's layout and the activations' dtype. Beside bf16 activations an f32 dw (master
// weights) is computed in bf16 by cuDNN (its one dtype for x, dy and dw) and widened into the f32
// gradient, which is what autocast's cast of the weight does on its way back (PyTorch's
// autocast likewise). That one bf16 rounding of dw is the only difference from the CPU, which
// writes dw in f32 (core/kernels/conv.h). An nhwc call's dw (KRSC) is copied back to [O, C/g,
// KH, KW] in the same pass.
bool backward_weight_in(Layout l, const Tensor& x_in, const Tensor& dy, Tensor& dw_out, Tensor& db,
                        const Conv2dParams& p) {
  const Tensor dyc = as_operand(dy, l, dy.dtype());
  const Tensor x = as_operand(x_in, l, x_in.dtype());
  CallOutput out(dw_out, l, master_weights(x, dw_out) ? DType::bf16 : dw_out.dtype());
  Tensor& dw = out.operand();
  const Geometry g = check_conv(Dir::backward_filter, x, dw, dyc, p, "x", "dw", "dy");
  if (db.defined()) check_bias(db, g.O, x, "db", "conv2d_backward_weight");
  const int dev = x.device().index;
  cuda::ScopedDevice guard(dev);
  if (db.defined())
    DPLAB_CUDA_CHECK(cuda::launch_channel_sum(dyc.raw_data_any_layout(), dyc.dtype(), g.N, g.O,
                                              g.OH * g.OW, db.raw_data(), db.dtype(),
                                              l == Layout::nhwc, cuda::launch_stream(dev)));
  if (dw.numel() == 0) return true;
  if (x.numel() == 0 || dyc.numel() == 0) {
    fill_zero(dw, dev);  // an empty batch (or empty output): the gradient is an empty sum
    out.finish();
    return true;
  }
  cudnnHandle_t h = cuda::cudnn_handle(dev);
  Setup s;
  describe(s, g, p, x.dtype(), l == Layout::nhwc, "conv2d_backward_weight");
  const Choice c =
      choose(Dir::backward_filter, {&x, &dyc, &dw}, g, p, [&](void* ws, size_t ws_bytes) {
        cudnnConvolutionBwdFilterAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
        int n = 0;
        const cudnnStatus_t st = cudnnFindConvolutionBackwardFilterAlgorithmEx(
            h, s.x.get(), x.raw_data_any_layout(), s.y.get(), dyc.raw_data_any_layout(),
            s.conv.get(), s.w.get(), dw.raw_data_any_layout(),
            CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &n, perf, ws, ws_bytes);
        if (st != CUDNN_STATUS_SUCCESS)
          return find_failed(st, l == Layout::nhwc,
                             "cudnnFindConvolutionBackwardFilterAlgorithmEx");
        return pick(perf, n, x.dtype(), ws_bytes);
      });
  if (!c.usable) return false;
  apply_math(s, x.dtype(), c);
  Tensor ws = workspace(c.workspace, x.device());
  const float alpha = 1.0f, beta = 0.0f;  // overwrite dw
  DPLAB_CUDNN_CHECK(cudnnConvolutionBackwardFilter(
      h, &alpha, s.x.get(), x.raw_data_any_layout(), s.y.get(), dyc.raw_data_any_layout(),
      s.conv.get(), static_cast<cudnnConvolutionBwdFilterAlgo_t>(c.algo), ptr(ws), c.workspace,
      &beta, s.w.get(), dw.raw_data_any_layout()));
  out.finish();
  return true;
}

// The entry points: each call in its layout (call_layout), or in NCHW where cuDNN has no usable
// algorithm for it in nhwc (see choose).
void forward(const Tensor& x, const Tensor& w, const Tensor& b, Tensor& y, const Conv2dParams& p) {
  if (!forward_in(call_layout(y), x, w, b, y, p)) forward_in(Layout::strided, x, w, b, y, p);
}
void backward_data(const Tensor& dy, const Tensor& w, Tensor& dx, const Conv2dParams& p) {
  if (!backward_data_in(call_layout(dy), dy, w, dx, p))
    backward_data_in(Layout::strided, dy, w, dx, p);
}
void backward_weight(const Tensor& x, const Tensor& dy, Tensor& dw, Tensor& db,
                     const Conv2dParams& p) {
  if (!backward_weight_in(call_layout(dy), x, dy, dw, db, p))
    backward_weight_in(Layout::strided, x, dy, dw, db, p);
}

// Where the convolution writes y (the op allocates it so): nhwc for an input already in nhwc,
// and for bf16 activations (autocast keeps them from layer to layer) whose channel counts suit
// the tensor cores' channels-last kernels (multiples of 8, so the ResNet stem's 3 input channels
// stay NCHW: its output becomes nhwc at the next convolution); NCHW otherwise (f32; f16, which
// autocast casts back to f32 at once; grouped convolutions: see the file header).
Layout output_layout(const Tensor& x, const Tensor& w, const Conv2dParams& p, bool /*has_bias*/) {
  if (p.groups != 1 || x.dim() != 4 || w.dim() != 4) return Layout::strided;
  if (x.layout() == Layout::nhwc) return Layout::nhwc;
  const bool aligned = x.size(1) % 8 == 0 && w.size(0) % 8 == 0;
  return x.dtype() == DType::bf16 && aligned ? Layout::nhwc : Layout::strided;
}

}  // namespace

namespace cuda {
ConvAlgoCacheStats conv_algo_cache_stats() {
  return algo_cache().stats();
}

std::vector<ConvAlgoUse> conv_algo_choices() {
  return algo_cache().choices();
}
}  // namespace cuda

ConvKernels cuda_conv_kernels() {
  ConvKernels k{};
  k.conv2d_forward = forward;
  k.conv2d_backward_data = backward_data;
  k.conv2d_backward_weight = backward_weight;
  k.conv2d_output_layout = output_layout;
  return k;
}

}  // namespace dplab
