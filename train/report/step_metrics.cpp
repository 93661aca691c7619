#include "dplab/train/report/step_metrics.h"

#include <cmath>

#include "dplab/core/autograd.h"
#include "dplab/core/error.h"
#include "dplab/core/ops.h"
#include "dplab/train/data/evaluate.h"

namespace dplab {

namespace {
constexpr int64_t kInitialSlots = 64;  // steps between flushes before the buffer grows
constexpr int64_t kSlot = 4;           // floats per step: loss x n, correct, two drop flags
}  // namespace

void add_metric_slots(const std::vector<float>& slots, const std::vector<int64_t>& samples,
                      MetricSums sums) {
  DPLAB_CHECK(slots.size() >= samples.size() * size_t(kSlot),
              "add_metric_slots: {} values for {} steps", slots.size(), samples.size());
  for (size_t s = 0; s < samples.size(); ++s) {
    const float* slot = slots.data() + kSlot * s;
    if (slot[2] != 0.f || slot[3] != 0.f) continue;  // a dropped step
    sums.loss_sum += double(slot[0]);
    sums.correct += int64_t(std::llround(slot[1]));
    sums.seen += samples[s];
  }
}

StepMetrics::StepMetrics(Device device) : device_(device) {
  if (!device.is_cpu()) slots_ = Tensor::zeros({kInitialSlots * kSlot}, DType::f32, device);
}

void StepMetrics::add(const Tensor& loss, const Tensor& logits, const Tensor& labels,
                      const Tensor& drop_if, MetricSums sums) {
  const int64_t n = labels.numel();
  DPLAB_CHECK(!drop_if.defined() || drop_if.numel() == 2,
              "StepMetrics::add: expected two drop flags, got {}", drop_if.str());
  if (device_.is_cpu()) {
    if (drop_if.defined()) {
      const std::vector<float> f = drop_if.to_vector();
      if (f[0] != 0.f || f[1] != 0.f) return;
    }
    sums.loss_sum += double(loss.item()) * double(n);
    sums.correct += count_correct(logits, labels);
    sums.seen += n;
    return;
  }
  NoGradGuard no_grad;
  const int64_t used = int64_t(samples_.size());
  if (kSlot * (used + 1) > slots_.numel()) {  // more steps than slots between flushes: grow
    Tensor bigger = Tensor::zeros({slots_.numel() * 2}, DType::f32, device_);
    bigger.flat_range(0, slots_.numel()).copy_(slots_);
    slots_ = bigger;
  }
  // Correct predictions as floats: relu(1 - |argmax - label|) is 1 where the (integer) class
  // indices agree and 0 elsewhere; class indices are exact in f32, and so is the batch's sum.
  const Tensor pred = argmax(logits.detach(), 1).to(DType::f32).view({n});
  const Tensor truth = labels.to(DType::f32).view({n});
  const Tensor hit = relu(add_scalar(neg(abs(sub(pred, truth))), 1.0f));
  const int64_t at = kSlot * used;
  Tensor loss_slot = slots_.flat_range(at, at + 1);
  Tensor correct_slot = slots_.flat_range(at + 1, at + 2);
  add_(loss_slot, loss.detach().contiguous().view({1}), float(n));
  add_(correct_slot, sum(hit).view({1}));
  if (drop_if.defined()) slots_.flat_range(at + 2, at + 4).copy_(drop_if);  // in stream order
  samples_.push_back(n);
}

void StepMetrics::flush(MetricSums sums) {
  if (samples_.empty()) return;
  const int64_t used = int64_t(samples_.size());
  const std::vector<float> v = slots_.flat_range(0, kSlot * used).to_vector();  // the one copy
  add_metric_slots(v, samples_, sums);
  slots_.flat_range(0, kSlot * used).zero_();
  samples_.clear();
}

}  // namespace dplab
