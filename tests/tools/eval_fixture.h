// Shared by the evaluation tests: a tiny in-memory dataset that counts how often each sample is
// read, a linear model with weights from a formula (no RNG), and the serial reference
// evaluation of such a model computed here in double, independently of evaluate().
#pragma once
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

#include "dplab/data/dataset.h"
#include "dplab/layers/linear.h"

namespace dplab::test {

constexpr int kFeatures = 12;

// n samples of kFeatures values; counts reads of every index (worker threads may read).
class CountingDataset : public Dataset {
 public:
  CountingDataset(std::vector<std::vector<float>> x, std::vector<int64_t> y, int classes)
      : x_(std::move(x)), y_(std::move(y)), classes_(classes), reads_(x_.size()) {}
  int64_t size() const override { return int64_t(x_.size()); }
  Shape sample_shape() const override { return {kFeatures}; }
  int num_classes() const override { return classes_; }
  std::string describe() const override { return "counting test dataset"; }
  int64_t get_into(int64_t index, float* out) const override {
    reads_[size_t(index)].fetch_add(1);
    std::memcpy(out, x_[size_t(index)].data(), sizeof(float) * kFeatures);
    return y_[size_t(index)];
  }
  int reads(int64_t index) const { return reads_[size_t(index)].load(); }
  void reset_reads() {
    for (auto& r : reads_) r.store(0);
  }
  const std::vector<float>& x(int64_t i) const { return x_[size_t(i)]; }
  int64_t y(int64_t i) const { return y_[size_t(i)]; }

 private:
  std::vector<std::vector<float>> x_;
  std::vector<int64_t> y_;
  int classes_;
  mutable std::vector<std::atomic<int>> reads_;
};

// Samples whose inputs and labels come from smooth formulas.
inline std::shared_ptr<CountingDataset> formula_data(int64_t n, int classes = kFeatures) {
  std::vector<std::vector<float>> x;
  std::vector<int64_t> y;
  for (int64_t s = 0; s < n; ++s) {
    std::vector<float> v(kFeatures);
    for (int j = 0; j < kFeatures; ++j) v[size_t(j)] = float(2 * std::sin(2.1 * s + 0.37 * j));
    x.push_back(v);
    y.push_back((7 * s + 3) % classes);
  }
  return std::make_shared<CountingDataset>(std::move(x), std::move(y), classes);
}

// Linear(kFeatures -> classes) with W[i][j] = 0.5 sin(0.9 i + 1.7 j + 0.3 seed) and
// b[i] = 0.1 cos(i + seed).
inline std::shared_ptr<Linear> formula_model(int seed, int classes = kFeatures) {
  auto m = std::make_shared<Linear>(kFeatures, classes);
  float* w = m->weight().data<float>();
  float* b = m->bias().data<float>();
  for (int i = 0; i < classes; ++i) {
    b[i] = float(0.1 * std::cos(i + seed));
    for (int j = 0; j < kFeatures; ++j)
      w[i * kFeatures + j] = float(0.5 * std::sin(0.9 * i + 1.7 * j + 0.3 * seed));
  }
  return m;
}

struct SerialEval {
  double loss_sum = 0;
  int64_t correct = 0, correct5 = 0;
  double min_margin = 1e30;  // smallest |z_c - z_label| over all samples and c != label
};

// The model's evaluation sample by sample in double: logits z = W x + b from the model's own
// f32 values, cross-entropy log(sum exp z) - z_label, top-1 = every other logit below the
// label's, top-5 = fewer than 5 other logits not below it.
inline SerialEval serial_eval(const Linear& m, const CountingDataset& d) {
  const int classes = int(m.bias().numel());
  const float* w = m.weight().data<float>();
  const float* b = m.bias().data<float>();
  SerialEval r;
  for (int64_t s = 0; s < d.size(); ++s) {
    std::vector<double> z(static_cast<size_t>(classes));
    for (int i = 0; i < classes; ++i) {
      double acc = b[i];
      for (int j = 0; j < kFeatures; ++j) acc += double(w[i * kFeatures + j]) * d.x(s)[size_t(j)];
      z[size_t(i)] = acc;
    }
    const double zmax = *std::max_element(z.begin(), z.end());
    double se = 0;
    for (double v : z) se += std::exp(v - zmax);
    const size_t y = size_t(d.y(s));
    r.loss_sum += zmax + std::log(se) - z[y];
    int ahead = 0;
    for (size_t c = 0; c < z.size(); ++c) {
      if (c == y) continue;
      ahead += z[c] >= z[y];
      r.min_margin = std::min(r.min_margin, std::abs(z[c] - z[y]));
    }
    r.correct += ahead == 0;
    r.correct5 += ahead < 5;
  }
  return r;
}

}  // namespace dplab::test
