// The caching device allocator in a training loop: after one warm-up step of mnist_cnn on
// cuda:0 (which fills the cache with every size the step needs), further steps are served from
// the cache alone, with zero cudaMalloc calls, and the model still learns. Skipped, with the
// reason, when no CUDA device is visible.
#include <gtest/gtest.h>

#include "common/cuda_gate.h"

#include "common/harness.h"
#include "dplab/core/cuda/caching_allocator.h"
#include "dplab/layers/loss.h"
#include "dplab/models/registry.h"
#include "dplab/optim/sgd.h"

namespace dplab {
namespace {

TEST(CudaAllocator, TrainingStepsAfterWarmUpMakeNoCudaMalloc) {
  DPLAB_CUDA_TEST_GATE();
  const Device d = Device::cuda(0);
  auto model = make_model("mnist_cnn", 3);
  model->to(d);
  ParamArena arena(model->named_parameters());
  ASSERT_EQ(arena.device(), d);
  SGD sgd(arena, {.lr = 0.05, .momentum = 0.9});
  CrossEntropyLoss loss_fn(0.1);
  const Tensor x_host = test::random_tensor({16, 1, 28, 28}, 7, 0.f, 1.f);
  std::vector<int64_t> t(16);
  for (int64_t i = 0; i < 16; ++i) t[i] = i % 10;
  const Tensor target_host = Tensor::from_vector_i64(t, {16});

  // One step as a training loop runs it: batch to the device, forward, backward, update.
  auto step = [&] {
    const Tensor x = x_host.to(d), target = target_host.to(d);
    sgd.zero_grad();
    Tensor loss = loss_fn((*model)(x), target);
    backward(loss);
    sgd.step();
    return loss.item();  // synchronises, like logging a loss does
  };

  const float first = step();
  const cuda::AllocatorStats warm = cuda::device_allocator(0).stats();
  EXPECT_GT(warm.cuda_malloc_calls, 0u) << "the warm-up step must have used the allocator";
  const int steps = 8;
  float last = first;
  for (int k = 0; k < steps; ++k) last = step();
  const cuda::AllocatorStats after = cuda::device_allocator(0).stats();
  EXPECT_EQ(after.cuda_malloc_calls, warm.cuda_malloc_calls)
      << "steps after the warm-up called cudaMalloc";
  EXPECT_EQ(after.reserved_bytes, warm.reserved_bytes);
  EXPECT_GT(after.cache_hits, warm.cache_hits) << "the steps allocated nothing through the cache";
  // Nothing leaks across steps: what is handed out now is what was after the warm-up step.
  EXPECT_EQ(after.allocated_bytes, warm.allocated_bytes);
  EXPECT_LT(last, first) << "the model did not learn on the device";
}

}  // namespace
}  // namespace dplab
