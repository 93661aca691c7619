// Gradient compression for GradSync (issue #22): the bucket's allreduce replaced by a compressed
// exchange, so every gradient-averaging algorithm can use it through its GradSync keys
// ("<prefix>compress = none | powersgd | topk"). docs/algorithms/compression.md has the
// definitions, the defaults and the choices where the papers leave room.
//
// PowerSGD (Vogels et al., 2019), per bucket, on the tensors of the bucket viewed as n x m
// matrices (n = the first dimension, m = the rest), at rank r = min(n, m, powersgd.rank):
//   M += e (error feedback);  orthogonalise Q;  P = M Q;  allreduce(P);  orthogonalise P;
//   Q = M^T P;  allreduce(Q);  A = P Q^T / world;  e = M - A;  the result is A (average) or
//   world * A (sum).
// Q is kept between steps (warm start) and drawn from the run seed (the same on every rank) at
// the first compressed step. 1-D tensors and matrices where (n + m) r * min_compression_rate >=
// n m travel uncompressed, together in one allreduce, with no error feedback (their average is
// exact). For the first powersgd.start_step synchronised steps every bucket is allreduced plainly.
//
// Top-k with error feedback (Stich et al. 2018, "Sparsified SGD with memory"; GRACE's
// TopKCompressor with residual memory; not DGC, which adds momentum correction), per bucket (with
// bucket_cap_mb = 0 a bucket is one tensor, i.e. per tensor): g' = g + r; S = the
// k = max(1, floor(ratio n)) indices of largest |g'| (ties: lower index), ascending; the payload
// (S as i32, g'[S] as f32) travels by allgather; the result is the sum of the ranks' sparse
// payloads (rank order) divided by world (average) or not (sum); r = g' with S zeroed.
//
// CPU arenas only (the arithmetic runs on the host); f32 wire. Flat mode: the exchange runs over
// the world. Hierarchical mode (GradSync): the node's gradients are summed exactly on its first
// rank, the first ranks of all nodes run the compressed exchange over their cross communicator
// (each node one worker, with its own residuals), and the result is broadcast inside the node.
// Every collective goes through the bucket's BucketContext (comm/bucket_reducer.h), so GradSync's
// meter counts it (comm/meter.h): payload = numel x the type's size for every participant (the
// compressed payloads; hierarchical, also the node-local reduce and broadcast, on every rank of
// the node), wire bytes by the collective's formula (comm/wire_bytes.h).
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "dplab/comm/bucket_reducer.h"
#include "dplab/comm/communicator.h"
#include "dplab/comm/grad_sync_options.h"
#include "dplab/core/options.h"
#include "dplab/core/state_dict.h"
#include "dplab/core/tensor.h"

namespace dplab {

// The keys' defaults, ranges and help: comm/grad_sync_options.cpp (declared with GradSync's).
struct CompressOptions {
  std::string kind = grad_sync_options().default_string("compress");  // none, powersgd, topk
  int64_t rank = grad_sync_options().default_int("powersgd.rank");
  int64_t start_step = grad_sync_options().default_int("powersgd.start_step");  // PyTorch's default
  double min_compression_rate = grad_sync_options().default_double("powersgd.min_compression_rate");
  bool warm_start = grad_sync_options().default_bool("powersgd.warm_start");
  double ratio = grad_sync_options().default_double("topk.ratio");
  uint64_t seed = 0;   // [seed] the run's seed: Q's initialisation
  std::string prefix;  // the option prefix the keys were read under
  bool enabled() const { return kind != "none"; }
  static CompressOptions from_options(const Options& opt, const std::string& prefix);
};

class GradCompressor {
 public:
  virtual ~GradCompressor() = default;
  // Replaces bucket `b`'s local gradient `g` (a CPU f32 slice of the arena) by the compressed
  // average (or sum) over `comm`, posting its collectives through `ctx` one after another (each
  // waited for: ctx.wait, which counts it and posts the next at its virtual end).
  virtual void reduce(int b, const Tensor& g, Communicator& comm, bool average,
                      BucketContext& ctx) = 0;
  // After every bucket of a synchronised step (GradSync::finish).
  virtual void end_step() {}
  // Whether the last synchronised step's gradients were compressed (false before any step):
  // PowerSGD's first powersgd.start_step steps are plain allreduces. The same on every rank
  // (hierarchical: also on the ranks that only take part inside their node). Reported in the
  // records as algo.compress_active (docs/metrics_schema.md).
  virtual bool compressing() const { return true; }
  // The state that must survive a checkpoint (residuals, Q, the step count), bitwise.
  virtual void save_state(StateDict& out) const = 0;
  virtual void load_state(const StateDict& in) = 0;
};

// The run header's lines on compression (none for kind "none") for a GradSync that synchronises
// at most `max_syncs` steps in the run: what compresses from which step, and a line starting
// "warning: " when PowerSGD's powersgd.start_step is not below `max_syncs` (every step would be a
// plain allreduce, silently), naming the option.
std::vector<std::string> compression_notes(const CompressOptions& opt, int64_t max_syncs);

// `buckets`: the tensors of each bucket of GradSync's plan. Null for kind "none".
std::unique_ptr<GradCompressor> make_grad_compressor(
    const CompressOptions& opt, const std::vector<std::vector<BucketTensor>>& buckets);

// The bucket reducer of compression (registered as "powersgd" and "topk", comm/bucket_reducer.h):
// the compressor of setup.options.compress over the world, or, hierarchical, the exact sum inside
// the node on its first rank, the compressed exchange among the nodes' first ranks (their cross
// communicator: one worker per node, with the node's residuals), the result broadcast inside the
// node. Whole buckets, not shards: PowerSGD needs the tensors' matrix shapes. CPU arenas, wire
// f32 (checked here).
class CompressedReducer : public BucketReducer {
 public:
  explicit CompressedReducer(const ReducerSetup& setup);
  std::string name() const override { return kind_; }
  void reduce(BucketView& bucket, BucketContext& ctx) override;
  void end_step() override { compressor_->end_step(); }
  void save_state(StateDict& out) const override { compressor_->save_state(out); }
  void load_state(const StateDict& in) override { compressor_->load_state(in); }
  GradCompressor* compressor() { return compressor_.get(); }

 private:
  std::string kind_;
  bool hierarchical_ = false;
  std::unique_ptr<GradCompressor> compressor_;
};

}  // namespace dplab
