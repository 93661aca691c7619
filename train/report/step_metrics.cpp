#include "dplab/train/report/step_metrics.h"

#include <cmath>

#include "dplab/core/autograd.h"
#include "dplab/core/ops.h"
#include "dplab/train/data/evaluate.h"

namespace dplab {

namespace {
constexpr int64_t kInitialSlots = 64;  // steps between flushes before the buffer grows
}

void add_metric_slots(const std::vector<float>& slots, int64_t steps, double& loss_sum,
                      int64_t& correct) {
  for (int64_t s = 0; s < steps; ++s) {
    loss_sum += double(slots[size_t(2 * s)]);
    correct += int64_t(std::llround(slots[size_t(2 * s + 1)]));
  }
}

StepMetrics::StepMetrics(Device device) : device_(device) {
  if (!device.is_cpu()) slots_ = Tensor::zeros({kInitialSlots * 2}, DType::f32, device);
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
  if (2 * (used_ + 1) > slots_.numel()) {  // more steps than slots between flushes: grow
    Tensor bigger = Tensor::zeros({slots_.numel() * 2}, DType::f32, device_);
    bigger.flat_range(0, slots_.numel()).copy_(slots_);
    slots_ = bigger;
  }
  // Correct predictions as floats: relu(1 - |argmax - label|) is 1 where the (integer) class
  // indices agree and 0 elsewhere; class indices are exact in f32, and so is the batch's sum.
  const Tensor pred = argmax(logits.detach(), 1).to(DType::f32).view({n});
  const Tensor truth = labels.to(DType::f32).view({n});
  const Tensor hit = relu(add_scalar(neg(abs(sub(pred, truth))), 1.0f));
  Tensor loss_slot = slots_.flat_range(2 * used_, 2 * used_ + 1);
  Tensor correct_slot = slots_.flat_range(2 * used_ + 1, 2 * used_ + 2);
  add_(loss_slot, loss.detach().contiguous().view({1}), float(n));
  add_(correct_slot, sum(hit).view({1}));
  ++used_;
}

void StepMetrics::flush(double& loss_sum, int64_t& correct) {
  if (used_ == 0) return;
  const std::vector<float> v = slots_.flat_range(0, 2 * used_).to_vector();  // the one copy
  add_metric_slots(v, used_, loss_sum, correct);
  slots_.flat_range(0, 2 * used_).zero_();
  used_ = 0;
}

}  // namespace dplab
