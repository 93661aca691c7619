#include "dplab/optim/grad_scaler.h"

#include <cmath>

#include "dplab/core/autograd.h"
#include "dplab/core/backend.h"
#include "dplab/core/ops/elementwise.h"

namespace dplab {

GradScaler::GradScaler(ParamArena& arena, const GradScalerOptions& opt)
    : arena_(arena), opt_(opt), scale_(opt.init_scale) {
  DPLAB_CHECK(opt.init_scale > 0 && std::isfinite(opt.init_scale),
              "GradScaler: init_scale must be finite and > 0, got {}", opt.init_scale);
  DPLAB_CHECK(opt.growth_factor > 1, "GradScaler: growth_factor must be > 1, got {}",
              opt.growth_factor);
  DPLAB_CHECK(opt.backoff_factor > 0 && opt.backoff_factor < 1,
              "GradScaler: backoff_factor must be in (0, 1), got {}", opt.backoff_factor);
  DPLAB_CHECK(opt.growth_interval >= 1, "GradScaler: growth_interval must be >= 1, got {}",
              opt.growth_interval);
  flag_ = Tensor::zeros({1}, DType::f32, arena.device());
}

Tensor GradScaler::scale_loss(const Tensor& loss) const {
  return mul_scalar(loss, static_cast<float>(scale_));
}

bool GradScaler::unscale() {
  if (unscaled_) return found_inf_;
  NoGradGuard no_grad;
  flag_.zero_();
  Tensor grads = arena_.grads();
  backend_for(arena_.device()).optim.amp_unscale(grads, static_cast<float>(1.0 / scale_), flag_);
  found_inf_ = flag_.item() != 0.f;  // the one device-to-host read of the step
  unscaled_ = true;
  return found_inf_;
}

bool GradScaler::step(Optimizer& optimizer) {
  if (unscale()) {
    ++skipped_;
    return false;
  }
  optimizer.step();
  return true;
}

void GradScaler::update() {
  DPLAB_CHECK(unscaled_, "GradScaler::update: no step() or unscale() since the last update");
  if (found_inf_) {
    scale_ *= opt_.backoff_factor;
    growth_tracker_ = 0;
  } else if (++growth_tracker_ == opt_.growth_interval) {
    const double grown = scale_ * opt_.growth_factor;
    if (std::isfinite(static_cast<float>(grown))) scale_ = grown;  // stays an f32 value
    growth_tracker_ = 0;
  }
  unscaled_ = false;
}

std::vector<NamedTensor> GradScaler::state() const {
  return {{"amp.scale", Tensor::from_vector({static_cast<float>(scale_)}, {})},
          {"amp.growth_tracker", Tensor::from_vector_i64({growth_tracker_}, {})}};
}

void GradScaler::load_state(const std::vector<NamedTensor>& state) {
  bool have_scale = false, have_tracker = false;
  for (const NamedTensor& nt : state) {
    if (nt.name == "amp.scale") {
      DPLAB_CHECK(nt.tensor.numel() == 1 && nt.tensor.dtype() == DType::f32,
                  "GradScaler::load_state: amp.scale must be one f32, got {}", nt.tensor.str());
      scale_ = nt.tensor.item();
      have_scale = true;
    } else if (nt.name == "amp.growth_tracker") {
      DPLAB_CHECK(nt.tensor.numel() == 1 && nt.tensor.dtype() == DType::i64,
                  "GradScaler::load_state: amp.growth_tracker must be one i64, got {}",
                  nt.tensor.str());
      growth_tracker_ = nt.tensor.to_vector_i64()[0];
      have_tracker = true;
    } else {
      DPLAB_FAIL("GradScaler::load_state: unexpected key '{}'", nt.name);
    }
  }
  DPLAB_CHECK(have_scale && have_tracker,
              "GradScaler::load_state: needs amp.scale and amp.growth_tracker");
  unscaled_ = false;
}

}  // namespace dplab
