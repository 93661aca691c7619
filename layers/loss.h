// nn.CrossEntropyLoss(label_smoothing = s): mean over the batch of the cross-entropy between
// softmax(logits) and the smoothed one-hot target ((1 - s) on the class, s / C everywhere).
// A loss takes two tensors, so it is a callable rather than a Module.
#pragma once
#include <string>

#include "dplab/core/tensor.h"

namespace dplab {

class CrossEntropyLoss {
 public:
  explicit CrossEntropyLoss(double label_smoothing = 0.0);
  // logits [N, C] f32, target [N] i64 -> scalar
  Tensor operator()(const Tensor& logits, const Tensor& target) const;
  double label_smoothing() const { return smoothing_; }
  std::string describe() const;

 private:
  double smoothing_;
};

}  // namespace dplab
