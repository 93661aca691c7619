// Makes a device current for a scope and restores the previous one: cuDNN/cuBLAS handles and
// kernel launches act on the current device, which must be the device of the tensors.
#pragma once
#include "dplab/core/cuda/check.h"

namespace dplab::cuda {

class ScopedDevice {
 public:
  explicit ScopedDevice(int device) {
    DPLAB_CUDA_CHECK(cudaGetDevice(&prev_));
    if (prev_ != device) DPLAB_CUDA_CHECK(cudaSetDevice(device));
    switched_ = prev_ != device;
  }
  ~ScopedDevice() {
    if (switched_) cudaSetDevice(prev_);  // destructors must not throw; the next call reports
  }
  ScopedDevice(const ScopedDevice&) = delete;
  ScopedDevice& operator=(const ScopedDevice&) = delete;

 private:
  int prev_ = 0;
  bool switched_ = false;
};

}  // namespace dplab::cuda
