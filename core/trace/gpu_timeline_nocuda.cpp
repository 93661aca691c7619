// Builds without the CUDA backend: no GPU tracks.
#include "dplab/core/trace/gpu_timeline.h"

namespace dplab::trace {

std::unique_ptr<GpuTimeline> make_gpu_timeline(Device) {
  return nullptr;
}

}  // namespace dplab::trace
