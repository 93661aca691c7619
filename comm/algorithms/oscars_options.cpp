// Oscars' option keys (read by OscarsStrategy's constructor, oscars.cpp; the search's own limits
// on M, tau_max, text_step_us and the resolution are checked by oscars_search, oscars_search.cpp).
#include "dplab/comm/algorithms/algorithm_options.h"

namespace dplab {

const OptionTable& oscars_option_table() {
  static const OptionTable t({
      // Any integer here: oscars_search refuses M < 1 (the constructor runs it once).
      {"oscars.M", "4", "step-gap bound of Eq. 3 (tau_fast - tau_slow < M)", integer()},
      {"oscars.tau_max", "0",
       "largest tau a worker may get; 0: no cap (Eq. 3 as written; a cap departs from it)",
       integer(0)},
      {"oscars.search", "exact", "exact, alg1 (Algorithm 1 literally) or text (T += step)",
       choice({"exact", "alg1", "text"})},
      // Any integer here: oscars_search refuses a step < 1.
      {"oscars.text_step_us", "1000", "the T increment of search = text (us)", integer()},
      {"oscars.profile_discard", "5", "profiling iterations discarded (warm-up)", integer(0)},
      {"oscars.profile_measure", "20", "profiling iterations measured (median)", integer(1)},
      {"oscars.reprofile_rounds", "0", "re-measure and re-search every N rounds (0: never)",
       integer(0)},
      // Free text, parsed by the constructor: integers >= 1, one per rank.
      {"oscars.t_us", "", "fixed iteration times \"t0,t1,...\" (us) instead of profiling", text()},
      // Free text, parsed by the constructor: measured or an integer >= 0.
      {"oscars.resolution_us", "measured",
       "waits and times within this many us count as equal in the search; measured: the largest "
       "10th-to-90th-percentile range of any rank's profiled times, at least "
       "oscars.resolution_rel of the fastest time (0 with oscars.t_us)",
       text()},
      {"oscars.resolution_rel", "0.1",
       "with resolution_us = measured: the least resolution, as a fraction of the fastest "
       "profiled time (profiles of identical ranks on a loaded host differ by several percent)",
       number(0, 1, true)},
  });
  return t;
}

}  // namespace dplab
