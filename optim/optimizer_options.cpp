#include "dplab/optim/optimizer_options.h"

namespace dplab {

const OptionTable& lars_option_table() {
  static const OptionTable t({
      {"lars.eta", "0.001", "LARS trust coefficient (optim = lars)", number(0)},
      {"lars.eps", "0", "LARS epsilon in the trust-ratio denominator (optim = lars)", number(0)},
  });
  return t;
}

const OptionTable& adamw_option_table() {
  static const OptionTable t({
      {"adamw.beta1", "0.9", "AdamW: decay of the first-moment average m (optim = adamw)",
       number(0, 1, true)},
      {"adamw.beta2", "0.999", "AdamW: decay of the second-moment average v (optim = adamw)",
       number(0, 1, true)},
      {"adamw.eps", "1e-08",
       "AdamW: added to sqrt(v_hat) in the denominator, as PyTorch does (optim = adamw)",
       number(0)},
  });
  return t;
}

}  // namespace dplab
