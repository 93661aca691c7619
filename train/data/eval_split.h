// Evaluation split across ranks: which test samples a rank evaluates, how the ranks agree on
// the model they evaluate, and how their sums are combined. Used by evaluate()
// (train/data/evaluate.h); collective over the communicator given.
//
// The evaluated model is rank 0's. For most algorithms every rank holds the same model after
// drain() (allreduce, DC-S3GD's W-bar, local SGD after its average, a consensus); for others
// (gossip, Oscars, hybrid stage 3, DASO between syncs) ranks differ and the recorded test
// accuracy has always been rank 0's. So before a split evaluation every rank hashes its
// parameters and buffers; where any rank differs from rank 0, every rank puts rank 0's model in
// place of its own for the evaluation and restores its own, bitwise, afterwards (training is
// unaffected). Identical models cost a pass over their bytes and a 16-byte allgather.
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "dplab/comm/communicator.h"
#include "dplab/core/options.h"
#include "dplab/layers/module.h"

namespace dplab {

// The communicator of a split evaluation: a duplicate of the MPI world (its messages never mix
// with an algorithm's), with the run's wait options (comm.wait, comm.timeout_s) and without link
// emulation (evaluation is not part of the communication a run studies). Collective over every
// process of the MPI world; MPI is initialised if needed.
std::shared_ptr<Communicator> eval_world(const Options& opt);

// Processes the MPI launcher started (PMI_SIZE of MPICH's hydra and Slurm, Open MPI's
// OMPI_COMM_WORLD_SIZE), read without touching MPI; 1 without a launcher.
int launched_ranks();

// The samples rank `rank` of `world` evaluates: the contiguous block [begin, end) of 0..n-1.
// Blocks are disjoint and cover 0..n-1 exactly once; sizes differ by at most one (no padding
// with repeated samples, unlike a training sampler's equal per-rank counts). Contiguous blocks
// keep reads sequential for files and tar shards.
struct EvalShard {
  int64_t begin = 0, end = 0;
  int64_t size() const { return end - begin; }
};
EvalShard eval_shard(int64_t n, int rank, int world);

// One rank's evaluation sums.
struct EvalSums {
  double loss_sum = 0;  // sum over samples of the cross-entropy
  int64_t correct = 0;  // top-1
  int64_t correct5 = 0;
  int64_t count = 0;
};
// Every rank's sums added in rank order (so every rank gets the same double), through an
// allgather of the exact bits: the double loss sum is not rounded to the f32 that the
// communicator's allreduce carries.
EvalSums sum_over_ranks(Communicator& comm, const EvalSums& mine);

// This rank's parameters and buffers, saved while rank 0's model stands in for them.
class SavedModel {
 public:
  // Restores the saved tensors (bitwise).
  void restore();

 private:
  friend std::optional<SavedModel> adopt_root_model(Module& model, Communicator& comm);
  std::vector<Tensor> targets_, saved_;
};

// Collective: makes every rank's model rank 0's (parameters and buffers). Returns what this
// rank must restore afterwards, or nothing when every rank already held rank 0's model (checked
// by a 64-bit hash of the bytes, allgathered).
std::optional<SavedModel> adopt_root_model(Module& model, Communicator& comm);

}  // namespace dplab
