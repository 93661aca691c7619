// End to end on an ImageNet-like shard set generated here: Fashion-MNIST images enlarged to
// 64x64 RGB JPEGs with their labels, packed into tar shards by write_shards, read back through
// ShardDataset (RandomResizedCrop + flip + normalise) and the threaded BatchLoader; a small
// conv net must learn well above chance (10%).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "dplab/core/autograd.h"
#include "dplab/core/ops.h"
#include "dplab/core/param_arena.h"
#include "dplab/data/decode.h"
#include "dplab/data/loader.h"
#include "dplab/data/mnist.h"
#include "dplab/data/shards.h"
#include "dplab/layers/batchnorm2d.h"
#include "dplab/layers/conv2d.h"
#include "dplab/layers/flatten.h"
#include "dplab/layers/linear.h"
#include "dplab/layers/maxpool2d.h"
#include "dplab/layers/relu.h"
#include "dplab/layers/sequential.h"
#include "dplab/models/registry.h"
#include "dplab/optim/sgd.h"
#include "temp_dir.h"

namespace dplab {
namespace {

namespace fs = std::filesystem;

// Nearest-neighbour 28 -> 64 enlargement, tinted per channel so the image is really RGB.
void write_folder(const MnistDataset& ds, int64_t first, int64_t count, const fs::path& root) {
  for (int64_t i = first; i < first + count; ++i) {
    const int64_t label = ds.labels()[size_t(i)];
    const fs::path d = root / fmt::format("{:02d}", label);
    fs::create_directories(d);
    const uint8_t* src = ds.images().pixels.data() + i * 28 * 28;
    std::vector<uint8_t> px(64 * 64 * 3);
    for (int y = 0; y < 64; ++y)
      for (int x = 0; x < 64; ++x) {
        const uint8_t v = src[(y * 28 / 64) * 28 + x * 28 / 64];
        px[size_t((y * 64 + x) * 3 + 0)] = v;
        px[size_t((y * 64 + x) * 3 + 1)] = uint8_t(v * 3 / 4);
        px[size_t((y * 64 + x) * 3 + 2)] = uint8_t(255 - v / 2);
      }
    const auto jpg = encode_jpeg(px.data(), 64, 64, 3);
    std::ofstream(d / fmt::format("{:05d}.jpg", i), std::ios::binary)
        .write(reinterpret_cast<const char*>(jpg.data()), long(jpg.size()));
  }
}

// Writes 600 training and 200 held-out Fashion-MNIST images as RGB JPEG shards, trains `model`
// on side x side crops for `epochs` epochs with SGD (momentum 0.9) and returns the held-out
// accuracy.
double train_on_jpeg_shards(const std::shared_ptr<Module>& model, int64_t side, int64_t epochs,
                            double lr) {
  const auto fm = load_mnist(find_dataset_dir("fashion-mnist"), "train", 800);
  test::ScopedTempDir dir("shards-train");
  write_folder(*fm, 0, 600, dir.path / "train");
  write_folder(*fm, 600, 200, dir.path / "val");
  ShardWriteOptions wo;
  wo.per_shard = 100;
  write_shards((dir.path / "train").string(), dir.file("shards/train"), wo);
  write_shards((dir.path / "val").string(), dir.file("shards/val"), wo);

  ImageTransformOptions tt;
  tt.size = side;
  tt.crop.scale_min = 0.7;  // mild augmentation: few images, few epochs
  auto train = std::make_shared<ShardDataset>(expand_glob(dir.file("shards/train-*.tar")), tt,
                                              OnError::fail);
  ImageTransformOptions et = tt;
  et.train = false;
  et.resize = side;
  auto val =
      std::make_shared<ShardDataset>(expand_glob(dir.file("shards/val-*.tar")), et, OnError::fail);
  EXPECT_EQ(train->size(), 600);
  EXPECT_EQ(train->num_classes(), 10);

  ParamArena arena(model->named_parameters());
  SGDOptions so;
  so.lr = lr;
  so.momentum = 0.9;
  SGD opt(arena, so);

  LoaderOptions lo;
  lo.batch_size = 32;
  lo.workers = 2;
  lo.seed = 5;
  BatchLoader loader(train, lo);
  model->train();
  for (int64_t epoch = 0; epoch < epochs; ++epoch) {
    loader.start_epoch(shard_stream_order(train->shard_begin(), 0, 1, 5, epoch, 200), epoch);
    Batch b;
    while (loader.next(b)) {
      opt.zero_grad();
      Tensor loss = cross_entropy(model->forward(b.images), b.labels);
      backward(loss);
      opt.step();
    }
  }
  model->eval();
  NoGradGuard ng;
  LoaderOptions eo;
  eo.batch_size = 100;
  BatchLoader vl(val, eo);
  std::vector<int64_t> order(200);
  for (int64_t i = 0; i < 200; ++i) order[size_t(i)] = i;
  vl.start_epoch(order, 0);
  Batch b;
  int64_t correct = 0;
  while (vl.next(b)) {
    const auto pred = argmax(model->forward(b.images), 1).to_vector_i64();
    const auto truth = b.labels.to_vector_i64();
    for (size_t i = 0; i < pred.size(); ++i) correct += pred[i] == truth[i];
  }
  return double(correct) / 200.0;
}

TEST(ShardsTrain, SmallConvNetLearnsFashionMnistJpegShards) {
  Conv2dOptions pad1;
  pad1.padding = {1, 1};
  auto model = std::make_shared<Sequential>(std::initializer_list<std::shared_ptr<Module>>{
      std::make_shared<Conv2d>(3, 16, 3, pad1), std::make_shared<BatchNorm2d>(16),
      std::make_shared<ReLU>(), std::make_shared<MaxPool2d>(2),
      std::make_shared<Conv2d>(16, 32, 3, pad1), std::make_shared<BatchNorm2d>(32),
      std::make_shared<ReLU>(), std::make_shared<MaxPool2d>(2), std::make_shared<Flatten>(),
      std::make_shared<Linear>(32 * 8 * 8, 10)});
  initialize(*model, 1);
  const double acc = train_on_jpeg_shards(model, 32, 8, 0.02);
  std::cout << "small conv net held-out accuracy, 8 epochs on 600 JPEG shard images: " << acc
            << "\n";
  EXPECT_GT(acc, 0.6);  // 0.82 measured; chance is 0.1
}

TEST(ShardsTrain, ResNet18LearnsFashionMnistJpegShards) {
  // resnet18 with the CIFAR stem; 16x16 crops keep it within CI time (about 16 s).
  const double acc = train_on_jpeg_shards(make_model("resnet18_cifar", 1, 10), 16, 4, 0.05);
  std::cout << "resnet18 held-out accuracy, 4 epochs on 600 JPEG shard images: " << acc << "\n";
  EXPECT_GT(acc, 0.4);  // 0.64 measured; chance is 0.1
}

}  // namespace
}  // namespace dplab
