// Running training metrics (sum of loss x batch size, correct predictions) without a host
// round trip per step on a device.
//
// On the CPU every step adds its loss and count straight into the caller's sums, exactly as
// before (the double sum of a run, and so its checkpoints, stay bitwise the same). On a CUDA
// device each step's two values (loss x n and the batch's correct count, f32, filled by kernels
// on the compute stream) go to their own slot of a device buffer, and flush() reads the buffer
// back and adds the slots on the host: the loss in double and the counts as integers. One small
// device -> host copy per logging interval (a progress line, the end of an epoch), not one per
// step. Accumulating on the device in f32 (as before, issue #19 item 8) made the correct count
// inexact beyond 2^24 (16.7 M samples: an ImageNet epoch is 1.28 M, but a count over several
// intervals or a large batch run is not) and rounded the loss sum step after step; a slot holds
// one batch's count, exact below 2^24 samples per batch.
#pragma once
#include <cstdint>
#include <vector>

#include "dplab/core/tensor.h"

namespace dplab {

// The running sums of an epoch: loss x samples, correct predictions, samples.
struct MetricSums {
  double& loss_sum;
  int64_t& correct;
  int64_t& seen;
};

// Adds `steps` slots, as read back from the device, to the sums: each slot is (loss x n,
// correct, drop flag, drop flag) with `samples[s]` the step's n. The loss is added in double,
// the count as an integer (each slot's count is an exact f32 integer); a slot with a drop flag
// set adds nothing (its values may be inf or NaN).
void add_metric_slots(const std::vector<float>& slots, const std::vector<int64_t>& samples,
                      MetricSums sums);

class StepMetrics {
 public:
  explicit StepMetrics(Device device);
  // One step: loss is the batch's mean loss (a scalar), logits [N, C], labels [N] (i64), all
  // on the device given at construction. `drop_if`: undefined, or the step's two flags on that
  // device (NonfiniteGuard::metric_flags): when one is set the step counts nowhere (nonfinite =
  // skip decided on the device). On the CPU the sums are updated now.
  void add(const Tensor& loss, const Tensor& logits, const Tensor& labels, const Tensor& drop_if,
           MetricSums sums);
  // Adds what the device accumulated since the last flush (nothing to do on the CPU).
  void flush(MetricSums sums);
  bool pending() const { return !samples_.empty(); }

 private:
  Device device_;
  Tensor slots_;                  // device f32 [capacity, 4]: per step, loss x n, correct, flags
  std::vector<int64_t> samples_;  // n of each slot filled since the last flush
};

}  // namespace dplab
