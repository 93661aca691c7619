#include "dplab/optim/lars.h"

#include "dplab/core/autograd.h"
#include "dplab/core/backend.h"
#include "dplab/core/ops/elementwise.h"
#include "dplab/core/ops/reduce.h"

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

void LARS::step() {
  NoGradGuard no_grad;
  const Backend& be = backend_for(arena_.device());
  const Tensor& params = arena_.params();
  const Tensor& grads = arena_.grads();
  trust_.assign(arena_.segments().size(), 1.0);
  for (size_t i = 0; i < arena_.segments().size(); ++i) {
    const ArenaSegment& s = arena_.segments()[i];
    const double wd = s.weight_decay ? weight_decay_ : 0.0;
    Tensor p = params.flat_range(s.offset, s.offset + s.numel);
    Tensor g = grads.flat_range(s.offset, s.offset + s.numel);
    double trust = 1.0;
    if (!s.lars_excluded) {
      const double wn = l2_norm(p).item(), gn = l2_norm(g).item();
      if (wn > 0 && gn > 0) trust = opt_.trust_coefficient * wn / (gn + wd * wn + opt_.eps);
    }
    trust_[i] = trust;
    // v = mu * v + c * (g + wd * w) with c = lr * trust is the SGD kernel run on c * g with
    // weight decay c * wd, no dampening and lr 1 (its first-step copy equals mu * 0 + ...).
    const double c = lr_ * trust;
    SgdStepArgs a;
    a.lr = 1.f;
    a.momentum = static_cast<float>(opt_.momentum);
    a.weight_decay = static_cast<float>(c * wd);
    a.first_step = steps_ == 0;
    Tensor gs = mul_scalar(g, static_cast<float>(c));
    Tensor b = buf_.defined() ? buf_.flat_range(s.offset, s.offset + s.numel) : Tensor();
    be.optim.sgd_step(p, gs, b, a);
  }
  ++steps_;
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
