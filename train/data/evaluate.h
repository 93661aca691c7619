// Evaluation: mean loss, top-1 and (more than 10 classes) top-5 accuracy of a model over a
// dataset, in eval mode without recording gradients, optionally split across ranks.
#pragma once
#include <cstdint>
#include <memory>

#include "dplab/data/dataset.h"
#include "dplab/layers/module.h"

namespace dplab {

class Communicator;

struct EvalResult {
  double loss = 0;       // mean cross-entropy
  double accuracy = 0;   // top-1, fraction in [0, 1]
  double accuracy5 = 0;  // top-5 (see count_top_k), when top5
  int64_t correct = 0;
  int64_t correct5 = 0;
  int64_t count = 0;
  bool top5 = false;  // the dataset has more than 10 classes: top-5 was counted
};

struct EvalOptions {
  int64_t batch_size = 0;  // 0: default_eval_batch(the dataset's sample shape)
  int workers = 0;         // loader worker threads (data/loader.h); results do not depend on it
  int prefetch = 4;
  // The ranks that share the evaluation: each evaluates its own block of the samples
  // (train/data/eval_split.h), every rank evaluating rank 0's model, and every rank gets the
  // sums over all of them. Collective over `comm`. Null (or one rank): this process evaluates
  // every sample, without MPI.
  Communicator* comm = nullptr;
};

// Runs on the device of the model's parameters (batches are uploaded ahead of each step, see
// train/data/device_prefetch.h). Restores the module's train/eval mode afterwards.
EvalResult evaluate(Module& model, std::shared_ptr<const Dataset> data, const EvalOptions& opt);
// One process, no workers.
EvalResult evaluate(Module& model, std::shared_ptr<const Dataset> data, int64_t batch_size);

// The evaluation batch for samples of this shape when option eval.batch is 0: the largest power
// of two in [1, 1024] with at most 2^22 input values per batch. Evaluation memory grows with
// the activations, which grow with the input's pixels; the constant comes from peak RSS
// measured in eval mode (see the definition): 1024 for 28 x 28 and 3 x 32 x 32, 256 for
// 3 x 64 x 64, 16 for 3 x 224 x 224.
int64_t default_eval_batch(const Shape& sample_shape);

// The evaluation batch of a training run when option eval.batch is 0: the per-rank training
// batch, at most default_eval_batch(sample_shape). Evaluation keeps no activations for a backward
// pass, so at the training batch it needs less memory than the training step already held; the
// image-size rule alone does not know the model: a CIFAR-stem ResNet-18 on 28 x 28 keeps full
// resolution through its first stage and took 2.4 GB per rank at its 1024 (1.9 MB per sample
// over the training step's peak, measured with /usr/bin/time), which 32 ranks on one machine
// cannot hold.
int64_t training_eval_batch(const Shape& sample_shape, int64_t train_batch);

// The device of the model's parameters (cpu for a model without any).
Device model_device(const Module& model);

// Number of rows of `logits` [N, C] whose argmax equals `labels` [N] (i64).
int64_t count_correct(const Tensor& logits, const Tensor& labels);

// Number of rows of `logits` [N, C] whose label is among the k best classes: fewer than k other
// classes have a logit that is not smaller than the label's. Ties count against the sample (a
// deterministic rule where top-k with ties is not), so a NaN logit for the label is never
// correct. Logits on any device (copied to the host).
int64_t count_top_k(const Tensor& logits, const Tensor& labels, int k);

}  // namespace dplab
