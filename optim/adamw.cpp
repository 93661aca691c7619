#include "dplab/optim/adamw.h"

#include "dplab/core/autograd.h"
#include "dplab/core/backend.h"
#include "dplab/optim/arena_runs.h"

namespace dplab {

AdamW::AdamW(ParamArena& arena, const AdamWOptions& opt) : Optimizer(arena), opt_(opt) {
  DPLAB_CHECK(opt.lr >= 0, "AdamW: lr must be >= 0, got {}", opt.lr);
  // PyTorch's checks: betas in [0, 1), eps >= 0, weight decay >= 0.
  DPLAB_CHECK(opt.beta1 >= 0 && opt.beta1 < 1, "AdamW: beta1 must be in [0, 1), got {}", opt.beta1);
  DPLAB_CHECK(opt.beta2 >= 0 && opt.beta2 < 1, "AdamW: beta2 must be in [0, 1), got {}", opt.beta2);
  DPLAB_CHECK(opt.eps >= 0, "AdamW: eps must be >= 0, got {}", opt.eps);
  DPLAB_CHECK(opt.weight_decay >= 0, "AdamW: weight_decay must be >= 0, got {}", opt.weight_decay);
  lr_ = opt.lr;
  weight_decay_ = opt.weight_decay;
  m_ = Tensor::zeros({arena.numel()}, DType::f32, arena.device());
  v_ = Tensor::zeros({arena.numel()}, DType::f32, arena.device());
}

void AdamW::update(const Tensor& skip_if) {
  NoGradGuard no_grad;
  const Backend& be = backend_for(arena_.device());
  AdamWStepArgs a;
  a.lr = lr_;
  a.beta1 = opt_.beta1;
  a.beta2 = opt_.beta2;
  a.eps = opt_.eps;
  a.step = steps_ + 1;
  a.weight_decay = weight_decay_;  // on the runs that take it
  // The whole arena in one multi-tensor pass.
  Tensor params = arena_.params();
  be.optim.adamw_step_runs(params, arena_.grads(), m_, v_, arena_optim_runs(arena_), a, skip_if);
  ++steps_;
}

std::vector<NamedTensor> AdamW::state() const {
  return {{"optim.exp_avg", m_},
          {"optim.exp_avg_sq", v_},
          {"optim.steps", Tensor::from_vector_i64({steps_}, {})}};
}

void AdamW::load_state(const std::vector<NamedTensor>& state) {
  bool have_steps = false, have_m = false, have_v = false;
  for (const NamedTensor& nt : state) {
    if (nt.name == "optim.steps") {
      DPLAB_CHECK(nt.tensor.numel() == 1 && nt.tensor.dtype() == DType::i64,
                  "AdamW::load_state: optim.steps must be one i64, got {}", nt.tensor.str());
      steps_ = nt.tensor.to_vector_i64()[0];
      DPLAB_CHECK(steps_ >= 0, "AdamW::load_state: optim.steps = {} (expected >= 0)", steps_);
      have_steps = true;
    } else if (nt.name == "optim.exp_avg" || nt.name == "optim.exp_avg_sq") {
      Tensor& dst = nt.name == "optim.exp_avg" ? m_ : v_;
      DPLAB_CHECK(nt.tensor.dtype() == DType::f32 && nt.tensor.shape() == dst.shape(),
                  "AdamW::load_state: {} is {} {}, the arena needs f32 {} (was the model or "
                  "arena layout changed?)",
                  nt.name, dtype_name(nt.tensor.dtype()), shape_str(nt.tensor.shape()),
                  shape_str(dst.shape()));
      dst.copy_(nt.tensor);
      (nt.name == "optim.exp_avg" ? have_m : have_v) = true;
    } else {
      DPLAB_FAIL(
          "AdamW::load_state: unexpected key '{}' (an SGD or LARS checkpoint? optim = "
          "adamw keeps optim.exp_avg, optim.exp_avg_sq, optim.steps)",
          nt.name);
    }
  }
  DPLAB_CHECK(have_steps, "AdamW::load_state: missing optim.steps");
  DPLAB_CHECK((have_m && have_v) || steps_ == 0,
              "AdamW::load_state: missing optim.exp_avg or optim.exp_avg_sq after {} steps",
              steps_);
}

}  // namespace dplab
