// DistributedStrategy: what every distributed algorithm shares, so that an algorithm file holds
// its paper's arithmetic and its communication calls and nothing else (issue #32):
//   - the Topology (world, node, cross communicators), handed in by whoever builds the strategy;
//   - rank() and world_size();
//   - the communication meter (comm/meter.h), set up from the run's context, through which all
//     communication goes, and take_stats() reading it;
//   - the start-up broadcast of rank 0's model (setup) and the averaging of the model's
//     buffers (BatchNorm statistics) over the world;
//   - checkpoint naming: save_state writes the algorithm's name and calls save_algorithm_state;
//     load_state checks the name and calls load_algorithm_state.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "dplab/comm/meter.h"
#include "dplab/comm/strategy.h"
#include "dplab/comm/topology.h"

namespace dplab {

class DistributedStrategy : public Strategy {
 public:
  explicit DistributedStrategy(std::shared_ptr<Topology> topo);
  // Strategy::setup, the meter on ctx's time base, trace and device, and rank 0's model and
  // buffers broadcast to every rank (unless broadcast_at_setup() is false).
  void setup(TrainContext& ctx) override;
  CommStats take_stats() override { return meter_.take_stats(); }
  int rank() const override { return topo_->world().rank(); }
  int world_size() const override { return topo_->world().size(); }
  void save_state(StateDict& out) const final;
  void load_state(const StateDict& in) final;

  Topology& topology() const { return *topo_; }
  // Each returning rank r receives from heal_source(r, peer) (`peer` unless an algorithm says
  // otherwise); the sources send.
  void heal(int peer, const std::vector<int>& returning, const std::vector<Tensor>& state) override;
  void set_down_ranks(const std::vector<int>& down) override;
  // A down rank's loss weighs 0: it computes nothing that counts.
  float loss_weight() const override { return down_here_ ? 0.f : 1.f; }

 protected:
  Communicator& world() const { return topo_->world(); }
  // const: save_state may complete (never post) what is in flight (comm/strategy.h).
  CommMeter& meter() const { return meter_; }
  // false: setup() leaves the start-up broadcast to an embedded strategy that makes it itself
  // (SlowMo over SGP, comm/algorithms/slowmo.h).
  virtual bool broadcast_at_setup() const { return true; }
  // The algorithm's own state under its own keys (the name is written and checked here).
  virtual void save_algorithm_state(StateDict& out) const {}
  virtual void load_algorithm_state(const StateDict& in) {}
  // Averages the model's floating buffers over the world (a "buffer average" event).
  void average_buffers();
  // consensus_eval's work for the algorithms whose replicas differ: averages the parameters over
  // the world (the live ranks' mean while some are down; with `buffers`, the BatchNorm
  // statistics too), runs `evaluate` on that model, then restores this rank's own.
  void evaluate_average(const std::function<void()>& evaluate, bool buffers);
  // This rank's weight in an average over the world that must be the live ranks' mean while
  // ranks are down (fail events): 0 when this rank is down, W / L when live (W ranks, L live), so
  // (1/W) sum_r w_r x_r = (1/L) sum_live x_r; 1 without failures.
  float live_weight() const { return live_weight_; }
  // t *= live_weight(), before an average over the world that must be the live ranks' mean.
  void weigh_for_live_average(Tensor& t) const;
  bool down_here() const { return down_here_; }
  // The same for an average over this rank's node (the node communicator): 0 when this rank is
  // down, N / L_n when live (N ranks on the node, L_n of them live).
  float node_live_weight() const { return node_live_weight_; }
  // The same for an average over the nodes, one rank per node (the cross communicator), where a
  // node is live while any of its ranks is: 0 when this rank's node is wholly down, M / M_l
  // otherwise (M nodes, M_l of them live). With one rank per node, live_weight().
  float node_worker_live_weight() const { return node_worker_live_weight_; }
  // The world ranks down now (set_down_ranks; during heal(), those down at the previous step).
  const std::vector<int>& down_ranks() const { return down_; }
  // The world ranks live now, ascending (all of them without failures), and this rank's index
  // among them (-1 when down): a gossip goes on on its graph over these (SGP, Crossover).
  const std::vector<int>& live_ranks() const { return live_; }
  int live_index() const;
  // The rank a returning rank `r` is healed from: `peer` (the lowest rank live at the previous
  // step and now, train/virtual/heal.h), or the algorithm's choice (a live rank of r's node, for
  // node workers whose ranks hold their node's state: comm/algorithms/slowmo.h).
  virtual int heal_source(int r, int peer) const { return peer; }
  // The lowest rank of r's node live at the previous step (down_ranks()), or -1.
  int live_node_peer(int r) const;

  std::shared_ptr<Topology> topo_;

 private:
  mutable CommMeter meter_;
  float live_weight_ = 1.f, node_live_weight_ = 1.f, node_worker_live_weight_ = 1.f;
  bool down_here_ = false;
  std::vector<int> down_, live_;
};

// Broadcasts the parameter arena and the model buffers from `root` over `comm` (one "broadcast"
// event on `meter`), so all ranks start identical.
void broadcast_model(CommMeter& meter, Communicator& comm, ParamArena& arena,
                     const std::vector<NamedTensor>& buffers, int root = 0);
// Averages BatchNorm-style running statistics (floating buffers whose name does not end in
// "num_batches_tracked") over `comm` (one "buffer average" event); integer counters are left
// alone. Nothing on one rank.
void average_buffers(CommMeter& meter, Communicator& comm, const std::vector<NamedTensor>& buffers);

}  // namespace dplab
