// Evaluation split across ranks (train/data/evaluate.h, eval_split.h), run under mpiexec at
// 1 and 3 ranks on 10 and 11 samples (not divisible by 3): every sample is read exactly once
// over all ranks, and the combined loss, top-1 and top-5 equal a serial evaluation computed
// sample by sample in double by the test itself (tests/tools/eval_fixture.h).
//
// Tolerance of the mean loss: evaluate() computes logits with f32 12-term dot products
// (|error| <= 12 * 2^-24 * sum |w x| ~ 1e-6 here, |w x| <= 1), the f32 log-sum-exp of 12
// logits (~1e-6) and each batch's f32 mean (relative <= batch * 2^-24); batch sums are added in
// double. So |mean loss - reference| < 1e-5, while one sample missing or counted twice moves the
// mean of ~2.6 by more than 0.2. The counts are compared exactly: the test checks that no
// logit is within 1e-3 of the label's, so f32 rounding cannot flip a comparison.
#include <gtest/gtest.h>

#include <bit>
#include <optional>

#include "dplab/comm/algorithms/sgp.h"
#include "dplab/comm/communicator.h"
#include "dplab/comm/mpi_env.h"
#include "dplab/comm/topology.h"
#include "dplab/optim/sgd.h"
#include "dplab/train/data/eval_split.h"
#include "dplab/train/data/evaluate.h"
#include "eval_fixture.h"

