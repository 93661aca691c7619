#include "dplab/comm/distributed_strategy.h"

#include <algorithm>

#include "dplab/comm/algorithms/algo_state.h"
#include "dplab/core/autograd.h"
#include "dplab/core/error.h"
#include "dplab/core/ops/elementwise.h"

namespace dplab {

void broadcast_model(CommMeter& meter, Communicator& comm, ParamArena& arena,
                     const std::vector<NamedTensor>& buffers, int root) {
  Pending p = meter.ibroadcast(comm, "broadcast", arena.params(), root);
  for (auto& b : buffers) p.join(meter.ibroadcast(comm, "broadcast", b.tensor, root));
  meter.complete_blocking(p);
}

void average_buffers(CommMeter& meter, Communicator& comm,
                     const std::vector<NamedTensor>& buffers) {
  if (comm.size() == 1) return;
  Pending p;
  for (auto& b : buffers) {
    if (!is_floating(b.tensor.dtype()) || b.name.ends_with("num_batches_tracked")) continue;
    p.join(meter.iallreduce(comm, "buffer average", b.tensor, ReduceOp::average));
  }
  meter.complete_blocking(p);
}

DistributedStrategy::DistributedStrategy(std::shared_ptr<Topology> topo) : topo_(std::move(topo)) {
  DPLAB_CHECK(topo_ != nullptr, "distributed strategy: no topology");
}

void DistributedStrategy::setup(TrainContext& ctx) {
  Strategy::setup(ctx);
  DPLAB_CHECK(ctx.arena != nullptr, "{}: setup needs the parameter arena", name());
  meter_ = CommMeter(ctx, world().virtual_time() != nullptr);
  if (broadcast_at_setup()) broadcast_model(meter_, world(), *ctx.arena, ctx.buffers, 0);
}

void DistributedStrategy::heal(int peer, const std::vector<int>& returning,
                               const std::vector<Tensor>& state) {
  constexpr int kHealTag = 0x4845;  // "HE" + the tensor's index; distinct from others' tags
  const bool sender = rank() == peer;
  const bool receiver = std::find(returning.begin(), returning.end(), rank()) != returning.end();
  if (!sender && !receiver) return;
  Pending all;
  for (int r : sender ? returning : std::vector<int>{peer})
    for (size_t i = 0; i < state.size(); ++i) {
      const int tag = kHealTag + static_cast<int>(i);
      Pending one = sender ? meter_.isend(world(), "heal", state[i], r, tag)
                           : meter_.irecv(world(), "heal", state[i], peer, tag);
      if (all.empty())
        all = std::move(one);
      else
        all.join(std::move(one));
    }
  meter_.complete_blocking(all);
}

void DistributedStrategy::set_down_ranks(const std::vector<int>& down) {
  const int W = world_size(), L = W - static_cast<int>(down.size());
  DPLAB_CHECK(L >= 1, "{}: every rank is down", name());
  down_here_ = std::find(down.begin(), down.end(), rank()) != down.end();
  live_weight_ = down_here_ ? 0.f : static_cast<float>(W) / static_cast<float>(L);
}

void DistributedStrategy::weigh_for_live_average(Tensor& t) const {
  if (live_weight_ == 1.f) return;
  NoGradGuard no_grad;
  t.copy_(mul_scalar(t, live_weight_));
}

void DistributedStrategy::average_buffers() {
  dplab::average_buffers(meter_, world(), ctx_.buffers);
}

void DistributedStrategy::save_state(StateDict& out) const {
  save_algorithm_name(out, name());
  save_algorithm_state(out);
}

void DistributedStrategy::load_state(const StateDict& in) {
  check_algorithm_name(in, name());
  load_algorithm_state(in);
}

}  // namespace dplab
