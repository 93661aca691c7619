#include "dplab/tools/train/step_metrics.h"

#include <cmath>

#include "dplab/core/autograd.h"
#include "dplab/core/ops.h"
#include "dplab/tools/train/evaluate.h"

namespace dplab {

StepMetrics::StepMetrics(Device device) : device_(device) {
  if (!device.is_cpu()) sums_ = Tensor::zeros({2}, DType::f32, device);
}

void StepMetrics::add(const Tensor& loss, const Tensor& logits, const Tensor& labels,
                      double& loss_sum, int64_t& correct) {
  const int64_t n = labels.numel();
  if (device_.is_cpu()) {
    loss_sum += double(loss.item()) * double(n);
    correct += count_correct(logits, labels);
    return;
  }
  NoGradGuard no_grad;
  // Correct predictions as floats: relu(1 - |argmax - label|) is 1 where the (integer) class
  // indices agree and 0 elsewhere; class indices are exact in f32.
  const Tensor pred = argmax(logits.detach(), 1).to(DType::f32).view({n});
  const Tensor truth = labels.to(DType::f32).view({n});
  const Tensor hit = relu(add_scalar(neg(abs(sub(pred, truth))), 1.0f));
  Tensor loss_slot = sums_.flat_range(0, 1);
  Tensor correct_slot = sums_.flat_range(1, 2);
  add_(loss_slot, loss.detach().contiguous().view({1}), float(n));
  add_(correct_slot, sum(hit).view({1}));
  pending_ = true;
}

void StepMetrics::flush(double& loss_sum, int64_t& correct) {
  if (!pending_) return;
  const std::vector<float> v = sums_.to_vector();  // the one device -> host copy
  loss_sum += double(v[0]);
  correct += int64_t(std::llround(v[1]));
  sums_.zero_();
  pending_ = false;
}

}  // namespace dplab
