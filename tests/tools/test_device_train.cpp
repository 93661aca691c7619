// Training on a device (--device cuda): the command refuses up front, with the reason, when
// there is no usable device; with one, an epoch of mnist_cnn on the device matches the CPU run
// on the same data, the loop allocates no device memory after its first step, and batches
// travel through pinned buffers that are reused. Without a device the CUDA tests report
// themselves skipped with cuda_unavailable_reason(); the CPU tests always run.
#include <gtest/gtest.h>

#include "common/cuda_gate.h"

#include <cmath>
#include <sstream>

#include "common/harness.h"
#include "data/temp_dir.h"
#include "dplab/core/autograd.h"
#include "dplab/core/ops.h"
#include "dplab/core/safetensors.h"
#include "dplab/data/loader.h"
#include "dplab/data/mnist.h"
#include "dplab/models/registry.h"
#include "dplab/optim/sgd.h"
#include "dplab/train/data/device_prefetch.h"
#include "dplab/train/data/evaluate.h"
#include "dplab/train/loop/nonfinite_guard.h"
#include "dplab/train/loop/trainer.h"
#include "dplab/train/report/step_metrics.h"
#include "run_cli.h"

#ifdef DPLAB_WITH_CUDA
#include "dplab/core/cuda/caching_allocator.h"
#include "dplab/core/cuda/pinned.h"
#endif

