// Streaming DiLoCo (Douillard et al., "Streaming DiLoCo with overlapping communication: towards
// a distributed free lunch", 2025, arXiv:2501.18512): DiLoCo (comm/algorithms/diloco.h) with
// three changes, each as the paper and torchft's StreamingDiLoCo name them:
//
//  1. Fragments. The parameters are cut into P fragments, cut at tensor boundaries
//     (streaming_diloco.fragment_pattern):
//       contiguous  P contiguous ranges of the arena of about equal size (the default);
//       strided     the model's blocks (residual blocks, else top-level modules, as Crossover's
//                   "blocks" segments, comm/algorithms/crossover.h) dealt round-robin: fragment
//                   p holds blocks p, p + P, p + 2P, ... in arena order (the paper's strided
//                   pattern: each fragment spans the whole depth).
//     Each fragment p keeps DiLoCo's round of H inner steps, but the fragments are staggered:
//     fragment p sends after inner step s when
//       s ≡ o_p (mod H),   o_p = ((p + 1) · H) / P  (integer division; o_{P−1} = H),
//     so at most one fragment is exchanged at a time and the peak bandwidth is about 1/P of
//     DiLoCo's.
//  2. Overlap (torchft fragment_sync_delay, τ). At the send (step s) the fragment's outer
//     gradient δ_p = θ_g[p] − θ_i[p](s) is averaged by a non-blocking exchange, and training
//     goes on for τ more inner steps; after step s + τ the average Δ_p is waited for (τ = 0:
//     at once) and the outer optimizer (SGD, Nesterov, as DiLoCo) updates θ_g[p].
//  3. Mixing (torchft fragment_update_alpha, α). The fragment's local parameters become
//       θ_i[p] ← (1 − α) · θ_g[p] + α · θ_i[p](s + τ)
//     (α = 0: the global fragment, as DiLoCo; the paper's α = 0.5 keeps half of the τ steps'
//     local progress). Computed as θ_g + α (θ_i − θ_g), torch's lerp.
//  4. Low precision (torchft should_quantize). Either the outer gradient travels as `wire` (f32,
//     bf16 or f16) in an allreduce, summed in f32 by the communicator as GradSync's wire; or
//     (`quantize` = int8, int4, fp8_e4m3 or fp4_e2m1, comm/quantize.h, blocks of
//     `quantize_block` elements) by a quantised reduce-scatter / all-gather, as torchft's
//     allreduce_quantized (torchft/collectives.py): the fragment's n values are cut into W
//     shards of L = ⌈n/W⌉ (the last ones shorter, padded with zeros to L);
//       a. each rank quantises each shard of its δ_p and sends shard r to rank r (an all-to-all
//          of point-to-point messages: W − 1 sends of packed_bytes(L) per rank);
//       b. rank r decodes the W quantised copies of its shard, adds them in f32 in rank order,
//          divides by W and quantises that mean again;
//       c. the W quantised mean shards are allgathered (W − 1 blocks of packed_bytes(L) per
//          rank), and every rank decodes all of them: every rank gets the same bits.
//     Per rank the wire carries 2 (W − 1) packed_bytes(L) ≈ 2 (W − 1)/W · packed_bytes(n), as a
//     ring allreduce of the packed values would: O(n) at any world size (an allgather of whole
//     payloads carries (W − 1) · packed_bytes(n)). Step a is posted at the send; b and c run at
//     the first inner step after it (or at the apply when τ = 0), c completing at the apply: so
//     with τ ≥ 2 both halves overlap inner steps. No error feedback (the paper has none): the
//     quantisation errors of a round (twice: before and after the sum) are lost. θ_g and the
//     outer optimizer's state stay f32. One rank: no exchange, no quantisation (as `wire`).
//
// Each rank is a replica, as in diloco.h. Rounds (the periodic-sync skeleton,
// comm/algorithms/periodic_sync.h): the staggered sends and applies above run in the per-step
// hook, on the count of inner steps since the last full sync (the start of training unless
// epochs end rounds); a round ends only with a full sync (the sync step): the exchange in
// flight is applied, then every fragment takes one more outer step at once (blocking, α = 0),
// so the model is θ_g, the same on every rank, and the schedule starts again. By default
// (streaming_diloco.round_spans_epochs = true) the schedule runs across epochs and only the
// end of training (finish_training) makes a full sync, so the final model is θ_g; between
// epochs the ranks' local models differ, and the records' run's model (test_acc) is θ_g, as
// DiLoCo's, with rank 0's own mixed local model beside it (test_acc_rank0; issue #33 item 3).
// false: every epoch's end makes a full sync, so each epoch evaluates θ_g. Constraints: 1 ≤ P ≤ H
// and P ≤ the number of parameter tensors; 0 ≤ τ < ⌊H/P⌋ (an exchange completes before the next
// fragment sends).
//
// Options (the keys, their defaults and ranges are declared in streaming_diloco_options.cpp):
//   streaming_diloco.H                       inner steps between two syncs of a fragment
//   streaming_diloco.fragments               P
//   streaming_diloco.fragment_pattern        contiguous or strided (point 1)
//   streaming_diloco.fragment_sync_delay     τ (torchft's default is 0: no overlap)
//   streaming_diloco.fragment_update_alpha   α (the default is the paper's; torchft's is 0)
//   streaming_diloco.wire                    wire type of the outer gradients' allreduce
//   streaming_diloco.quantize                none, int8, int4, fp8_e4m3, fp4_e2m1
//                                            (replaces the allreduce, point 4)
//   streaming_diloco.quantize_block          elements per quantisation scale
//   streaming_diloco.outer_lr                as diloco
//   streaming_diloco.outer_momentum
//   streaming_diloco.outer_nesterov
//   streaming_diloco.round_spans_epochs      false: a full sync at every epoch's end
//
// Checkpoints: the fragment pattern, θ_g, the outer momentum, the inner step count ("inner_steps",
// since the last full sync), the full syncs so far ("rounds"), each fragment's outer step count,
// and an exchange in flight (its fragment, send step and averaged Δ: save_state waits for it
// without applying it, so the resumed run applies it at the same step).
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "dplab/comm/algorithms/algorithm_options.h"
#include "dplab/comm/algorithms/periodic_sync.h"
#include "dplab/comm/quantize.h"
#include "dplab/comm/reshard_policy.h"

