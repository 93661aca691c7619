// Strategy: a distributed training algorithm as the training loop sees it. The loop calls it at
// fixed points of every iteration; everything an algorithm does (gradient averaging, local
// steps, parameter averaging, gossip, stale updates) happens inside these calls. One strategy
// per file under comm/algorithms/.
//
//   strategy.setup(ctx)                              once, after model/arena/optimizer exist
//   per epoch:  strategy.begin_epoch(epoch)
//     per iteration:
//       plan = strategy.plan(step)                   zero grads? take an optimizer step?
//       if plan.zero_grad: optimizer.zero_grad()
//       strategy.before_forward(step)                e.g. DC-S3GD starts its allreduce here
//       forward, loss, backward                      grad-ready hooks fire (GradSync buckets)
//       strategy.after_backward(step)                e.g. finish gradient allreduce
//       if plan.optimizer_step: optimizer.step()
//       strategy.after_step(step)                    e.g. parameter averaging, gossip, merges
//     strategy.end_epoch(epoch, mean_train_loss)
//   strategy.finish_training()  once, after the last iteration (before that epoch's drain)
//   strategy.drain()  before evaluation, checkpoints and the end: nothing left in flight, and
//                     the evaluated model defined (see evaluated_model()).
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "dplab/core/options.h"
#include "dplab/core/param_arena.h"
#include "dplab/core/state_dict.h"
#include "dplab/core/time_source.h"
#include "dplab/optim/optimizer.h"

