#include "dplab/comm/device_waits.h"

namespace dplab {

DeviceWaits::DeviceWaits(Device device, bool virtual_time) {
  if (virtual_time) return;
  waits_ = make_device_intervals(device);
  if (!waits_) return;
  blocking_ = make_device_intervals(device);
  flight_ = make_device_intervals(device);
}

namespace {

// Runs `complete` (which completes requests before compute) measured on the device's compute
// stream into `iv`, or on the run's time base from the start of `since` when iv is null.
template <class Complete>
double measure(DeviceIntervals* iv, const Stopwatch& since, Complete&& complete) {
  if (iv == nullptr) {
    complete();
    return since.seconds();
  }
  // The compute stream reaches this event when the work before the wait is done; the next one
  // after it waits for the operation. Closed on every path so the next wait can open one.
  iv->begin(DeviceStream::compute);
  try {
    complete();
  } catch (...) {
    try {
      iv->end(DeviceStream::compute);
    } catch (...) {  // already failing: the first error is the one to report
    }
    throw;
  }
  iv->end(DeviceStream::compute);
  return 0.0;
}

}  // namespace

// Only a device-ordered request (NCCL) makes the compute stream wait; any other is waited for on
// the host, which is then the real figure.
double complete_measured(Request& req, const Stopwatch& since, DeviceWaits* waits, bool blocking) {
  DeviceIntervals* iv = nullptr;
  if (waits != nullptr && waits->on_device() && req.device_ordered())
    iv = blocking ? waits->blocking_.get() : waits->waits_.get();
  return measure(iv, since, [&] { req.complete_before_compute(); });
}

double complete_all_measured(std::vector<Request>& reqs, const Stopwatch& since, DeviceWaits* waits,
                             bool blocking) {
  DeviceIntervals* iv = nullptr;
  if (waits != nullptr && waits->on_device() && !reqs.empty() && reqs.front().device_ordered())
    iv = blocking ? waits->blocking_.get() : waits->waits_.get();
  return measure(iv, since, [&] {
    for (Request& r : reqs) r.complete_before_compute();
  });
}

double wait_measured(Request& req, const Stopwatch& since, DeviceWaits* waits, bool blocking) {
  DeviceIntervals* iv = nullptr;
  if (waits != nullptr && waits->on_device() && req.device_ordered())
    iv = blocking ? waits->blocking_.get() : waits->waits_.get();
  if (iv == nullptr) {
    req.wait();
    return since.seconds();
  }
  measure(iv, since, [&] { req.order_before_compute(); });
  req.wait();  // the host reads the result; the timeout applies
  return 0.0;
}

void DeviceWaits::begin_flight() {
  if (flight_) flight_->begin(DeviceStream::compute);
}

void DeviceWaits::end_flight() {
  if (flight_) flight_->end(DeviceStream::comm);
}

void DeviceWaits::take(CommStats& s, bool wait) {
  if (!waits_) return;
  const double w = waits_->take_seconds(wait);
  const double b = blocking_->take_seconds(wait);
  const double f = flight_->take_seconds(wait);
  s.exposed_wait_s += w + b;
  s.in_flight_s += b + f;
}

}  // namespace dplab
