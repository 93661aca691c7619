// DC-S3GD's option keys (read by Dcs3gdOptions::from_options, dcs3gd.cpp).
#include <limits>

#include "dplab/comm/algorithms/algorithm_options.h"

namespace dplab {

const OptionTable& dcs3gd_option_table() {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  static const OptionTable t({
      {"dcs3gd.lambda0", "0.2", "λ0 of eq. 17; 0: no delay compensation", number(0)},
      {"dcs3gd.norm", "per_tensor", "norms of eq. 17: per_tensor or global",
       choice({"per_tensor", "global"})},
      {"dcs3gd.correct_from", "start", "apply the correction from start or from warmup_end",
       choice({"start", "warmup_end"})},
      {"dcs3gd.schedule", "warmup_linear",
       "warmup_linear (the paper's) or loop (the lr.* schedule, wd scaled with it)",
       choice({"warmup_linear", "loop"})},
      {"dcs3gd.warmup_epochs", "-1", "warm-up length in epochs; < 0: dcs3gd.warmup_frac",
       number(-kInf)},
      // 1/6 (the paper's 15 of 90 epochs), written so that it reads back as 1.0 / 6.0 exactly.
      {"dcs3gd.warmup_frac", "0.16666666666666666", "warm-up as a fraction of all iterations (1/6)",
       number(0, 1)},
      {"dcs3gd.wd_mult", "2.3", "multiplier of wd", number(0)},
      {"dcs3gd.wd_exclude", "bn", "parameters without weight decay: bn, bn_bias or none",
       choice({"bn", "bn_bias", "none"})},
      {"dcs3gd.momentum", "-1", "momentum μ; < 0: the optimizer's momentum",
       number(-kInf, 1, true)},
      {"dcs3gd.wire", "f32", "wire type of the update allreduce: f32, bf16 or f16",
       choice({"f32", "bf16", "f16"})},
      {"dcs3gd.progress_us", "200",
       "a helper thread tests the in-flight allreduce this often (us); 0: no helper", number(0)},
  });
  return t;
}

}  // namespace dplab
