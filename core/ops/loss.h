// Losses and softmax.
#pragma once
#include "dplab/core/tensor.h"

namespace dplab {

Tensor softmax(const Tensor& x, int dim = -1);
Tensor log_softmax(const Tensor& x, int dim = -1);
// Mean over the batch of the cross-entropy between softmax(logits) and the label-smoothed
// target distribution (PyTorch's CrossEntropyLoss(label_smoothing=s)): logits [N, C] f32,
// target [N] i64 class indices in [0, C) (checked).
Tensor cross_entropy(const Tensor& logits, const Tensor& target, float label_smoothing = 0.f);

}  // namespace dplab
