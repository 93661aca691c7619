// BatchLoader: batch assembly, partial batches, resume offset, and independence from threads.
#include <gtest/gtest.h>

#include <numeric>

#include "dplab/data/loader.h"
#include "dplab/data/mnist.h"
#include "dplab/data/sampler.h"

namespace dplab {
namespace {

// 50 images whose pixels all equal the image index; label = index % 10.
std::shared_ptr<MnistDataset> counting_dataset(int64_t n = 50) {
  IdxImages img{n, 28, 28, std::vector<uint8_t>(size_t(n) * 784)};
  std::vector<uint8_t> labels(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    std::fill_n(img.pixels.begin() + i * 784, 784, uint8_t(i));
    labels[size_t(i)] = uint8_t(i % 10);
  }
  return std::make_shared<MnistDataset>("counting", std::move(img), std::move(labels));
}

std::vector<Batch> run_epoch(BatchLoader& loader, std::vector<int64_t> idx, int64_t epoch,
                             int64_t first = 0) {
  loader.start_epoch(std::move(idx), epoch, first);
  std::vector<Batch> out;
  Batch b;
  while (loader.next(b)) out.push_back(b);
  return out;
}

TEST(Loader, AssemblesBatchesInSamplerOrder) {
  auto ds = counting_dataset();
  LoaderOptions o;
  o.batch_size = 16;
  BatchLoader loader(ds, o);
  std::vector<int64_t> idx(50);
  std::iota(idx.rbegin(), idx.rend(), 0);  // 49, 48, ..., 0
  auto batches = run_epoch(loader, idx, 0);
  ASSERT_EQ(batches.size(), 4u);  // 16 + 16 + 16 + 2
  EXPECT_EQ(batches[0].images.shape(), (Shape{16, 1, 28, 28}));
  EXPECT_EQ(batches[3].images.shape(), (Shape{2, 1, 28, 28}));
  EXPECT_EQ(batches[3].labels.dtype(), DType::i64);
  auto px = batches[1].images.to_vector();
  EXPECT_FLOAT_EQ(px[0], 33.0f / 255.0f);               // sample 16 of the order = index 33
  EXPECT_FLOAT_EQ(px[784 * 15 + 100], 18.0f / 255.0f);  // sample 31 = index 18
  EXPECT_EQ(batches[1].labels.to_vector_i64()[0], 3);
  EXPECT_EQ(batches[3].labels.to_vector_i64(), (std::vector<int64_t>{1, 0}));
}

TEST(Loader, DropLastAndResumeOffset) {
  auto ds = counting_dataset();
  LoaderOptions o;
  o.batch_size = 16;
  o.drop_last = true;
  BatchLoader loader(ds, o);
  std::vector<int64_t> idx(50);
  std::iota(idx.begin(), idx.end(), 0);
  EXPECT_EQ(run_epoch(loader, idx, 0).size(), 3u);
  auto rest = run_epoch(loader, idx, 0, 2);  // resume at batch 2
  ASSERT_EQ(rest.size(), 1u);
  EXPECT_EQ(rest[0].number, 2);
  EXPECT_EQ(rest[0].labels.to_vector_i64()[0], 2);  // index 32
  // A negative resume offset (from a damaged checkpoint) is an error, not a read before the
  // batch list (it crashed in make_batch).
  try {
    loader.start_epoch(idx, 0, -3);
    ADD_FAILURE() << "negative first batch accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("first batch -3"), std::string::npos) << e.what();
  }
}

TEST(Loader, BatchesDoNotDependOnWorkerCount) {
  auto ds = counting_dataset();
  SamplerOptions so;
  so.seed = 3;
  DistributedSampler sampler(ds->size(), so);
  sampler.set_epoch(2);
  std::vector<std::vector<float>> reference;
  for (int workers : {0, 1, 3}) {
    LoaderOptions o;
    o.batch_size = 7;
    o.workers = workers;
    o.prefetch = 2;
    o.seed = 99;
    // Random per-sample noise: must be keyed by (seed, epoch, index), not by thread.
    o.transform = [](float* img, const Shape& shape, PhiloxStream& rng) {
      for (int64_t i = 0; i < shape_numel(shape); ++i) img[i] += rng.uniform();
    };
    BatchLoader loader(ds, o);
    auto batches = run_epoch(loader, sampler.indices(), 2);
    ASSERT_EQ(batches.size(), 8u);
    std::vector<std::vector<float>> got;
    for (auto& b : batches) got.push_back(b.images.to_vector());
    if (reference.empty())
      reference = got;
    else
      EXPECT_EQ(got, reference) << workers << " workers";
  }
  // The noise really is there and differs between epochs.
  LoaderOptions o;
  o.batch_size = 7;
  o.transform = [](float* img, const Shape& shape, PhiloxStream& rng) { img[0] += rng.uniform(); };
  BatchLoader loader(ds, o);
  auto e2 = run_epoch(loader, sampler.indices(), 2);
  auto e3 = run_epoch(loader, sampler.indices(), 3);
  EXPECT_NE(e2[0].images.to_vector(), e3[0].images.to_vector());
}

TEST(Loader, WorkerErrorsReachTheConsumer) {
  auto ds = counting_dataset();
  LoaderOptions o;
  o.batch_size = 4;
  o.workers = 2;
  o.transform = [](float*, const Shape&, PhiloxStream& rng) {
    throw std::runtime_error("transform failed");
  };
  BatchLoader loader(ds, o);
  loader.start_epoch({0, 1, 2, 3, 4}, 0);
  Batch b;
  EXPECT_THROW(loader.next(b), std::runtime_error);
}

TEST(Loader, RejectsOutOfRangeIndex) {
  auto ds = counting_dataset(5);
  BatchLoader loader(ds, LoaderOptions{});
  EXPECT_THROW(loader.start_epoch({0, 5}, 0), std::exception);
}

}  // namespace
}  // namespace dplab
