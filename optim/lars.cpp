#include "dplab/optim/lars.h"

#include "dplab/core/autograd.h"
#include "dplab/core/backend.h"

namespace dplab {

LARS::LARS(ParamArena& arena, const LARSOptions& opt) : Optimizer(arena), opt_(opt) {
  DPLAB_CHECK(opt.lr >= 0, "LARS: lr must be >= 0, got {}", opt.lr);
  DPLAB_CHECK(opt.momentum >= 0, "LARS: momentum must be >= 0, got {}", opt.momentum);
  DPLAB_CHECK(opt.weight_decay >= 0, "LARS: weight_decay must be >= 0, got {}", opt.weight_decay);
  DPLAB_CHECK(opt.trust_coefficient > 0, "LARS: trust coefficient must be > 0, got {}",
              opt.trust_coefficient);
  DPLAB_CHECK(opt.eps >= 0, "LARS: eps must be >= 0, got {}", opt.eps);
  lr_ = opt.lr;
  weight_decay_ = opt.weight_decay;
  if (opt.momentum != 0) buf_ = Tensor::zeros({arena.numel()}, DType::f32, arena.device());
}

void LARS::update(const Tensor& skip_if) {
  NoGradGuard no_grad;
  const Backend& be = backend_for(arena_.device());
  const Tensor& params = arena_.params();
  const Tensor& grads = arena_.grads();
  const auto& segs = arena_.segments();
  // Norms of every segment stay where the arena is: on CUDA the update kernel reads them from
  // device memory, so a step never waits on the host (last_trust() copies them when asked).
  if (!norms_.defined() || norms_.numel() != int64_t(2 * segs.size()))
    norms_ = Tensor::zeros({int64_t(2 * segs.size())}, DType::f32, arena_.device());
  LarsStepArgs a;
  a.lr = lr_;
  a.momentum = static_cast<float>(opt_.momentum);
  a.eta = opt_.trust_coefficient;
  a.eps = opt_.eps;
  a.first_step = steps_ == 0;
  a.weight_decay = weight_decay_;  // on the segments that take it
  // Every segment in one multi-tensor call per pass: its norms, then the update with its trust.
  std::vector<OptimRun> runs;
  for (const ArenaSegment& s : segs)
    runs.push_back({s.offset, s.numel, s.weight_decay, s.lars_excluded});
  Tensor p = params, b = buf_;
  be.optim.lars_norms_runs(p, grads, runs, norms_);
  be.optim.lars_step_runs(p, grads, b, norms_, runs, a, skip_if);
  last_weight_decay_ = weight_decay_;
  ++steps_;
}

std::vector<double> LARS::last_trust() const {
  const auto& segs = arena_.segments();
  std::vector<double> trust(segs.size(), 1.0);
  if (!norms_.defined()) return trust;
  const std::vector<float> nm = norms_.to_vector();
  for (size_t i = 0; i < segs.size(); ++i) {
    if (segs[i].lars_excluded) continue;
    const double wd = segs[i].weight_decay ? last_weight_decay_ : 0.0;
    trust[i] = lars_trust(nm[2 * i], nm[2 * i + 1], opt_.trust_coefficient, wd, opt_.eps);
  }
  return trust;
}

std::vector<NamedTensor> LARS::state() const {
  std::vector<NamedTensor> st;
  if (buf_.defined()) st.push_back({"optim.momentum_buffer", buf_});
  st.push_back({"optim.steps", Tensor::from_vector_i64({steps_}, {})});
  return st;
}

void LARS::load_state(const std::vector<NamedTensor>& state) {
  bool have_steps = false, have_buf = false;
  for (const NamedTensor& nt : state) {
    if (nt.name == "optim.steps") {
      DPLAB_CHECK(nt.tensor.numel() == 1 && nt.tensor.dtype() == DType::i64,
                  "LARS::load_state: optim.steps must be one i64, got {}", nt.tensor.str());
      steps_ = nt.tensor.to_vector_i64()[0];
      have_steps = true;
    } else if (nt.name == "optim.momentum_buffer") {
      DPLAB_CHECK(buf_.defined(),
                  "LARS::load_state: the checkpoint has a momentum buffer but this LARS has "
                  "momentum 0");
      DPLAB_CHECK(nt.tensor.shape() == buf_.shape(),
                  "LARS::load_state: optim.momentum_buffer has shape {}, the arena needs {}",
                  shape_str(nt.tensor.shape()), shape_str(buf_.shape()));
      buf_.copy_(nt.tensor);
      have_buf = true;
    } else {
      DPLAB_FAIL("LARS::load_state: unexpected key '{}'", nt.name);
    }
  }
  DPLAB_CHECK(have_steps, "LARS::load_state: missing optim.steps");
  DPLAB_CHECK(have_buf || !buf_.defined() || steps_ == 0,
              "LARS::load_state: missing optim.momentum_buffer (momentum {})", opt_.momentum);
}

}  // namespace dplab
