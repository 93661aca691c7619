// StepAgreement: how the ranks of a run decide together, once per loop tick, whether to stop or
// drop the step, so no rank ever runs ahead of a decision the others took (a rank that stopped
// alone would leave the others waiting in their next collective until the timeout).
//
// Each tick every rank contributes two bits, "I saw a non-finite loss or gradient" and "I
// received a pre-emption signal", and every rank learns whether any rank set either. Cost per
// tick: one MPI_Allreduce (MAX) of two floats on a communicator of its own (a dup of the world:
// never mixed up with an algorithm's traffic, and without link emulation, since this is control
// traffic a real job would also send), i.e. one latency-bound message of 8 bytes, a few
// microseconds within a node. Only when some bit is set (the failure path, once) do the ranks
// also allgather a short text from each rank (what it found, which signal), so the message names
// every rank involved. MPI even under comm = nccl: the bits live on the host, and MPI is
// initialised in every multi-rank run. A run of one process (world size 1) has no communicator
// and no collective.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "dplab/core/options.h"

namespace dplab {

class Communicator;

struct Agreement {
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
  // world_size 1: decisions are local. Otherwise builds the communicator (collective: every
  // rank constructs it at the same point), with the wait options of `opt` (comm.timeout_s, ...).
  StepAgreement(const Options& opt, int world_size);
  ~StepAgreement();
  // Collective (when world size > 1). `report` is called only when some rank set a bit, and
  // only on this rank's behalf; it returns this rank's text (truncated to kReportBytes - 1).
  Agreement agree(bool nonfinite, bool preempt, const std::function<std::string()>& report);
  // Every rank waits until all have arrived (no-op for one process): no rank exits before the
  // checkpoint that rank 0 writes is complete.
  void barrier();
  int world_size() const { return world_size_; }

  static constexpr int64_t kReportBytes = 512;

 private:
  int world_size_;
  std::shared_ptr<Communicator> comm_;
};

}  // namespace dplab
