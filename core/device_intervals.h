// Time intervals of a device's compute stream measured on the device (issue #19, item 10):
// begin() and end() record timing CUDA events on the compute stream, and take_seconds() adds up
// the intervals whose end event has completed, without waiting (cudaEventQuery; intervals still
// in flight stay for the next call), so measuring needs no host synchronisation per operation,
// or at all: a step window reads back what the device has finished by then, and every interval
// is counted exactly once over a run. take_seconds(true) waits for the last end event (one
// synchronisation, for the end of a run).
//
// GradSync uses it for the exposed wait on NCCL: the compute stream's interval from reaching the
// point where it must wait for the gradients' allreduce to resuming after it, which on the host
// is only the time to enqueue the waits; and for a bucket's time in flight: from the compute
// stream's position when the bucket is posted (its gradients are ready there) to the end of the
// collective on the communication stream (events of one device on two streams compare).
#pragma once
#include <memory>

#include "dplab/core/device.h"

namespace dplab {

enum class DeviceStream { compute, comm };

class DeviceIntervals {
 public:
  virtual ~DeviceIntervals() = default;
  // Opens an interval at this point of the device's compute (or comm) stream; one at a time.
  virtual void begin(DeviceStream s = DeviceStream::compute) = 0;
  virtual void end(DeviceStream s = DeviceStream::compute) = 0;  // closes it
  virtual double take_seconds(bool wait = false) = 0;
  virtual size_t pending() const = 0;  // closed intervals not yet taken
};

// For a CUDA device (nullptr for the CPU, or in a build without CUDA).
std::unique_ptr<DeviceIntervals> make_device_intervals(Device device);

}  // namespace dplab
