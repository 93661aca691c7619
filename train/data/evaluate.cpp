#include "dplab/train/data/evaluate.h"

#include <algorithm>
#include <numeric>
#include <optional>

#include "dplab/comm/communicator.h"
#include "dplab/core/autograd.h"
#include "dplab/core/ops.h"
#include "dplab/core/usage_error.h"
#include "dplab/data/loader.h"
#include "dplab/train/data/device_prefetch.h"
#include "dplab/train/data/eval_split.h"
#include "dplab/train/report/step_metrics.h"

namespace dplab {

int64_t count_correct(const Tensor& logits, const Tensor& labels) {
  const std::vector<int64_t> pred = argmax(logits.detach(), 1).to_vector_i64();
  const std::vector<int64_t> truth = labels.to_vector_i64();
  int64_t c = 0;
  for (size_t i = 0; i < pred.size(); ++i) c += pred[i] == truth[i];
  return c;
}

int64_t count_top_k(const Tensor& logits, const Tensor& labels, int k) {
  DPLAB_CHECK(logits.dim() == 2 && labels.numel() == logits.size(0),
              "count_top_k: expected logits [N, C] and labels [N], got {} and {}", logits.str(),
              labels.str());
  const int64_t n = logits.size(0), c = logits.size(1);
  const std::vector<float> z = logits.detach().contiguous().to_vector();
  const std::vector<int64_t> y = labels.to_vector_i64();
  int64_t hits = 0;
  for (int64_t i = 0; i < n; ++i) {
    const float* row = z.data() + i * c;
    const int64_t label = y[size_t(i)];
    DPLAB_CHECK(label >= 0 && label < c, "count_top_k: label {} of row {} is outside [0, {})",
                label, i, c);
    int64_t ahead = 0;  // other classes whose logit is not below the label's
    for (int64_t j = 0; j < c; ++j) ahead += j != label && !(row[j] < row[label]);
    hits += ahead < k;
  }
  return hits;
}

Device model_device(const Module& model) {
  const std::vector<Tensor> params = model.parameters();
  return params.empty() ? Device::cpu() : params.front().device();
}

int64_t default_eval_batch(const Shape& sample_shape) {
  // Budget: 2^22 input values per batch. Peak RSS of `dplab eval` (CPU, 2 threads) on 80
  // images at 3 x 224 x 224, by batch (/usr/bin/time -v):
  //   batch      8       16      32      64      80
  //   resnet18   275 MB  396 MB  769 MB  1.15 GB 1.35 GB
  //   resnet50   423 MB  596 MB  968 MB  -       1.87 GB
  // about 12 (resnet18) and 23 MB (resnet50) per image over the model and runtime. 224 px gets
  // 16: under 0.6 GB per rank, so 8 ranks on a node stay under 5 GB, where the old fixed 1000
  // would take 12-23 GB per rank (extrapolated from the slope). Larger batches were at most
  // ~25% faster in these runs (on a loaded machine). Inputs of 28 x 28 or 3 x 32 x 32 get the cap,
  // 1024: small models, and large batches are fast.
  constexpr int64_t kValuesPerBatch = int64_t(1) << 22;
  const int64_t per_sample = std::max<int64_t>(1, shape_numel(sample_shape));
  int64_t b = 1;
  while (b < 1024 && 2 * b * per_sample <= kValuesPerBatch) b *= 2;
  return b;
}

int64_t training_eval_batch(const Shape& sample_shape, int64_t train_batch) {
  return std::min(default_eval_batch(sample_shape), std::max<int64_t>(1, train_batch));
}

namespace {

// This rank's sums over the samples `indices`.
EvalSums evaluate_indices(Module& model, std::shared_ptr<const Dataset> data,
                          std::vector<int64_t> indices, const EvalOptions& opt, bool top5) {
  LoaderOptions lo;
  lo.batch_size = opt.batch_size > 0 ? opt.batch_size : default_eval_batch(data->sample_shape());
  lo.workers = opt.workers;
  lo.prefetch = opt.prefetch;
  BatchLoader loader(data, lo);
  loader.start_epoch(std::move(indices), 0);
  // Batches go where the model is; on a device the loss and top-1 sums are read back once, at
  // the end (top-5 reads each batch's logits back: a few KB per batch).
  const Device device = model_device(model);
  DeviceBatches batches(loader, device);
  StepMetrics sums(device);
  EvalSums s;
  Batch b;
  while (batches.next(b)) {
    Tensor logits = model.forward(b.images);
    batches.prefetch();  // the next batch travels while this forward runs; b stays valid
    // Labels are below the data set's class count (its loader checks); on CUDA a label beyond
    // the model's outputs would give a NaN loss rather than an error (core/kernels/loss.h).
    DPLAB_CHECK(logits.dim() == 2 && logits.shape()[1] >= data->num_classes(),
                "evaluate: the data set has {} classes, the model's output {} ({} values per "
                "sample): its labels would be outside the model's class range",
                data->num_classes(), logits.str(), logits.dim() == 2 ? logits.shape()[1] : 0);
    sums.add(cross_entropy(logits, b.labels), logits, b.labels, Tensor(),
             {s.loss_sum, s.correct, s.count});
    if (top5) s.correct5 += count_top_k(logits, b.labels, 5);
  }
  sums.flush({s.loss_sum, s.correct, s.count});
  return s;
}

}  // namespace

EvalResult evaluate(Module& model, std::shared_ptr<const Dataset> data, const EvalOptions& opt) {
  DPLAB_CHECK_OPTION(opt.batch_size >= 0, "option eval.batch: expected >= 0 (0: default), got {}",
                     opt.batch_size);
  const bool split = opt.comm != nullptr && opt.comm->size() > 1;
  const bool top5 = data->num_classes() > 10;
  const bool was_training = model.is_training();
  model.eval();
  NoGradGuard no_grad;
  const EvalShard shard = split ? eval_shard(data->size(), opt.comm->rank(), opt.comm->size())
                                : EvalShard{0, data->size()};
  std::vector<int64_t> indices(static_cast<size_t>(shard.size()));
  std::iota(indices.begin(), indices.end(), shard.begin);
  // Every rank evaluates rank 0's model (train/data/eval_split.h); its own comes back after.
  std::optional<SavedModel> own = split ? adopt_root_model(model, *opt.comm) : std::nullopt;
  EvalSums s;
  try {
    s = evaluate_indices(model, data, std::move(indices), opt, top5);
  } catch (...) {
    if (own) own->restore();
    model.train(was_training);
    throw;
  }
  if (own) own->restore();
  model.train(was_training);
  if (split) s = sum_over_ranks(*opt.comm, s);
  EvalResult r;
  r.correct = s.correct;
  r.correct5 = s.correct5;
  r.count = s.count;
  r.top5 = top5;
  if (r.count > 0) {
    r.loss = s.loss_sum / double(r.count);
    r.accuracy = double(r.correct) / double(r.count);
    r.accuracy5 = double(r.correct5) / double(r.count);
  }
  return r;
}

EvalResult evaluate(Module& model, std::shared_ptr<const Dataset> data, int64_t batch_size) {
  EvalOptions opt;
  opt.batch_size = batch_size;
  return evaluate(model, std::move(data), opt);
}

}  // namespace dplab
