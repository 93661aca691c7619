// Resuming a checkpoint at another world size: `dplab train --resume DIR --reshard` (issue #37).
//
// A checkpoint holds one file per rank. At another number of ranks nothing maps file R to rank
// R, so the new ranks start from the replicas' consensus and each algorithm says how its own
// state follows (reshard_policy; docs/resharding.md has the table and each argument):
//   - model and optimizer: rank 0's where every replica is the same (allreduce), otherwise the
//     average over the old ranks (f32, summed in double in rank order; SGP's weighted by the
//     push-sum weights); algorithm state entry by entry: global state rank 0's (checked equal
//     on every rank), per-rank state averaged, state derived from the world re-derived for the
//     new one (train/state/reshard_average.h);
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

#include "dplab/train/state/checkpoint.h"
#include "dplab/train/state/reshard_average.h"

namespace dplab {

// The policy of `algo` for a run with these trajectory options (the manifest's config:
// allreduce with gradient compression averages its residuals): the algorithm's own, stated in
// its file (comm/reshard_policy.h, comm/registry.h builtin_reshard_policy).
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
// (rank `rank` of the new world, after Strategy::setup): every old file combined by the
// algorithm's policy (reshard_average.h); returns the loop position with the epoch's partial
// sums of every old rank on rank 0 (zero elsewhere). Errors name the file and the key.
LoopState load_resharded_state(const Manifest& m, int rank, const TrainingParts& parts,
                               int64_t steps_per_epoch);

}  // namespace dplab
