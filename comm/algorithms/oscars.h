// Oscars (Huang, arXiv 2102.08550; ALGORITHMS.md §6): adaptive semi-synchronous local SGD for
// heterogeneous workers. Each rank i runs tau_i local SGD steps per round, then all ranks
// replace their parameters by the uniform average (Eq. 4, blocking allreduce, 1/N). tau_i =
// floor(T*/t_i), T* from the load-balance search of comm/algorithms/oscars_search.h over the
// measured iteration times t_i (the "global view": an allgather of every rank's t_i).
//
// Procedure (papers/notes/oscars.md §1.4):
//   1. setup: broadcast rank 0's parameters.
//   2. profile: the first profile_discard + profile_measure iterations; every rank computes
//      and the parameters are averaged after every step (tau = 1, so the ranks do not drift
//      while they are measured). t_i = median of the last profile_measure iteration times
//      (plan() to after_step(): zero-grad, forward, backward, step and the injected slowdown;
//      the averaging wait is excluded), on the run's time base (TrainContext::time): with a
//      virtual cluster the modelled compute, so T* and tau do not depend on host load.
//   3. allgather t_i and its spread s_i (the 10th-to-90th-percentile range of the same
//      samples, integer microseconds); every rank runs the same deterministic search -> T*,
//      tau (identical on all ranks, no broadcast needed). The search's resolution is
//      max(max_i s_i, resolution_rel * min_i t_i): times and waits that agree within the
//      noise of the measurement count as equal, so identical ranks get tau = 1 instead of a
//      round length set by timing noise (oscars_search.h).
//   4. rounds: a round is R = max_i tau_i loop ticks. Rank i computes on the first tau_i ticks
//      and skips the rest (StepPlan::compute = false: its batch is dropped and it goes
//      straight to the barrier), then at the round's last tick every rank averages.
//   5. adaptive (reprofile_rounds > 0): every reprofile_rounds rounds, t_i := median of the
//      rank's last profile_measure computed iteration times, allgather, search again.
//
// Why ticks (the deadlock question): the training loop gives every rank the same number of
// batches per epoch. If ranks counted their own steps (a round = tau_i steps) a rank with a
// larger tau would do fewer averages per epoch and the blocking allreduces would mismatch. In
// ticks every rank sees the same round boundaries, so the number of allreduces is a function of
// the tick count only and equal everywhere. Rounds are cut at the last tick of each epoch (an
// average that every rank reaches) and a fresh round starts with the next epoch, so evaluation
// always sees the averaged model. Consequence: per epoch the fastest rank processes its whole
// shard and a rank with tau_i < R processes about tau_i/R of its shard (a different random part
// each epoch, the sampler reshuffles); an "epoch" is the fastest rank's pass.
//
// Options ("oscars." prefix; the keys, their defaults and ranges are declared in
// oscars_options.cpp):
//   M                  the step-gap bound of Eq. 3 (tau_fast - tau_slow < M)
//   tau_max            largest tau; 0: no cap, Eq. 3 as written (a cap departs from it)
//   search             exact | alg1 ("Algorithm 1 literal": T = i*t_max) | text (T += step)
//   text_step_us       the T increment of the "text" reading
//   profile_discard    profiling iterations discarded (warm-up)
//   profile_measure    profiling iterations measured (median)
//   reprofile_rounds   re-measure and re-search every N rounds (0: never)
//   t_us               fixed iteration times "t0,t1,..." in us instead of profiling (tests)
//   resolution_us      waits (and times) within this many us count as equal;
//                      measured: the largest 10th-to-90th-percentile range of any rank's
//                      profiled times, at least resolution_rel of the fastest time (0 with
//                      t_us, which are exact)
//   resolution_rel     the least measured resolution, a fraction of the fastest time
// plus the communicator options (ranks_per_node, link.*, comm.*).
//
// state(): T_us, tau (this rank), tau_min, tau_max, t_us (this rank's measured time),
// t_spread_us (the 10th-to-90th-percentile range of this rank's measured times), resolution_us (the
// search's), max_wait_us (Eq. 2 at T*), wait_pred_us (this rank's predicted idle per round:
// max_j tau_j t_j - tau_i t_i), wait_meas_us (mean measured wait of the round averages since
// the last search) and wait_meas_last_us, rounds, searches, feasible; per rank i, tau_r<i>
// and wait_pred_us_r<i> (rank i's predicted idle per round, from the plan every rank shares).
#pragma once
#include <memory>

