// Hybrid parallel SGD's own option keys (read by HybridConfig::from_options, hybrid.cpp);
// GradSync's keys under "hybrid." are comm/grad_sync_options.cpp's.
#include "dplab/comm/algorithms/algorithm_options.h"

namespace dplab {

const OptionTable& hybrid_option_table() {
  static const OptionTable t({
      {"hybrid.mode", "hybrid",
       "hybrid (three stages), each_iter (P-SGD every iteration) or only_end (local steps, one "
       "final average)",
       choice({"hybrid", "each_iter", "only_end"})},
      {"hybrid.W", "8", "stage-2 accumulation length (>= 1)", integer(1)},
      {"hybrid.R", "12", "stage-3 sync interval (>= 1)", integer(1)},
      {"hybrid.split", "ceil", "stage boundaries: ceil (thesis code, S = ceil(E/3)) or thirds",
       choice({"ceil", "thirds"})},
      {"hybrid.counter", "global",
       "iteration counter of stages 2 and 3: global (thesis code) or epoch (Algorithm 4)",
       choice({"global", "epoch"})},
      {"hybrid.carry_grad", "true",
       "stage 2 starts on top of the last stage-1 gradient (thesis code)", boolean()},
      {"hybrid.final_average", "true", "average the parameters once at the end", boolean()},
      {"hybrid.accumulate", "sum",
       "stage-2 step on the sum of the W gradients (thesis code) or their mean",
       choice({"sum", "mean"})},
  });
  return t;
}

}  // namespace dplab
