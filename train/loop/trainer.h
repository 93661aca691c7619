// The training driver shared by `dplab train` and experiment binaries. A Trainer runs the loop
// at the Strategy's call points (comm/strategy.h), evaluates every epoch, writes metrics JSON
// lines and checkpoints, and resumes bitwise-identically. It is built either
//   - from an experiment's own objects (TrainerParts: model, arena, optimizer, data, strategy,
//     schedule), the options giving the run's settings (epochs, batch, out, ...), or
//   - from Options alone (Trainer::from_options): model, data, optimizer, lr schedule and
//     algorithm by their names in a Registry (train/config/registry.h); run_training is that.
//
//   TrainerParts parts;
//   parts.model = my_model;                      // on the device option `device` names
//   parts.arena = std::make_unique<ParamArena>(parts.model->named_parameters());
//   parts.optimizer = std::make_unique<SGD>(*parts.arena, SGDOptions{.lr = 0.05});
//   parts.data = {train_set, test_set};
//   parts.make_strategy = [](std::shared_ptr<Topology> topo, const Options& o) {
//     return std::make_unique<AllReduceStrategy>(std::move(topo), o);
//   };
//   Trainer trainer(std::move(parts), opt, std::cout, std::cerr);
//   while (trainer.step()) {}                    // or trainer.run()
#pragma once
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <string>

#include "dplab/comm/strategy.h"
#include "dplab/comm/topology.h"
#include "dplab/core/options.h"
#include "dplab/core/param_arena.h"
#include "dplab/layers/module.h"
#include "dplab/optim/grad_scaler.h"
#include "dplab/optim/optimizer.h"
#include "dplab/optim/schedule.h"
#include "dplab/train/config/registry.h"

namespace dplab {

struct LoopState;

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

// An experiment's objects for a Trainer, which takes ownership of them.
struct TrainerParts {
  // The model, in training mode, its parameters and buffers on the device the option `device`
  // names (cpu by default): the Trainer checks it.
  std::shared_ptr<Module> model;
  // The model's parameters in one buffer and the optimizer built on it.
  std::unique_ptr<ParamArena> arena;
  std::unique_ptr<Optimizer> optimizer;
  // The training and test sets (every rank builds the same; the Trainer gives each rank its
  // share of the training set, as DistributedSampler does).
  TrainData data;
  // The algorithm, one of the two: built already (on a Topology the experiment made, e.g.
  // std::make_shared<Topology>(Topology::from_options(opt))), or built by `make_strategy` on
  // the Topology the Trainer makes (MPI's world; on a virtual cluster's clock under option
  // cluster or link.*, which a built strategy cannot take) from the run's options, where it
  // reads its own keys (as StrategyEntry::make). The Trainer sets it up (Strategy::setup: the
  // ranks start from rank 0's parameters and buffers).
  std::unique_ptr<Strategy> strategy;
  std::function<std::unique_ptr<Strategy>(std::shared_ptr<Topology>, const Options&)> make_strategy;
  // make_strategy runs in one process: it gets no Topology (StrategyEntry::single_process).
  bool single_process = false;
  // The lr factor per step (optim/schedule.h); null: constant (the optimizer's lr throughout).
  std::unique_ptr<LrSchedule> schedule;
  // amp = f16's loss scaler; null: the Trainer makes one on the optimizer's arena when amp = f16.
  std::unique_ptr<GradScaler> scaler;
  // Names the records and checkpoints carry (the final checkpoint's dplab.model, run.json's
  // model, data and optimizer); the options model and data, when set, must agree.
  std::string model_name = "model";
  std::string data_name = "data";
  std::string optimizer_name = "custom";
  // Whether every step's update is the optimizer's step on the gradient averaged over the ranks
  // (StrategyEntry::averages_gradients): required for accumulate_steps > 1.
  bool averages_gradients = false;
};

// A training run of this rank, set up and ready to step. Collective construction (the ranks
// agree on locks and broadcast rank 0's parameters). Neither copyable nor movable: the loop
// holds references into it. One Trainer trains at a time in a process (its pre-emption signal
// handlers are process-wide; a second one with an output directory is refused while the first
// has not finished); a finished one releases them and its output directory's lock.
class Trainer {
 public:
  // From an experiment's objects; `opt` holds the run's settings (every key of
  // train/config/config.cpp's table except model, data, optim, algo and lr.schedule's own
  // choice, which the objects replace). Unknown keys are refused.
  Trainer(TrainerParts parts, const Options& opt, std::ostream& summary, std::ostream& progress);
  // From options alone, every part by name from `registry` (which must outlive the Trainer:
  // it holds loaded plugins); run_training is from_options(...)->run().
  static std::unique_ptr<Trainer> from_options(const Options& opt, const Registry& registry,
                                               std::ostream& summary, std::ostream& progress);
  ~Trainer();
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;

  // Trains to the end (epochs or max_steps), evaluates and writes the final model.
  TrainResult run();
  // One training step (TrainLoop::step): true after a step, false once training is over (the
  // first such call finishes the run; result() is then final).
  bool step();
  // The figures so far (final after run(), or once step() returned false).
  TrainResult result() const;
  // Where the run stands: epoch, step in the epoch, global step, optimizer steps.
  const LoopState& state() const;
  Module& model();
  Optimizer& optimizer();
  Strategy& strategy();

 private:
  struct Impl;
  // Builds the parts (after the run's locks and signal handlers are in place and the device is
  // set up) and the rest of the run around them.
  using PartsMaker = std::function<TrainerParts(const Options&, Device)>;
  Trainer(const Options& opt, const Registry* registry, PartsMaker make_parts,
          std::ostream& summary, std::ostream& progress);
  std::unique_ptr<Impl> impl_;
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