#include "dplab/comm/algorithms/oscars_search.h"
#include "dplab/comm/distributed_strategy.h"
#include "dplab/comm/reshard_policy.h"

namespace dplab {

class OscarsStrategy : public DistributedStrategy {
 public:
  OscarsStrategy(std::shared_ptr<Topology> topo, const Options& opt);
  std::string name() const override { return "oscars"; }
  void setup(TrainContext& ctx) override;
  StepPlan plan(const StepInfo& step) override;
  void after_step(const StepInfo& step) override;
  void finish_training() override;
  void drain() override;
  std::map<std::string, double> state() const override;

  bool profiling() const { return profiling_; }
  const OscarsSchedule& schedule() const { return sched_; }
  int64_t rounds() const { return rounds_; }
  int64_t averages() const { return averages_; }

 protected:
  // Checkpoints. Saved: the profiling position and the measured iteration times (a resume
  // during profiling, or with re-profiling, goes on with the same samples), the search result
  // (T*, every rank's tau, predicted wait, feasibility) and this rank's t_i, the position in the
  // round, and the round/average/search counters. Not saved: whether this tick computes and its
  // start time (set by every plan()), this rank's model and momentum (the trainer's). The
  // search (oscars_search.h) is a pure function: its result is the state.
  void save_algorithm_state(StateDict& out) const override;
  void load_algorithm_state(const StateDict& in) override;

 private:
  void average();
  void reschedule();  // allgather the medians, search, set tau
  int64_t my_median_us() const;
  int64_t my_spread_us() const;  // 10th-90th percentile range of the samples of the median
  int64_t predicted_wait_us(size_t i) const;  // max_j tau_j t_j - tau_i t_i (plan_t_us_)
  bool timed() const;                         // whether computing ticks are timed now
  void wait_for_device() const;  // host waits for the arena's compute stream (no-op on CPU)

  OscarsSearchOptions search_opt_;
  int64_t discard_, measure_, reprofile_rounds_;
  std::vector<int64_t> fixed_t_us_;  // option oscars.t_us
  int64_t resolution_opt_ = -1;      // option oscars.resolution_us; -1: measured
  double resolution_rel_ = 0;        // option oscars.resolution_rel (measured times only)

  bool profiling_ = true;
  int64_t profile_ticks_ = 0;
  std::vector<int64_t> samples_us_;  // iteration times (measured ones, most recent last)
  OscarsSchedule sched_;
  int64_t R_ = 1;          // ticks per round = max tau
  int64_t round_pos_ = 0;  // ticks done in the current round
  int64_t rounds_ = 0;     // completed rounds (excluding profiling)
  int64_t averages_ = 0;
  int64_t searches_ = 0;
  int64_t t_us_ = 0;         // this rank's iteration time used in the last search
  int64_t t_spread_us_ = 0;  // and the 10th-90th percentile range of its samples
  // Predicted against measured idle per round (metrics). Predicted: this rank's idle at the
  // round's barrier, max_j tau_j t_j - tau_i t_i, from the times of the last search (saved);
  // measured: the exposed wait of the round's average (barrier idle plus the transfer), summed
  // since the last search (not saved: it restarts after a resume).
  int64_t wait_pred_us_ = -1;       // -1: unknown (before a search)
  std::vector<int64_t> plan_t_us_;  // every rank's t_i in the last search (empty: unknown)
  double wait_meas_sum_s_ = 0, wait_meas_last_s_ = 0;
  int64_t wait_meas_rounds_ = 0;
  bool computing_ = false;  // this tick computes
  double t_plan_ = 0;       // plan() of a computing tick, on the run's time base (ctx_.time)
};

std::unique_ptr<Strategy> make_oscars_strategy(std::shared_ptr<Topology> topo, const Options& opt);

// How a checkpoint of oscars continues on another number of ranks (--reshard;
// comm/reshard_policy.h, docs/resharding.md).
ReshardPolicy oscars_reshard_policy(const CheckpointConfig& config);

}  // namespace dplab
