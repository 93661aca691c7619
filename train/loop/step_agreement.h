// StepAgreement: how the ranks of a run decide together to stop (a non-finite value, a
// pre-emption signal), so that every rank stops at the same tick and none is left waiting in a
// collective the others never reach.
//
// Each tick every rank posts two bits, "I saw a non-finite loss or gradient" and "I received a
// pre-emption signal", in a non-blocking MPI_Iallreduce (MAX) of two floats on a communicator of
// its own (a dup of the world: never mixed up with an algorithm's traffic, and without link
// emulation, since this is control traffic a real job would also send). The result of tick t is
// read at tick t + kLag on every rank, or earlier at a flush (epoch ends, checkpoints, the end of
// training), so every rank acts on it at the same point. Cost per tick: posting one 8-byte
// message and testing it later; it adds no synchronisation as long as the ranks drift apart by
// fewer than kLag ticks, which is why it is not read at once: a blocking vote every step would
// put the ranks in lock-step and take from the algorithms that let a straggler fall behind
// between their own synchronisations (local SGD, gossip, Oscars' uneven rounds) what they are
// studied for. Only when some bit is set (once, on the failure path) do the ranks also allgather
// the texts each rank kept for that tick (what it found, which signal), so the message names
// every rank involved. MPI even under comm = nccl: the bits live on the host, and MPI is
// initialised in every multi-rank run. A run of one process has no communicator, no collective
// and no lag.
#pragma once
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "dplab/core/options.h"
#include "dplab/core/tensor.h"

namespace dplab {

class Communicator;
class Request;

struct Agreement {
  int64_t tick = -1;       // the tick the bits were posted at
  bool nonfinite = false;  // some rank saw a non-finite value
  bool preempt = false;    // some rank received a pre-emption signal
  // Only when nonfinite or preempt: each rank's report (index = rank), "" for a rank that had
  // nothing to report.
  std::vector<std::string> reports;
  bool any() const { return nonfinite || preempt; }
  // "rank 1: loss; rank 3: gradient of 'fc.weight'": the ranks that reported something.
  std::string joined_reports() const;
  // Ranks whose report is not empty.
  std::vector<int> reporting_ranks() const;
};

class StepAgreement {
 public:
  // Ticks between posting a tick's bits and acting on them (see above).
  static constexpr int64_t kLag = 8;
  static constexpr int64_t kReportBytes = 512;

  // world_size 1: decisions are local and immediate. Otherwise builds the communicator
  // (collective: every rank constructs it at the same point), with the wait options of `opt`
  // (comm.timeout_s, ...).
  StepAgreement(const Options& opt, int world_size);
  ~StepAgreement();

  // Posts this rank's bits for `tick` (ticks increase by one per call on every rank); `report`
  // is this rank's text for that tick (used only if some rank set a bit). Then returns the
  // results that are due: the one posted kLag ticks ago (waiting for it if it is not complete:
  // every rank has then reached that tick) — only those with a bit set are returned. Collective.
  std::vector<Agreement> tick(int64_t tick, bool nonfinite, bool preempt,
                              const std::string& report);
  // Completes every posted tick and returns those with a bit set, in tick order. Collective.
  std::vector<Agreement> flush();
  // A blocking vote outside the tick sequence (the state check before a checkpoint); every
  // posted tick must have been flushed. `report` is called only when this rank set a bit.
  // Collective.
  Agreement agree(bool nonfinite, bool preempt, const std::function<std::string()>& report);
  // Every rank waits until all have arrived (no-op for one process).
  void barrier();
  // The largest of the ranks' `x` (>= 0), exact: a blocking max-allreduce of its bits (a
  // non-negative double's bits order as its value). Outside the tick sequence, in the same order
  // on every rank; `x` itself for one process. Collective. (The world's virtual clock at a step's
  // start, train/virtual/liveness.h.)
  double max_over_ranks(double x);
  int world_size() const { return world_size_; }
  int64_t pending() const { return int64_t(pending_.size()); }

 private:
  struct Pending;
  // Waits for the oldest pending tick and returns its result (with reports when a bit is set).
  Agreement complete_oldest();
  std::vector<std::string> gather_reports(const std::string& mine);

  int world_size_;
  std::shared_ptr<Communicator> comm_;
  std::deque<std::unique_ptr<Pending>> pending_;
};

}  // namespace dplab
