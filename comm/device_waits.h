// Device-measured waits and times in flight for the algorithms' own communication on NCCL
// (issue #19, items 3 and 10). On NCCL, Request::complete_before_compute() only enqueues a wait
// of the compute stream, so the host time around it is posting time, near zero whatever the
// device does. DeviceWaits measures the compute stream's stall instead, as GradSync does
// (core/device_intervals.h): an event on the compute stream where the wait starts and one after
// the stream may resume; time in flight from an event on the compute stream at posting to one on
// the comm stream after the operation. take() adds what the device has finished (no host
// synchronisation; unfinished intervals count in a later window, each once).
//
// Off a CUDA device (MPI, CPU), and under virtual time, nothing is measured on a device and the
// host (or virtual) figures the algorithms computed before stay exactly as they were: the
// functions below then return the host seconds the caller used to count.
#pragma once
#include <memory>
#include <vector>

#include "dplab/comm/communicator.h"
#include "dplab/comm/stopwatch.h"
#include "dplab/comm/strategy.h"
#include "dplab/core/device_intervals.h"

namespace dplab {

class DeviceWaits {
 public:
  DeviceWaits() = default;  // measures nothing: every figure stays on the host
  // Measures on `device` if it is a CUDA device and `virtual_time` is false (a virtual cluster
  // keeps its virtual figures).
  DeviceWaits(Device device, bool virtual_time);
  // Whether the figures come from the device (a CUDA device runs NCCL: comm/world.cpp).
  bool on_device() const { return waits_ != nullptr; }

  // Completes req (complete_before_compute() if device-ordered, else wait(): see
  // device_waits.cpp) and returns the seconds from the start of `since` to its end on the run's
  // time base (comm/stopwatch.h: wall or virtual) when the wait is measured on the host (MPI,
  // CPU, or no DeviceWaits), 0 when `waits` measures it on the device (then take() adds it to
  // exposed_wait_s, and to in_flight_s too when `blocking`: a blocking collective is in flight
  // exactly as long as compute waits for it).
  friend double complete_measured(Request& req, const Stopwatch& since, DeviceWaits* waits,
                                  bool blocking);
  // The same for every request of `reqs`, in order.
  friend double complete_all_measured(std::vector<Request>& reqs, const Stopwatch& since,
                                      DeviceWaits* waits, bool blocking);
  // A wait the host needs (it reads the result: a loss, measured times), with the
  // communicator's timeout: req.wait() on the host in every case; on the device the compute
  // stream is also ordered after the operation and its stall is the figure (0 returned), since
  // the host's wait also holds the compute enqueued before the post.
  friend double wait_measured(Request& req, const Stopwatch& since, DeviceWaits* waits,
                              bool blocking);

  // Time in flight of a non-blocking operation: begin_flight() just before posting (an event on
  // the compute stream: where the operation's inputs are ready), end_flight() once the operation
  // is on the comm stream (right after posting a collective; after complete_before_compute for
  // point-to-point operations, which the next operation issues). No-ops off the device.
  void begin_flight();
  void end_flight();
  // Posts through `post` (returning the Request) between begin_flight() and end_flight(), the
  // interval closed on every path.
  template <class Post>
  Request post_measured(Post&& post) {
    begin_flight();
    Request r;
    try {
      r = post();
    } catch (...) {
      end_flight();
      throw;
    }
    end_flight();
    return r;
  }
  // The host's time in flight of `r` (Request::seconds_in_flight), or 0 when the device measures
  // it (a request posted through post_measured on the device).
  double host_flight(const Request& r) const { return measures(r) ? 0.0 : r.seconds_in_flight(); }
  // Whether the figures of `r` come from the device (a device-ordered request, measured here).
  bool measures(const Request& r) const { return on_device() && r.device_ordered(); }

  // Adds the device seconds finished by now to s (`wait`: wait for the last ones: end of run).
  void take(CommStats& s, bool wait = false);

 private:
  std::unique_ptr<DeviceIntervals> waits_;     // exposed wait only
  std::unique_ptr<DeviceIntervals> blocking_;  // exposed wait and in flight
  std::unique_ptr<DeviceIntervals> flight_;    // in flight only
};

double complete_measured(Request& req, const Stopwatch& since, DeviceWaits* waits, bool blocking);
double complete_all_measured(std::vector<Request>& reqs, const Stopwatch& since, DeviceWaits* waits,
                             bool blocking);
double wait_measured(Request& req, const Stopwatch& since, DeviceWaits* waits, bool blocking);

}  // namespace dplab
