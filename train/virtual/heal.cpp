#include "dplab/train/virtual/heal.h"

#include <algorithm>

#include "dplab/comm/cluster/virtual_time.h"
#include "dplab/comm/strategy.h"
#include "dplab/core/error.h"
#include "dplab/core/state_dict.h"
#include "dplab/layers/module.h"
#include "dplab/optim/optimizer.h"
#include "dplab/train/loop/step_agreement.h"
#include "dplab/train/virtual/virtual_run.h"

namespace dplab {

HealFacts heal_returning(Strategy& strategy, Module& model, Optimizer& optimizer, VirtualRun& run,
                         StepAgreement& agreement, const std::vector<int>& returning,
                         const std::vector<int>& previous_down, int world_size) {
  HealFacts f;
  f.ranks = returning;
  for (int r = 0; r < world_size && f.peer < 0; ++r)
    if (std::find(previous_down.begin(), previous_down.end(), r) == previous_down.end()) f.peer = r;
  DPLAB_CHECK(f.peer >= 0, "healing ranks {}: no rank was live at the previous step",
              returning.size());
  // The state, in the same order on every rank: parameters, buffers, optimizer state.
  std::vector<Tensor> state{optimizer.arena().params()};
  for (const NamedTensor& b : model.named_buffers()) state.push_back(b.tensor);
  std::vector<NamedTensor> optim = optimizer.state();
  for (const NamedTensor& t : optim) state.push_back(t.tensor);
  // The algorithm's own tensors (DiLoCo's theta and outer momentum, SlowMo's x_{t,0} and slow
  // momentum, Streaming DiLoCo's and the averaged fragment in flight): its save_state hands out
  // the tensors themselves, so the returning rank receives straight into its state. Its
  // counters are the same on every rank (one schedule) and are not sent. Nor is a gradient
  // being accumulated (Crossover's between micro-steps): it is the step's work, not state; the
  // returning rank's own, from the steps it was down, weighs 0.
  StateDict algo;
  strategy.save_state(algo);
  const void* grads = optimizer.arena().grads().raw_data();
  for (const NamedTensor& t : algo.tensors())
    if (t.tensor.raw_data() != grads) state.push_back(t.tensor);
  for (const Tensor& t : state) f.bytes += double(t.nbytes());
  cluster::VirtualClock& clock = run.shared_virtual_time()->clock;
  const double before = agreement.max_over_ranks(clock.now());
  strategy.heal(f.peer, returning, state);
  // A returning rank received into the optimizer's tensors: load them (they may be copies).
  if (std::find(returning.begin(), returning.end(), strategy.rank()) != returning.end())
    optimizer.load_state(optim);
  f.virtual_s = agreement.max_over_ranks(clock.now()) - before;
  return f;
}

}  // namespace dplab
