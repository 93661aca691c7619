#include "dplab/comm/bucket_reducer.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <limits>
#include <map>
#include <mutex>
#include <utility>

#include "dplab/comm/cluster/virtual_time.h"
#include "dplab/comm/grad_compress.h"
#include "dplab/comm/grad_sync.h"
#include "dplab/core/device_intervals.h"
#include "dplab/core/error.h"

namespace dplab {

// ---- BucketContext ------------------------------------------------------------------------------

BucketContext::~BucketContext() {
  try {
    close_flight();  // closed on every path, so the next bucket can open one
  } catch (...) {    // already failing: the first error is the one to report
  }
}

void BucketContext::post_at(double t) {
  if (!vt_) return;
  post_at_.reset();  // restores the thread's earlier post time first, as PostAt nests
  post_at_ = std::make_unique<cluster::PostAt>(*vt_, t);
}

trace::Clock::time_point BucketContext::mark() const {
  return virtual_trace_ ? tracer_->at(virtual_end_) : Clock::now();
}

template <class Post>
Pending BucketContext::post(Post&& p) {
  // On a device the bucket's time in flight runs from the compute stream's position at its
  // first post (its gradients are ready there) to the end of its last operation on the comm
  // stream (posted_last); inside a CommStreamScope it was opened on the comm stream already.
  if (flight_ != nullptr && !flight_open_ && !flight_measured_) {
    flight_->begin(DeviceStream::compute);
    flight_open_ = true;
  }
  last_post_ = mark();
  return p();
}

Pending BucketContext::iallreduce(Communicator& c, const Tensor& t, ReduceOp op,
                                  std::optional<DType> wire) {
  return post([&] { return meter_->iallreduce(c, "allreduce", t, op, wire); });
}

Pending BucketContext::ireduce(Communicator& c, const Tensor& t, int root, ReduceOp op,
                               std::optional<DType> wire) {
  return post([&] { return meter_->ireduce(c, "reduce", t, root, op, wire); });
}

Pending BucketContext::ibroadcast(Communicator& c, const Tensor& t, int root,
                                  std::optional<DType> wire) {
  return post([&] { return meter_->ibroadcast(c, "broadcast", t, root, wire); });
}

Pending BucketContext::iallgather(Communicator& c, const Tensor& send, const Tensor& recv,
                                  std::optional<DType> wire) {
  return post([&] { return meter_->iallgather(c, "allgather", send, recv, wire); });
}

Pending BucketContext::ireduce_scatter(Communicator& c, const Tensor& send, const Tensor& recv,
                                       ReduceOp op, std::optional<DType> wire) {
  return post([&] { return meter_->ireduce_scatter(c, "reduce_scatter", send, recv, op, wire); });
}

namespace {
// Counts p by the meter's rules (under GradSync's lock: take_stats() runs on the compute thread)
// and hands its requests over.
std::vector<Request> counted(Pending& p, CommMeter& meter, std::mutex& mu, double& payload,
                             double& wire) {
  payload += p.payload_bytes();
  wire += p.wire_bytes();
  std::lock_guard<std::mutex> lock(mu);
  return meter.count(p);
}
}  // namespace

void BucketContext::wait(Pending& p, std::string_view stage) {
  if (p.empty()) return;
  std::vector<Request> reqs = counted(p, *meter_, *mu_, payload_, wire_bytes_);
  // Waited for in real time (this is not the clock's thread); under virtual time the bucket's
  // next operation is posted at this one's virtual end.
  double end = -std::numeric_limits<double>::infinity();
  for (Request& r : reqs) {
    r.wait();
    if (vt_) end = std::max(end, r.virtual_end());
  }
  if (vt_) {
    virtual_end_ = end;
    post_at(virtual_end_);
  }
  if (!stage.empty() && tracer_ != nullptr)
    tracer_->complete(fmt::format("bucket {} {}", bucket_, stage), "comm_stage", trace::kComm,
                      last_post_, mark(), step_, {{"bucket", double(bucket_)}});
}

bool BucketContext::hand_over(Pending& p) {
  // NCCL: posted on the comm stream; finish() orders it before compute (comm/grad_sync.h).
  bool on_device = true;
  for (Request& r : p.requests()) on_device = on_device && r.device_ordered();
  if (!on_device) return false;
  std::vector<Request> reqs = counted(p, *meter_, *mu_, payload_, wire_bytes_);
  std::lock_guard<std::mutex> lock(*mu_);
  for (Request& r : reqs) device_pending_->push_back(std::move(r));
  return true;
}

void BucketContext::complete(Pending& p) {
  posted_last();
  if (p.empty()) return;
  if (!hand_over(p)) wait(p);
}

void BucketContext::then(Pending& p, std::string_view stage) {
  if (p.empty()) return;
  if (!on_comm_stream_ || !hand_over(p)) wait(p, stage);
}

void BucketContext::open_flight_on_comm() {
  on_comm_stream_ = true;
  if (flight_ == nullptr || flight_open_ || flight_measured_) return;
  flight_->begin(DeviceStream::comm);
  flight_open_ = true;
}

void BucketContext::posted_last() {
  if (!flight_open_) return;
  flight_open_ = false;
  flight_measured_ = true;
  flight_->end(DeviceStream::comm);
}

void BucketContext::close_flight() {
  posted_last();
}

void BucketContext::allreduce(Communicator& c, const Tensor& t, ReduceOp op,
                              std::optional<DType> wire) {
  Pending p = iallreduce(c, t, op, wire);
  wait(p);
}

void BucketContext::reduce(Communicator& c, const Tensor& t, int root, ReduceOp op,
                           std::optional<DType> wire) {
  Pending p = ireduce(c, t, root, op, wire);
  wait(p);
}

void BucketContext::broadcast(Communicator& c, const Tensor& t, int root,
                              std::optional<DType> wire) {
  Pending p = ibroadcast(c, t, root, wire);
  wait(p);
}

void BucketContext::allgather(Communicator& c, const Tensor& send, const Tensor& recv,
                              std::optional<DType> wire) {
  Pending p = iallgather(c, send, recv, wire);
  wait(p);
}

// ---- BucketReducer ------------------------------------------------------------------------------

void BucketReducer::load_state(const StateDict& in) {
  DPLAB_CHECK(!in.has("compress"),
              "{}: the checkpoint holds gradient compression state ({}), "
              "this run has compress = none",
              in.origin(), in.get_string("compress"));
}

// ---- the registry -------------------------------------------------------------------------------

namespace {

struct Registry {
  std::mutex mu;
  std::map<std::string, BucketReducerFactory> factories;
};

Registry& registry() {
  static Registry* r = [] {
    auto* reg = new Registry;  // never destroyed: reducers may be made during static teardown
    reg->factories["flat"] = [](const ReducerSetup&) { return make_flat_reducer(); };
    reg->factories["hierarchical"] = [](const ReducerSetup& s) {
      DPLAB_CHECK(s.node != nullptr && s.cross != nullptr,
                  "GradSync: hierarchical mode needs node and cross communicators (a Topology)");
      return make_hierarchical_reducer();
    };
    for (const char* kind : {"powersgd", "topk"})
      reg->factories[kind] = [](const ReducerSetup& s) -> std::unique_ptr<BucketReducer> {
        return std::make_unique<CompressedReducer>(s);
      };
    return reg;
  }();
  return *r;
}

bool is_builtin(const std::string& name) {
  return name == "flat" || name == "hierarchical" || name == "powersgd" || name == "topk";
}

}  // namespace

void register_bucket_reducer(const std::string& name, BucketReducerFactory factory) {
  DPLAB_CHECK(!name.empty(), "register_bucket_reducer: empty name");
  DPLAB_CHECK(factory != nullptr, "register_bucket_reducer: no factory for '{}'", name);
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  DPLAB_CHECK(r.factories.count(name) == 0,
              "register_bucket_reducer: a bucket reducer named '{}' is registered already", name);
  r.factories[name] = std::move(factory);
}

bool has_bucket_reducer(const std::string& name) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  return r.factories.count(name) > 0;
}

