// AllReduce-SGD (ALGORITHMS.md §1): the synchronous baseline, equivalent to PyTorch DDP and
// Horovod. Every step the gradient is averaged over all ranks through GradSync: buckets in
// backward order, each bucket's allreduce started from the grad-ready hook of its last tensor
// and overlapped with the rest of backward; after_backward() waits for the rest. Ranks start
// from rank 0's parameters and stay bitwise identical (same averaged gradient, same update).
//
// Options: the keys, defaults and ranges are declared in allreduce_options.cpp (allreduce.ft)
// and, for GradSync's keys under "allreduce.", in comm/grad_sync_options.cpp.
//   bucket_cap_mb    0: one allreduce per tensor (the "classic" baseline)
//   wire             f16 is "Horovod with fp16 compression"; accumulation is f32
//   hierarchical     reduce-scatter in node, allreduce across nodes, allgather in node
//   ft               on a virtual cluster's fail events: none (the job stops) or quorum
//                    (torchft's fault-tolerant DDP: the step's gradient is the average over
//                    the live ranks; the training loop weights each rank's loss,
//                    train/virtual/liveness.h; docs/virtual_cluster.md "Failures")
// plus the communicator options (ranks_per_node, link.intra, link.inter, comm.wait,
// comm.timeout_s; see comm/communicator.h).
#pragma once
#include <memory>

#include "dplab/comm/distributed_strategy.h"
#include "dplab/comm/grad_sync.h"
#include "dplab/comm/reshard_policy.h"

namespace dplab {

class AllReduceStrategy : public DistributedStrategy {
 public:
  // On the ranks of `topo` (the driver builds it: comm/registry.h).
  AllReduceStrategy(std::shared_ptr<Topology> topo, const Options& opt);
  std::string name() const override { return "allreduce"; }
  bool continues_after_failure() const override { return quorum_; }
  // The quorum's average: the gradient average over the W ranks is the live ranks' mean.
  float loss_weight() const override { return live_weight(); }
  void setup(TrainContext& ctx) override;
  void after_backward(const StepInfo& step) override;
  void drain() override;
  CommStats take_stats() override;
  std::map<std::string, double> state() const override;
  // Gradient compression: from which step it compresses, and a warning when never.
  std::vector<std::string> plan_notes(const RunPlan& plan) const override;

  GradSync& grad_sync() { return *sync_; }

 protected:
  // Nothing survives a step but the model and the optimizer (the trainer's): GradSync's buckets
  // come from the arena and the options, and every rank holds the same parameters. Saves only
  // the gradient compression state, if any.
  void save_algorithm_state(StateDict& out) const override;
  void load_algorithm_state(const StateDict& in) override;

 private:
  GradSyncOptions sync_opt_;
  bool quorum_ = false;  // allreduce.ft = quorum
  std::unique_ptr<GradSync> sync_;
};

// How a checkpoint of allreduce continues on another number of ranks (--reshard;
// comm/reshard_policy.h, docs/resharding.md).
ReshardPolicy allreduce_reshard_policy(const CheckpointConfig& config);

}  // namespace dplab
