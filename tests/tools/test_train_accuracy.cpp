// End-to-end training: mnist_cnn reaches >= 82% test accuracy on Fashion-MNIST after one epoch
// (batch 64, lr 0.01, momentum 0.9, Nesterov), as in the hybrid-SGD thesis set-up.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "data/temp_dir.h"
#include "run_cli.h"

namespace dplab {
namespace {

TEST(TrainAccuracy, MnistCnnFashionMnistOneEpoch) {
  test::ScopedTempDir dir("train-accuracy");
  auto r = test::run_dplab(
      "train --model mnist_cnn --data fashion-mnist --epochs 1 --batch 64 --lr 0.01 "
      "--momentum 0.9 --nesterov --seed 0 --threads 2 --set progress=lines --out " +
          dir.file("run"),
      dir.path);
  ASSERT_EQ(r.status, 0) << r.err;
  std::cout << r.out;
  std::istringstream in(test::slurp(dir.path / "run" / "metrics.jsonl"));
  std::string line, last;
  while (std::getline(in, line)) last = line;
  auto final = nlohmann::json::parse(last);
  ASSERT_EQ(final["kind"], "final");
  const double acc = final["test_acc"].get<double>();
  std::cout << "test accuracy after one epoch: " << acc << ", "
            << final["total_images_per_s"].get<double>() << " images/s\n";
  EXPECT_GE(acc, 0.82);
}

}  // namespace
}  // namespace dplab
