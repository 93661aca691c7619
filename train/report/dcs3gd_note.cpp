#include "dplab/train/report/dcs3gd_note.h"

#include "dplab/comm/algorithms/dcs3gd.h"
#include "dplab/train/config/config.h"

namespace dplab {

std::string dcs3gd_run_note(const Options& opt, int64_t global_batch, double lr) {
  auto number = [&](const std::string& key) { return train_option_table().get_double(opt, key); };
  const double warmup_epochs = number("dcs3gd.warmup_epochs");
  const double epochs = number("epochs");
  const double frac =
      warmup_epochs >= 0 && epochs > 0 ? warmup_epochs / epochs : number("dcs3gd.warmup_frac");
  return dcs3gd_peak_lr_note(global_batch, frac, lr);
}

}  // namespace dplab
