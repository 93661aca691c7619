// make_device_intervals without the CUDA backend: nothing to measure on a device.
#include "dplab/core/device_intervals.h"

namespace dplab {

std::unique_ptr<DeviceIntervals> make_device_intervals(Device) {
  return nullptr;
}

}  // namespace dplab
