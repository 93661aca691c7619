// Resuming a checkpoint at another world size: `dplab train --resume DIR --reshard` (issue #37).
//
// A checkpoint holds one file per rank. At another number of ranks nothing maps file R to rank
// R, so the new ranks start from the replicas' consensus and each algorithm says whether its
// own state can follow (reshard_policy; docs/resharding.md has the table):
//   - model, optimizer, loss scaler, lr schedule and algorithm state: rank 0's file, where
//     every replica is the same (allreduce after every step; diloco and local_sgd at a round's
//     end, which they then require), with the optimizer's state averaged over every old rank
//     where it is each rank's own (diloco's inner optimizer, local_sgd's momentum);
//   - the loop position: the epoch and the global sample counter (Manifest::samples_in_epoch).
//     The sampler (data/sampler.h) gives every global batch's samples to the ranks in strides,
//     so after k batches of an epoch exactly the first k x world x batch samples of the epoch's
//     permutation are consumed, whatever the world. The new world continues at the batch that
//     starts at that counter, which needs the same global batch (world x batch per rank): then
//     the epoch's remaining samples are each seen once and the step count is unchanged;
//   - the epoch's partial sums (loss, correct, samples seen) of every old rank go to the new
//     rank 0, so the epoch's world loss (the sum over ranks) is the same;
//   - the world sizes so far (Manifest::world_sizes) gain a span from the checkpoint's step.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "dplab/tools/train/checkpoint.h"

namespace dplab {

// What --reshard does with an algorithm's checkpoint.
struct ReshardPolicy {
  bool reshards = false;
  std::string consensus;  // how model and optimizer are formed (when it reshards)
  std::string refusal;    // what cannot be resharded and why (when it refuses)
  // Periodic averaging (diloco, local_sgd): only at a round's end, where this algorithm state
  // value (steps into the round) is 0 and every replica is the same; "" for no such condition.
  std::string round_key;
  // The optimizer's state is each rank's own (inner optimizer): the new ranks take its average
  // over the checkpoint's ranks (f32 tensors; any other tensor must be the same on every rank).
  bool average_optimizer = false;
};

// The policy of `algo` for a run with these trajectory options (the manifest's config:
// allreduce with gradient compression refuses, its residuals being per rank).
ReshardPolicy reshard_policy(const std::string& algo,
                             const std::map<std::string, std::string>& config);

// The batch of the epoch at which `world` ranks of `batch` samples each continue after
// `samples_in_epoch` samples of the epoch (the global sample counter); a global batch that
// does not divide the counter is refused (the error says which batch would).
int64_t resharded_step_in_epoch(int64_t samples_in_epoch, int world, int64_t batch);

// The global sample counter of `m` (recorded, or step_in_epoch x world x batch for checkpoints
// written before it was), checked against the manifest's batch option.
int64_t checkpoint_samples_in_epoch(const Manifest& m);

// Checks that `m` can continue on `world` ranks of `batch` samples each, and returns the
// overrides check_resume_identity needs for it (`overrides` plus "batch" where the per-rank
// batch changes with the global batch kept). Throws the refusal: the algorithm's policy, or a
// changed global batch.
std::vector<std::string> plan_reshard(const Manifest& m, int world, int64_t batch,
                                      const std::vector<std::string>& overrides);

// Loads the consensus state of `m` (written by m.world_size ranks) into this rank's `parts`
// (rank `rank` of `world`): rank 0's file, and where the policy says so the optimizer state
// averaged over every file; returns the loop position with the epoch's partial sums of every
// old rank on rank 0 (zero elsewhere). Errors name the file and the key.
LoopState load_resharded_state(const Manifest& m, int rank, const TrainingParts& parts,
                               int64_t steps_per_epoch);

}  // namespace dplab