namespace dplab {

// The staggered schedule of points 1-2 (a pure function of H, P, τ; tested on its own).
// The members start at the declared defaults (streaming_diloco_options.cpp).
struct StreamingSchedule {
  int64_t H = streaming_diloco_option_table().default_int("streaming_diloco.H");
  int64_t fragments = streaming_diloco_option_table().default_int("streaming_diloco.fragments");
  int64_t delay =  // τ
      streaming_diloco_option_table().default_int("streaming_diloco.fragment_sync_delay");
  // Throws naming the option when H, P or τ break the constraints above.
  void check() const;
  int64_t offset(int64_t p) const { return ((p + 1) * H) / fragments; }
  // The fragment that sends after inner step s (1-based count of steps done), or -1.
  int64_t sends_after(int64_t s) const;
  // The fragment whose exchange is applied after inner step s (sent after s − τ), or -1.
  int64_t applies_after(int64_t s) const { return s - delay >= 1 ? sends_after(s - delay) : -1; }
};

// A fragment: ranges [begin, end) of arena elements, in arena order.
using Fragment = std::vector<std::pair<int64_t, int64_t>>;
int64_t fragment_numel(const Fragment& f);

// The contiguous fragments of an arena: P ranges of elements, cut at segment boundaries, each
// closing at the first boundary at or after (p + 1) / P of all elements (and leaving at least one
// tensor to each later fragment). Throws when P exceeds the segment count.
std::vector<std::pair<int64_t, int64_t>> arena_fragments(const ParamArena& arena,
                                                         int64_t fragments);
// The fragments of `pattern` ("contiguous": arena_fragments, one range each; "strided": the
// model's blocks dealt round-robin, adjacent blocks of a fragment merged into one range). Throws
// naming streaming_diloco.fragments when P exceeds the tensors (contiguous) or blocks (strided).
std::vector<Fragment> plan_fragments(const ParamArena& arena, int64_t fragments,
                                     const std::string& pattern);

// The options' keys, defaults, ranges and help: streaming_diloco_options.cpp; the members start
// at the declared defaults.
struct StreamingDiLoCoOptions {
  StreamingSchedule schedule;
  double alpha =
      streaming_diloco_option_table().default_double("streaming_diloco.fragment_update_alpha");
  std::string fragment_pattern =  // contiguous or strided
      streaming_diloco_option_table().default_string("streaming_diloco.fragment_pattern");
  DType wire = parse_dtype(streaming_diloco_option_table().default_string("streaming_diloco.wire"));
  std::optional<QuantFormat> quantize;  // none: the allreduce
  int64_t quantize_block =
      streaming_diloco_option_table().default_int("streaming_diloco.quantize_block");
  double outer_lr = streaming_diloco_option_table().default_double("streaming_diloco.outer_lr");
  double outer_momentum =
      streaming_diloco_option_table().default_double("streaming_diloco.outer_momentum");
  bool outer_nesterov =
      streaming_diloco_option_table().default_bool("streaming_diloco.outer_nesterov");
  bool round_spans_epochs =
      streaming_diloco_option_table().default_bool("streaming_diloco.round_spans_epochs");
  static StreamingDiLoCoOptions from_options(const Options& opt);
};

class StreamingDiLoCoStrategy : public PeriodicSyncStrategy {
 public:
  StreamingDiLoCoStrategy(std::shared_ptr<Topology> topo, const Options& opt);
  std::string name() const override { return "streaming_diloco"; }
  // Goes on with the live replicas, as DiLoCo: each fragment's outer gradient is their mean (the
  // quantised exchange's too), and every rank (a down one too) applies the same outer step.
  bool continues_after_failure() const override { return true; }
  void setup(TrainContext& ctx) override;
  void drain() override;
  std::map<std::string, double> state() const override;
  // Not offered: the run's model is θ_g (global_model(), periodic_sync.h), not the average.
  bool consensus_eval(const std::function<void()>&) override { return false; }