namespace dplab {

class Module;
namespace trace {
class Tracer;
}

struct StepInfo {
  int64_t epoch = 0;
  int64_t step_in_epoch = 0;  // 0-based
  int64_t global_step = 0;    // 0-based, counted from the start of training
  int64_t steps_per_epoch = 0;
  int64_t total_epochs = 0;
  bool last_in_epoch() const { return step_in_epoch + 1 == steps_per_epoch; }
};

// The run as the training loop plans it, for the notes at its start (Strategy::plan_notes).
struct RunPlan {
  int64_t epochs = 0;           // option epochs
  int64_t steps_per_epoch = 0;  // global steps (iterations) per epoch
  int64_t steps = 0;            // global steps of the whole run: epochs x steps_per_epoch, or
                                // fewer when max_steps stops it earlier
};

struct StepPlan {
  bool zero_grad = true;       // zero the gradient arena before backward
  bool optimizer_step = true;  // run optimizer.step() after after_backward()
  // The strategy applies the update itself (DC-S3GD): counts as an optimizer step (--max-steps).
  bool strategy_update = false;
  // false: this rank skips the iteration's work (its batch is dropped: no forward, backward or
  // optimizer step; before_forward/after_backward are not called, after_step is). Lets ranks
  // that do different amounts of work per round (Oscars) still walk the same loop ticks.
  bool compute = true;
};

// Statistics every algorithm reports (per step and accumulated per epoch).
// Counted by the communication meter (comm/meter.h), never by hand.
struct CommStats {
  double bytes_sent = 0;      // payload: bytes this rank handed to the communicator (wire type)
  double wire_bytes = 0;      // bytes this rank put on its links (comm/wire_bytes.h)
  int64_t collectives = 0;    // collective calls (allreduce, broadcast, ...)
  int64_t allreduces = 0;     // of which allreduces
  int64_t messages = 0;       // point-to-point sends
  double in_flight_s = 0;     // time communication was in flight
  double exposed_wait_s = 0;  // time compute stood still waiting for communication
  void add(const CommStats& o) {
    bytes_sent += o.bytes_sent;
    wire_bytes += o.wire_bytes;
    collectives += o.collectives;
    allreduces += o.allreduces;
    messages += o.messages;
    in_flight_s += o.in_flight_s;
    exposed_wait_s += o.exposed_wait_s;
  }
};

// What an algorithm needs to act on the model.
struct TrainContext {
  Module* model = nullptr;
  ParamArena* arena = nullptr;
  Optimizer* optimizer = nullptr;
  const Options* options = nullptr;
  // The model's buffers (BatchNorm running statistics, counters), filled by the training loop
  // from model->named_buffers(): algorithms broadcast and average them without reaching up
  // into layers/.
  std::vector<NamedTensor> buffers;
  // The run's timeline (core/trace/tracer.h; nullptr: not tracing). Algorithms record their
  // communication (category comm) and the compute thread's waits for it (category wait) at the
  // points where they count CommStats::in_flight_s and exposed_wait_s, and hand it to their
  // GradSync.
  trace::Tracer* tracer = nullptr;
  // The run's time base (core/time_source.h): the wall clock, or the rank's virtual clock under
  // a virtual cluster. Every duration an algorithm measures or acts on (CommStats' in flight
  // and exposed wait, Oscars' step times, DASO's and DC-S3GD's statistics) reads time->now(),
  // never steady_clock, so that under a cluster the algorithm sees modelled time. Never null.
  std::shared_ptr<TimeSource> time = std::make_shared<WallTime>();
};

class Strategy {
 public:
  virtual ~Strategy() = default;
  virtual std::string name() const = 0;
  virtual void setup(TrainContext& ctx) { ctx_ = ctx; }
  virtual void begin_epoch(int64_t epoch) {}
  virtual StepPlan plan(const StepInfo& step) { return {}; }
  virtual void before_forward(const StepInfo& step) {}
  virtual void after_backward(const StepInfo& step) {}
  virtual void after_step(const StepInfo& step) {}
  virtual void end_epoch(int64_t epoch, double mean_train_loss) {}
  virtual void drain() {}
  // End of training (last epoch done, or max_steps reached): called once by the loop before the
  // last drain() and evaluation. Algorithms whose ranks diverge build the final model here
  // (e.g. the hybrid algorithm's one-time parameter average); drain() alone cannot tell the end
  // of training from a per-epoch evaluation or checkpoint.
  virtual void finish_training() {}
  // Statistics accumulated since the last call, then reset.
  virtual CommStats take_stats() { return {}; }
  // Algorithm state for metrics (e.g. {"B": 4, "S": 1} for DASO).
  virtual std::map<std::string, double> state() const { return {}; }
  // The learning rate the last step applied, for the metrics' `lr`: the optimizer's
  // (`optimizer_lr`) unless the algorithm applies a schedule of its own (DC-S3GD).
  virtual double applied_lr(double optimizer_lr) const { return optimizer_lr; }
  // Whether the algorithm can go on with the live ranks when ranks of a virtual cluster fail
  // (fail events, docs/virtual_cluster.md "Failures"). false: the job stops at the failure,
  // naming the ranks, as an MPI job does when a rank dies. true (allreduce.ft = quorum,
  // local_sgd, diloco, streaming_diloco, slowmo, sgp, flat crossover): the training
  // loop goes on with the live ranks (train/virtual/liveness.h), tells the algorithm which are down
  // (set_down_ranks) and heals a returning rank from a live peer through heal().
  virtual bool continues_after_failure() const { return false; }
  // The world ranks down from the step about to begin on (ascending; empty: every rank live).
  virtual void set_down_ranks(const std::vector<int>& down) {}
  // The weight the training loop gives this rank's loss while ranks are down: 1 without
  // failures. An algorithm that averages gradients each step (allreduce) weighs a live rank's
  // W / L (W ranks, L live) and a down rank's 0, so the average over W is the live ranks' mean.
  virtual float loss_weight() const { return 1.f; }
  // Healing (continues_after_failure): rank `peer` sends `state` (this rank's tensors, in the
  // same order and shapes on every rank) to each rank of `returning`, which receive into theirs,
  // over the algorithm's world communicator: timed (virtual time, the modelled links) and traced
  // like any other message ("heal"). Called on every rank at the same step; ranks other than the
  // peer and the returning ones do nothing. (DistributedStrategy may send from another live
  // rank: DistributedStrategy::heal_source.)
  virtual void heal(int peer, const std::vector<int>& returning, const std::vector<Tensor>& state) {
  }
  // Rank and world size this strategy runs in (1 process: 0 and 1).
  virtual int rank() const { return 0; }
  virtual int world_size() const { return 1; }
  // A second evaluated model, for algorithms whose ranks hold different models (gossip): put
  // the consensus (the average over ranks) in place of this rank's model, call `evaluate`,
  // restore this rank's model, and return true. Collective over the ranks. The default has no
  // such model: returns false without calling `evaluate`.
  virtual bool consensus_eval(const std::function<void()>& evaluate) { return false; }
  // The run's model: the model a user would take away from the run at this point (the records'
  // test_loss / test_acc, docs/metrics_schema.md, "Evaluated models"): the global model where
  // the algorithm keeps one apart from the ranks' (DiLoCo's and Streaming DiLoCo's θ), the
  // ranks' average where their models differ. When this rank's parameters are not it: put it in
  // place, call `use`, restore this rank's own parameters and return true. Collective over the
  // ranks. false, without calling `use`: every rank's parameters are the run's model. The
  // default is consensus_eval's average.
  virtual bool with_run_model(const std::function<void()>& use) { return consensus_eval(use); }
  // Lines for the run header on the algorithm's phases in `plan` (e.g. from which step gradient
  // compression compresses). A line starting "warning: " says that a phase never starts within
  // the planned steps (a silent no-op otherwise) and names the option that sets it. Rank 0
  // prints the notes with the header and the warnings to stderr.
  virtual std::vector<std::string> plan_notes(const RunPlan& plan) const { return {}; }
  // What the algorithm plans from the option `epochs`, the run's total (e.g. DASO's cool-down),
  // each naming its option; empty when nothing. A resume that changes `epochs` is refused while
  // anything is planned from it, unless --resume-override epochs (train/state/checkpoint.h).
  virtual std::vector<std::string> planned_from_epochs() const { return {}; }

  // Checkpoints. Every piece of this rank's algorithm state that the model, the optimizer and
  // the loop position do not already hold (DASO's B and S, DC-S3GD's W-bar and V, push-sum
  // weights, counters, accumulated gradients, ...), under the strategy's own names. The loop
  // calls save_state between steps on every rank, and writes each rank's state with that
  // rank's own model and optimizer; load_state is called after setup() (which broadcasts rank
  // 0's model: each rank's own model is loaded after it) with what this rank saved, and must
  // leave the strategy exactly as it was when saved, so the resumed run is bitwise identical to
  // the run that saved. save_state is valid with or without drain() before it: every strategy
  // saves (or waits for, without applying) what is in flight. drain() itself is part of the
  // trajectory for some algorithms (DASO merges pending syncs early, DC-S3GD folds its last
  // update into W-bar, BatchNorm statistics are averaged), so a checkpoint in the middle of an
  // epoch that must not change the run saves without drain(). Posts no communication (DASO
  // waits for the syncs it already posted, so every rank saves at the same step).
  virtual void save_state(StateDict& out) const {}
  virtual void load_state(const StateDict& in) {}

 protected:
  TrainContext ctx_;
};

// The single-process strategy: every iteration zero, forward, backward, step.
class LocalStrategy : public Strategy {
 public:
  std::string name() const override { return "local"; }
};

}  // namespace dplab
