#include "dplab/core/cuda/cublas_handle.h"

#include <array>
#include <mutex>

#include "dplab/core/cuda/caching_allocator.h"
#include "dplab/core/cuda/check.h"
#include "dplab/core/cuda/device_guard.h"
#include "dplab/core/cuda/stream.h"

namespace dplab::cuda {
namespace {

constexpr int kMaxDevices = 64;
constexpr size_t kWorkspaceBytes = size_t{32} << 20;

struct HandleSlot {
  std::once_flag once;
  cublasHandle_t handle = nullptr;
};

}  // namespace

cublasHandle_t cublas_handle(int device) {
  DPLAB_CHECK(device >= 0 && device < kMaxDevices, "cuBLAS handle: device index {} out of [0, {})",
              device, kMaxDevices);
  // Lives until exit (never destroyed: see cudnn_handle.cpp); so does its workspace block.
  static std::array<HandleSlot, kMaxDevices> slots;
  HandleSlot& s = slots[device];
  std::call_once(s.once, [&] {
    ScopedDevice guard(device);
    cublasHandle_t h = nullptr;
    DPLAB_CUBLAS_CHECK(cublasCreate(&h));
    // cublasSetStream resets the workspace to cuBLAS's own pool, so the stream comes first.
    DPLAB_CUBLAS_CHECK(cublasSetStream(h, compute_stream(device)));
    void* ws = device_allocator(device).allocate(kWorkspaceBytes);
    DPLAB_CUBLAS_CHECK(cublasSetWorkspace(h, ws, kWorkspaceBytes));
    // Explicit: no TF32 tensor-op rounding of f32 operands (see the header).
    DPLAB_CUBLAS_CHECK(cublasSetMathMode(h, CUBLAS_DEFAULT_MATH));
    DPLAB_CUBLAS_CHECK(cublasSetPointerMode(h, CUBLAS_POINTER_MODE_HOST));
    s.handle = h;
  });
  return s.handle;
}

}  // namespace dplab::cuda