namespace dplab {
namespace {

#define DPLAB_REQUIRE_CUDA() DPLAB_CUDA_TEST_GATE();

using test::run_dplab;
using test::ScopedTempDir;

// --- without a device ------------------------------------------------------------------------

TEST(DeviceTrain, CudaWithoutDeviceFailsUpFrontWithTheReason) {
  if (cuda_available()) GTEST_SKIP() << "a CUDA device exists; this checks the no-device error";
  ScopedTempDir dir("devtrain-nodev");
  // The data directory does not exist: an error about it would mean data was read first.
  const auto r = run_dplab(
      "train --model mnist_cnn --data fashion-mnist --device cuda --max-steps 1 --set "
      "progress=off --set data.dir=" +
          dir.file("no-such-data"),
      dir.path);
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_NE(r.err.find(cuda_unavailable_reason()), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("device = cuda:0"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("no-such-data"), std::string::npos) << r.err;
  EXPECT_EQ(r.out.find("epoch"), std::string::npos) << r.out;

  const auto b =
      run_dplab("bench train --model mnist_cnn --batch 8 --steps 1 --device cuda:0", dir.path);
  EXPECT_EQ(b.status, 1) << b.err;
  EXPECT_NE(b.err.find(cuda_unavailable_reason()), std::string::npos) << b.err;
}

TEST(DeviceTrain, UnknownDeviceIsRejectedByName) {
  ScopedTempDir dir("devtrain-bad");
  const auto r =
      run_dplab("train --model mnist_cnn --device tpu --max-steps 1 --set progress=off", dir.path);
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("unknown device 'tpu'"), std::string::npos) << r.err;
}

// --- the CPU path of the device helpers --------------------------------------------------------

std::shared_ptr<Dataset> small_fashion(const std::string& split, int64_t limit) {
  return load_mnist(find_dataset_dir("fashion-mnist"), split, limit);
}

// Two loaders over `samples` test images in the order i -> (i * stride + offset) % samples,
// started on epoch 0: `host` gives the reference batches, `fed` feeds a DeviceBatches.
struct TwinLoaders {
  TwinLoaders(int64_t samples, int64_t batch, int64_t stride, int64_t offset)
      : data(small_fashion("test", samples)),
        host(data, options(batch)),
        fed(data, options(batch)) {
    std::vector<int64_t> order(static_cast<size_t>(samples));
    for (int64_t i = 0; i < samples; ++i) order[size_t(i)] = (i * stride + offset) % samples;
    host.start_epoch(order, 0);
    fed.start_epoch(order, 0);
  }
  static LoaderOptions options(int64_t batch) {
    LoaderOptions lo;
    lo.batch_size = batch;
    return lo;
  }
  std::shared_ptr<Dataset> data;
  BatchLoader host, fed;
};

TEST(DeviceTrain, CpuBatchesAreTheLoadersOwn) {
  TwinLoaders t(150, 64, 7, 0);
  BatchLoader& a = t.host;
  DeviceBatches batches(t.fed, Device::cpu());
  Batch x, y;
  int n = 0;
  while (a.next(x)) {
    ASSERT_TRUE(batches.next(y));
    EXPECT_EQ(y.images.to_vector(), x.images.to_vector());
    EXPECT_EQ(y.labels.to_vector_i64(), x.labels.to_vector_i64());
    EXPECT_TRUE(y.images.device().is_cpu());
    EXPECT_FALSE(batches.prefetch_due());  // CPU batches are not uploaded
    ++n;
  }
  EXPECT_FALSE(batches.next(y));
  EXPECT_EQ(n, 3);
}

TEST(DeviceTrain, CpuStepMetricsAddEveryStepAtOnce) {
  Tensor logits = Tensor::from_vector({0.1f, 2.f, -1.f, 3.f, 0.f, 0.5f}, {3, 2});
  Tensor labels = Tensor::from_vector_i64({1, 0, 1}, {3});
  Tensor loss = cross_entropy(logits, labels);
  StepMetrics m(Device::cpu());
  double loss_sum = 0.25;
  int64_t correct = 4, seen = 10;
  m.add(loss, logits, labels, Tensor(), {loss_sum, correct, seen});
  EXPECT_FALSE(m.pending());
  EXPECT_EQ(loss_sum, 0.25 + double(loss.item()) * 3.0);
  EXPECT_EQ(correct, 4 + 2);  // rows 0 and 2 are right, row 1 is wrong
  EXPECT_EQ(seen, 13);
  // A step whose drop flags are set (nonfinite = skip on the device) counts nowhere, its NaN
  // loss included (CUDA twin: CudaStepMetrics.DroppedStepsCountNowhere).
  m.add(Tensor::scalar(std::nanf("")), logits, labels, Tensor::from_vector({0.f, 1.f}, {2}),
        {loss_sum, correct, seen});
  EXPECT_EQ(loss_sum, 0.25 + double(loss.item()) * 3.0);
  EXPECT_EQ(correct, 6);
  EXPECT_EQ(seen, 13);
}

// --- on a device -------------------------------------------------------------------------------

Options small_run(const std::string& device, const std::string& out) {
  Options o;
  o.set("model", "mnist_cnn");
  o.set("data", "fashion-mnist");
  o.set("data.train_limit", "640");
  o.set("data.test_limit", "300");
  o.set("batch", "64");
  o.set("lr", "0.05");
  o.set("momentum", "0.9");
  o.set("nesterov", "true");
  o.set("threads", "2");
  o.set("progress", "lines");
  o.set("progress.every_percent", "30");
  o.set("device", device);
  o.set("out", out);
  return o;
}

TEST(DeviceTrain, CudaEpochMatchesTheCpuRun) {
  DPLAB_REQUIRE_CUDA();
  ScopedTempDir dir("devtrain-epoch");
  std::ostringstream s1, p1, s2, p2;
  const TrainResult cpu = run_training(small_run("cpu", dir.file("cpu")), s1, p1);
  const TrainResult gpu = run_training(small_run("cuda", dir.file("cuda")), s2, p2);
  EXPECT_EQ(gpu.global_step, cpu.global_step);
  EXPECT_NEAR(gpu.train_loss, cpu.train_loss, 1e-3 * std::max(1.0, cpu.train_loss));
  EXPECT_NEAR(gpu.train_acc, cpu.train_acc, 2.0 / 640);  // a rounding tie may flip one image
  EXPECT_NEAR(gpu.test_loss, cpu.test_loss, 1e-3 * std::max(1.0, cpu.test_loss));
  EXPECT_NEAR(gpu.test_acc, cpu.test_acc, 2.0 / 300);
  // The checkpoint went through the host: every tensor close to the CPU run's.
  const auto a = load_safetensors(dir.file("cpu/final.safetensors"));
  const auto b = load_safetensors(dir.file("cuda/final.safetensors"));
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].name, b[i].name);
    EXPECT_TRUE(b[i].tensor.device().is_cpu());
    test::expect_close(b[i].tensor, a[i].tensor, 1e-6, a[i].name);
  }
  // Progress lines read the device sums back: the loss they print is finite and positive.
  EXPECT_NE(p2.str().find("loss "), std::string::npos) << p2.str();
}

