// Healing a rank back from a failure of a virtual cluster (issue #36 item 2;
// docs/virtual_cluster.md, "Failures"): under an algorithm that goes on with the live ranks
// (Strategy::continues_after_failure), a rank whose fail event ends takes, at the first step it
// is back, the state of a live peer (the lowest rank live at the previous step and now): the
// parameters, the model's buffers, the optimizer's state and the algorithm's tensors, one
// message per tensor over the algorithm's world communicator (Strategy::heal), so that the
// transfer is charged at the modelled links and traced ("heal" events) like any other message.
// Of the algorithms that go on after a failure, allreduce (allreduce.ft = quorum) keeps no state
// (compression is refused with it), local SGD only its round counters, DiLoCo and Streaming
// DiLoCo their global model and outer optimizer state (and an averaged fragment in flight), and
// SlowMo x_{t,0} and its slow momentum: those tensors are sent (what a replica that lost its
// memory needs), although a down rank applies the same outer or slow step and already holds
// them. Counters are the same on every rank and are not sent; SGP's returning rank keeps its
// push-sum weight (1: the gossip on the live ranks' graph keeps the weights at 1), Crossover
// keeps only counters and its gradient in accumulation (weighed 0 while down). The strategy may
// heal a returning rank from another live rank (DistributedStrategy::heal_source: SlowMo's node
// workers, from their node).
#pragma once
#include <vector>

namespace dplab {

class Module;
class Optimizer;
class StepAgreement;
class Strategy;
class VirtualRun;

struct HealFacts {
  int peer = -1;
  std::vector<int> ranks;  // the returning ranks healed
  double bytes = 0;        // sent to each of them
  double virtual_s = 0;    // the world's clock after the transfer minus before it
};

// `returning`: ranks down at the previous step and live now; `previous_down`: the ranks down at
// the previous step. Collective (every rank calls it at the same step).
HealFacts heal_returning(Strategy& strategy, Module& model, Optimizer& optimizer, VirtualRun& run,
                         StepAgreement& agreement, const std::vector<int>& returning,
                         const std::vector<int>& previous_down, int world_size);

}  // namespace dplab
