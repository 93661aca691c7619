#include "dplab/core/cuda/cudnn_handle.h"

#include <array>
#include <cstdlib>
#include <mutex>
#include <string>

#include "dplab/core/cuda/check.h"
#include "dplab/core/cuda/device_guard.h"
#include "dplab/core/cuda/stream.h"

namespace dplab::cuda {
namespace {

constexpr int kMaxDevices = 64;

struct HandleSlot {
  std::once_flag once;
  cudnnHandle_t handle = nullptr;
};

}  // namespace

cudnnHandle_t cudnn_handle(int device) {
  DPLAB_CHECK(device >= 0 && device < kMaxDevices, "cuDNN handle: device index {} out of [0, {})",
              device, kMaxDevices);
  // Lives until exit: destroying handles during static destruction races the driver's own
  // teardown, so they are deliberately never destroyed.
  static std::array<HandleSlot, kMaxDevices> slots;
  HandleSlot& s = slots[device];
  std::call_once(s.once, [&] {
    ScopedDevice guard(device);
    cudnnHandle_t h = nullptr;
    DPLAB_CUDNN_CHECK(cudnnCreate(&h));
    DPLAB_CUDNN_CHECK(cudnnSetStream(h, compute_stream(device)));
    s.handle = h;
  });
  return s.handle;
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
