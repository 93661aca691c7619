// A minimal dplab experiment: mnist_cnn trained with SGD on one fixed synthetic batch (each
// class a bright square at its own position), printing the loss. Real data would come from
// dplab/data/mnist.h; see `dplab train` for the full driver (train/loop/trainer.h).
#include <cstdio>

#include "dplab/core/autograd.h"
#include "dplab/core/ops.h"
#include "dplab/core/philox.h"
#include "dplab/models/registry.h"
#include "dplab/optim/sgd.h"

int main(int argc, char** argv) {
  using namespace dplab;
  const int steps = argc > 1 ? std::atoi(argv[1]) : 20;
  const int64_t batch = 32;

  auto model = make_model("mnist_cnn", /*seed=*/1);
  ParamArena arena(model->named_parameters());
  SGD sgd(arena, SGDOptions{.lr = 0.02, .momentum = 0.9, .nesterov = true});

  // Synthetic batch: class c lights a 6x6 square at row 2 + 2c; pixels in [0, 1] plus noise.
  std::vector<float> pixels(batch * 28 * 28);
  std::vector<int64_t> labels(batch);
  PhiloxStream rng(/*seed=*/7, /*stream=*/0);
  for (int64_t i = 0; i < batch; ++i) {
    labels[i] = i % 10;
    float* img = pixels.data() + i * 784;
    for (int p = 0; p < 784; ++p) img[p] = 0.1f * rng.uniform();
    for (int r = 0; r < 6; ++r)
      for (int c = 0; c < 6; ++c) img[(2 + 2 * labels[i] + r) * 28 + 11 + c] = 1.0f;
  }
  Tensor x = Tensor::from_vector(pixels, {batch, 1, 28, 28});
  Tensor y = Tensor::from_vector_i64(labels, {batch});

  float first = 0, last = 0;
  for (int step = 0; step < steps; ++step) {
    sgd.zero_grad();
    Tensor loss = cross_entropy(model->forward(x), y);
    backward(loss);
    sgd.step();
    last = loss.item();
    if (step == 0) first = last;
    std::printf("step %2d  loss %.4f\n", step, last);
  }
  // The experiment "succeeds" when training reduced the loss.
  std::printf("loss %.4f -> %.4f\n", first, last);
  return last < first ? 0 : 1;
}
