// Evaluation in one process (train/data/evaluate.h): the split of samples over ranks, top-5
// against hand-built logits, top-5 reported only above 10 classes, the default batch, and
// evaluate() against the serial reference of tests/tools/eval_fixture.h. The split across
// ranks itself runs under mpiexec in eval_split_test.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <regex>

#include "data/temp_dir.h"
#include "dplab/data/decode.h"
#include "dplab/train/data/eval_split.h"
#include "dplab/train/data/evaluate.h"
#include "eval_fixture.h"
#include "run_cli.h"

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

// A data set with more classes than the model has outputs is refused by name before any loss
// is summed (on CUDA its labels would give a NaN loss, not an error: core/kernels/loss.h).
TEST(Evaluate, MoreClassesThanTheModelsOutputsIsAnError) {
  auto data = ranked_data(12);
  auto model = identity_model(10);
  try {
    evaluate(*model, data, 4);
    FAIL() << "12 classes were evaluated on 10 outputs";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("the data set has 12 classes"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("(10 values per sample)"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(evaluate(*identity_model(12), ranked_data(10), 4));  // fewer classes: fine
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
  // The largest power of two <= 1024 with at most 2^22 = 4194304 input values per batch.
  EXPECT_EQ(default_eval_batch({1, 28, 28}), 1024);  // 784 values: the cap
  EXPECT_EQ(default_eval_batch({3, 32, 32}), 1024);  // 3072: 1365 would fit
  EXPECT_EQ(default_eval_batch({3, 64, 64}), 256);   // 12288: 341 would fit
  EXPECT_EQ(default_eval_batch({3, 224, 224}), 16);  // 150528: 27 would fit
  EXPECT_EQ(default_eval_batch({3, 4096, 4096}), 1);
  // Training runs: the per-rank training batch, within that cap (hand values).
  EXPECT_EQ(training_eval_batch({1, 28, 28}, 16), 16);
  EXPECT_EQ(training_eval_batch({1, 28, 28}, 5000), 1024);
  EXPECT_EQ(training_eval_batch({3, 224, 224}, 64), 16);
  EXPECT_EQ(training_eval_batch({3, 224, 224}, 8), 8);
  EvalOptions bad;
  bad.batch_size = -1;
  auto data = test::formula_data(3);
  auto model = test::formula_model(0);
  EXPECT_THROW(evaluate(*model, data, bad), Error);
}

// --- end to end: `dplab train` and `dplab eval` on a 12-class image folder ------------------

// 35 RGB 16 x 16 JPEGs in 12 class folders (35 is not a multiple of 3).
void write_twelve_class_folder(const std::filesystem::path& root) {
  for (int i = 0; i < 35; ++i) {
    const auto dir = root / fmt::format("c{:02d}", i % 12);
    std::filesystem::create_directories(dir);
    std::vector<uint8_t> px(16 * 16 * 3);
    for (size_t k = 0; k < px.size(); ++k) px[k] = uint8_t((k * (i + 3) + 17 * (i % 12)) % 256);
    const auto jpg = encode_jpeg(px.data(), 16, 16, 3);
    std::ofstream(dir / fmt::format("{:03d}.jpg", i), std::ios::binary)
        .write(reinterpret_cast<const char*>(jpg.data()), long(jpg.size()));
  }
}

struct PrintedEval {
  int64_t correct = -1, count = -1, correct5 = -1;
  double loss = -1;
};
PrintedEval parse_eval(const std::string& out) {
  PrintedEval p;
  std::smatch m;
  if (std::regex_search(
          out, m, std::regex(R"(test accuracy: [0-9.]+ \((\d+)/(\d+)\), test loss ([0-9.]+))"))) {
    p.correct = std::stoll(m[1]);
    p.count = std::stoll(m[2]);
    p.loss = std::stod(m[3]);
  }
  if (std::regex_search(out, m, std::regex(R"(top-5 accuracy: [0-9.]+ \((\d+)/35\))")))
    p.correct5 = std::stoll(m[1]);
  return p;
}

TEST(EvaluateCli, TopFiveIsReportedAndThreeRanksAgreeWithOne) {
  test::ScopedTempDir dir("eval-cli");
  write_twelve_class_folder(dir.path / "images");
  const std::string common = "--model resnet18_cifar --data folder:" + dir.file("images") +
                             " --threads 1 --set data.image_size=16";
  // One training step: the summary line, the metrics records and the final line carry top-5.
  const auto t = test::run_dplab(
      "train " + common + " --max-steps 1 --batch 8 --set progress=off --out " + dir.file("run"),
      dir.path);
  ASSERT_EQ(t.status, 0) << t.err;
  EXPECT_NE(t.out.find("test_acc5 "), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("top-5 accuracy: "), std::string::npos) << t.out;
  std::ifstream metrics(dir.file("run/metrics.jsonl"));
  int with_top5 = 0;
  for (std::string line; std::getline(metrics, line);) {
    const auto rec = nlohmann::json::parse(line);
    if (rec.value("kind", "") != "epoch" && rec.value("kind", "") != "final") continue;
    ASSERT_TRUE(rec.contains("test_acc5")) << line;
    EXPECT_GE(rec["test_acc5"].get<double>(), rec["test_acc"].get<double>()) << line;
    ++with_top5;
  }
  EXPECT_EQ(with_top5, 2);  // the (partial) epoch and the final record

  const std::string eval = "eval " + common + " --checkpoint " + dir.file("run/final.safetensors");
  const auto one = test::run_dplab(eval, dir.path / "one");
  ASSERT_EQ(one.status, 0) << one.err;
  const PrintedEval a = parse_eval(one.out);
  ASSERT_EQ(a.count, 35) << one.out;
  ASSERT_GE(a.correct5, a.correct) << one.out;
  // Three ranks with two loader workers each: the same counts, the loss to its printed digits.
  const std::string cmd = std::string(DPLAB_MPIEXEC) + " -n 3 " + test::dplab_exe() + " " + eval +
                          " --set data.workers=2";
  std::filesystem::create_directories(dir.path / "three");
  const std::string out = dir.file("three/out.txt");
  ASSERT_EQ(std::system((cmd + " >" + out + " 2>" + dir.file("three/err.txt")).c_str()), 0)
      << test::slurp(dir.file("three/err.txt"));
  const std::string printed = test::slurp(out);
  const PrintedEval b = parse_eval(printed);
  EXPECT_EQ(b.count, 35) << printed;
  EXPECT_EQ(b.correct, a.correct) << printed;
  EXPECT_EQ(b.correct5, a.correct5) << printed;
  EXPECT_NEAR(b.loss, a.loss, 2e-4) << printed;  // printed with 4 decimals
  // Rank 0 alone prints.
  EXPECT_EQ(printed.find("test accuracy"), printed.rfind("test accuracy")) << printed;
}

}  // namespace
}  // namespace dplab
