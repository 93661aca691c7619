// Dynamic loss scaling for f16 mixed precision, with torch.cuda.amp.GradScaler's rule:
//   backward(scaler.scale(loss))           the loss (so every gradient) times S
//   scaler.step(optimizer)                 unscale the flat gradient arena (g *= 1/S) and check
//                                          it for inf/NaN in one fused device-side pass
//                                          (OptimKernels::amp_unscale); the step runs only when
//                                          every gradient is finite, else it is skipped
//   scaler.update()                        a skipped step: S *= backoff (0.5) and the finite
//                                          streak restarts; growth_interval (2000) finite steps
//                                          in a row: S *= growth (2)
// S starts at 65536. S is a power of two with the defaults, so unscaling is exact (barring
// subnormals). The skip decision reads one f32 flag from the device per step (as PyTorch does).
#pragma once
#include "dplab/optim/optimizer.h"

namespace dplab {

struct GradScalerOptions {
  double init_scale = 65536.0;
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  int64_t growth_interval = 2000;
};

class GradScaler {
 public:
  GradScaler(ParamArena& arena, const GradScalerOptions& opt = {});

  double scale() const { return scale_; }
  // loss * S (differentiable), for backward.
  Tensor scale_loss(const Tensor& loss) const;
  // Unscales the gradient arena in place (once per step; a second call does nothing) and
  // returns true when some gradient was inf or NaN.
  bool unscale();
  // unscale() if not done yet; then optimizer.step() unless a gradient was inf/NaN. Returns
  // whether the step ran.
  bool step(Optimizer& optimizer);
  // Adjusts S after step() (or after unscale() when the caller steps itself) and ends the step.
  void update();

  int64_t growth_tracker() const { return growth_tracker_; }  // finite steps in a row
  int64_t skipped_steps() const { return skipped_; }
  bool found_inf() const { return found_inf_; }  // of the current/last step
  // For checkpoints: "amp.scale" and "amp.growth_tracker"; load_state restores them exactly.
  std::vector<NamedTensor> state() const;
  void load_state(const std::vector<NamedTensor>& state);

 private:
  ParamArena& arena_;
  GradScalerOptions opt_;
  double scale_;
  int64_t growth_tracker_ = 0;
  int64_t skipped_ = 0;
  bool unscaled_ = false;
  bool found_inf_ = false;
  Tensor flag_;  // f32 [1] on the arena's device: the fused check's result
};

}  // namespace dplab
