// BucketReducer: how GradSync reduces one bucket of gradients (issue #32, item 6), the shape of
// PyTorch's DDP communication hooks (register_comm_hook: a hook gets a GradBucket and returns
// when its tensor holds the reduced gradient). GradSync (comm/grad_sync.h) cuts the arena into
// buckets, fires them in order from its communication thread, times them and traces them; the
// reducer decides which collectives run on a bucket's gradients. The built-in reducers:
//
//   flat          one allreduce over the world (comm/flat_reducer.cpp)
//   hierarchical  reduce-scatter in the node, allreduce of the shard across nodes, allgather in
//                 the node (comm/hierarchical_reducer.cpp)
//   powersgd      the compressed exchanges of comm/grad_compress.h, flat or, hierarchical, among
//   topk          the nodes' first ranks (comm/compressed_reducer.cpp)
//
// The 16-bit wire ([<prefix>wire] bf16 or f16, PyTorch's bf16/fp16_compress_hook) is the wire
// type of the flat and hierarchical reducers' collectives (BucketContext::wire()): the
// communicator converts into and out of it and accumulates in f32 (comm/communicator.h).
// GradSyncOptions picks one of them; an experiment registers its own under a name
// (register_bucket_reducer) and selects it with [<prefix>reducer], or hands one to
// GradSync::set_reducer().
//
// Counting: a reducer posts every collective through its BucketContext, which posts it through
// GradSync's CommMeter (comm/meter.h), so calls, payload bytes (numel x wire type size, every
// participant) and wire bytes (Communicator::wire_bytes) are counted by the meter's rules and
// never by hand. The context also posts each operation at the bucket's virtual time (the ready
// time, then the previous operation's end: cluster::PostAt), measures the bucket's time in
// flight on a device (NCCL) from its first post to its last (posted_last()), and records the
// stages of the bucket's trace event (wait(p, stage)).
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dplab/comm/communicator.h"
#include "dplab/comm/meter.h"
#include "dplab/core/device.h"
#include "dplab/core/state_dict.h"
#include "dplab/core/tensor.h"
#include "dplab/core/trace/tracer.h"

namespace dplab {

namespace cluster {
class PostAt;
}
class DeviceIntervals;
struct GradSyncOptions;  // comm/grad_sync.h

// A contiguous range of the gradient arena reduced together.
struct GradBucket {
  int64_t begin = 0, end = 0;               // element range of the arena
  int first_segment = 0, last_segment = 0;  // inclusive, arena order
  int64_t numel() const { return end - begin; }
};

// One tensor of a bucket: its range in the bucket and its shape.
struct BucketTensor {
  int64_t offset = 0, numel = 0;
  Shape shape;
};

// One bucket as a reducer sees it (PyTorch's GradBucket).
struct BucketView {
  int index = 0;                             // in the plan, 0-based
  const GradBucket& range;                   // its range of the arena
  Tensor grad;                               // its gradients, a flat slice of the arena
  const std::vector<BucketTensor>& tensors;  // its tensors, offsets in `grad`
};

// What GradSync hands a reducer for one bucket: the communicators, the options, and the posts,
// which go through the meter (see the top of this file). Built by GradSync only.
class BucketContext {
 public:
  ~BucketContext();
  BucketContext(const BucketContext&) = delete;
  BucketContext& operator=(const BucketContext&) = delete;

  int bucket() const { return bucket_; }
  Communicator& world() const { return *world_; }
  // The node-local and cross-node communicators (GradSync given a Topology's); null otherwise.
  Communicator* node() const { return node_; }
  Communicator* cross() const { return cross_; }
  // Leave the average over the world's ranks (true) or the sum.
  bool average() const { return average_; }
  // [<prefix>wire]: the wire type of the bucket's gradient collectives.
  DType wire() const { return wire_; }

