#include "dplab/layers/loss.h"

#include "dplab/core/ops/loss.h"

namespace dplab {

CrossEntropyLoss::CrossEntropyLoss(double s) : smoothing_(s) {
  DPLAB_CHECK(s >= 0 && s <= 1, "CrossEntropyLoss: label_smoothing = {} must be in [0, 1]", s);
}

Tensor CrossEntropyLoss::operator()(const Tensor& logits, const Tensor& target) const {
  return cross_entropy(logits, target, static_cast<float>(smoothing_));
}

std::string CrossEntropyLoss::describe() const {
  return fmt::format("CrossEntropyLoss(label_smoothing={})", smoothing_);
}

}  // namespace dplab
