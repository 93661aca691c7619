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
  if (live_.empty()) set_down_ranks({});
}

void DistributedStrategy::heal(int peer, const std::vector<int>& returning,
                               const std::vector<Tensor>& state) {
  constexpr int kHealTag = 0x4845;  // "HE" + the tensor's index; distinct from others' tags
  const int me = rank();
  Pending all;
  auto join = [&](Pending one) {
    if (all.empty())
      all = std::move(one);
    else
      all.join(std::move(one));
  };
  for (int r : returning) {
    const int from = heal_source(r, peer);
    if (from != me && r != me) continue;
    for (size_t i = 0; i < state.size(); ++i) {
      const int tag = kHealTag + static_cast<int>(i);
      join(from == me ? meter_.isend(world(), "heal", state[i], r, tag)
                      : meter_.irecv(world(), "heal", state[i], from, tag));
    }
  }
  if (!all.empty()) meter_.complete_blocking(all);
}

int DistributedStrategy::live_index() const {
  const auto it = std::find(live_.begin(), live_.end(), rank());
  return it == live_.end() ? -1 : static_cast<int>(it - live_.begin());
}

int DistributedStrategy::live_node_peer(int r) const {
  const int N = topo_->ranks_per_node(), first = (r / N) * N;
  for (int q = first; q < first + N; ++q)
    if (std::find(down_.begin(), down_.end(), q) == down_.end()) return q;
  return -1;
}

void DistributedStrategy::set_down_ranks(const std::vector<int>& down) {
  const int W = world_size(), L = W - static_cast<int>(down.size());
  DPLAB_CHECK(L >= 1, "{}: every rank is down", name());
  down_ = down;
  live_.clear();
  for (int r = 0; r < W; ++r)
    if (std::find(down.begin(), down.end(), r) == down.end()) live_.push_back(r);
  down_here_ = std::find(down.begin(), down.end(), rank()) != down.end();
  live_weight_ = down_here_ ? 0.f : static_cast<float>(W) / static_cast<float>(L);
  // Nodes: consecutive blocks of N world ranks (comm/topology.h).
  const int N = topo_->ranks_per_node(), M = topo_->num_nodes(), node = rank() / N;
  std::vector<int> live_on(static_cast<size_t>(M), N);
  for (int r : down) --live_on[static_cast<size_t>(r / N)];
  const int live_nodes =
      static_cast<int>(std::count_if(live_on.begin(), live_on.end(), [](int n) { return n > 0; }));
  const int here = live_on[static_cast<size_t>(node)];
  node_live_weight_ = down_here_ ? 0.f : static_cast<float>(N) / static_cast<float>(here);
  node_worker_live_weight_ =
      here == 0 ? 0.f : static_cast<float>(M) / static_cast<float>(live_nodes);
}

void DistributedStrategy::evaluate_average(const std::function<void()>& evaluate, bool buffers) {
  DPLAB_CHECK(ctx_.arena != nullptr, "{}: consensus_eval before setup", name());
  NoGradGuard no_grad;
  Tensor params = ctx_.arena->params();  // a handle on the arena (copy_ is non-const)
  const Tensor own = params.clone();
  std::vector<Tensor> own_buffers;
  if (buffers)
    for (auto& b : ctx_.buffers) own_buffers.push_back(b.tensor.clone());
  weigh_for_live_average(params);  // the live ranks' average while some are down
  meter().allreduce(world(), "consensus average", params, ReduceOp::average);
  if (buffers) average_buffers();
  evaluate();
  params.copy_(own);
  for (size_t i = 0; i < own_buffers.size(); ++i) ctx_.buffers[i].tensor.copy_(own_buffers[i]);
}

void DistributedStrategy::weigh_for_live_average(Tensor& t) const {
  if (live_weight_ == 1.f) return;
  NoGradGuard no_grad;
  t.copy_(mul_scalar(t, live_weight_));
}

void DistributedStrategy::average_buffers() {
  // While ranks are down, the live ranks' mean, as the parameters' averages: a down rank's
  // statistics (stale, or from the batches its down steps ran forward on, which count nowhere)
  // weigh 0, and it takes the live ranks' mean like the others.
  if (live_weight_ != 1.f && world_size() > 1)
    for (auto& b : ctx_.buffers)
      if (is_floating(b.tensor.dtype()) && !b.name.ends_with("num_batches_tracked"))
        weigh_for_live_average(b.tensor);
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
