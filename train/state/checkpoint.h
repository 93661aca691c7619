// Checkpoints of a training run: every stateful part of every rank, committed as one unit.
//
// write_checkpoint (collective over the run's ranks) stores, per rank, in
// OUT/checkpoints/step_<N>/rank_<R>.safetensors (layout and commit: checkpoint_store.h):
//   model.<name>      that rank's model state_dict (PyTorch names after the prefix)
//   optim.*           its optimizer state (momentum buffer, step count)
//   amp.*             its GradScaler state (amp = f16)
//   algo.*            its Strategy's state (Strategy::save_state, comm/strategy.h)
//   schedule.*        the lr schedule's state (reduce-on-plateau), as metadata
//   loop.*            the loop position and the partial sums of the epoch in progress
// and rank 0 commits the manifest (sizes, CRC-32s, world size, algorithm, and the run's
// trajectory options: train/config/config.h trajectory_config). Data order and every random
// draw are pure functions of (seed, epoch, index), so the loop position is the whole RNG
// position. A resume loads each rank's own file after checking the manifest, compares the
// options, and validates every value it loads (errors name the file and the key).
#pragma once
#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <map>
#include <string>
#include <vector>

#include "dplab/core/param_arena.h"  // NamedTensor
#include "dplab/train/loop/rank_group.h"
#include "dplab/train/state/checkpoint_store.h"