  // Non-blocking posts, as CommMeter's (comm/meter.h), at the bucket's virtual post time. The
  // first post of the bucket opens its time in flight on a device.
  Pending iallreduce(Communicator& c, const Tensor& t, ReduceOp op = ReduceOp::sum,
                     std::optional<DType> wire = {});
  Pending ireduce(Communicator& c, const Tensor& t, int root, ReduceOp op = ReduceOp::sum,
                  std::optional<DType> wire = {});
  Pending ibroadcast(Communicator& c, const Tensor& t, int root, std::optional<DType> wire = {});
  Pending iallgather(Communicator& c, const Tensor& send, const Tensor& recv,
                     std::optional<DType> wire = {});
  Pending ireduce_scatter(Communicator& c, const Tensor& send, const Tensor& recv,
                          ReduceOp op = ReduceOp::sum, std::optional<DType> wire = {});

  // Waits on the host until p's operations have ended (the result is in their tensors); counts
  // them (the meter's rules); the bucket's next post is at their virtual end. `stage` non-empty:
  // a comm_stage trace event "bucket K <stage>" inside the bucket's, from the last post to now.
  void wait(Pending& p, std::string_view stage = {});
  // Completes p as the bucket's last operation: posted_last(), then an operation that completes
  // on a device (NCCL) is left for GradSync::finish() to order before compute without a host
  // wait; any other is waited for (wait(p)).
  void complete(Pending& p);
  // The bucket's next stage follows p. When the comm stream orders them (p completes on a device
  // and the reducer runs inside GradSync's CommStreamScope: stage_kernels_on_comm_stream) nothing
  // waits: p is counted and left for finish(), as by complete(), and its stage has no host-timed
  // trace event (the bucket's GPU span holds it). Otherwise wait(p, stage).
  void then(Pending& p, std::string_view stage);
  // The bucket's last operation is posted: its time in flight on a device ends here on the comm
  // stream (else when reduce() returns).
  void posted_last();

  // Blocking forms: post, then wait.
  void allreduce(Communicator& c, const Tensor& t, ReduceOp op = ReduceOp::sum,
                 std::optional<DType> wire = {});
  void reduce(Communicator& c, const Tensor& t, int root, ReduceOp op = ReduceOp::sum,
              std::optional<DType> wire = {});
  void broadcast(Communicator& c, const Tensor& t, int root, std::optional<DType> wire = {});
  void allgather(Communicator& c, const Tensor& send, const Tensor& recv,
                 std::optional<DType> wire = {});

 private:
  friend class GradSync;
  BucketContext() = default;
  template <class Post>
  Pending post(Post&& p);
  void post_at(double t);
  trace::Clock::time_point mark() const;
  void close_flight();  // posted_last() if the flight is open
  // Counts p and leaves it for finish() when every request of it completes on a device; false
  // (nothing done) otherwise.
  bool hand_over(Pending& p);

