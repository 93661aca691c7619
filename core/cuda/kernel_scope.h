// Host-side helpers of the kernel family wrappers (.cpp only).
//
// Where a kernel family wrapper launches: the device of its tensors, on the stream this thread
// launches on for that device (core/cuda/stream.h launch_stream: the compute stream, or the comm
// stream inside a CommStreamScope). A launch goes to the *current* device, so KernelScope makes
// the tensor's device current for the scope (core/cuda/device_guard.h restores the previous one
// after) and hands out that stream. Host-side only (.cpp wrappers).
#pragma once
#include <cuda_runtime.h>

#include <array>

#include "dplab/core/cuda/check.h"
#include "dplab/core/cuda/device_guard.h"
#include "dplab/core/cuda/launch.h"
#include "dplab/core/cuda/stream.h"
#include "dplab/core/tensor.h"

namespace dplab::cuda {

class KernelScope {
 public:
  // `t` must be a CUDA tensor; `what` names the kernel for the error.
  KernelScope(const Tensor& t, const char* what)
      : device_(checked_device(t, what)),
        stream_(launch_stream(device_)),  // before switching: it may throw
        current_(device_) {}

  cudaStream_t stream() const { return stream_; }
  int device() const { return device_; }

 private:
  static int checked_device(const Tensor& t, const char* what) {
    DPLAB_CHECK(t.device().is_cuda(), "CUDA {}: tensor {} is not on a CUDA device", what, t.str());
    return t.device().index;
  }
  int device_;
  cudaStream_t stream_;
  ScopedDevice current_;
};

// The collapsed Indexer for N tensors walked over `shape` with the given strides; throws naming
// `what` and the shape when it keeps more than kMaxDims dims after merging.
template <size_t N>
Indexer<static_cast<int>(N)> indexer_for(const Shape& shape,
                                         const std::array<const Shape*, N>& strides,
                                         const char* what) {
  const int64_t* st[N];
  for (size_t t = 0; t < N; ++t) {
    DPLAB_CHECK(strides[t]->size() == shape.size(), "CUDA {}: {} strides for shape {}", what,
                strides[t]->size(), shape_str(shape));
    st[t] = strides[t]->data();
  }
  Indexer<static_cast<int>(N)> ix;
  DPLAB_CHECK(
      make_indexer<static_cast<int>(N)>(static_cast<int>(shape.size()), shape.data(), st, ix),
      "CUDA {}: shape {} with these strides keeps more than {} dims after merging the "
      "contiguous ones (unsupported; make the tensor contiguous first)",
      what, shape_str(shape), kMaxDims);
  return ix;
}

}  // namespace dplab::cuda