#ifdef DPLAB_WITH_CUDA
TEST(DeviceTrain, CudaLoopAllocatesNothingAfterTheFirstStep) {
  DPLAB_REQUIRE_CUDA();
  const Device dev = Device::cuda(0);
  auto data = small_fashion("train", 64 * 6 + 17);  // a short last batch too
  auto model = make_model("mnist_cnn", 1, 10);
  model->to(dev);
  ParamArena arena(model->named_parameters());
  SGDOptions so;
  so.lr = 0.05;
  so.momentum = 0.9;
  SGD sgd(arena, so);
  LoaderOptions lo;
  lo.batch_size = 64;
  BatchLoader loader(data, lo);
  std::vector<int64_t> order(size_t(data->size()));
  for (size_t i = 0; i < order.size(); ++i) order[i] = int64_t(i);
  StepMetrics metrics(dev);
  double loss_sum = 0;
  int64_t correct = 0, seen = 0;
  auto& alloc = cuda::device_allocator(0);
  size_t mallocs_after_first = 0, pinned_after_first = 0;
  for (int epoch = 0; epoch < 2; ++epoch) {
    loader.start_epoch(order, epoch);
    DeviceBatches batches(loader, dev);
    Batch b;
    int step = 0;
    while (batches.next(b)) {
      EXPECT_TRUE(b.images.device().is_cuda());
      EXPECT_TRUE(b.labels.device().is_cuda());
      sgd.zero_grad();
      Tensor logits = model->forward(b.images);
      Tensor loss = cross_entropy(logits, b.labels);
      backward(loss);
      sgd.step();
      metrics.add(loss, logits, b.labels, Tensor(), {loss_sum, correct, seen});
      if (epoch == 0 && step == 1) {  // after the first step and the first prefetch
        mallocs_after_first = alloc.stats().cuda_malloc_calls;
        pinned_after_first = cuda::pinned_pool().stats().host_alloc_calls;
      }
      ++step;
    }
    metrics.flush({loss_sum, correct, seen});
    EXPECT_EQ(step, 7);
  }
  EXPECT_EQ(alloc.stats().cuda_malloc_calls, mallocs_after_first)
      << "the training loop called cudaMalloc after its first step";
  EXPECT_EQ(cuda::pinned_pool().stats().host_alloc_calls, pinned_after_first)
      << "the prefetcher pinned new host memory after its first steps";
  EXPECT_GT(loss_sum, 0);
  EXPECT_GE(correct, 0);
  EXPECT_LE(correct, 2 * data->size());
}

// The CUDA batches against the host loader's, in order, to the epoch's end. `prefetch`: after
// each step's work, as the training loop and evaluation call it; the next batch is uploaded
// then, and the batch handed out stays intact (the upload fills the other slot).
void expect_cuda_batches_equal(TwinLoaders& t, bool prefetch) {
  DeviceBatches batches(t.fed, Device::cuda(0));
  Batch x, y;
  while (t.host.next(x)) {
    ASSERT_TRUE(batches.next(y));
    EXPECT_TRUE(batches.prefetch_due());
    if (prefetch) {
      batches.prefetch();
      EXPECT_FALSE(batches.prefetch_due());
      batches.prefetch();  // a second call does nothing
    }
    EXPECT_EQ(y.images.to(Device::cpu()).to_vector(), x.images.to_vector());
    EXPECT_EQ(y.labels.to(Device::cpu()).to_vector_i64(), x.labels.to_vector_i64());
    EXPECT_EQ(y.number, x.number);
  }
  EXPECT_FALSE(batches.next(y));
}

