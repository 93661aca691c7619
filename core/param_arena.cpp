#include "dplab/core/param_arena.h"

#include "dplab/core/autograd.h"

namespace dplab {

ParamArena::ParamArena(const std::vector<NamedTensor>& params, Layout layout, int64_t align) {
  DPLAB_CHECK(!params.empty(), "ParamArena: no parameters");
  DPLAB_CHECK(align >= 1, "ParamArena: alignment must be >= 1");
  const Device dev = params.front().tensor.device();
  std::vector<NamedTensor> order = params;
  if (layout == Layout::ready_order) std::reverse(order.begin(), order.end());
  int64_t off = 0;
  for (auto& p : order) {
    DPLAB_CHECK(p.tensor.defined(), "ParamArena: parameter '{}' is undefined", p.name);
    check_dtype(p.tensor, DType::f32, p.name.c_str());
    DPLAB_CHECK(p.tensor.device() == dev, "ParamArena: '{}' is on {}, others on {}", p.name,
                p.tensor.device().str(), dev.str());
    DPLAB_CHECK(p.tensor.is_leaf(), "ParamArena: '{}' is not a leaf tensor", p.name);
    for (auto& s : segments_)
      DPLAB_CHECK(!s.param.is_same(p.tensor) && s.name != p.name,
                  "ParamArena: parameter '{}' given twice", p.name);
    ArenaSegment s;
    s.name = p.name;
    s.shape = p.tensor.shape();
    s.offset = off;
    s.numel = p.tensor.numel();
    s.lars_excluded = p.tensor.dim() <= 1;
    s.param = p.tensor;
    segments_.push_back(s);
    off += (s.numel + align - 1) / align * align;  // aligned slots keep SIMD loads aligned
  }
  numel_ = off;
  params_ = Tensor::zeros({numel_}, DType::f32, dev);
  grads_ = Tensor::zeros({numel_}, DType::f32, dev);
  NoGradGuard no_grad;
  for (auto& s : segments_) {
    Tensor slot = params_.flat_range(s.offset, s.offset + s.numel).view(s.shape);
    slot.copy_(s.param.contiguous());
    s.param.rebind_storage(params_.storage(), params_.offset() + s.offset);
    s.param.set_requires_grad(true);
    s.param.set_name(s.name);
    s.param.set_grad(grads_.flat_range(s.offset, s.offset + s.numel).view(s.shape));
  }
}

const ArenaSegment& ParamArena::segment(const std::string& name) const {
  for (auto& s : segments_)
    if (s.name == name) return s;
  DPLAB_FAIL("ParamArena: no parameter named '{}'", name);
}

int ParamArena::segment_index_of(const Tensor& t) const {
  for (size_t i = 0; i < segments_.size(); ++i)
    if (segments_[i].param.is_same(t)) return static_cast<int>(i);
  return -1;
}

void ParamArena::zero_grad() {
  grads_.zero_();
}

std::vector<DecayRun> ParamArena::decay_runs() const {
  std::vector<DecayRun> runs;
  for (const ArenaSegment& s : segments_) {
    if (!runs.empty() && runs.back().weight_decay == s.weight_decay &&
        runs.back().offset + runs.back().numel == s.offset) {
      runs.back().numel += s.numel;
      continue;
    }
    runs.push_back({s.offset, s.numel, s.weight_decay});
  }
  return runs;
}

void ParamArena::set_weight_decay(const std::function<bool(const ArenaSegment&)>& decay) {
  for (auto& s : segments_) s.weight_decay = decay(s);
}

void ParamArena::set_lars_excluded(const std::function<bool(const ArenaSegment&)>& excluded) {
  for (auto& s : segments_) s.lars_excluded = excluded(s);
}

void ParamArena::mark_norm_parameters(const std::vector<std::string>& names) {
  for (const auto& n : names) {
    bool found = false;
    for (auto& s : segments_)
      if (s.name == n) s.is_norm = found = true;
    DPLAB_CHECK(found, "ParamArena::mark_norm_parameters: no parameter named '{}'", n);
  }
}

}  // namespace dplab
