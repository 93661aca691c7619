// Resume of every algorithm (issue #16 item 2): a run that checkpoints after k steps and goes on
// to N, against fresh model, arena, optimizer and strategy objects that load what every rank
// wrote at k (through a safetensors file, as the trainer does) and run k..N. The final
// parameters of every rank must be bitwise equal, and equal to a run that never checkpointed
// (mid-epoch checkpoints are taken without drain(); an epoch end drains anyway). Snapshots are
// taken in the middle of an epoch and at an epoch boundary, at points where the algorithm's own
// state matters (DC-S3GD with an update not yet sent, DASO after a plateau changed B and S, hybrid
// inside a stage-2 accumulation window, SGP with unequal push-sum weights, Oscars inside a round,
// ...), and one restart per algorithm that loads the model and the optimizer but NOT the strategy
// state must end elsewhere: the comparison detects missing state.
//
// The loop below makes the training loop's calls (comm/strategy.h, train/loop/trainer.cpp):
// begin_epoch at the start of every epoch and of a resumed one, end_epoch + drain at every
// epoch end, drain before a checkpoint. Ranks train on different batches (rank_batch).
#include <gtest/gtest.h>

#include <mpi.h>
#include <unistd.h>
#include "common/harness.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <set>

#include "common/mnist_replica.h"
#include "dplab/comm/algorithms/daso.h"
#include "dplab/comm/algorithms/dcs3gd.h"
#include "dplab/comm/algorithms/sgp.h"
#include "dplab/comm/algorithms/slowmo.h"
#include "dplab/comm/mpi_env.h"
#include "dplab/comm/registry.h"
#include "dplab/core/autograd.h"
#include "dplab/core/error.h"
#include "dplab/core/ops/loss.h"
#include "dplab/core/safetensors.h"

