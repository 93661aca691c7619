// The training driver shared by `dplab train` and experiment binaries: builds model, data,
// optimizer, lr schedule and Strategy from Options (train/config/config.h lists the keys) by
// their names in a Registry (train/config/registry.h), runs the loop at the Strategy's call
// points (comm/strategy.h), evaluates every epoch, writes metrics JSON lines and checkpoints,
// and resumes bitwise-identically.
#pragma once
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <string>

#include "dplab/core/options.h"

namespace dplab {

class Registry;

struct TrainResult {
  int64_t epochs_done = 0;  // completed epochs
  int64_t global_step = 0;  // iterations done in total (including before a resume)
  double train_loss = 0;    // mean over the last (possibly partial) epoch and every rank
  double train_acc = 0;     // (weighted by each rank's sample count)
  // The last evaluation of the run's model (the one a user takes away: the global model, or the
  // ranks' average where they differ; docs/metrics_schema.md, "Evaluated models") ...
  double test_acc = 0;
  double test_loss = 0;
  double test_acc5 = -1;  // top-5, when the test set has more than 10 classes; else -1
  // ... and of rank 0's own model (the same numbers where every rank holds the run's model).
  double test_acc_rank0 = 0;
  double test_loss_rank0 = 0;
  double test_acc5_rank0 = -1;
  double images_per_s =
      0;  // every rank's images over the epochs' times (train/report/epoch_record.h)
  // This process's training and evaluation, on the run's time base (virtual under a cluster),
  // and in wall-clock time.
  double time_s = 0;
  double wall_s = 0;
  // "wall" or "virtual:<platform>" (train/virtual/run_clock.h)
  std::string time_base = "wall";
  std::string final_checkpoint;         // empty without --out
  int64_t nonfinite_skipped_steps = 0;  // steps dropped by nonfinite = skip (this run)
  bool is_rank0 = true;                 // only rank 0 prints results
};

// Runs a training job. `summary` gets one line per epoch (stdout in `dplab train`); progress
// goes to `progress` (stderr). Throws dplab::Error for configuration and runtime errors, and
// RunStopped (train/loop/nonfinite_guard.h) on every rank for a run that stopped on purpose:
// a non-finite loss, gradient or state (exit status 3, nothing written) or a pre-emption signal
// (exit status 4, checkpoint written).
TrainResult run_training(const Options& opt, std::ostream& summary, std::ostream& progress);
// The same with the names (model, data, algo, optim, lr.schedule) resolved in `registry`
// (train/config/registry.h): Registry::with_builtins() plus an experiment's own entries. The
// overload above passes Registry::with_builtins().
TrainResult run_training(const Options& opt, const Registry& registry, std::ostream& summary,
                         std::ostream& progress);

struct EvalReport {
  double accuracy = 0;
  double loss = 0;
  int64_t correct = 0, count = 0;
  bool top5 = false;  // more than 10 classes: top-5 counted
  double accuracy5 = 0;
  int64_t correct5 = 0;
  bool is_rank0 = true;  // under mpiexec the ranks share the work; rank 0 prints
};
// `dplab eval`: loads the model named by "model" with weights from "checkpoint" and evaluates
// it on the test split of "data" (with data.workers; under mpiexec split across the ranks).
EvalReport run_evaluation(const Options& opt);
EvalReport run_evaluation(const Options& opt, const Registry& registry);

// Applies the "threads" option (0: leave OpenMP's default, all cores).
void apply_thread_option(int64_t threads);

}  // namespace dplab
