// DASO's own option keys (read by DasoConfig::from_options, daso.cpp); GradSync's keys of the
// node-local syncs, under "daso.local.", are comm/grad_sync_options.cpp's.
#include "dplab/comm/algorithms/algorithm_options.h"

namespace dplab {

const OptionTable& daso_option_table() {
  static const OptionTable t({
      {"daso.B_max", "4", "batches between global syncs at the start of a cycle", integer(1)},
      {"daso.S", "1", "batches between sending and merging at the start of a cycle", integer(0)},
      {"daso.warmup_epochs", "4", "blocking bf16 phase at the start (epochs)", integer(0)},
      {"daso.cooldown_epochs", "4", "blocking bf16 phase at the end (epochs)", integer(0)},
      {"daso.plateau_threshold", "0.05",
       "relative improvement of the epoch loss that counts as progress", number(0)},
      {"daso.plateau_patience", "2",
       "a plateau is the (patience+1)-th consecutive epoch without progress", integer(0)},
      {"daso.S_reduction", "halve", "on a plateau: halve (paper) or decrement (authors' code)",
       choice({"halve", "decrement"})},
      {"daso.phases", "true",
       "false: fixed B = B_max and S, no warm-up, cool-down or plateau cycle (Table 2)", boolean()},
      {"daso.epoch_end_sync", "true", "blocking plain-average sync at each epoch's last batch",
       boolean()},
      {"daso.blocking_wire", "bf16", "wire type of the warm-up and cool-down syncs",
       choice({"f32", "bf16", "f16"})},
      {"daso.global_wire", "f32", "wire type of the cycling-phase syncs",
       choice({"f32", "bf16", "f16"})},
  });
  return t;
}

}  // namespace dplab