std::vector<std::string> bucket_reducer_names() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  std::vector<std::string> out;
  for (const auto& [name, f] : r.factories) out.push_back(name);
  return out;
}

std::unique_ptr<BucketReducer> make_bucket_reducer(const std::string& name,
                                                   const ReducerSetup& setup) {
  BucketReducerFactory f;
  {
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mu);
    auto it = r.factories.find(name);
    if (it != r.factories.end()) f = it->second;
  }
  DPLAB_CHECK(f != nullptr, "GradSync: no bucket reducer named '{}' (registered: {})", name,
              fmt::join(bucket_reducer_names(), ", "));
  std::unique_ptr<BucketReducer> out = f(setup);
  DPLAB_CHECK(out != nullptr, "GradSync: the factory of bucket reducer '{}' made none", name);
  return out;
}

std::string builtin_reducer_name(const GradSyncOptions& opt) {
  if (opt.compress.enabled()) return opt.compress.kind;
  return opt.hierarchical ? "hierarchical" : "flat";
}

std::string resolve_reducer_name(const GradSyncOptions& opt) {
  const std::string builtin = builtin_reducer_name(opt);
  if (opt.reducer.empty()) return builtin;
  if (is_builtin(opt.reducer)) {
    DPLAB_CHECK(opt.reducer == builtin,
                "GradSync: reducer = {} contradicts hierarchical = {} and compress = {}, which "
                "select the built-in reducer {}",
                opt.reducer, opt.hierarchical, opt.compress.kind, builtin);
  } else {
    DPLAB_CHECK(!opt.compress.enabled(),
                "GradSync: reducer = {} replaces the built-in reduction; compress = {} cannot "
                "apply to it",
                opt.reducer, opt.compress.kind);
  }
  return opt.reducer;
}

}  // namespace dplab