TEST(DeviceTrain, CudaBatchesEqualTheHostBatches) {
  DPLAB_REQUIRE_CUDA();
  TwinLoaders t(200, 48, 199, 199);  // (199 i + 199) % 200 = 199 - i: the reverse order
  expect_cuda_batches_equal(t, false);
}

TEST(DeviceTrain, CudaPrefetchUploadsTheNextBatchAndKeepsTheCurrentOne) {
  DPLAB_REQUIRE_CUDA();
  TwinLoaders t(200, 48, 13, 0);
  expect_cuda_batches_equal(t, true);
}

// A label outside the model's classes, in a training step on device d: the step's forward and
// its non-finite check (train/loop/train_loop.cpp) name it, whatever the backend. The CPU's
// cross-entropy throws it; CUDA's does not wait for the device to check the targets, gives the
// loss NaN instead, and check_targets_of_nonfinite_step names the target.
void expect_bad_label_named(Device d) {
  const Tensor logits = test::random_tensor({3, 4}, 5).to(d);
  const Tensor labels = Tensor::from_vector_i64({0, 3, 7}, {3}).to(d);
  try {
    const Tensor loss = cross_entropy(logits, labels);
    EXPECT_TRUE(std::isnan(loss.item())) << d.str();  // CUDA: the bad row's NaN
    check_targets_of_nonfinite_step(labels, logits);
    ADD_FAILURE() << d.str() << ": a label outside [0, 4) was not named";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("target[2] = 7 is outside the class range [0, 4)"),
              std::string::npos)
        << d.str() << ": " << e.what();
  }
  // The check alone, as the CPU never reaches it with a bad label (its forward throws first).
  try {
    check_targets_of_nonfinite_step(labels, logits);
    ADD_FAILURE() << d.str() << ": the check let target 7 of 4 classes pass";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("target[2] = 7 is outside the class range [0, 4)"),
              std::string::npos)
        << d.str() << ": " << e.what();
  }
  // In range: a finite loss, and the check names nothing.
  const Tensor good = Tensor::from_vector_i64({0, 3, 1}, {3}).to(d);
  EXPECT_TRUE(std::isfinite(cross_entropy(logits, good).item())) << d.str();
  EXPECT_NO_THROW(check_targets_of_nonfinite_step(good, logits)) << d.str();
}

TEST(DeviceTrain, BadLabelIsNamedOnTheCpu) {
  expect_bad_label_named(Device::cpu());
}

TEST(DeviceTrain, CudaBadLabelIsNamed) {
  DPLAB_REQUIRE_CUDA();
  expect_bad_label_named(Device::cuda(0));
  // Only the bad row is NaN: its lse and its gradient; the other rows' gradients are finite.
  Tensor logits = test::random_tensor({3, 4}, 5).to(Device::cuda(0)).set_requires_grad(true);
  backward(cross_entropy(logits, Tensor::from_vector_i64({0, 3, 7}, {3}).to(Device::cuda(0))));
  const std::vector<float> g = logits.grad().to(Device::cpu()).to_vector();
  for (int i = 0; i < 12; ++i)
    EXPECT_EQ(std::isnan(g[size_t(i)]), i >= 8) << "dlogits[" << i / 4 << ", " << i % 4 << "]";
}

TEST(DeviceTrain, PinnedBuffersAreReused) {
  DPLAB_REQUIRE_CUDA();
  auto& pool = cuda::pinned_pool();
  { cuda::PinnedBuffer warm(300000); }
  const size_t before = pool.stats().host_alloc_calls;
  for (int i = 0; i < 10; ++i) {
    cuda::PinnedBuffer b(200000 + 1000 * i);  // within 2x of the cached buffer
    EXPECT_GE(b.capacity(), size_t(200000 + 1000 * i));
  }
  EXPECT_EQ(pool.stats().host_alloc_calls, before);
}
#endif

}  // namespace
}  // namespace dplab
