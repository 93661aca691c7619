#include "dplab/core/cuda/cudnn_handle.h"

#include <cstdlib>
#include <string>

#include "dplab/core/cuda/check.h"
#include "dplab/core/cuda/device_guard.h"
#include "dplab/core/cuda/per_device.h"
#include "dplab/core/cuda/stream.h"

namespace dplab::cuda {
cudnnHandle_t cudnn_handle(int device) {
  refuse_in_comm_scope(device, "cuDNN");
  static PerDevice<cudnnHandle_t> handles;  // live until exit (per_device.h)
  return handles.get(device, "cuDNN handle", [&] {
    ScopedDevice guard(device);
    cudnnHandle_t h = nullptr;
    DPLAB_CUDNN_CHECK(cudnnCreate(&h));
    DPLAB_CUDNN_CHECK(cudnnSetStream(h, compute_stream(device)));
    return h;
  });
}

size_t conv_workspace_limit() {
  static const size_t limit = [] {
    size_t mib = 256;
    if (const char* env = std::getenv("DPLAB_CUDNN_WORKSPACE_MIB"); env && *env) {
      char* end = nullptr;
      const unsigned long long v = std::strtoull(env, &end, 10);
      DPLAB_CHECK(end && *end == '\0', "DPLAB_CUDNN_WORKSPACE_MIB={} is not a whole number of MiB",
                  env);
      mib = static_cast<size_t>(v);
    }
    return mib << 20;
  }();
  return limit;
}

}  // namespace dplab::cuda
