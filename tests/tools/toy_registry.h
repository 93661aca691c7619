// A toy model and dataset registered beside the built-ins, for tests that run the driver
// in process (test_registry.cpp, test_optimizer_defaults.cpp): "toy_linear" (flatten + linear)
// and "toy", linearly separable 2 x 4 x 4 "images".
#pragma once
#include <memory>

#include "dplab/layers/flatten.h"
#include "dplab/layers/linear.h"
#include "dplab/layers/sequential.h"
#include "dplab/train/config/registry.h"

namespace dplab::test {

// 2 x 4 x 4 "images": class 0 has every pixel near -1, class 1 near +1 (linearly separable).
class ToyDataset : public Dataset {
 public:
  explicit ToyDataset(int64_t n) : n_(n) {}
  int64_t size() const override { return n_; }
  Shape sample_shape() const override { return {2, 4, 4}; }
  int num_classes() const override { return 2; }
  std::string describe() const override { return "toy"; }
  int64_t get_into(int64_t index, float* out) const override {
    const int64_t label = index % 2;
    for (int p = 0; p < 32; ++p)
      out[p] = (label ? 1.0f : -1.0f) + 0.1f * float((index * 7 + p * 3) % 5 - 2);
    return label;
  }

 private:
  int64_t n_;
};

inline Registry toy_registry() {
  Registry r = Registry::with_builtins();
  r.add_model("toy_linear", {2, 4, 4}, 2, [](int classes) {
    return std::shared_ptr<Module>(
        std::make_shared<Sequential>(std::initializer_list<std::shared_ptr<Module>>{
            std::make_shared<Flatten>(), std::make_shared<Linear>(32, classes)}));
  });
  r.add(DatasetEntry{
      "toy", "32 training and 8 test samples", {}, [](const std::string&, const Options&) {
        return TrainData{std::make_shared<ToyDataset>(32), std::make_shared<ToyDataset>(8), false};
      }});
  return r;
}

}  // namespace dplab::test
