#include "dplab/comm/algorithms/sgp.h"

#include <algorithm>
#include <cmath>

#include "dplab/comm/algorithms/algo_state.h"
#include "dplab/comm/algorithms/algorithm_options.h"
#include "dplab/core/backend.h"
#include "dplab/core/error.h"

namespace dplab {

namespace {
constexpr int kTag = 0x5350;  // "SP"
}  // namespace

std::vector<int> exponential_hops(int n) {
  std::vector<int> hops;
  for (int h = 1; n >= 2 && h <= n - 1; h *= 2) hops.push_back(h);
  return hops;
}

std::vector<int> sgp_phone_book(int n) {
  // For each hop 2^i: forward (+2^i), then backward (-2^i), as forward offsets mod n. Kept even
  // when both name the same rank (n = 2^(i+1)): the reference's duplicate check compares a rank
  // with Edge objects and never matches, so its phone book holds the peer twice.
  std::vector<int> book;
  for (int h : exponential_hops(n)) {
    book.push_back(h % n);
    book.push_back((n - h % n) % n);
  }
  return book;
}

SgpPeers sgp_peers(int n, int rank, int64_t round) {
  const std::vector<int> book = sgp_phone_book(n);
  DPLAB_CHECK(!book.empty(), "sgp: no peers on {} rank(s)", n);
  const int off = book[size_t(round % int64_t(book.size()))];
  return {(rank + off) % n, ((rank - off) % n + n) % n, off};
}

SgpStrategy::SgpStrategy(std::shared_ptr<Topology> topo, const Options& opt)
    : DistributedStrategy(std::move(topo)),
      book_(sgp_phone_book(world_size())),
      interval_(sgp_option_table().get_int(opt, "sgp.interval")) {}

void SgpStrategy::setup(TrainContext& ctx) {
  DistributedStrategy::setup(ctx);  // every rank starts from rank 0's z (and w = 1)
  const int64_t n = ctx.arena->numel();
  send_ = Tensor::zeros({n + 1}, DType::f32, ctx.arena->device());
  recv_ = Tensor::zeros({n + 1}, DType::f32, ctx.arena->device());
}

void SgpStrategy::set_push_sum_weight(float w) {
  DPLAB_CHECK(weights_.empty(),
              "sgp: set_push_sum_weight after the first gossip (every rank tracks all weights "
              "from then on)");
  w_ = w;
}

void SgpStrategy::after_backward(const StepInfo&) {
  // With w != 1 the step must be applied to x, not z: remember z^k.
  have_before_ = w_ != 1.0f;
  if (have_before_) {
    if (!before_.defined()) before_ = ctx_.arena->params().clone();
    before_.copy_(ctx_.arena->params());
  }
}

void SgpStrategy::after_step(const StepInfo& step) {
  // Gossip closes every interval_-th step; the round (the phone-book entry) counts gossips.
  const int64_t done = step.global_step + 1;
  if (done % interval_ == 0) {
    gossip(done / interval_ - 1);
    return;
  }
  // A local step. The optimizer moved z by the update U, but the step belongs to x = w·z:
  // z = (w·z^k - U) / w = z^k + (z - z^k) / w. Nothing to do while w = 1.
  if (!have_before_) return;
  const ElementwiseKernels& ew = backend_for(before_.device()).ew;
  Tensor z = ctx_.arena->params();
  ew.binary(BinaryOp::sub, z, before_, z);
  ew.unary(UnaryOp::mul_scalar, 1.0f / w_, z, z);
  ew.binary(BinaryOp::add, z, before_, z);
  have_before_ = false;
}

void SgpStrategy::gossip(int64_t round) {
  DPLAB_CHECK(ctx_.arena != nullptr, "sgp: gossip before setup");
  if (world_size() < 2) return;
  const int64_t numel = ctx_.arena->numel();
  if (weights_.empty()) {
    // Every rank's push-sum weight, gathered once (4 bytes per rank, host bookkeeping);
    // from here on each rank updates all of them by the mixing rule (see below).
    Tensor mine = Tensor::full({1}, w_, DType::f32, send_.device());
    Tensor all = Tensor::empty({world_size()}, DType::f32, send_.device());
    Pending gather = meter().iallgather(world(), "push-sum weights", mine, all);
    meter().complete_blocking(gather, Use::host);
    weights_ = all.to_vector();
    DPLAB_CHECK(weights_[size_t(rank())] == w_,
                "sgp: rank {} gathered weight {} for itself, not {}", rank(),
                weights_[size_t(rank())], w_);
  }
  // The exponential graph of the live ranks (all of them without failures; a down rank
  // gossips nowhere: docs/virtual_cluster.md, "Failures"): n of them, this rank the me-th.
  const std::vector<int>& live = live_ranks();
  const int n = int(live.size()), me = live_index();
  if (n < 2) return;
  const SgpPeers peers = sgp_peers(n, std::max(me, 0), round);
  const int hop = peers.offset;
  // The host's copy of w (which the next step's branch and scalars need) comes from the
  // weights of all ranks that every rank (a down one too) tracks with the same float
  // operations, not from reading the message back: that read would synchronise the host with
  // the device every step. It equals w_new_t below bit for bit: (w + w_src)·0.5 in f32 either
  // way.
  std::vector<float> next(weights_);
  for (int i = 0; i < n; ++i) {
    const int r = live[size_t(i)], from = live[size_t(((i - hop) % n + n) % n)];
    next[size_t(r)] = (weights_[size_t(r)] + weights_[size_t(from)]) * 0.5f;
  }
  weights_ = std::move(next);
  if (me < 0) return;
  const int dst = live[size_t(peers.dst)], src = live[size_t(peers.src)];
  const ElementwiseKernels& ew = backend_for(send_.device()).ew;
  Tensor z = ctx_.arena->params();
  Tensor xs = send_.flat_range(0, numel);
  Tensor xs_w = send_.flat_range(numel, numel + 1);
  form_numerator();
  // Push (x^{k+1/2}, w) to dst, receive (x_j, w_j) from src: one point-to-point exchange,
  // blocking (NCCL: the mixing kernels wait on the device).
  Pending exchange = meter().irecv(world(), "gossip exchange", recv_, src, kTag);
  exchange.join(meter().isend(world(), "gossip exchange", send_, dst, kTag));
  meter().complete_blocking(exchange);
  // Uniform mixing 1/2 on x and w, then de-bias by the received weight, all on the arena's
  // device: w_new = (w + w_recv)·0.5 from the message itself.
  const Tensor xr = recv_.flat_range(0, numel);
  const Tensor w_recv = recv_.flat_range(numel, numel + 1);
  Tensor w_new_t = Tensor::empty({1}, DType::f32, z.device());
  ew.binary(BinaryOp::add, xs_w, w_recv, w_new_t);
  ew.unary(UnaryOp::mul_scalar, 0.5f, w_new_t, w_new_t);
  ew.binary(BinaryOp::add, xs, xr, z);
  ew.unary(UnaryOp::mul_scalar, 0.5f, z, z);
  ew.binary(BinaryOp::div, z, w_new_t, z);
  w_ = weights_[size_t(rank())];
  last_hop_ = hop;
  ++rounds_;
}

void SgpStrategy::form_numerator() {
  // Backend kernels on the arena's device, in the order of the scalar formulas (float + and *
  // commute bitwise, and the CPU kernels do not fuse multiply-adds).
  const ElementwiseKernels& ew = backend_for(send_.device()).ew;
  const int64_t numel = ctx_.arena->numel();
  Tensor z = ctx_.arena->params();
  Tensor xs = send_.flat_range(0, numel);
  // x^{k+1/2}: w·z after the step when w = 1 (exact), else w·z^k + (z^{k+1/2} - z^k).
  if (have_before_) {
    ew.binary(BinaryOp::sub, z, before_, xs);  // z - zb
    ew.axpy(w_, before_, xs);                  // + w·zb
  } else {
    ew.unary(UnaryOp::mul_scalar, w_, z, xs);
  }
  have_before_ = false;
  Tensor xs_w = send_.flat_range(numel, numel + 1);
  ew.fill(xs_w, w_);
}

void SgpStrategy::push_sum_average() {
  DPLAB_CHECK(ctx_.arena != nullptr, "sgp: push_sum_average before setup");
  const int64_t numel = ctx_.arena->numel();
  form_numerator();
  if (down_here()) send_.fill_(0.0);  // over the live ranks (docs/virtual_cluster.md, "Failures")
  // (Σ_i x_i, Σ_i w_i), one blocking allreduce.
  meter().allreduce(world(), "push-sum average", send_, ReduceOp::sum);
  // z = Σ x / Σ w on the arena's device (Σ w = n up to rounding: the mixing preserves it).
  const ElementwiseKernels& ew = backend_for(send_.device()).ew;
  Tensor z = ctx_.arena->params();
  ew.binary(BinaryOp::div, send_.flat_range(0, numel), send_.flat_range(numel, numel + 1), z);
  // Every rank resets every weight it tracks, so the bookkeeping stays the same everywhere.
  w_ = 1.0f;
  if (!weights_.empty()) weights_.assign(weights_.size(), 1.0f);
}

bool SgpStrategy::consensus_eval(const std::function<void()>& evaluate) {
  DPLAB_CHECK(ctx_.arena != nullptr, "sgp: consensus_eval before setup");
  if (world_size() < 2) return false;
  Tensor params = ctx_.arena->params();  // a handle on the arena (copy_ is non-const)
  Tensor saved = params.clone();
  std::vector<Tensor> saved_buffers;
  for (auto& b : ctx_.buffers) saved_buffers.push_back(b.tensor.clone());
  // Σ x / Σ w with x = w·z, over the live ranks (a down rank's x and w count 0); Σ w stays on
  // the device and divides there.
  const float w = down_here() ? 0.f : w_;
  const ElementwiseKernels& ew = backend_for(params.device()).ew;
  ew.unary(UnaryOp::mul_scalar, w, params, params);
  meter().allreduce(world(), "consensus average", params, ReduceOp::sum);
  Tensor wsum = Tensor::full({1}, w, DType::f32, params.device());
  meter().allreduce(world(), "consensus average", wsum, ReduceOp::sum);
  ew.binary(BinaryOp::div, params, wsum, params);
  average_buffers();
  evaluate();
  params.copy_(saved);
  for (size_t i = 0; i < ctx_.buffers.size(); ++i) ctx_.buffers[i].tensor.copy_(saved_buffers[i]);
  return true;
}

void SgpStrategy::save_algorithm_state(StateDict& out) const {
  out.put_int("ranks", world_size());
  out.put_double("push_sum_weight", w_);  // a float: exact as a double
  out.put_doubles("weights", std::vector<double>(weights_.begin(), weights_.end()));
  out.put_int("rounds", rounds_);
  out.put_int("last_hop", last_hop_);
}

void SgpStrategy::load_algorithm_state(const StateDict& in) {
  const int n = world_size(), me = rank();
  state_int(in, "sgp", "ranks", n, n);
  const std::string where = in.origin().empty() ? std::string("state") : in.origin();
  const double w = in.get_double("push_sum_weight");
  auto valid_weight = [](double v) { return std::isfinite(v) && v > 0 && double(float(v)) == v; };
  DPLAB_CHECK(valid_weight(w),
              "{}: sgp state 'push_sum_weight' = {}: expected a positive finite float", where, w);
  const std::vector<double> all = in.get_doubles("weights");
  DPLAB_CHECK(all.empty() || int(all.size()) == n,
              "{}: sgp state 'weights' has {} values for {} ranks", where, all.size(), n);
  for (size_t i = 0; i < all.size(); ++i)
    DPLAB_CHECK(valid_weight(all[i]),
                "{}: sgp state 'weights' element {} = {}: expected a positive finite float", where,
                i, all[i]);
  DPLAB_CHECK(all.empty() || all[size_t(me)] == w,
              "{}: sgp state 'weights' holds {} for rank {}, but 'push_sum_weight' is {} (a "
              "state file of another rank?)",
              where, all.empty() ? 0.0 : all[size_t(me)], me, w);
  const int64_t rounds = state_int(in, "sgp", "rounds", 0, INT64_MAX);
  const int64_t hop = state_int(in, "sgp", "last_hop", 0, n);
  w_ = float(w);
  weights_.assign(all.begin(), all.end());
  have_before_ = false;
  rounds_ = rounds;
  last_hop_ = int(hop);
}

std::map<std::string, double> SgpStrategy::state() const {
  return {{"push_sum_weight", static_cast<double>(w_)},
          {"hops", static_cast<double>(book_.size())},
          {"interval", static_cast<double>(interval_)},
          {"last_hop", static_cast<double>(last_hop_)},
          {"rounds", static_cast<double>(rounds_)}};
}

std::unique_ptr<Strategy> make_sgp_strategy(std::shared_ptr<Topology> topo, const Options& opt) {
  return std::make_unique<SgpStrategy>(std::move(topo), opt);
}

ReshardPolicy sgp_reshard_policy(const CheckpointConfig&) {
  ReshardPolicy p = averaging_policy(
      "the push-sum consensus sum_i w_i z_i / sum_i w_i on every rank with weight 1 (the "
      "weights sum to the new world size), the gossip's hops those of the new world; the "
      "optimizer's state averaged");
  p.rules.algo = {
      {"ranks", Combine::fresh}, {"weights", Combine::fresh}, {"last_hop", Combine::fresh}};
  p.rules.set = {{"push_sum_weight", "1"}};
  p.rules.model_weight = "push_sum_weight";
  return p;
}

}  // namespace dplab
