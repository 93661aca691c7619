#include "dplab/core/device_probe.h"

namespace dplab {

CudaProbeOutcome classify_cuda_probe(bool call_ok, int count, bool error_means_no_device,
                                     bool driver_installed) {
  if (call_ok) return count > 0 ? CudaProbeOutcome::available : CudaProbeOutcome::no_device;
  if (error_means_no_device || !driver_installed) return CudaProbeOutcome::no_device;
  return CudaProbeOutcome::broken;
}

}  // namespace dplab
