// Issue #33 item 3: every algorithm's records evaluate the same kinds of model under the same
// keys (docs/metrics_schema.md, "Evaluated models"): test_loss / test_acc the run's model (the
// global model where the algorithm keeps one, else the ranks' average where they differ) and
// test_loss_rank0 / test_acc_rank0 rank 0's own model.
//
// Each replica-keeping algorithm runs at 2 ranks (`mpiexec -n 2 dplab train`) with a checkpoint
// at the end of epoch 1, which the loop writes after the drain and before that epoch's
// evaluation: its rank files hold exactly the models evaluated. The test builds the reference
// models from them itself (rank 0's parameters; the element-wise mean of both ranks'; the
// global θ from the algorithm's state), evaluates each in this process, and checks which one
// each key of the epoch-1 record reports. The final record's test_loss is checked against
// final.safetensors, which holds the run's model.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "data/temp_dir.h"
#include "dplab/core/autograd.h"
#include "dplab/core/param_arena.h"
#include "dplab/core/safetensors.h"
#include "dplab/train/config/registry.h"
#include "dplab/train/data/evaluate.h"
#include "run_cli.h"

namespace dplab {
namespace {

namespace fs = std::filesystem;
using test::ScopedTempDir;

// 128 training images over 2 ranks in batches of 16: 4 steps per epoch; the run stops after
// step 5 (one step into epoch 2), so epoch 1 ends with a checkpoint and an evaluation.
const std::string kRun =
    "train --model mnist_cnn --data fashion-mnist --batch 16 --lr 0.05 --momentum 0.9 "
    "--threads 1 --epochs 2 --max-steps 5 --set data.train_limit=128 --set data.test_limit=100 "
    "--set progress=off --set checkpoint.keep=0 --set checkpoint.every_epochs=1";

enum class Expect {
  same,     // every rank holds one model: the run's model is rank 0's
  average,  // the ranks' models differ: the run's model is their mean
  global,   // the algorithm's global θ (algorithm state "theta_global")
};

struct Case {
  std::string algo, args, label;
  Expect expect;
};

std::ostream& operator<<(std::ostream& os, const Case& c) {
  return os << c.label;
}

// `prefix`-named tensors of a checkpoint rank file, the prefix removed.
std::map<std::string, Tensor> tensors_of(const fs::path& file, const std::string& prefix) {
  std::map<std::string, Tensor> m;
  for (NamedTensor& t : load_safetensors(file.string()))
    if (t.name.starts_with(prefix)) m[t.name.substr(prefix.size())] = t.tensor;
  return m;
}

struct Reference {
  std::shared_ptr<Module> model;
  std::shared_ptr<const Dataset> test;
};

Reference reference_setup() {
  Options opt;
  opt.set("data.train_limit", "128");
  opt.set("data.test_limit", "100");
  const Registry& r = Registry::with_builtins();
  Reference ref;
  ref.test = r.dataset("fashion-mnist").make("fashion-mnist", opt).test;
  ref.model = r.make_model("mnist_cnn", ModelArgs{0, 10, false, &opt, -1});
  return ref;
}

// The loss of the model whose parameters `params` gives (by name), one process.
double loss_of(Reference& ref, const std::map<std::string, Tensor>& params) {
  NoGradGuard no_grad;
  for (NamedTensor& p : ref.model->named_parameters()) {
    auto it = params.find(p.name);
    EXPECT_TRUE(it != params.end()) << "no tensor " << p.name;
    if (it != params.end()) p.tensor.copy_(it->second);
  }
  return evaluate(*ref.model, ref.test, 100).loss;
}

// The element-wise mean of two ranks' tensors, in double.
std::map<std::string, Tensor> mean_of(const std::map<std::string, Tensor>& a,
                                      const std::map<std::string, Tensor>& b) {
  std::map<std::string, Tensor> m;
  for (const auto& [name, ta] : a) {
    const std::vector<float> x = ta.to_vector(), y = b.at(name).to_vector();
    std::vector<float> z(x.size());
    for (size_t i = 0; i < x.size(); ++i) z[i] = float((double(x[i]) + double(y[i])) / 2);
    m[name] = Tensor::from_vector(z, ta.shape());
  }
  return m;
}

// θ (the flat parameter arena, algorithm state "theta_global") cut into the model's
// parameters at the offsets of the arena the training driver builds (core/param_arena.h), on a
// model of its own.
std::map<std::string, Tensor> global_of(const fs::path& file) {
  const std::map<std::string, Tensor> algo = tensors_of(file, "algo.");
  EXPECT_TRUE(algo.count("theta_global")) << file;
  if (!algo.count("theta_global")) return {};
  const std::vector<float> theta = algo.at("theta_global").to_vector();
  Options opt;
  auto layout_model =
      Registry::with_builtins().make_model("mnist_cnn", ModelArgs{0, 10, false, &opt, -1});
  const ParamArena arena(layout_model->named_parameters());
  EXPECT_EQ(arena.numel(), int64_t(theta.size())) << "theta_global is not this model's arena";
  std::map<std::string, Tensor> m;
  for (const ArenaSegment& seg : arena.segments())
    m[seg.name] = Tensor::from_vector(
        std::vector<float>(theta.begin() + seg.offset, theta.begin() + seg.offset + seg.numel),
        seg.shape);
  return m;
}

nlohmann::json record(const fs::path& metrics, const std::string& kind, int64_t epoch) {
  std::ifstream in(metrics);
  for (std::string line; std::getline(in, line);) {
    nlohmann::json r = nlohmann::json::parse(line);
    if (r.value("kind", "") == kind && (epoch < 0 || r.value("epoch", int64_t(-1)) == epoch))
      return r;
  }
  ADD_FAILURE() << "no " << kind << " record in " << metrics;
  return {};
}

class EvaluatedModels : public ::testing::TestWithParam<Case> {};

TEST_P(EvaluatedModels, KeysReportTheRunsModelAndRankZerosOwn) {
  const Case& c = GetParam();
  ScopedTempDir dir("evaluated-" + c.label);
  const auto r = test::run_dplab_mpi(
      2, kRun + " --algo " + c.algo + " " + c.args + " --out " + dir.file("run"), dir.path / "s");
  ASSERT_EQ(r.status, 0) << r.err;
  const fs::path ckpt = dir.path / "run" / "checkpoints" / "step_00000004";
  ASSERT_TRUE(fs::exists(ckpt / "manifest.json")) << r.out;
  Reference ref = reference_setup();
  const auto own0 = tensors_of(ckpt / "rank_0.safetensors", "model.");
  const auto own1 = tensors_of(ckpt / "rank_1.safetensors", "model.");
  const double rank0 = loss_of(ref, own0);
  double run_model = rank0;
  if (c.expect == Expect::average) run_model = loss_of(ref, mean_of(own0, own1));
  if (c.expect == Expect::global) run_model = loss_of(ref, global_of(ckpt / "rank_0.safetensors"));

  const nlohmann::json e1 = record(dir.path / "run" / "metrics.jsonl", "epoch", 1);
  ASSERT_TRUE(e1.contains("test_loss_rank0") && e1.contains("test_acc_rank0")) << e1.dump();
  // The run evaluates on 2 ranks (sums over their halves), the test on one: the same loss up
  // to the order of float sums.
  const double tol = 1e-5;
  EXPECT_NEAR(e1["test_loss_rank0"].get<double>(), rank0, tol) << c.label << ": " << e1.dump();
  EXPECT_NEAR(e1["test_loss"].get<double>(), run_model, tol) << c.label << ": " << e1.dump();
  if (c.expect == Expect::same) {
    // One model: the two keys are the same evaluation, and the ranks did hold one model.
    EXPECT_EQ(e1["test_loss"], e1["test_loss_rank0"]);
    EXPECT_EQ(e1["test_acc"], e1["test_acc_rank0"]);
    EXPECT_NEAR(loss_of(ref, own1), rank0, 1e-6) << c.label << ": the ranks' models differ";
  } else {
    // The test can tell the models apart: they differ by more than the tolerance.
    EXPECT_GT(std::abs(run_model - rank0), 100 * tol) << c.label;
  }
  // The final record's run's model is final.safetensors.
  const nlohmann::json fin = record(dir.path / "run" / "metrics.jsonl", "final", -1);
  ASSERT_TRUE(fin.contains("test_loss_rank0")) << fin.dump();
  EXPECT_NEAR(fin["test_loss"].get<double>(),
              loss_of(ref, tensors_of(dir.path / "run" / "final.safetensors", "")), tol)
      << c.label << ": " << fin.dump();
}

INSTANTIATE_TEST_SUITE_P(
    ReplicaKeepingAlgorithms, EvaluatedModels,
    ::testing::Values(
        // Rounds of 3 steps across the epoch boundary: after step 4 a round is in progress.
        Case{"local_sgd", "--set local_sgd.H=3 --set local_sgd.round_spans_epochs=true",
             "local_sgd", Expect::average},
        Case{"post_local_sgd",
             "--set post_local_sgd.switch_epoch=0 --set local_sgd.H=3 "
             "--set local_sgd.round_spans_epochs=true",
             "post_local_sgd", Expect::average},
        // Each rank its own worker (with node workers, the default, both ranks of this host are
        // one worker and hold one model).
        Case{"slowmo",
             "--set slowmo.frequency=3 --set slowmo.round_spans_epochs=true "
             "--set slowmo.node_workers=false",
             "slowmo", Expect::average},
        Case{"diloco", "--set diloco.H=3 --set diloco.round_spans_epochs=true", "diloco",
             Expect::global},
        // H 6, 2 fragments: fragment 0 sends after step 3 and is mixed in after step 4.
        Case{"streaming_diloco", "--set streaming_diloco.H=6", "streaming_diloco", Expect::global},
        // Gossip every 3rd step: after step 4 the ranks differ (at 2 ranks a gossip is the exact
        // average, and the push-sum weights stay 1, so the consensus is the plain mean).
        Case{"sgp", "--set sgp.interval=3", "sgp", Expect::average},
        // At 2 ranks every segment's gossip is the exact average: both ranks hold one model,
        // and the run's model (their average) is it.
        Case{"crossover", "", "crossover", Expect::same},
        // Local steps from the first iteration until the final average.
        Case{"hybrid", "--set hybrid.mode=only_end", "hybrid_only_end", Expect::average},
        // Rounds ending with the epoch: every rank holds the same model there.
        Case{"diloco", "--set diloco.H=3", "diloco_epoch_rounds", Expect::same},
        Case{"dcs3gd", "", "dcs3gd", Expect::same},
        Case{"allreduce", "", "allreduce", Expect::same}),
    [](const ::testing::TestParamInfo<Case>& i) { return i.param.label; });

}  // namespace
}  // namespace dplab
