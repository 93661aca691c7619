// ParamArena: every parameter of a model in one flat buffer, every gradient in another, each
// parameter tensor re-pointed to be a view of its slot. The layout is the order in which
// gradients become ready in backward (the reverse of registration/forward order), so a fusion
// bucket is a contiguous range and needs no copy. Optimizers, bucket allreduce, DASO parameter
// sends and Crossover segments all work on ranges of the arena.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "dplab/core/tensor.h"

namespace dplab {

struct ArenaSegment {
  std::string name;  // PyTorch-style parameter name, e.g. "layer1.0.conv1.weight"
  Shape shape;
  int64_t offset = 0;  // in elements, into params() and grads()
  int64_t numel = 0;
  bool weight_decay = true;    // optimizer applies weight decay to this tensor
  bool lars_excluded = false;  // LARS uses the plain lr here (BN and bias by default)
  bool is_norm = false;        // a normalisation layer's parameter (BatchNorm gamma/beta); set by
                               // the code that knows the module tree (mark_norm_parameters)
  Tensor param;                // the parameter (a view of the arena)
};

// Consecutive segments, adjacent in memory, that share the weight-decay flag: an element-wise
// optimizer (SGD, AdamW) updates each run in one call, so the whole arena in one kernel when
// every tensor is decayed (the default) or none. Padding between segments (alignment) ends a
// run: it is never updated.
struct DecayRun {
  int64_t offset = 0;
  int64_t numel = 0;
  bool weight_decay = true;
};

struct NamedTensor {
  std::string name;
  Tensor tensor;
};

class ParamArena {
 public:
  enum class Layout { ready_order, given_order };
  // Moves `params` (given in registration order) into the arena. Default flags: weight decay
  // on every tensor (PyTorch's default), LARS excludes 1-d tensors (biases and BatchNorm).
  explicit ParamArena(const std::vector<NamedTensor>& params, Layout layout = Layout::ready_order,
                      int64_t align_elems = 16);
  ParamArena(const ParamArena&) = delete;
  ParamArena& operator=(const ParamArena&) = delete;

  const Tensor& params() const { return params_; }  // flat f32 [numel()]
  const Tensor& grads() const { return grads_; }    // flat f32 [numel()]
  int64_t numel() const { return numel_; }
  const std::vector<ArenaSegment>& segments() const { return segments_; }
  std::vector<ArenaSegment>& segments() { return segments_; }
  const ArenaSegment& segment(const std::string& name) const;
  // Index of the segment that holds parameter tensor `t` (by identity); -1 if none.
  int segment_index_of(const Tensor& t) const;
  Device device() const { return params_.device(); }

  void zero_grad();
  // The segments as runs of DecayRun (above), in arena order.
  std::vector<DecayRun> decay_runs() const;
  // Sets the weight-decay flag of every segment from a predicate on (name, shape).
  void set_weight_decay(const std::function<bool(const ArenaSegment&)>& decay);
  void set_lars_excluded(const std::function<bool(const ArenaSegment&)>& excluded);
  // Flags the segments whose names are in `names` as normalisation parameters; throws for a
  // name the arena does not hold.
  void mark_norm_parameters(const std::vector<std::string>& names);

 private:
  Tensor params_, grads_;
  int64_t numel_ = 0;
  std::vector<ArenaSegment> segments_;
};

}  // namespace dplab
