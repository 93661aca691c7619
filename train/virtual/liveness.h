// Which ranks of a virtual cluster are down for a training step (issue #36 item 2;
// docs/virtual_cluster.md, "Failures"), decided alike on every rank. Every MPI process keeps
// running; liveness is modelled: the fail events (comm/cluster/events.h) name ranks or nodes and
// a window of virtual time or a range of steps, and a rank is down for a step that begins inside
// it. "Begins" is read on the world's clock, the latest of the ranks' virtual clocks at the
// step's start, which every rank learns from a blocking max-allreduce of the clocks' bits on the
// step agreement's control communicator (no virtual time charged; train/loop/step_agreement.h).
// So every rank computes the same set of down ranks from the same step on, whatever the host's
// load. The allreduce runs only when the run has fail events: it holds the ranks in lock-step
// in real time, which does not change any virtual time.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace dplab {

class StepAgreement;
class VirtualRun;

struct StepLiveness {
  int64_t step = 0;
  double world_time_s = 0;  // the step's start on the world's clock (virtual seconds)
  std::vector<int> down;    // world ranks down for the step, ascending
};

// Whether the run's cluster has fail events (false without a cluster).
bool models_failures(const VirtualRun* run);
// The ranks down for global step `step` (about to begin). Collective over the ranks.
StepLiveness agree_liveness(VirtualRun& run, StepAgreement& agreement, int64_t step);
// "rank 1 failed at 0.25 s of virtual time (ev.toml:1: [[event]])": the down ranks, one clause
// per event ("ranks 4, 5, 6, 7 failed ..." for a node), with the event's time (a window's start,
// or the step range's first step) and where it is defined.
std::string describe_failures(const VirtualRun& run, const StepLiveness& live);

}  // namespace dplab
