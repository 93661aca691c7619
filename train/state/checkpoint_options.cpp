#include "dplab/train/state/checkpoint_options.h"

namespace dplab {

const OptionTable& checkpoint_option_table() {
  static const OptionTable t({
      {"out", "",
       "output directory: run.json (the run record, a valid --config), metrics.jsonl and "
       "rank_<R>.jsonl (docs/metrics_schema.md), checkpoints/step_<N>/ (one directory per "
       "checkpoint: "
       "rank_<R>.safetensors per rank + manifest.json) and final.safetensors (the final model, "
       "PyTorch names)",
       text(), false},
      {"resume", "",
       "continue from a run directory (its newest valid checkpoint) or a checkpoint directory "
       "(DIR/checkpoints/step_<N>); the trajectory options must match the checkpoint's",
       text(), false},
      {"resume.override", "",
       "KEY,...: trajectory options a resumed run may change (KEY.* matches a prefix), e.g. "
       "lr,lr.schedule",
       text(), false},
      {"resume.reshard", "false",
       "resume a checkpoint written by another number of ranks (flag --reshard): model and "
       "optimizer from the replicas' consensus, the epoch's sample position from the global "
       "sample counter (keep the global batch: world x batch); each algorithm's own state "
       "kept, averaged or re-derived for the new world by its policy (docs/resharding.md)",
       boolean(), false},
      {"init_from", "",
       "start a new run from the model weights of a checkpoint (run or checkpoint directory, "
       "or a model .safetensors file): fresh optimizer and loop",
       text(), false},
      {"checkpoint.every_epochs", "1", "write a checkpoint every N epochs (0: only at the end)",
       integer(0), false},
      {"checkpoint.every_steps", "0",
       "also write a checkpoint every N iterations (global steps; 0: never)", integer(0), false},
      {"checkpoint.keep", "3",
       "committed checkpoints kept in DIR/checkpoints (older ones are removed after a new one "
       "commits; 0: keep all)",
       integer(0), false},
      {"preempt.signals", "TERM,USR1",
       "signals that pre-empt the run (with out set): every rank stops after the same step, "
       "writes a checkpoint to DIR/checkpoints and exits with status 4; comma-separated TERM, "
       "INT, HUP, USR1, USR2; empty: default actions (train/loop/preemption.h)",
       text(), false},
  });
  return t;
}

}  // namespace dplab