  const StreamingDiLoCoOptions& options() const { return opt_; }
  const std::vector<Fragment>& fragments() const { return frags_; }
  const Tensor& theta_global() const { return theta_; }
  int64_t inner_steps() const { return steps_in_round(); }
  const std::vector<int64_t>& outer_steps() const { return outer_steps_; }

 protected:
  // The staggered schedule (points 1-2): the due fragment applied, the next one sent.
  void inner_step(const StepInfo& step, bool round_ends) override;
  // The full sync: the exchange in flight applied, then every fragment's blocking outer step.
  void sync(RoundEnd) override;
  const Tensor* global_model() const override { return &theta_; }  // the run's model: θ_g
  void save_sync_state(StateDict& out) const override;
  void load_sync_state(const StateDict& in, const RoundPosition& at) override;

 private:
  StreamingDiLoCoStrategy(std::shared_ptr<Topology> topo, const StreamingDiLoCoOptions& o);
  void send(int64_t p);                 // δ_p and its exchange (point 2)
  void apply(int64_t p, double alpha);  // wait, outer step on θ_g[p], mixing (points 2-3)
  void wait_exchange() const;  // completes the exchange in flight (Δ_p in delta_), applies nothing
  // Quantised exchange (point 4): a. posted by send; b-c: reduce_shards; the decoding of c.
  void post_shards(const Tensor& d) const;
  void reduce_shards() const;
  void decode_means() const;
  int64_t shard_len(int64_t n) const;  // L = ⌈n/W⌉
  // The fragment's ranges of an arena-sized tensor, and its part of delta_.
  std::vector<Tensor> pieces(const Tensor& t, int64_t p) const;
  Tensor delta(int64_t p) const { return delta_.flat_range(0, fragment_numel(frags_[size_t(p)])); }
  StreamingDiLoCoOptions opt_;
  std::vector<Fragment> frags_;
  Tensor theta_;                      // θ_g
  Tensor momentum_;                   // outer momentum buffer (undefined when μ = 0)
  Tensor delta_;                      // δ_p, then Δ_p, of the fragment in flight, packed in
                                      // its ranges' order (sized for the largest fragment)
  std::vector<int64_t> outer_steps_;  // per fragment
  int64_t pending_ = -1;              // fragment in flight, or -1
  int64_t pending_sent_at_ = 0;       // inner step count at its send
  mutable Pending exchange_;          // its allreduce, or the quantised exchange's current half
  // Quantised exchange: where it stands, and its buffers (W shards of packed_bytes(L) each):
  // this rank's quantised shards (by destination), every rank's copy of this rank's shard, this
  // rank's quantised mean shard, every rank's mean shard after the allgather.
  enum class Phase { none, shards, means };
  mutable Phase phase_ = Phase::none;
  std::optional<BlockQuantizer> quantizer_;
  mutable Tensor q_send_, q_recv_, q_mean_, q_all_;
};

std::unique_ptr<Strategy> make_streaming_diloco_strategy(std::shared_ptr<Topology> topo,
                                                         const Options& opt);

// How a checkpoint of streaming_diloco continues on another number of ranks (--reshard;
// comm/reshard_policy.h, docs/resharding.md).
ReshardPolicy streaming_diloco_reshard_policy(const CheckpointConfig& config);

}  // namespace dplab
