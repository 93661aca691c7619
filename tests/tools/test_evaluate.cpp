// Evaluation in one process (tools/train/evaluate.h): the split of samples over ranks, top-5
// against hand-built logits, top-5 reported only above 10 classes, the default batch, and
// evaluate() against the serial reference of tests/tools/eval_fixture.h. The split across
// ranks itself runs under mpiexec in eval_split_test.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "dplab/tools/train/eval_split.h"
#include "dplab/tools/train/evaluate.h"
#include "eval_fixture.h"

namespace dplab {
namespace {

TEST(Evaluate, ShardsAreConsecutiveBlocksCoveringEverySampleOnce) {
  for (int64_t n = 0; n <= 13; ++n)
    for (int w = 1; w <= 5; ++w) {
      SCOPED_TRACE(testing::Message() << "n " << n << " world " << w);
      int64_t expect_begin = 0;
      for (int r = 0; r < w; ++r) {
        const EvalShard s = eval_shard(n, r, w);
        EXPECT_EQ(s.begin, expect_begin);
        // Sizes floor(n/w) or ceil(n/w): no rank pads with repeated samples.
        EXPECT_GE(s.size(), n / w);
        EXPECT_LE(s.size(), (n + w - 1) / w);
        expect_begin = s.end;
      }
      EXPECT_EQ(expect_begin, n);
    }
  // 11 over 3 by hand: [0,3) [3,7) [7,11).
  EXPECT_EQ(eval_shard(11, 0, 3).end, 3);
  EXPECT_EQ(eval_shard(11, 1, 3).begin, 3);
  EXPECT_EQ(eval_shard(11, 1, 3).end, 7);
  EXPECT_EQ(eval_shard(11, 2, 3).end, 11);
  EXPECT_THROW(eval_shard(5, 3, 3), Error);
}

TEST(Evaluate, TopKCountsHandBuiltRows) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  // 12 classes; logit of class j is 12 - j unless stated.
  std::vector<float> z;
  std::vector<int64_t> y;
  auto row = [&](int64_t label, std::vector<std::pair<int, float>> changes = {}) {
    std::vector<float> r(12);
    for (int j = 0; j < 12; ++j) r[size_t(j)] = float(12 - j);
    for (auto [j, v] : changes) r[size_t(j)] = v;
    z.insert(z.end(), r.begin(), r.end());
    y.push_back(label);
  };
  row(0);               // best class: top-1 and top-5
  row(4);               // 4 classes above: top-5, not top-1
  row(5);               // 5 above: neither
  row(11);              // last: neither
  row(3, {{7, 9.0f}});  // 3 above and one tie (class 7 = 9 = class 3's): ties count against,
                        // 4 not below: still top-5
  row(4, {{8, 8.0f}});  // 4 above and one tie: 5 not below: not top-5
  row(2, {{2, nan}});   // the label's logit is NaN: never correct
  row(1, {{0, nan}});   // another class NaN (counts against): 1 not below: top-5
  const Tensor logits = Tensor::from_vector(z, {8, 12});
  const Tensor labels = Tensor::from_vector_i64(y, {8});
  EXPECT_EQ(count_top_k(logits, labels, 5), 4);   // rows 0, 1, 4, 7
  EXPECT_EQ(count_top_k(logits, labels, 1), 1);   // row 0
  EXPECT_EQ(count_top_k(logits, labels, 11), 6);  // all but row 3 (last) and the NaN label
  EXPECT_THROW(count_top_k(logits, Tensor::from_vector_i64({0, 12, 0, 0, 0, 0, 0, 0}, {8}), 5),
               Error);
}

// Identity weights: each sample's input is its logits, so which samples are top-1 and top-5 is
// known by construction.
std::shared_ptr<Linear> identity_model(int classes) {
  auto m = std::make_shared<Linear>(test::kFeatures, classes);
  float* w = m->weight().data<float>();
  for (int i = 0; i < classes; ++i)
    for (int j = 0; j < test::kFeatures; ++j) w[i * test::kFeatures + j] = i == j ? 1.f : 0.f;
  float* b = m->bias().data<float>();
  for (int i = 0; i < classes; ++i) b[i] = 0.f;
  return m;
}

std::shared_ptr<test::CountingDataset> ranked_data(int classes) {
  // Sample s: logits 12 - j, label 2 s: ranks 0, 2, 4, 6, 8, 10 -> top-1 1, top-5 3 of 6.
  std::vector<std::vector<float>> x;
  std::vector<int64_t> y;
  for (int s = 0; s < 6; ++s) {
    std::vector<float> v(test::kFeatures);
    for (int j = 0; j < test::kFeatures; ++j) v[size_t(j)] = float(12 - j);
    x.push_back(v);
    y.push_back((2 * s) % classes);
  }
  return std::make_shared<test::CountingDataset>(std::move(x), std::move(y), classes);
}

TEST(Evaluate, TopFiveOfAHandBuiltTwelveClassCase) {
  auto data = ranked_data(12);
  auto model = identity_model(12);
  const EvalResult r = evaluate(*model, data, 4);
  EXPECT_TRUE(r.top5);
  EXPECT_EQ(r.count, 6);
  EXPECT_EQ(r.correct, 1);
  EXPECT_EQ(r.correct5, 3);  // labels 0, 2, 4
  EXPECT_DOUBLE_EQ(r.accuracy5, 0.5);
  // Loss by hand: logits 12 - j, so loss = log(sum_j e^(12-j)) - (12 - label).
  double lse = 0;
  for (int j = 0; j < 12; ++j) lse += std::exp(double(12 - j));
  lse = std::log(lse);
  double want = 0;
  for (int s = 0; s < 6; ++s) want += lse - (12 - 2 * s);
  EXPECT_NEAR(r.loss, want / 6, 1e-5);
}

TEST(Evaluate, TopFiveOnlyAboveTenClasses) {
  auto data = ranked_data(10);
  auto model = identity_model(10);
  const EvalResult r = evaluate(*model, data, 4);
  EXPECT_FALSE(r.top5);
  EXPECT_EQ(r.correct5, 0);
  EXPECT_EQ(r.correct, 2);  // labels 0, 2, 4, 6, 8, 0: two samples of class 0
}

TEST(Evaluate, OneProcessMatchesTheSerialReference) {
  auto data = test::formula_data(11);
  auto model = test::formula_model(0);
  const test::SerialEval want = test::serial_eval(*model, *data);
  ASSERT_GT(want.min_margin, 1e-3);  // f32 rounding cannot flip a comparison
  for (int workers : {0, 2}) {
    data->reset_reads();
    EvalOptions opt;
    opt.batch_size = 3;
    opt.workers = workers;
    const EvalResult r = evaluate(*model, data, opt);  // no communicator: no MPI
    EXPECT_EQ(r.count, 11);
    EXPECT_EQ(r.correct, want.correct);
    EXPECT_EQ(r.correct5, want.correct5);
    EXPECT_NEAR(r.loss, want.loss_sum / 11, 1e-5);  // argued in eval_split_test.cpp
    for (int64_t i = 0; i < 11; ++i) EXPECT_EQ(data->reads(i), 1) << "sample " << i;
  }
  model->train();
  evaluate(*model, data, 3);
  EXPECT_TRUE(model->is_training());  // the mode is restored
}

TEST(Evaluate, DefaultBatchFollowsTheImageSize) {
  // 2^21 input values per batch, a power of two, at most 1024.
  EXPECT_EQ(default_eval_batch({1, 28, 28}), 1024);
  EXPECT_EQ(default_eval_batch({3, 32, 32}), 512);
  EXPECT_EQ(default_eval_batch({3, 64, 64}), 128);
  EXPECT_EQ(default_eval_batch({3, 224, 224}), 8);
  EXPECT_EQ(default_eval_batch({3, 4096, 4096}), 1);
  EvalOptions bad;
  bad.batch_size = -1;
  auto data = test::formula_data(3);
  auto model = test::formula_model(0);
  EXPECT_THROW(evaluate(*model, data, bad), Error);
}

}  // namespace
}  // namespace dplab
