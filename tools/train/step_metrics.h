// Running training metrics (sum of loss x batch size, correct predictions) without a host
// round trip per step on a device.
//
// On the CPU every step adds its loss and count straight into the caller's sums, exactly as
// before (the double sum of a run, and so its checkpoints, stay bitwise the same). On a CUDA
// device the two sums stay in device memory (f32, filled by kernels on the compute stream)
// and flush() reads them back and adds them to the caller's sums: one small device -> host
// copy per logging interval (a progress line, the end of an epoch), not one per step.
#pragma once
#include <cstdint>

#include "dplab/core/tensor.h"

namespace dplab {

class StepMetrics {
 public:
  explicit StepMetrics(Device device);
  // One step: loss is the batch's mean loss (a scalar), logits [N, C], labels [N] (i64), all
  // on the device given at construction. On the CPU, loss_sum and correct are updated now.
  void add(const Tensor& loss, const Tensor& logits, const Tensor& labels, double& loss_sum,
           int64_t& correct);
  // Adds what the device accumulated since the last flush (nothing to do on the CPU).
  void flush(double& loss_sum, int64_t& correct);
  bool pending() const { return pending_; }

 private:
  Device device_;
  Tensor sums_;  // device f32 [2]: loss x n, correct
  bool pending_ = false;
};

}  // namespace dplab
