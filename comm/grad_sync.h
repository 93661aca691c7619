// GradSync: gradient averaging with bucket fusion and overlap, the engine every gradient-
// averaging algorithm uses (AllReduce-SGD, hybrid SGD, DASO's node-local step, ...).
//
// Buckets are contiguous ranges of the gradient arena (its layout is the order gradients become
// ready, so no copy is needed): segments are added in arena order and a bucket closes once it
// holds at least its limit (first bucket: first_bucket_mb, then bucket_cap_mb; cap 0 = one
// bucket per tensor). Every parameter gets a grad-ready hook; when the last tensor of a bucket
// is ready, the bucket is handed to a communication thread, which runs its allreduce while
// backward goes on. Buckets are launched strictly in index order and the thread runs them one
// after another, so every rank posts the same collectives in the same order (MPI requires it)
// even if tensors become ready in a slightly different order on different ranks.
// finish() launches any bucket whose tensors never became ready (unused parameters), waits for
// all, and leaves the averaged (or summed) gradient in the arena. With no_sync set, hooks do
// nothing and finish() returns at once: gradients accumulate locally.
//
// On a device communicator (NCCL) the flat mode never waits on the host: the communication
// thread only posts each bucket's allreduce on the comm stream (ordered after the gradients by
// an event), and finish() waits until every bucket is posted, then makes the compute stream
// wait for all of them (Request::complete_before_compute), so the optimizer step that follows
// runs after the average without a host synchronisation. The bucket's statistics then count
// time in flight from the compute stream's position at posting to the end of the allreduce on
// the comm stream, and the exposed wait as the compute stream's stall at finish(), both timed
// with CUDA events on the device and read back by take_stats() without waiting (an interval
// still running counts in a later window). Requests are
// not made to wait on the compute stream earlier, from the communication thread: that would stall
// the rest of backward behind each bucket. The flat and hierarchical reducers run inside a
// CommStreamScope (core/comm_stream_scope.h, BucketReducer::stage_kernels_on_comm_stream): the
// comm stream waits for the compute stream once, when the bucket fires, and every kernel of the
// bucket (wire conversions, the hierarchical padding copy, scaling and copy back) follows its
// collectives on the comm stream, never behind the backward enqueued since; finish() then also
// orders compute after the last bucket's end on the comm stream (a StreamMark). So the
// hierarchical mode's stages follow each other on the comm stream too, and neither mode waits on
// the host (BucketContext::then): a bucket's time in flight runs on the comm stream from its
// start (its gradients ready, the previous bucket done) to the end of its last stage, and the
// exposed wait is the compute stream's stall at finish(). With MPI the hierarchical stages are
// waited for one by one on the communication thread (a comm_stage trace event each).
// Trace (GPU comm track): a bucket's span starts after the comm stream's device-side wait for its
// gradients, so it holds the communication only (begin_comm_after_compute for a reducer outside
// a scope).
//
// Checkpoints: without compression nothing here survives a step. finish() leaves no bucket in
// flight, the bucket plan comes from the arena and the options, and no_sync / average are set by
// the owning strategy (each plan() or begin_epoch(), or from its own saved state). With gradient
// compression (<prefix>compress, comm/grad_compress.h) the residuals, PowerSGD's Q and its step
// count do: save_state/load_state carry them, and each owning strategy saves them under "sync.".
//
// Virtual time (world communicator with a virtual cluster, docs/virtual_cluster.md): the hook
// records the bucket's ready time from the rank's clock (the hooks run on the compute thread);
// the communication thread posts the bucket at that time (cluster::PostAt) and waits in real
// time only; finish() moves the clock to the last bucket's end if that is later, and counts
// the difference as exposed wait. So a bucket that ends before backward does adds no exposed
// wait, and one that does not adds exactly the excess, whatever the host's load.
//
// Hierarchical mode (per bucket): reduce-scatter inside the node, allreduce of the node's shard
// across nodes (cross communicator), allgather inside the node. With gradient compression:
// reduce to the node's first rank, the compressed exchange among the nodes' first ranks (cross
// communicator), broadcast inside the node (comm/grad_compress.h).
//
// Reducers (issue #32, item 6): what runs on a bucket is a BucketReducer (comm/bucket_reducer.h,
// the shape of PyTorch's comm hooks): flat, hierarchical, powersgd or topk, chosen from the
// options, or one an experiment registers by name ([<prefix>reducer]) or hands to set_reducer().
// GradSync keeps the bucket plan, the hooks, the communication thread, the timing and the trace;
// every collective a reducer posts goes through GradSync's CommMeter (comm/meter.h), which counts
// calls, payload and wire bytes by its rules, and take_stats() adds the times measured here.
#pragma once
#include <atomic>
#include <condition_variable>
#include <deque>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "dplab/comm/bucket_reducer.h"
#include "dplab/comm/communicator.h"
#include "dplab/comm/grad_compress.h"
#include "dplab/comm/grad_sync_options.h"
#include "dplab/comm/meter.h"
#include "dplab/comm/strategy.h"
#include "dplab/core/device_intervals.h"
#include "dplab/core/param_arena.h"
#include "dplab/core/trace/tracer.h"