namespace dplab {
namespace {

using test::formula_data;
using test::formula_model;
using test::serial_eval;

std::shared_ptr<Communicator> world() {
  static std::shared_ptr<Communicator> w = eval_world(Options{});
  return w;
}

// Every rank's values of v, in rank order.
std::vector<int64_t> gather(Communicator& comm, const std::vector<int64_t>& v) {
  Tensor send = Tensor::from_vector_i64(v, {int64_t(v.size())});
  Tensor recv = Tensor::zeros({int64_t(v.size()) * comm.size()}, DType::i64);
  comm.allgather(send, recv);
  return recv.to_vector_i64();
}

TEST(EvalSplit, EverySampleOnceAndTheSerialResult) {
  Communicator& comm = *world();
  for (int64_t n : {10, 11}) {
    for (int64_t batch : {3, 64}) {
      SCOPED_TRACE(testing::Message() << "n " << n << " batch " << batch);
      auto data = formula_data(n);
      auto model = formula_model(0);
      const test::SerialEval want = serial_eval(*model, *data);
      ASSERT_GT(want.min_margin, 1e-3);
      EvalOptions opt;
      opt.batch_size = batch;
      opt.comm = &comm;
      const EvalResult r = evaluate(*model, data, opt);

      // Reads summed over the ranks: exactly one per sample.
      std::vector<int64_t> mine(size_t(n), 0);
      for (int64_t i = 0; i < n; ++i) mine[size_t(i)] = data->reads(i);
      const std::vector<int64_t> all = gather(comm, mine);
      for (int64_t i = 0; i < n; ++i) {
        int64_t reads = 0;
        for (int q = 0; q < comm.size(); ++q) reads += all[size_t(q * n + i)];
        EXPECT_EQ(reads, 1) << "sample " << i;
      }
      // This rank read its own block and nothing else.
      const EvalShard s = eval_shard(n, comm.rank(), comm.size());
      for (int64_t i = 0; i < n; ++i)
        EXPECT_EQ(data->reads(i), i >= s.begin && i < s.end ? 1 : 0) << "sample " << i;

      EXPECT_EQ(r.count, n);
      EXPECT_EQ(r.correct, want.correct);
      EXPECT_TRUE(r.top5);
      EXPECT_EQ(r.correct5, want.correct5);
      EXPECT_GT(want.correct5, want.correct);  // the data exercise top-5 beyond top-1
      EXPECT_LT(want.correct5, n);
      EXPECT_NEAR(r.loss, want.loss_sum / double(n), 1e-5);
      EXPECT_DOUBLE_EQ(r.accuracy, double(want.correct) / double(n));
      EXPECT_DOUBLE_EQ(r.accuracy5, double(want.correct5) / double(n));
      // Every rank holds the same combined result, to the bit.
      const std::vector<int64_t> bits =
          gather(comm, {std::bit_cast<int64_t>(r.loss), r.correct, r.correct5, r.count});
      for (int q = 0; q < comm.size(); ++q)
        for (int f = 0; f < 4; ++f) EXPECT_EQ(bits[size_t(q * 4 + f)], bits[size_t(f)]);
    }
  }
}

TEST(EvalSplit, RanksWithDifferentModelsEvaluateRankZerosAndKeepTheirOwn) {
  Communicator& comm = *world();
  const int me = comm.rank();
  auto data = formula_data(11);
  auto model = formula_model(me);  // ranks differ, as under gossip or local SGD
  const auto own = model->weight().to_vector();
  const auto own_bias = model->bias().to_vector();
  const test::SerialEval want = serial_eval(*formula_model(0), *data);
  ASSERT_GT(want.min_margin, 1e-3);
  EvalOptions opt;
  opt.batch_size = 4;
  opt.comm = &comm;
  const EvalResult r = evaluate(*model, data, opt);
  EXPECT_EQ(r.count, 11);
  EXPECT_EQ(r.correct, want.correct);
  EXPECT_EQ(r.correct5, want.correct5);
  EXPECT_NEAR(r.loss, want.loss_sum / 11.0, 1e-5);
  // This rank's own model is back, bitwise.
  EXPECT_EQ(model->weight().to_vector(), own);
  EXPECT_EQ(model->bias().to_vector(), own_bias);
  if (me != 0) {  // and it really differs from rank 0's (the test means something)
    const test::SerialEval mine = serial_eval(*model, *data);
    EXPECT_NE(mine.loss_sum, want.loss_sum);
  }
}

TEST(EvalSplit, WorkersGiveTheSameResult) {
  Communicator& comm = *world();
  auto data = formula_data(11);
  auto model = formula_model(0);
  EvalOptions opt;
  opt.batch_size = 2;
  opt.comm = &comm;
  const EvalResult serial_loader = evaluate(*model, data, opt);
  data->reset_reads();
  opt.workers = 3;
  opt.prefetch = 2;
  const EvalResult threaded = evaluate(*model, data, opt);
  EXPECT_EQ(std::bit_cast<int64_t>(threaded.loss), std::bit_cast<int64_t>(serial_loader.loss));
  EXPECT_EQ(threaded.correct, serial_loader.correct);
  EXPECT_EQ(threaded.correct5, serial_loader.correct5);
  EXPECT_EQ(threaded.count, serial_loader.count);
  const EvalShard s = eval_shard(11, comm.rank(), comm.size());
  for (int64_t i = 0; i < 11; ++i)
    EXPECT_EQ(data->reads(i), i >= s.begin && i < s.end ? 1 : 0) << "sample " << i;
}

// SGP's consensus_eval (comm/algorithms/sgp.h) with the split evaluation inside, as the trainer
// calls it: the evaluated model is the mean of the ranks' models (push-sum weights 1), and
// every rank's own model is back afterwards.
TEST(EvalSplit, GossipConsensusEvalSplitsTheMeanModel) {
  Communicator& comm = *world();
  const int n = comm.size(), me = comm.rank();
  auto data = formula_data(11);
  auto model = formula_model(me);
  ParamArena arena(model->named_parameters());
  SGD sgd(arena, SGDOptions{});
  Options o;
  auto topo = std::make_shared<Topology>(Topology::from_options(o));
  SgpStrategy sgp(topo, o);
  TrainContext ctx;
  ctx.model = model.get();
  ctx.arena = &arena;
  ctx.optimizer = &sgd;
  ctx.options = &o;
  sgp.setup(ctx);
  // setup() may have made the ranks equal: give each its own model again (arena storage).
  auto own = formula_model(me);
  Tensor weight = model->weight(), bias = model->bias();  // handles on the arena
  weight.copy_(own->weight());
  bias.copy_(own->bias());

  // The reference: the mean of every rank's formula model, in double, rounded once to f32.
  auto mean = formula_model(0);
  std::vector<double> w(size_t(mean->weight().numel()), 0.0), b(size_t(mean->bias().numel()), 0.0);
  for (int r = 0; r < n; ++r) {
    auto m = formula_model(r);
    for (size_t i = 0; i < w.size(); ++i) w[i] += m->weight().data<float>()[i];
    for (size_t i = 0; i < b.size(); ++i) b[i] += m->bias().data<float>()[i];
  }
  for (size_t i = 0; i < w.size(); ++i) mean->weight().data<float>()[i] = float(w[i] / n);
  for (size_t i = 0; i < b.size(); ++i) mean->bias().data<float>()[i] = float(b[i] / n);
  const test::SerialEval want = serial_eval(*mean, *data);
  ASSERT_GT(want.min_margin, 1e-3);

  EvalOptions opt;
  opt.batch_size = 4;
  opt.comm = &comm;
  std::optional<EvalResult> got;
  const bool ran = sgp.consensus_eval([&] { got = evaluate(*model, data, opt); });
  EXPECT_EQ(ran, n > 1);  // one rank has no consensus model
  if (ran) {
    ASSERT_TRUE(got.has_value());
    EXPECT_EQ(got->count, 11);
    EXPECT_EQ(got->correct, want.correct);
    EXPECT_EQ(got->correct5, want.correct5);
    // Mean weights from the f32 allreduce differ from the reference's by an ulp or so.
    EXPECT_NEAR(got->loss, want.loss_sum / 11.0, 1e-5);
  }
  EXPECT_EQ(model->weight().to_vector(), own->weight().to_vector());
  EXPECT_EQ(model->bias().to_vector(), own->bias().to_vector());
}

}  // namespace
}  // namespace dplab
