#include "dplab/train/report/report_options.h"

namespace dplab {

const OptionTable& report_option_table() {
  static const OptionTable t({
      {"trace", "false",
       "write a timeline of every rank (Chrome trace-event JSON, opens in Perfetto and "
       "chrome://tracing): DIR/trace/rank_<R>.json per rank, merged by rank 0 into "
       "DIR/trace.json at the end; needs out (docs/trace.md)",
       boolean(), false},
      {"trace.steps", "auto",
       "the global steps a trace records: A:B (0-based, A <= step < B), all, or auto (steps "
       "10:20, the 10 steps after 10 of warm-up; the last 10 steps of a shorter run)",
       text(), false},
      {"progress", "auto", "auto (bar on a terminal, else lines), bar, lines or off",
       choice({"auto", "bar", "lines", "off"}), false},
      {"progress.every_percent", "10", "with progress=lines: a line every N% of an epoch",
       integer(1, 100), false},
      {"metrics.every_steps", "0",
       "with out set: a \"kind\": \"step\" record every N global steps in metrics.jsonl and "
       "rank_R.jsonl (loss over every rank, lr, step time, data wait, exposed communication "
       "wait, images/s; docs/metrics_schema.md); 0: none",
       integer(0), false},
  });
  return t;
}

}  // namespace dplab