  int bucket_ = 0;
  Communicator* world_ = nullptr;
  Communicator* node_ = nullptr;
  Communicator* cross_ = nullptr;
  bool average_ = true;
  DType wire_ = DType::f32;
  // GradSync's: the meter (its counts guarded by `mu`), the device requests finish() orders.
  CommMeter* meter_ = nullptr;
  std::mutex* mu_ = nullptr;
  std::vector<Request>* device_pending_ = nullptr;
  // Virtual time (null without a cluster): the post time of the next operation.
  cluster::VirtualTime* vt_ = nullptr;
  std::unique_ptr<cluster::PostAt> post_at_;
  double virtual_end_ = 0;  // the bucket's latest virtual end so far
  // The bucket's time in flight on a device (null off one): open from the first post.
  DeviceIntervals* flight_ = nullptr;
  bool flight_open_ = false, flight_measured_ = false;
  // Inside a CommStreamScope: opens the flight on the comm stream, where the scope's wait for the
  // gradients (and whatever the stream queued before) ends, before the reducer's first kernel.
  // The stages then follow each other on that stream (then()).
  void open_flight_on_comm();
  bool on_comm_stream_ = false;
  // Trace (null: off): the bucket's step, the trace's axis, the last post.
  trace::Tracer* tracer_ = nullptr;
  bool virtual_trace_ = false;
  int64_t step_ = -1;
  trace::Clock::time_point last_post_{};
  // The meter's figures of what the bucket completed, for its trace event.
  double payload_ = 0, wire_bytes_ = 0;
};

class BucketReducer {
 public:
  virtual ~BucketReducer() = default;
  // The name it is registered under ("flat", "hierarchical", "powersgd", "topk", ...).
  virtual std::string name() const = 0;
  // Reduces bucket.grad over the ranks in place: on return it holds the average
  // (ctx.average()) or the sum, or the last operation that puts it there has been handed to
  // ctx.complete(). Runs on GradSync's communication thread, one bucket at a time in bucket
  // order, and must post the same collectives in the same order on every rank.
  virtual void reduce(BucketView& bucket, BucketContext& ctx) = 0;
  // True: GradSync runs reduce() inside a CommStreamScope (core/comm_stream_scope.h), so on a
  // CUDA arena the reducer's own kernels and allocations (copies, scaling, the communicator's
  // wire conversions) go to the comm stream behind its collectives instead of queueing behind
  // backward on the compute stream, and finish() orders compute after them. Such a reducer uses
  // element-wise and reduction kernels only: cuBLAS and cuDNN refuse inside the scope. The
  // default (false) runs reduce() on the compute stream's terms, as a PyTorch comm hook does.
  virtual bool stage_kernels_on_comm_stream() const { return false; }
  // After every bucket of a synchronised step (GradSync::finish()), on the compute thread.
  virtual void end_step() {}
  // State that must survive a checkpoint, bitwise (compression's residuals, ...); between steps.
  virtual void save_state(StateDict& out) const {}
  // The default has none, and refuses a checkpoint holding gradient compression state.
  virtual void load_state(const StateDict& in);
};

// What a reducer's factory gets: GradSync's options, its bucket plan and the arena's device.
struct ReducerSetup {
  const GradSyncOptions& options;
  const std::vector<GradBucket>& buckets;
  const std::vector<std::vector<BucketTensor>>& tensors;  // per bucket
  Device device;                                          // the arena's
  // GradSync's communicators (node and cross: null unless given).
  Communicator& world;
  Communicator* node = nullptr;
  Communicator* cross = nullptr;
};

using BucketReducerFactory = std::function<std::unique_ptr<BucketReducer>(const ReducerSetup&)>;

// Registers a reducer under `name` for [<prefix>reducer] (an error if the name is taken). The
// built-in names are registered from the start. Thread-safe; register before the GradSync that
// uses it is built (e.g. at the start of an experiment's main).
void register_bucket_reducer(const std::string& name, BucketReducerFactory factory);
bool has_bucket_reducer(const std::string& name);
std::vector<std::string> bucket_reducer_names();  // sorted
// The reducer registered as `name`; throws naming the registered ones if there is none.
std::unique_ptr<BucketReducer> make_bucket_reducer(const std::string& name,
                                                   const ReducerSetup& setup);
// The name of the built-in reducer `opt` selects without [<prefix>reducer]: the compression's
// (powersgd, topk), else hierarchical or flat.
std::string builtin_reducer_name(const GradSyncOptions& opt);
// The reducer GradSync uses for `opt`: [<prefix>reducer] if set (a built-in name must agree with
// the keys that select it; another name cannot take compression), else the built-in one.
std::string resolve_reducer_name(const GradSyncOptions& opt);

// The built-in reducers (flat_reducer.cpp, hierarchical_reducer.cpp; compressed_reducer.cpp is
// CompressedReducer, comm/grad_compress.h).
std::unique_ptr<BucketReducer> make_flat_reducer();
std::unique_ptr<BucketReducer> make_hierarchical_reducer();

}  // namespace dplab
