#include "dplab/tools/train/evaluate.h"

#include <numeric>

#include "dplab/core/autograd.h"
#include "dplab/core/ops.h"
#include "dplab/data/loader.h"
#include "dplab/tools/train/device_prefetch.h"
#include "dplab/tools/train/step_metrics.h"

namespace dplab {

int64_t count_correct(const Tensor& logits, const Tensor& labels) {
  const std::vector<int64_t> pred = argmax(logits.detach(), 1).to_vector_i64();
  const std::vector<int64_t> truth = labels.to_vector_i64();
  int64_t c = 0;
  for (size_t i = 0; i < pred.size(); ++i) c += pred[i] == truth[i];
  return c;
}

Device model_device(const Module& model) {
  const std::vector<Tensor> params = model.parameters();
  return params.empty() ? Device::cpu() : params.front().device();
}

EvalResult evaluate(Module& model, std::shared_ptr<const Dataset> data, int64_t batch_size) {
  const bool was_training = model.is_training();
  model.eval();
  NoGradGuard no_grad;
  LoaderOptions lo;
  lo.batch_size = batch_size;
  BatchLoader loader(data, lo);
  std::vector<int64_t> order(static_cast<size_t>(data->size()));
  std::iota(order.begin(), order.end(), int64_t(0));
  loader.start_epoch(std::move(order), 0);
  // Batches go where the model is; on a device the sums are read back once, at the end.
  const Device device = model_device(model);
  DeviceBatches batches(loader, device);
  StepMetrics sums(device);
  EvalResult r;
  double loss_sum = 0;
  Batch b;
  while (batches.next(b)) {
    Tensor logits = model.forward(b.images);
    sums.add(cross_entropy(logits, b.labels), logits, b.labels, loss_sum, r.correct);
    r.count += b.labels.numel();
  }
  sums.flush(loss_sum, r.correct);
  model.train(was_training);
  if (r.count > 0) {
    r.loss = loss_sum / double(r.count);
    r.accuracy = double(r.correct) / double(r.count);
  }
  return r;
}

}  // namespace dplab