namespace dplab {

class StreamMark;  // core/comm_stream_scope.h

// The bucket plan for `segments` in arena order. Limits in MiB of f32 gradient.
std::vector<GradBucket> plan_buckets(const std::vector<ArenaSegment>& segments,
                                     double first_bucket_mb, double bucket_cap_mb);

// The keys' defaults, ranges and help: comm/grad_sync_options.cpp.
struct GradSyncOptions {
  double first_bucket_mb = grad_sync_options().default_double("first_bucket_mb");
  // 0: one allreduce per tensor
  double bucket_cap_mb = grad_sync_options().default_double("bucket_cap_mb");
  DType wire = parse_dtype(grad_sync_options().default_string("wire"));  // f32, bf16 or f16
  bool hierarchical = grad_sync_options().default_bool("hierarchical");
  bool average = true;       // divide by the number of ranks (else leave the sum)
  CompressOptions compress;  // [<algo>.compress] and its keys (comm/grad_compress.h)
  // [<algo>.reducer] a registered bucket reducer (comm/bucket_reducer.h); empty: the built-in
  // one the keys above select (builtin_reducer_name).
  std::string reducer;
  // Reads "<prefix>first_bucket_mb", "<prefix>bucket_cap_mb", "<prefix>wire",
  // "<prefix>hierarchical", "<prefix>reducer" and the compression keys, e.g. prefix
  // "allreduce.".
  static GradSyncOptions from_options(const Options& opt, const std::string& prefix);
};

class GradSync {
 public:
  // Flat mode reduces over `world`; hierarchical mode needs `node` and `cross` (Topology).
  GradSync(ParamArena& arena, std::shared_ptr<Communicator> world, const GradSyncOptions& opt,
           std::shared_ptr<Communicator> node = {}, std::shared_ptr<Communicator> cross = {});
  ~GradSync();
  GradSync(const GradSync&) = delete;
  GradSync& operator=(const GradSync&) = delete;

