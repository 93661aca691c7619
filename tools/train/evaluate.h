// Evaluation: mean loss and top-1 accuracy of a model over a dataset, in eval mode without
// recording gradients.
#pragma once
#include <cstdint>

#include "dplab/data/dataset.h"
#include "dplab/layers/module.h"

namespace dplab {

struct EvalResult {
  double loss = 0;      // mean cross-entropy
  double accuracy = 0;  // fraction in [0, 1]
  int64_t correct = 0;
  int64_t count = 0;
};

// Runs on the device of the model's parameters (batches are uploaded ahead of each step, see
// tools/train/device_prefetch.h). Restores the module's train/eval mode afterwards.
EvalResult evaluate(Module& model, std::shared_ptr<const Dataset> data, int64_t batch_size);

// The device of the model's parameters (cpu for a model without any).
Device model_device(const Module& model);

// Number of rows of `logits` [N, C] whose argmax equals `labels` [N] (i64).
int64_t count_correct(const Tensor& logits, const Tensor& labels);

}  // namespace dplab
