#include "dplab/comm/meter.h"

#include <algorithm>
#include <utility>

#include "dplab/comm/cluster/cost_collectives.h"
#include "dplab/comm/stopwatch.h"

namespace dplab {

Pending& Pending::join(Pending&& other) {
  if (other.reqs_.empty()) return *this;
  if (reqs_.empty()) return *this = std::move(other);
  for (Request& r : other.reqs_) reqs_.push_back(std::move(r));
  counts_.add(other.counts_);
  flight_on_device_ = flight_on_device_ || other.flight_on_device_;
  other.reqs_.clear();
  return *this;
}

CommMeter::CommMeter() : time_(std::make_shared<WallTime>()) {}

CommMeter::CommMeter(const TrainContext& ctx, bool virtual_time)
    : time_(ctx.time ? ctx.time : std::make_shared<WallTime>()), tracer_(ctx.tracer) {
  if (ctx.arena != nullptr) device_ = DeviceWaits(ctx.arena->device(), virtual_time);
}

namespace {
// The step an operation's events belong to: the one it was posted in, or none when it completes
// after the epoch's steps (the end of the epoch, the drain): the metrics count it where it
// completes, outside the epochs then (Tracer::between_steps).
int64_t event_step(const trace::Tracer& t, const Pending& p) {
  return t.outside_steps() ? -1 : p.step();
}

double bytes_of(const Tensor& t, std::optional<DType> wire) {
  return static_cast<double>(t.numel()) * double(dtype_size(wire.value_or(t.dtype())));
}
}  // namespace

Pending CommMeter::start(std::string_view name, Request r, double payload, double wire,
                         bool collective, bool allreduce) {
  Pending p;
  p.name_ = std::string(name);
  p.posted_ = time_->now();
  p.trace_posted_ = trace_instant(tracer_, p.posted_);
  if (trace::Tracer* t = trace::active(tracer_)) p.step_ = t->step();
  p.flight_on_device_ = device_.measures(r);
  p.reqs_.push_back(std::move(r));
  p.counts_.bytes_sent = payload;
  p.counts_.wire_bytes = wire;
  if (collective) ++p.counts_.collectives;
  if (allreduce) ++p.counts_.allreduces;
  if (!collective) p.counts_.messages = payload > 0 ? 1 : 0;
  return p;
}

// Each post is bracketed by the device's flight interval (no-op off a device): the operation's
// time in flight on NCCL runs from the compute stream's position here to its end on the comm
// stream (comm/device_waits.h).
Pending CommMeter::iallreduce(Communicator& c, std::string_view name, const Tensor& t, ReduceOp op,
                              std::optional<DType> wire) {
  const double n = bytes_of(t, wire);
  Request r = device_.post_measured([&] { return c.iallreduce(t, op, wire); });
  return start(name, std::move(r), n, c.wire_bytes(cluster::Op::allreduce, n), true, true);
}

Pending CommMeter::ireduce(Communicator& c, std::string_view name, const Tensor& t, int root,
                           ReduceOp op, std::optional<DType> wire) {
  const double n = bytes_of(t, wire);
  Request r = device_.post_measured([&] { return c.ireduce(t, root, op, wire); });
  return start(name, std::move(r), n, c.wire_bytes(cluster::Op::reduce, n), true, false);
}

Pending CommMeter::ibroadcast(Communicator& c, std::string_view name, const Tensor& t, int root,
                              std::optional<DType> wire) {
  const double n = bytes_of(t, wire);
  Request r = device_.post_measured([&] { return c.ibroadcast(t, root, wire); });
  return start(name, std::move(r), n, c.wire_bytes(cluster::Op::broadcast, n), true, false);
}

Pending CommMeter::iallgather(Communicator& c, std::string_view name, const Tensor& send,
                              const Tensor& recv, std::optional<DType> wire) {
  const double b = bytes_of(send, wire);
  Request r = device_.post_measured([&] { return c.iallgather(send, recv, wire); });
  return start(name, std::move(r), b, c.wire_bytes(cluster::Op::allgather, b * c.size()), true,
               false);
}

Pending CommMeter::ireduce_scatter(Communicator& c, std::string_view name, const Tensor& send,
                                   const Tensor& recv, ReduceOp op, std::optional<DType> wire) {
  const double n = bytes_of(send, wire);
  Request r = device_.post_measured([&] { return c.ireduce_scatter(send, recv, op, wire); });
  return start(name, std::move(r), n, c.wire_bytes(cluster::Op::reduce_scatter, n), true, false);
}

Pending CommMeter::isend(Communicator& c, std::string_view name, const Tensor& t, int dst,
                         int tag) {
  const double n = bytes_of(t, {});
  Request r = device_.post_measured([&] { return c.isend(t, dst, tag); });
  return start(name, std::move(r), n, n, false, false);
}

Pending CommMeter::irecv(Communicator& c, std::string_view name, const Tensor& t, int src,
                         int tag) {
  Request r = device_.post_measured([&] { return c.irecv(t, src, tag); });
  return start(name, std::move(r), 0, 0, false, false);
}

double CommMeter::finish(Pending& p, Use use, bool blocking) {
  if (p.reqs_.empty()) return 0;
  // Overlapped: compute waits from here; blocking: it has waited since the post.
  const Stopwatch since = blocking ? Stopwatch(*time_, p.posted_) : Stopwatch(*time_, tracer_);
  const trace::Clock::time_point wait_from = blocking ? p.trace_posted_ : since.trace_start();
  // A request posted with its flight measured on the device keeps it there; the exposed wait
  // is then the compute stream's stall (the non-blocking interval).
  const bool device_blocking = blocking && !p.flight_on_device_;
  double waited = 0;
  if (use == Use::host) {
    for (size_t i = 0; i < p.reqs_.size(); ++i)
      waited = wait_measured(p.reqs_[i], since, &device_, device_blocking);
  } else {
    waited = complete_all_measured(p.reqs_, since, &device_, device_blocking);
  }
  CommStats s = p.counts_;
  s.exposed_wait_s = waited;
  if (blocking && !p.flight_on_device_) {
    s.in_flight_s = waited;
  } else {
    for (const Request& r : p.reqs_)
      s.in_flight_s = std::max(s.in_flight_s, device_.host_flight(r));
  }
  stats_.add(s);
  if (trace::Tracer* t = trace::active(tracer_)) {
    const trace::Clock::time_point done = trace_instant(t, time_->now());
    const int64_t step = event_step(*t, p);
    t->complete(p.name_, "comm", trace::kComm, p.trace_posted_, done, step,
                {{"bytes", s.bytes_sent}, {"wire_bytes", s.wire_bytes}});
    // The wait belongs to the step compute stood still in (an overlapped operation may have
    // been posted steps before), as metrics.jsonl counts the exposed wait; none after the steps.
    t->complete(p.wait_name_.empty() ? "wait " + p.name_ : p.wait_name_, "wait", trace::kCompute,
                wait_from, done, t->outside_steps() ? -1 : t->step());
  }
  p.reqs_.clear();
  return waited;
}

double CommMeter::complete(Pending& p, Use use) {
  return finish(p, use, false);
}

double CommMeter::complete_blocking(Pending& p, Use use) {
  return finish(p, use, true);
}

bool CommMeter::test(Pending& p) {
  if (p.reqs_.empty()) return true;
  for (Request& r : p.reqs_)
    if (!r.test()) return false;
  CommStats s = p.counts_;
  for (const Request& r : p.reqs_) s.in_flight_s = std::max(s.in_flight_s, device_.host_flight(r));
  stats_.add(s);
  if (trace::Tracer* t = trace::active(tracer_))
    t->complete(p.name_, "comm", trace::kComm, p.trace_posted_, trace_instant(t, time_->now()),
                event_step(*t, p), {{"bytes", s.bytes_sent}, {"wire_bytes", s.wire_bytes}});
  p.reqs_.clear();
  return true;
}

std::vector<Request> CommMeter::count(Pending& p) {
  stats_.add(p.counts_);
  p.counts_ = {};
  std::vector<Request> reqs = std::move(p.reqs_);
  p.reqs_.clear();
  return reqs;
}

void CommMeter::allreduce(Communicator& c, std::string_view name, const Tensor& t, ReduceOp op,
                          std::optional<DType> wire) {
  Pending p = iallreduce(c, name, t, op, wire);
  complete_blocking(p);
}

void CommMeter::broadcast(Communicator& c, std::string_view name, const Tensor& t, int root,
                          std::optional<DType> wire) {
  Pending p = ibroadcast(c, name, t, root, wire);
  complete_blocking(p);
}

void CommMeter::allgather(Communicator& c, std::string_view name, const Tensor& send,
                          const Tensor& recv, std::optional<DType> wire) {
  Pending p = iallgather(c, name, send, recv, wire);
  complete_blocking(p);
}

CommStats CommMeter::take_stats(bool wait) {
  CommStats s = std::exchange(stats_, {});
  device_.take(s, wait);
  return s;
}

}  // namespace dplab