namespace dplab {

class Module;
class Optimizer;
class Strategy;
class LrSchedule;
class GradScaler;
class StateDict;

struct LoopState {
  int64_t epoch = 0;          // epoch in progress (0-based); == epochs when training finished
  int64_t step_in_epoch = 0;  // batches of `epoch` already done
  int64_t global_step = 0;    // iterations done
  int64_t optimizer_steps = 0;
  double epoch_loss_sum = 0;  // sum over the samples of `epoch` done so far
  int64_t epoch_correct = 0;
  int64_t epoch_seen = 0;
  int64_t nonfinite_skipped = 0;        // steps dropped by nonfinite = skip, whole run
  int64_t epoch_nonfinite_skipped = 0;  // of them, in `epoch`
  std::vector<double> epoch_losses;     // mean train loss of every finished epoch
  // Seconds since the run's start when the checkpoint was written (metrics' elapsed_s): a
  // resumed run continues from it. Wall time, so it differs between runs of one trajectory.
  double elapsed_s = 0;
  // A virtual cluster's fail events under an algorithm that goes on with the live ranks
  // (train/virtual/liveness.h), carried so that a resumed run keeps counting and heals a rank
  // that returns after the resume; written only when `failures` is set.
  bool failures = false;
  std::vector<int64_t> down;       // the ranks down at the checkpoint's last step
  double last_step_world_s = -1;   // the world's virtual time that step began at (-1: none)
  double failure_lost_rank_s = 0;  // the run's figures so far (the final record's)
  double recovery_s = 0;
};

// Everything of one rank that a checkpoint saves and restores (scaler may be null).
struct TrainingParts {
  Module* model = nullptr;
  Optimizer* optimizer = nullptr;
  Strategy* strategy = nullptr;
  LrSchedule* schedule = nullptr;
  GradScaler* scaler = nullptr;
};

// What identifies a run's trajectory, stored in the manifest and compared on resume.
struct RunIdentity {
  std::string algo;
  std::string ranks_per_node;
  std::string init_from;
  std::map<std::string, std::string> config;  // trajectory_config(opt), and "epochs" when
                                              // anything is planned from it (below)
  // What the run plans from the option `epochs` (the schedule's and the algorithm's
  // planned_from_epochs()). When not empty, `epochs` is part of `config`: a resume that changes
  // it is refused, naming these, unless --resume-override epochs (then with a warning). When
  // empty, epochs is a [run] option and may change freely.
  std::vector<std::string> planned_from_epochs;
  // Not compared on resume (a --reshard resume changes them; train/state/reshard.h):
  int64_t batch = 0;                   // per rank: the manifest's global sample counter
  std::vector<WorldSpan> world_sizes;  // the run's world sizes so far (empty: this one's alone)
};

struct CheckpointTarget {
  std::filesystem::path out_dir;  // the run directory (OUT)
  int64_t keep = 0;               // committed checkpoints kept (0: all)
};

// Writes a checkpoint of the loop position `loop` and commits it (collective: every rank of
// `group` calls it with its own parts, between steps; with or without Strategy::drain() before
// it, comm/strategy.h: the run loop drains only where an uninterrupted run drains too, at epoch
// ends). OUT must be on a file system every rank sees (rank 0 creates the directory the others
// write into and checks their files' sizes on resume). On any failure on any rank
// every rank throws an Error naming the failed rank and why, and nothing is left behind: no
// temporary file or directory, and the checkpoints committed before are untouched. Returns
// the committed directory (OUT/checkpoints/step_<N>). Then removes checkpoints beyond
// target.keep. A checkpoint of the same step that exists already is replaced.
// Fault injection for tests: the environment variable DPLAB_CHECKPOINT_FAIL_RANK=R makes rank
// R fail after writing its file.
std::filesystem::path write_checkpoint(const CheckpointTarget& target, const RankGroup& group,
                                       const RunIdentity& run, const TrainingParts& parts,
                                       const LoopState& loop);

// The checkpoint `--resume PATH` names (collective): PATH is a checkpoint directory
// (OUT/checkpoints/step_<N>), checked and refused with an error naming the bad file, or a run
// directory, whose newest checkpoint that passes the checks is taken (those skipped are
// reported to `report` on rank 0, with the reason). Checks: the manifest (absent: never
// committed), the world size, every file's size, and each rank's own file's CRC-32.
Manifest find_resume_checkpoint(const std::string& path, const RankGroup& group,
                                std::ostream& report);

// Compares the checkpointed run's identity with this run's: a different world size is an error;
// a different trajectory option is an error naming the key, the old and the new value, unless
// `overrides` allows it (KEY, or PREFIX.* for every key under PREFIX.). Returns the allowed
// differences as "KEY: 'old' -> 'new'" lines.
std::vector<std::string> check_resume_identity(const Manifest& m, const RankGroup& group,
                                               const RunIdentity& now,
                                               const std::vector<std::string>& overrides);

// Loads this rank's file of `m` into `parts` (after Strategy::setup) and returns the loop
// position, each value checked (step_in_epoch in [0, steps_per_epoch), epoch >= 0, global step
// = epoch * steps_per_epoch + step_in_epoch, ...); errors name the file and the key.
LoopState load_rank_state(const Manifest& m, int rank, const TrainingParts& parts,
                          int64_t steps_per_epoch);

// load_rank_state's loading and checks for a state `s` read from a file of `m` or formed from
// all of them (train/state/reshard.h: the consensus of another world size's files); errors
// name s.origin() and the key.
LoopState load_checkpoint_state(const Manifest& m, const StateDict& s, const TrainingParts& parts,
                                int64_t steps_per_epoch);

// `--resume PATH` whole: the checkpoint (find_resume_checkpoint, skipped ones reported to
// `report`), its identity checked against `run` (check_resume_identity; run.init_from then
// comes from the checkpoint) and this rank's state loaded into `parts`. A refusal or one rank's
// unreadable file stops every rank together (RankGroup::agree). Rank 0 tells `summary` what
// resume.override allowed and where the run continues.
// With `reshard` (option resume.reshard), a checkpoint of another world size is loaded through
// train/state/reshard.h instead of being refused; run.world_sizes then gains this run's span.
LoopState resume_run(const std::string& path, const std::vector<std::string>& overrides,
                     const RankGroup& group, RunIdentity& run, const TrainingParts& parts,
                     int64_t steps_per_epoch, std::ostream& summary, std::ostream& report,
                     bool reshard = false);

// Model weights only (evaluation, prediction, --init-from), strict: `path` is a model
// .safetensors file (PyTorch names, e.g. OUT/final.safetensors), a checkpoint directory, or a
// run directory (its newest committed checkpoint whose rank 0 file checks out); a checkpoint
// gives rank 0's model. Errors name the file.
void load_model_weights(const std::string& path, Module& model);

// A model's weights as stored, before loading: `path` as for load_model_weights.
struct ModelWeights {
  std::string file;                         // the .safetensors file read
  std::vector<NamedTensor> tensors;         // PyTorch names
  std::map<std::string, std::string> meta;  // the file's metadata (dplab.model, ...)
  std::string model;  // the model name recorded (dplab.model, or the run's "model"), or ""
};
ModelWeights read_model_weights(const std::string& path);

// Writes `model`'s state_dict with PyTorch names (loads into PyTorch with strict=True) to
// `path` atomically (tmp file, fsync, rename, fsync of the directory); metadata names the
// model, epoch and global step, and the class names when given (dplab.classes, a JSON array).
void export_model(const std::filesystem::path& path, const Module& model,
                  const std::string& model_name, const LoopState& loop,
                  const std::vector<std::string>& class_names = {});

// "a,b.*" -> {"a", "b.*"} (empty items dropped).
std::vector<std::string> split_override_list(const std::string& list);

}  // namespace dplab