  // While set, backward passes only accumulate locally (no communication).
  void set_no_sync(bool on) { no_sync_ = on; }
  bool no_sync() const { return no_sync_; }
  // Whether finish() leaves the average (true) or the sum over ranks; takes effect for the
  // next backward pass.
  void set_average(bool on) { opt_.average = on; }
  // Timeline (nullptr: off): each bucket is a comm event "allreduce bucket K" from launch to
  // completion on the communication thread (args.bytes and args.wire_bytes: the meter's figures
  // of its collectives; hierarchical stages as comm_stage events inside it), finish()'s wait a
  // "wait allreduce" event; the same intervals CommStats counts. Set
  // between backward passes. On a virtual trace (Tracer::virtual_time, with a virtual cluster)
  // a bucket's event is its virtual interval instead, from its ready time to its modelled end
  // (each stage from its post to its end), through Tracer::at.
  void set_tracer(trace::Tracer* t) { tracer_ = t; }
  // Waits for every bucket of this backward pass; rethrows a communication error.
  void finish();
  // Statistics since the last call (bytes, calls, time in flight, exposed wait).
  CommStats take_stats();
  const std::vector<GradBucket>& buckets() const { return buckets_; }
  const GradSyncOptions& options() const { return opt_; }
  // The compressor (null without compression), e.g. for tests reading its residuals.
  GradCompressor* compressor();
  const GradCompressor* compressor() const;
  // With compression on: state["compress_active"] = 1 when the last synchronised step was
  // compressed, else 0 (the records' algo.compress_active); nothing without compression.
  void add_compression_state(std::map<std::string, double>& state) const;
  // The bucket reducer (comm/bucket_reducer.h).
  BucketReducer& reducer() { return *reducer_; }
  // Replaces the bucket reducer; between backward passes (after finish(), before the next
  // backward's hooks).
  void set_reducer(std::unique_ptr<BucketReducer> r);
  // The reducer's state (compression's; nothing for the others); call between steps.
  void save_state(StateDict& out) const;
  void load_state(const StateDict& in);
  int world_size() const { return world_->size(); }

 private:
  struct State;  // shared with the hooks, which may outlive this object
  void on_ready(int segment);
  void launch_ready_locked();
  void comm_loop(Device device);
  void reduce_bucket(int b);

  ParamArena& arena_;
  std::shared_ptr<Communicator> world_, node_, cross_;
  GradSyncOptions opt_;
  std::vector<GradBucket> buckets_;
  std::vector<int> bucket_of_segment_;
  std::vector<std::vector<BucketTensor>> tensors_;  // per bucket
  std::shared_ptr<State> state_;
  // Used by the communication thread while a pass runs, by the compute thread between passes.
  std::unique_ptr<BucketReducer> reducer_;
  bool no_sync_ = false;

  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<int> pending_;  // tensors not yet ready, per bucket
  int next_launch_ = 0;       // buckets [0, next_launch_) are queued or done
  int done_ = 0;
  std::deque<int> queue_;
  bool stop_ = false;
  // Set while the compute thread blocks in finish(): the communication thread spins only then
  // (HelperWaits, comm/communicator.h).
  std::atomic<bool> compute_waiting_{false};
  bool active_ = false;  // a backward pass has fired at least one hook since finish()
  // Posted device requests (flat mode on NCCL) for finish() to order before compute.
  std::vector<Request> device_pending_;
  std::exception_ptr error_;
  // Counts every collective the reducer posts (BucketContext), and holds the times measured
  // here (CommMeter::add); guarded by mu_ (posted from the communication thread, taken by the
  // compute thread).
  CommMeter meter_;
  // NCCL: the compute stream's stalls in finish(), timed on the device (core/device_intervals.h).
  std::unique_ptr<DeviceIntervals> device_waits_;
  // NCCL, both modes: each bucket from posting (compute stream) to the end of its last collective
  // (comm stream), timed on the device; used by the communication thread only.
  std::unique_ptr<DeviceIntervals> device_flight_;
  trace::Tracer* tracer_ = nullptr;
  // When each bucket's last tensor became ready (recorded only while tracing).
  std::vector<trace::Clock::time_point> ready_at_;
  // Virtual time (the world's; null without a virtual cluster): each bucket's ready time on the
  // compute thread's clock and its end; guarded by mu_.
  std::shared_ptr<cluster::VirtualTime> vt_;
  std::vector<double> ready_virtual_, end_virtual_;
  // Per bucket: the compute stream's position when its gradients were ready (recorded by the
  // hook on the compute thread; a CUDA event, nothing on the CPU). A bucket reduced inside a
  // CommStreamScope waits for this on the comm stream, not for backward enqueued after it.
  std::vector<std::unique_ptr<StreamMark>> ready_marks_;
  // The comm stream after the last bucket reduced inside a scope (recorded by the communication
  // thread), which finish() makes the compute stream wait for; `on_comm_` says whether one was.
  std::unique_ptr<StreamMark> buckets_end_;
  bool on_comm_ = false;  // guarded by mu_
  std::thread thread_;
};

}  // namespace dplab
