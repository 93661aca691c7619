#include "dplab/core/cuda/cublas_handle.h"

#include "dplab/core/cuda/caching_allocator.h"
#include "dplab/core/cuda/check.h"
#include "dplab/core/cuda/cublas_api.h"
#include "dplab/core/cuda/device_guard.h"
#include "dplab/core/cuda/per_device.h"
#include "dplab/core/cuda/stream.h"

namespace dplab::cuda {
namespace {

constexpr size_t kWorkspaceBytes = size_t{32} << 20;

}  // namespace

cublasHandle_t cublas_handle(int device) {
  refuse_in_comm_scope(device, "cuBLAS");
  // Lives until exit (per_device.h); so does its workspace block.
  static PerDevice<cublasHandle_t> handles;
  return handles.get(device, "cuBLAS handle", [&] {
    ScopedDevice guard(device);
    cublasHandle_t h = nullptr;
    DPLAB_CUBLAS_CHECK(cublas().create(&h));
    // cublasSetStream resets the workspace to cuBLAS's own pool, so the stream comes first.
    DPLAB_CUBLAS_CHECK(cublas().set_stream(h, compute_stream(device)));
    void* ws = device_allocator(device).allocate(kWorkspaceBytes);
    DPLAB_CUBLAS_CHECK(cublas().set_workspace(h, ws, kWorkspaceBytes));
    // Explicit: no TF32 tensor-op rounding of f32 operands (see the header).
    DPLAB_CUBLAS_CHECK(cublas().set_math_mode(h, CUBLAS_DEFAULT_MATH));
    DPLAB_CUBLAS_CHECK(cublas().set_pointer_mode(h, CUBLAS_POINTER_MODE_HOST));
    return h;
  });
}

}  // namespace dplab::cuda
