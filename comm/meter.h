// CommMeter: the one place a strategy's communication is posted, completed, timed, traced and
// counted (issue #32). An algorithm names the operation and hands over the tensor; the meter
// posts it on the communicator, and when the algorithm completes it, the meter
//   - completes it the way the backend needs (MPI: a polite host wait; NCCL: the compute stream
//     waits on the device, comm/device_waits.h),
//   - measures the time in flight and the compute thread's exposed wait on the run's time base
//     (TrainContext::time: wall, or the rank's virtual clock under a cluster), or on the device,
//   - records a `comm` event named after the operation (args.bytes, args.wire_bytes) and a
//     `wait <name>` event on the trace (core/trace/tracer.h), for the step it was posted in,
//   - counts calls, payload bytes and wire bytes (comm/wire_bytes.h) into CommStats.
//
// Two ways to complete (the figures differ, the data does not):
//   overlapped   p = meter.iallreduce(...); ... other work ...; meter.complete(p);
//                in flight: post to the operation's end; exposed wait: from complete() on.
//   blocking     meter.allreduce(...), or meter.complete_blocking(p) right after posting;
//                in flight = exposed wait = post to end (compute stood still throughout).
// Use::host completes for a host that reads the result (a loss, measured times): it always
// waits on the host with the communicator's timeout; Use::compute lets a device backend order
// the result before later compute without a host wait.
//
// Several posts that form one logical operation (a model broadcast of many tensors) are joined
// into one Pending: one event, one wait, counts summed.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dplab/comm/communicator.h"
#include "dplab/comm/device_waits.h"
#include "dplab/comm/strategy.h"
#include "dplab/core/time_source.h"
#include "dplab/core/trace/tracer.h"

namespace dplab {

class CommMeter;

// Operations posted through a CommMeter and not yet completed. Movable; empty when default-
// constructed or completed.
class Pending {
 public:
  Pending() = default;
  bool empty() const { return reqs_.empty(); }
  // Adds `other`'s operations to this one (one event named after the first).
  Pending& join(Pending&& other);
  const std::string& name() const { return name_; }
  // The trace's step when it was posted (-1: not traced, or outside the steps).
  int64_t step() const { return step_; }
  // The requests, for code that must test them itself (e.g. a poll loop's progress).
  std::vector<Request>& requests() { return reqs_; }
  const std::vector<Request>& requests() const { return reqs_; }
  // Names the wait's trace event `wait_name` instead of "wait <name>" (DASO: the wait for a
  // "daso global send" is "wait daso merge").
  Pending& wait_as(std::string_view wait_name) {
    wait_name_ = std::string(wait_name);
    return *this;
  }
  // Payload and wire bytes of what is posted (CommStats::bytes_sent, wire_bytes).
  double payload_bytes() const { return counts_.bytes_sent; }
  double wire_bytes() const { return counts_.wire_bytes; }

 private:
  friend class CommMeter;
  std::string name_;
  std::string wait_name_;  // empty: "wait " + name_
  std::vector<Request> reqs_;
  CommStats counts_;   // calls and bytes; the times are added at completion
  double posted_ = 0;  // on the meter's time base
  trace::Clock::time_point trace_posted_{};
  int64_t step_ = -1;  // the tracer's step at posting
  bool flight_on_device_ = false;
};

enum class Use { compute, host };

class CommMeter {
 public:
  // Wall clock, no trace, host figures (tests, tools).
  CommMeter();
  // The run's time base, trace and device (ctx.arena's; its figures stay on the host under a
  // virtual cluster, `virtual_time`).
  CommMeter(const TrainContext& ctx, bool virtual_time);

  // Non-blocking posts. `name` names the trace event and the wait ("wait <name>").
  Pending iallreduce(Communicator& c, std::string_view name, const Tensor& t,
                     ReduceOp op = ReduceOp::sum, std::optional<DType> wire = {});
  Pending ireduce(Communicator& c, std::string_view name, const Tensor& t, int root,
                  ReduceOp op = ReduceOp::sum, std::optional<DType> wire = {});
  Pending ibroadcast(Communicator& c, std::string_view name, const Tensor& t, int root,
                     std::optional<DType> wire = {});
  Pending iallgather(Communicator& c, std::string_view name, const Tensor& send, const Tensor& recv,
                     std::optional<DType> wire = {});
  Pending ireduce_scatter(Communicator& c, std::string_view name, const Tensor& send,
                          const Tensor& recv, ReduceOp op = ReduceOp::sum,
                          std::optional<DType> wire = {});
  Pending isend(Communicator& c, std::string_view name, const Tensor& t, int dst, int tag);
  Pending irecv(Communicator& c, std::string_view name, const Tensor& t, int src, int tag);

  // Overlapped completion: the compute thread waits from now until the operations end.
  // Both completions return the exposed wait they counted (seconds on the run's time base; 0
  // where the device measures it, added at take_stats), for algorithms that act on it.
  double complete(Pending& p, Use use = Use::compute);
  // Blocking completion of operations posted just before: compute waited from the post.
  double complete_blocking(Pending& p, Use use = Use::compute);
  // Without waiting: true (and counted, no exposed wait) once every operation has ended.
  bool test(Pending& p);
  // Counts p's calls, payload and wire bytes now, without timing or tracing it, and hands its
  // requests to the caller, who completes them: for code that times and traces a group of
  // operations itself (GradSync's buckets: one event per bucket, comm/bucket_reducer.h). p is
  // empty afterwards.
  std::vector<Request> count(Pending& p);

  // Blocking forms: post, then complete_blocking.
  void allreduce(Communicator& c, std::string_view name, const Tensor& t,
                 ReduceOp op = ReduceOp::sum, std::optional<DType> wire = {});
  void broadcast(Communicator& c, std::string_view name, const Tensor& t, int root,
                 std::optional<DType> wire = {});
  void allgather(Communicator& c, std::string_view name, const Tensor& send, const Tensor& recv,
                 std::optional<DType> wire = {});

  // Statistics since the last call (device figures finished by now included), then reset.
  // `wait`: wait for the device's last intervals (end of run).
  CommStats take_stats(bool wait = false);
  // Adds figures measured elsewhere (GradSync's communication thread), counted as they are.
  void add(const CommStats& s) { stats_.add(s); }

  TimeSource& time() const { return *time_; }
  trace::Tracer* tracer() const { return tracer_; }
  bool device_figures() const { return device_.on_device(); }

 private:
  Pending start(std::string_view name, Request r, double payload, double wire, bool collective,
                bool allreduce);
  double finish(Pending& p, Use use, bool blocking);

  std::shared_ptr<TimeSource> time_;
  trace::Tracer* tracer_ = nullptr;
  DeviceWaits device_;
  CommStats stats_;
};

}  // namespace dplab