namespace dplab {
namespace {

using test::error_of;

constexpr int kB = 4;      // per-rank batch
constexpr int64_t kT = 6;  // steps per epoch
constexpr int64_t kE = 3;  // epochs
constexpr int64_t kN = kT * kE;

int world_rank() {
  return MpiEnv::get().world_rank();
}

// One rank's training objects, built from scratch.
struct Replica {
  test::MnistReplica rep;
  std::unique_ptr<Strategy> strategy;
  TrainContext ctx;
  Replica(const Options& opt, uint64_t seed) : rep(seed, 0.05, 0.9, 1e-4) {
    strategy = make_strategy(opt);
    ctx.model = rep.model.get();
    ctx.arena = rep.arena.get();
    ctx.optimizer = rep.sgd.get();
    ctx.options = &opt;
    strategy->setup(ctx);
  }
};

struct Snapshot {
  int64_t at = 0;      // steps done
  bool drain = false;  // drain() before saving (changes DASO's and DC-S3GD's trajectories)
};

// Runs steps [from, to) of the kE x kT loop; after step count g in `snaps`, calls on_snap(g).
void run(Replica& r, int64_t from, int64_t to, const std::vector<Snapshot>& snaps,
         const std::function<void(int64_t)>& on_snap) {
  const int R = world_rank();
  for (int64_t g = from; g < to; ++g) {
    const int64_t epoch = g / kT, t = g % kT;
    if (t == 0 || g == from) r.strategy->begin_epoch(epoch);
    StepInfo info;
    info.epoch = epoch;
    info.step_in_epoch = t;
    info.global_step = g;
    info.steps_per_epoch = kT;
    info.total_epochs = kE;
    const StepPlan plan = r.strategy->plan(info);
    if (plan.compute) {
      if (plan.zero_grad) r.rep.sgd->zero_grad();
      r.strategy->before_forward(info);
      Tensor x, y;
      test::rank_batch(R, epoch, t, kB, x, y);
      backward(cross_entropy(r.rep.model->forward(x), y));
      r.strategy->after_backward(info);
      if (plan.optimizer_step) r.rep.sgd->step();
    }
    r.strategy->after_step(info);
    const int64_t done = g + 1;
    if (done % kT == 0) {
      // A constant epoch loss: DASO's plateau detector sees no progress and cycles B and S.
      r.strategy->end_epoch(epoch, 1.0);
      if (done == kN) r.strategy->finish_training();
      r.strategy->drain();
    }
    for (const Snapshot& s : snaps)
      if (s.at == done) {
        if (s.drain && done % kT != 0) r.strategy->drain();
        on_snap(done);
      }
  }
}

// This rank's checkpoint: model parameters, optimizer state, strategy state ("algo." names;
// tensors as tensors, values as metadata), written to and read back from a safetensors file.
std::string write_snapshot(const std::string& dir, int64_t at, Replica& r) {
  const std::string path =
      dir + "/rank" + std::to_string(world_rank()) + "_at" + std::to_string(at) + ".safetensors";
  std::vector<NamedTensor> tensors = {{"model.params", r.rep.arena->params()}};
  for (auto& t : r.rep.sgd->state()) tensors.push_back(t);
  StateDict algo;
  r.strategy->save_state(algo);
  std::map<std::string, std::string> meta;
  for (const auto& t : algo.tensors()) tensors.push_back({"algo." + t.name, t.tensor});
  for (const auto& [k, v] : algo.values()) meta["algo." + k] = v;
  save_safetensors(path, tensors, meta);
  return path;
}

StateDict read_algo_state(const std::string& path) {
  std::map<std::string, std::string> meta;
  std::vector<NamedTensor> all = load_safetensors(path, &meta);
  StateDict sd(path);
  sd.assign(std::move(all), std::move(meta));
  return sd.sub("algo.");
}

// Loads the model and optimizer of `path` into `r`, and the strategy state unless told not to.
void load_snapshot(const std::string& path, Replica& r, bool strategy_state) {
  std::vector<NamedTensor> all = load_safetensors(path);
  std::vector<NamedTensor> optim;
  bool have_model = false;
  for (auto& t : all) {
    if (t.name == "model.params") {
      Tensor params = r.rep.arena->params();  // a handle on the arena
      params.copy_(t.tensor);
      have_model = true;
    } else if (t.name.rfind("optim.", 0) == 0) {
      optim.push_back(t);
    }
  }
  ASSERT_TRUE(have_model);
  r.rep.sgd->load_state(optim);
  if (strategy_state) r.strategy->load_state(read_algo_state(path));
}

double max_abs_diff(const Tensor& a, const Tensor& b) {
  const auto va = a.to_vector(), vb = b.to_vector();
  EXPECT_EQ(va.size(), vb.size());
  double m = 0;
  for (size_t i = 0; i < va.size() && i < vb.size(); ++i)
    m = std::max(m, std::fabs(double(va[i]) - double(vb[i])));
  return m;
}

struct Case {
  std::string algo;
  std::map<std::string, std::string> options;
  std::vector<Snapshot> snaps;  // [0]: where the restart without strategy state is checked
  bool state_matters = true;    // false: the algorithm keeps nothing beyond model + optimizer
  // false: the run depends on measured times (Oscars' profile), so a second run from scratch
  // is not the same run; only the resume from its checkpoints is compared.
  bool deterministic = true;
  // Checks that the state at snaps[0] is the interesting one (read back from the file).
  std::function<void(const StateDict&)> check_interesting;
  // Further checks on the state saved at any snapshot.
  std::function<void(int64_t, const StateDict&)> check_at;
  // Called on the reference replica right after setup (SGP: unequal push-sum weights).
  std::function<void(Replica&)> prepare;
};

Options options_of(const Case& c) {
  Options opt;
  opt.set("algo", c.algo);
  for (const auto& [k, v] : c.options) opt.set(k, v);
  return opt;
}

// MAX over the world of a per-rank number (an extra MPI collective on a scratch tensor).
double all_max(Replica& r, double v) {
  (void)r;
  Tensor t = Tensor::full({1}, v, DType::f32);
  MPI_Allreduce(MPI_IN_PLACE, t.data<float>(), 1, MPI_FLOAT, MPI_MAX, MPI_COMM_WORLD);
  return double(t.data<float>()[0]);
}

void check_resume(const Case& c) {
  const Options opt = options_of(c);
  const int R = world_rank();
  const std::string dir = (std::filesystem::temp_directory_path() /
                           ("dplab_resume_" + c.algo + "_" + std::to_string(::getpid())))
                              .string();
  std::filesystem::create_directories(dir);
  std::map<int64_t, std::string> files;

  // The reference: N steps, checkpointing (and continuing) at every snapshot.
  Replica ref(opt, 1234);
  if (c.prepare) c.prepare(ref);
  run(ref, 0, kN, c.snaps, [&](int64_t at) { files[at] = write_snapshot(dir, at, ref); });
  const Tensor final_ref = ref.rep.arena->params().clone();
  if (c.check_interesting) c.check_interesting(read_algo_state(files.at(c.snaps[0].at)));
  if (c.check_at)
    for (const Snapshot& s : c.snaps) c.check_at(s.at, read_algo_state(files.at(s.at)));
  const bool drains_mid_epoch = std::any_of(
      c.snaps.begin(), c.snaps.end(), [](const Snapshot& s) { return s.drain && s.at % kT != 0; });
  if (c.deterministic && !drains_mid_epoch) {
    // Checkpointing without drain() leaves the run as it was: equal to one that never saved.
    Replica plain(opt, 1234);
    if (c.prepare) c.prepare(plain);
    run(plain, 0, kN, {}, {});
    EXPECT_EQ(max_abs_diff(plain.rep.arena->params(), final_ref), 0.0)
        << c.algo << ": checkpointing changed the run on rank " << R;
  }

  for (const Snapshot& s : c.snaps) {
    // Fresh objects, from another seed: everything must come from the checkpoint.
    Replica res(opt, 999 + uint64_t(R));
    load_snapshot(files.at(s.at), res, true);
    run(res, s.at, kN, {}, {});
    const double d = max_abs_diff(res.rep.arena->params(), final_ref);
    EXPECT_EQ(d, 0.0) << c.algo << ": resumed at step " << s.at << " on rank " << R;
  }
  if (c.state_matters) {
    // The same restart without the strategy's state must not reproduce the run.
    Replica bare(opt, 999 + uint64_t(R));
    load_snapshot(files.at(c.snaps[0].at), bare, false);
    run(bare, c.snaps[0].at, kN, {}, {});
    const double d = all_max(bare, max_abs_diff(bare.rep.arena->params(), final_ref));
    EXPECT_GT(d, 0.0) << c.algo << ": a restart at step " << c.snaps[0].at
                      << " without the strategy state equals the run; the test cannot see "
                         "missing state";
  }
  std::filesystem::remove_all(dir);
}

TEST(Resume, AllReduce) {
  Case c;
  c.algo = "allreduce";
  c.options = {{"allreduce.bucket_cap_mb", "0.01"}};
  c.snaps = {{9}, {12}};
  c.state_matters = false;
  check_resume(c);
}

TEST(Resume, Hybrid) {
  // split = thirds with 3 epochs: stage 1, 2, 3 = epochs 0, 1, 2. W = 3 (global counter):
  // stage 2 steps at global steps 6 (on the carried stage-1 gradient plus its own) and 9 (on
  // the gradients of 7, 8 and 9); 10 and 11 accumulate and are dropped when stage 3 starts.
  Case c;
  c.algo = "hybrid";
  c.options = {{"hybrid.split", "thirds"}, {"hybrid.W", "3"}, {"hybrid.R", "2"}};
  // 9: steps 7 and 8 accumulated, step 9 adds its own and steps. 6: the stage-1 gradient
  // carries into stage 2. 14: stage 3, the models differ between ranks.
  c.snaps = {{9}, {6}, {14}};
  c.check_interesting = [](const StateDict& s) {
    EXPECT_EQ(s.get_int("stage"), 2);
    EXPECT_GT(max_abs_diff(s.tensor("grad"), Tensor::zeros(s.tensor("grad").shape())), 0.0);
  };
  check_resume(c);
}

TEST(Resume, Daso) {
  // 4 ranks as 2 virtual nodes x 2, no warm-up or cool-down: B = 4, S = 2 in epochs 0 and 1;
  // the constant loss is a plateau at the end of epoch 1 (patience 0): B = 2, S = 1 in epoch 2.
  Case c;
  c.algo = "daso";
  c.options = {
      {"ranks_per_node", "2"},     {"daso.B_max", "4"},           {"daso.S", "2"},
      {"daso.warmup_epochs", "0"}, {"daso.cooldown_epochs", "0"}, {"daso.plateau_patience", "0"}};
  // 12: after the plateau. 7: step 6 sent a sync due at step 8, saved in flight (waited for,
  // merged after the resume at step 8).
  c.snaps = {{12}, {7}};
  c.check_interesting = [](const StateDict& s) {
    EXPECT_EQ(s.get_int("cycle.B"), 2);
    EXPECT_EQ(s.get_int("cycle.S"), 1);
    EXPECT_EQ(s.get_int("cycle.plateaus"), 1);
  };
  c.check_at = [](int64_t at, const StateDict& s) {
    if (at != 7) return;
    // One sync in flight: (send 6, merge 8, group 0, S 2) in epoch-relative batches 0 -> 2.
    EXPECT_EQ(s.get_ints("pending"), (std::vector<int64_t>{0, 2, 0, 2}));
    EXPECT_EQ(s.has("pending.0.sum"), world_rank() % 2 == 0);  // local rank 0: the members
  };
  check_resume(c);
}

TEST(Resume, DasoDrainedInTheMiddleOfAnEpoch) {
  // drain() merges the pending sync early; the run that saved and the resumed one both have it.
  Case c;
  c.algo = "daso";
  c.options = {
      {"ranks_per_node", "2"},     {"daso.B_max", "4"},           {"daso.S", "2"},
      {"daso.warmup_epochs", "0"}, {"daso.cooldown_epochs", "0"}, {"daso.plateau_patience", "0"}};
  c.snaps = {{7, true}};
  c.state_matters = false;  // nothing pending after the drain; the schedule is rebuilt the same
  c.check_interesting = [](const StateDict& s) { EXPECT_TRUE(s.get_ints("pending").empty()); };
  check_resume(c);
}

TEST(Resume, Dcs3gd) {
  Case c;
  c.algo = "dcs3gd";
  c.options = {{"dcs3gd.progress_us", "0"}};
  // 9: S is an update not yet sent. 12: drained at the epoch end (S folded into W-bar).
  c.snaps = {{9}, {12}};
  c.check_interesting = [](const StateDict& s) {
    EXPECT_TRUE(s.get_bool("pending"));
    EXPECT_GT(max_abs_diff(s.tensor("V"), Tensor::zeros(s.tensor("V").shape())), 0.0);
  };
  check_resume(c);
}

TEST(Resume, Dcs3gdDrainedInTheMiddleOfAnEpoch) {
  // drain() folds S into W-bar (W = W-bar): the run that saved and the resumed one both have it.
  Case c;
  c.algo = "dcs3gd";
  c.options = {{"dcs3gd.progress_us", "0"}};
  c.snaps = {{9, true}};
  c.check_interesting = [](const StateDict& s) { EXPECT_FALSE(s.get_bool("pending")); };
  check_resume(c);
}

TEST(Resume, Crossover) {
  // Interval 4 in epochs of 6: intervals are steps 0-3 and 4-5 of each epoch.
  Case c;
  c.algo = "crossover";
  c.options = {{"crossover.interval", "4"}, {"seed", "7"}};
  c.snaps = {{8}, {12}};  // 8: two micro-batches of an interval accumulated
  c.check_interesting = [](const StateDict& s) { EXPECT_EQ(s.get_int("micro"), 2); };
  check_resume(c);
}

TEST(Resume, Sgp) {
  Case c;
  c.algo = "sgp";
  // 1: after one gossip the weights still differ (on 4 ranks the exponential graph averages
  // them exactly in two rounds; after that w = 0.875 everywhere, which still scales the steps).
  c.snaps = {{1}, {9}, {12}};
  c.prepare = [](Replica& r) {
    // Unequal push-sum weights (before the first gossip): x = w·z and the mixing of w matter.
    dynamic_cast<SgpStrategy&>(*r.strategy).set_push_sum_weight(0.5f + 0.25f * float(world_rank()));
  };
  c.check_interesting = [](const StateDict& s) {
    const auto w = s.get_doubles("weights");
    ASSERT_EQ(w.size(), 4u);
    EXPECT_NE(*std::min_element(w.begin(), w.end()), *std::max_element(w.begin(), w.end()));
  };
  check_resume(c);
}

TEST(Resume, Oscars) {
  // Fixed iteration times: the search gives tau = 3, 3, 1, 1 (T* = 3000 us), rounds of 3 ticks.
  Case c;
  c.algo = "oscars";
  c.options = {{"oscars.t_us", "1000,1000,2000,3000"}};
  c.snaps = {{7}, {12}};  // 7: one tick into a round
  c.check_interesting = [](const StateDict& s) {
    EXPECT_EQ(s.get_ints("tau"), (std::vector<int64_t>{3, 3, 1, 1}));
    EXPECT_EQ(s.get_int("round_pos"), 1);
  };
  check_resume(c);
}

TEST(Resume, OscarsAfterProfiling) {
  // tau from measured iteration times: profile 1 + 2 ticks, then the search; the resumed run
  // must take the schedule from the checkpoint, not from its own (different) timings.
  Case c;
  c.algo = "oscars";
  c.options = {{"oscars.profile_discard", "1"},
               {"oscars.profile_measure", "2"},
               {"oscars.tau_max", "3"},
               {"oscars.M", "2"}};
  c.snaps = {{5}, {12}};
  c.deterministic = false;
  c.state_matters = false;  // with equal measured times tau may be 1 everywhere (= profiling)
  c.check_interesting = [](const StateDict& s) {
    EXPECT_FALSE(s.get_bool("profiling"));
    EXPECT_EQ(s.get_int("searches"), 1);
    EXPECT_EQ(s.get_ints("tau").size(), 4u);
    EXPECT_EQ(s.get_ints("samples_us").size(), 3u);  // every profiled tick; the median uses 2
  };
  check_resume(c);
}

TEST(Resume, LocalSgd) {
  Case c;
  c.algo = "local_sgd";
  c.options = {{"local_sgd.H", "4"}};
  c.snaps = {{8}, {12}};  // 8: two local steps into a period
  c.check_interesting = [](const StateDict& s) { EXPECT_EQ(s.get_int("since_average"), 2); };
  check_resume(c);
}

TEST(Resume, PostLocalSgd) {
  Case c;
  c.algo = "post_local_sgd";
  c.options = {{"local_sgd.H", "4"}, {"post_local_sgd.switch_epoch", "1"}};
  c.snaps = {{8}, {6}};  // 6: the switch to local SGD
  c.check_interesting = [](const StateDict& s) {
    EXPECT_EQ(s.get_int("since_average"), 2);
    EXPECT_FALSE(s.get_bool("allreduce_phase"));
  };
  check_resume(c);
}

TEST(Resume, DiLoCo) {
  // H = 4 with 6 steps per epoch: outer steps after steps 4 and 6 of every epoch.
  Case c;
  c.algo = "diloco";
  c.options = {{"diloco.H", "4"}};
  c.snaps = {{8}, {15}};  // 8: two inner steps into a round, after two outer steps
  c.check_interesting = [](const StateDict& s) {
    EXPECT_EQ(s.get_int("inner_steps"), 2);
    EXPECT_EQ(s.get_int("outer_steps"), 2);
    EXPECT_GT(
        max_abs_diff(s.tensor("outer_momentum"), Tensor::zeros(s.tensor("outer_momentum").shape())),
        0.0);
  };
  check_resume(c);
}

TEST(Resume, SlowMo) {
  Case c;
  c.algo = "slowmo";
  c.options = {{"slowmo.frequency", "4"}};
  c.snaps = {{9}, {13}};  // 9: three base steps into a round, after two slow steps
  c.check_interesting = [](const StateDict& s) {
    EXPECT_EQ(s.get_int("local_steps"), 3);
    EXPECT_EQ(s.get_int("rounds"), 2);
    EXPECT_GT(
        max_abs_diff(s.tensor("slow_momentum"), Tensor::zeros(s.tensor("slow_momentum").shape())),
        0.0);
  };
  check_resume(c);
}

TEST(Resume, SlowMoOverSgp) {
  // slowmo.base = sgp, τ = 4, from unequal push-sum weights: at 1 (and 3) the weights differ
  // (one gossip in), at 9 and 13 a round is in progress after averages reset them to 1.
  Case c;
  c.algo = "slowmo";
  c.options = {{"slowmo.frequency", "4"}, {"slowmo.base", "sgp"}};
  c.snaps = {{1}, {3}, {9}, {13}};
  c.prepare = [](Replica& r) {
    dynamic_cast<SlowMoStrategy&>(*r.strategy)
        .sgp()
        ->set_push_sum_weight(0.5f + 0.25f * float(world_rank()));
  };
  c.check_interesting = [](const StateDict& s) {
    EXPECT_EQ(s.get_string("base"), "sgp");
    const auto w = s.get_doubles("sgp.weights");
    ASSERT_EQ(w.size(), 4u);
    EXPECT_NE(*std::min_element(w.begin(), w.end()), *std::max_element(w.begin(), w.end()));
  };
  c.check_at = [](int64_t at, const StateDict& s) {
    if (at == 9) {
      EXPECT_EQ(s.get_int("local_steps"), 3);
      EXPECT_EQ(s.get_double("sgp.push_sum_weight"), 1.0);
    }
  };
  check_resume(c);
}

TEST(Resume, StreamingDiLoCo) {
  // H = 4, P = 2, τ = 1: fragment 0 sends after steps 2, 6, 10, 14, fragment 1 after 4, 8, 12,
  // 16, each applied one step later; the schedule runs across epochs.
  Case c;
  c.algo = "streaming_diloco";
  c.options = {{"streaming_diloco.H", "4"},
               {"streaming_diloco.fragments", "2"},
               {"streaming_diloco.fragment_sync_delay", "1"}};
  c.snaps = {{14}, {8}, {11}};  // 14, 8: an exchange in flight; 11: none
  c.check_interesting = [](const StateDict& s) {
    EXPECT_EQ(s.get_int("pending_fragment"), 0);
    EXPECT_EQ(s.get_int("pending_sent_at"), 14);
    EXPECT_EQ(s.get_ints("outer_steps"), (std::vector<int64_t>{3, 3}));
  };
  check_resume(c);
}

TEST(Resume, StreamingDiLoCoQuantized) {
  // As above with int4 outer gradients (allgathered codes and scales, decoded at the wait): the
  // exchange in flight at 14 and 8 is saved decoded and applied after the resume at its step.
  Case c;
  c.algo = "streaming_diloco";
  c.options = {{"streaming_diloco.H", "4"},
               {"streaming_diloco.fragments", "2"},
               {"streaming_diloco.fragment_sync_delay", "1"},
               {"streaming_diloco.quantize", "int4"},
               {"streaming_diloco.quantize_block", "32"}};
  c.snaps = {{14}, {8}, {11}};
  c.check_interesting = [](const StateDict& s) {
    EXPECT_EQ(s.get_int("pending_fragment"), 0);
    EXPECT_EQ(s.get_int("pending_sent_at"), 14);
  };
  check_resume(c);
}

TEST(Resume, StreamingDiLoCoStridedFp4TwoPhaseExchange) {
  // Strided fragments, fp4_e2m1 outer gradients, H = 8, P = 2, τ = 2: fragment 0 sends after
  // steps 4 and 12, fragment 1 after 8 and 16, each applied two steps later; the quantised
  // exchange's second half (reduce, requantise, allgather) is posted one step after the send.
  // 9: that second half in flight; 8: the first (the shards); 11: nothing in flight.
  Case c;
  c.algo = "streaming_diloco";
  c.options = {{"streaming_diloco.H", "8"},
               {"streaming_diloco.fragments", "2"},
               {"streaming_diloco.fragment_pattern", "strided"},
               {"streaming_diloco.fragment_sync_delay", "2"},
               {"streaming_diloco.quantize", "fp4_e2m1"},
               {"streaming_diloco.quantize_block", "32"}};
  c.snaps = {{9}, {8}, {11}};
  c.check_interesting = [](const StateDict& s) {
    EXPECT_EQ(s.get_int("pending_fragment"), 1);
    EXPECT_EQ(s.get_int("pending_sent_at"), 8);
    EXPECT_EQ(s.get_int("fragment_strided"), 1);
  };
  check_resume(c);
}

// Rounds spanning epochs (periodic-sync skeleton, comm/algorithms/periodic_sync.h): H = 4 over
// epochs of 6 steps, rounds end after global steps 4, 8, 12, 16 and at the end of training (18).
// 6: the epoch's end, two steps into a round that goes on into the next epoch.
TEST(Resume, LocalSgdRoundSpanningEpochs) {
  Case c;
  c.algo = "local_sgd";
  c.options = {{"local_sgd.H", "4"}, {"local_sgd.round_spans_epochs", "true"}};
  c.snaps = {{6}, {14}};
  c.check_interesting = [](const StateDict& s) {
    EXPECT_EQ(s.get_int("since_average"), 2);
    EXPECT_EQ(s.get_int("averages"), 1);
  };
  check_resume(c);
}

TEST(Resume, DiLoCoRoundSpanningEpochs) {
  Case c;
  c.algo = "diloco";
  c.options = {{"diloco.H", "4"}, {"diloco.round_spans_epochs", "true"}};
  c.snaps = {{6}, {13}};
  c.check_interesting = [](const StateDict& s) {
    EXPECT_EQ(s.get_int("inner_steps"), 2);
    EXPECT_EQ(s.get_int("outer_steps"), 1);
  };
  check_resume(c);
}

// streaming_diloco.round_spans_epochs = false: a full sync at every epoch's end, then the
// schedule starts again: at 8 (step 2 of epoch 1) fragment 0 is in flight, sent at step 2 of
// the round.
TEST(Resume, StreamingDiLoCoFullSyncAtEpochEnds) {
  Case c;
  c.algo = "streaming_diloco";
  c.options = {{"streaming_diloco.H", "4"},
               {"streaming_diloco.fragments", "2"},
               {"streaming_diloco.fragment_sync_delay", "1"},
               {"streaming_diloco.round_spans_epochs", "false"}};
  c.snaps = {{8}, {12}, {15}};
  c.check_interesting = [](const StateDict& s) {
    EXPECT_EQ(s.get_int("inner_steps"), 2);
    EXPECT_EQ(s.get_int("rounds"), 1);
    EXPECT_EQ(s.get_int("pending_fragment"), 0);
    EXPECT_EQ(s.get_int("pending_sent_at"), 2);
  };
  check_resume(c);
}

TEST(Resume, LoadStateRejectsMismatches) {
  Options opt;
  opt.set("algo", "dcs3gd");
  Replica r(opt, 1);
  StateDict good;
  r.strategy->save_state(good);

  // Another algorithm's state.
  Options lopt;
  lopt.set("algo", "local_sgd");
  Replica l(lopt, 1);
  EXPECT_NE(error_of([&] { l.strategy->load_state(good); }).find("'algorithm'"), std::string::npos);

  // A tensor of the wrong shape.
  StateDict bad;
  for (const auto& t : good.tensors())
    bad.put_tensor(t.name, t.name == "V" ? Tensor::zeros({3}) : t.tensor);
  for (const auto& [k, v] : good.values()) bad.put_string(k, v);
  EXPECT_NE(error_of([&] { r.strategy->load_state(bad); }).find("'V'"), std::string::npos);

  // A missing entry and an out-of-range value.
  StateDict lstate;
  l.strategy->save_state(lstate);
  StateDict missing, range;
  for (const auto& [k, v] : lstate.values()) {
    if (k != "averages") missing.put_string(k, v);
    range.put_string(k, k == "since_average" ? std::string("4") : v);  // H = 4: at most 3
  }
  EXPECT_NE(error_of([&] { l.strategy->load_state(missing); }).find("'averages'"),
            std::string::npos);
  EXPECT_NE(error_of([&] { l.strategy->load_state(range); }).find("'since_average'"),
            std::string::npos);
}

}  // namespace
}  // namespace dplab
