#include "dplab/optim/sgd.h"

#include <set>

#include "dplab/core/autograd.h"
#include "dplab/core/backend.h"
#include "dplab/optim/arena_runs.h"

namespace dplab {

SGD::SGD(ParamArena& arena, const SGDOptions& opt) : Optimizer(arena), opt_(opt) {
  DPLAB_CHECK(opt.lr >= 0, "SGD: lr must be >= 0, got {}", opt.lr);
  DPLAB_CHECK(opt.momentum >= 0, "SGD: momentum must be >= 0, got {}", opt.momentum);
  DPLAB_CHECK(opt.weight_decay >= 0, "SGD: weight_decay must be >= 0, got {}", opt.weight_decay);
  // PyTorch's rule: Nesterov needs momentum and no dampening.
  DPLAB_CHECK(!opt.nesterov || (opt.momentum > 0 && opt.dampening == 0),
              "SGD: Nesterov momentum requires momentum > 0 and dampening = 0 (got momentum {}, "
              "dampening {})",
              opt.momentum, opt.dampening);
  lr_ = opt.lr;
  weight_decay_ = opt.weight_decay;
  if (opt.momentum != 0) buf_ = Tensor::zeros({arena.numel()}, DType::f32, arena.device());
}

void SGD::update(const Tensor& skip_if) {
  NoGradGuard no_grad;
  const Backend& be = backend_for(arena_.device());
  SgdStepArgs a;
  a.lr = static_cast<float>(lr_);
  a.momentum = static_cast<float>(opt_.momentum);
  a.dampening = static_cast<float>(opt_.dampening);
  a.nesterov = opt_.nesterov;
  a.first_step = steps_ == 0;  // PyTorch creates the buffer as a copy of the first gradient
  a.weight_decay = static_cast<float>(weight_decay_);  // on the runs that take it
  // The whole arena in one multi-tensor pass (ResNet-50: 161 tensors, 2 runs).
  Tensor params = arena_.params(), buf = buf_;
  be.optim.sgd_step_runs(params, arena_.grads(), buf, arena_optim_runs(arena_), a, skip_if);
  ++steps_;
}

std::vector<NamedTensor> SGD::state() const {
  std::vector<NamedTensor> st;
  if (buf_.defined()) st.push_back({"optim.momentum_buffer", buf_});
  st.push_back({"optim.steps", Tensor::from_vector_i64({steps_}, {})});
  return st;
}

void SGD::load_state(const std::vector<NamedTensor>& state) {
  bool have_steps = false, have_buf = false;
  for (const NamedTensor& nt : state) {
    if (nt.name == "optim.steps") {
      DPLAB_CHECK(nt.tensor.numel() == 1 && nt.tensor.dtype() == DType::i64,
                  "SGD::load_state: optim.steps must be one i64, got {}", nt.tensor.str());
      steps_ = nt.tensor.to_vector_i64()[0];
      have_steps = true;
    } else if (nt.name == "optim.momentum_buffer") {
      DPLAB_CHECK(buf_.defined(),
                  "SGD::load_state: the checkpoint has a momentum buffer but this SGD has "
                  "momentum 0");
      DPLAB_CHECK(nt.tensor.shape() == buf_.shape(),
                  "SGD::load_state: optim.momentum_buffer has shape {}, the arena needs {} (was "
                  "the model or arena layout changed?)",
                  shape_str(nt.tensor.shape()), shape_str(buf_.shape()));
      buf_.copy_(nt.tensor);
      have_buf = true;
    } else {
      DPLAB_FAIL("SGD::load_state: unexpected key '{}'", nt.name);
    }
  }
  DPLAB_CHECK(have_steps, "SGD::load_state: missing optim.steps");
  DPLAB_CHECK(have_buf || !buf_.defined() || steps_ == 0,
              "SGD::load_state: missing optim.momentum_buffer (momentum {})", opt_.momentum);
}

}  // namespace dplab
