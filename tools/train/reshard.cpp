#include "dplab/tools/train/reshard.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>

#include "dplab/core/error.h"
#include "dplab/core/safetensors.h"
#include "dplab/core/state_dict.h"
#include "dplab/optim/optimizer.h"

namespace dplab {

namespace {

// Why each algorithm that keeps state of its own per rank refuses (docs/resharding.md).
// Refusing is the policy wherever a resharded state would not be the algorithm's own
// trajectory: a wrong continuation that looks right is worse than a clear refusal.
const std::map<std::string, std::string>& refusals() {
  static const std::map<std::string, std::string> r = {
      {"local", "it trains one process, so there is no other world size to continue on"},
      {"hybrid",
       "the hybrid stage (stage and sync count of its W/R schedule) counts rounds of the "
       "checkpoint's ranks, and each rank's gradient accumulated since its last sync is its own"},
      {"daso",
       "DASO's phase (warm-up, cycling or cool-down position, B, S and the global-sync "
       "schedule) is laid out for the checkpoint's nodes x ranks per node, and the replicas "
       "differ between global syncs"},
      {"dcs3gd",
       "each rank's delayed-correction state (W_bar, V, S and a pending update) belongs to its "
       "own model replica"},
      {"crossover",
       "its derangement schedule pairs the checkpoint's ranks, and each rank holds its own "
       "model replica and pending gradient"},
      {"sgp",
       "the push-sum weights w_i (they sum to the checkpoint's number of ranks) and the "
       "directed graph's next hop are those of the checkpoint's ranks; each rank's "
       "numerator x_i is its own"},
      {"oscars",
       "its profiled step times and the per-rank schedule (tau) are of the checkpoint's "
       "ranks"},
      {"post_local_sgd",
       "the replicas differ within a local-SGD round, and the phase switch counts the "
       "checkpoint's ranks' steps"},
      {"slowmo",
       "x_start and the slow momentum are global, but each rank's inner replica and its base "
       "algorithm's state (local SGD or SGP push-sum weights) are its own"},
      {"streaming_diloco",
       "theta, the outer momentum and the fragment schedule are global, but each rank's inner "
       "replica and its fragment in flight are its own"},
  };
  return r;
}

int64_t config_int(const Manifest& m, const std::string& key) {
  const std::string where = (m.dir / "manifest.json").string();
  auto it = m.config.find(key);
  DPLAB_CHECK(it != m.config.end(), "{}: key 'config.{}' missing (needed by --reshard)", where,
              key);
  try {
    size_t used = 0;
    const int64_t v = std::stoll(it->second, &used);
    if (used == it->second.size()) return v;
  } catch (const std::exception&) {
  }
  DPLAB_FAIL("{}: key 'config.{}' = '{}': expected an integer", where, key, it->second);
}

// Every rank file of `m` as a StateDict.
StateDict read_rank_file(const Manifest& m, const ManifestFile& f) {
  const std::string file = (m.dir / f.name).string();
  std::map<std::string, std::string> meta;
  std::vector<NamedTensor> tensors = load_safetensors(file, &meta);  // fills meta first
  StateDict s(file);
  s.assign(std::move(tensors), std::move(meta));
  return s;
}

// The optim.* tensors of every rank file of `m`, f32 ones averaged (summed in double, in rank
// order), the others required equal (step counts).
std::vector<NamedTensor> averaged_optimizer_state(const Manifest& m) {
  std::vector<NamedTensor> avg;
  std::vector<std::vector<double>> sums;
  for (const ManifestFile& f : m.files) {
    const StateDict s = read_rank_file(m, f);
    std::vector<NamedTensor> mine;
    for (const auto& t : s.tensors())
      if (t.name.starts_with("optim.")) mine.push_back(t);
    if (avg.empty()) {
      avg = mine;
      for (auto& t : avg) {
        t.tensor = t.tensor.clone();
        sums.emplace_back(t.tensor.dtype() == DType::f32 ? size_t(t.tensor.numel()) : 0, 0.0);
      }
    }
    DPLAB_CHECK(mine.size() == avg.size(), "{}: {} optimizer tensors, {} has {}", s.origin(),
                mine.size(), m.files[0].name, avg.size());
    for (size_t i = 0; i < avg.size(); ++i) {
      const Tensor& a = avg[i].tensor;
      const Tensor& b = mine[i].tensor;
      DPLAB_CHECK(mine[i].name == avg[i].name && a.dtype() == b.dtype() && a.shape() == b.shape(),
                  "{}: optimizer tensor '{}' {} does not match {}'s '{}' {}", s.origin(),
                  mine[i].name, b.str(), m.files[0].name, avg[i].name, a.str());
      if (a.dtype() == DType::f32) {
        const float* x = b.data<float>();
        for (int64_t k = 0; k < b.numel(); ++k) sums[i][size_t(k)] += double(x[k]);
      } else {
        DPLAB_CHECK(std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0,
                    "{}: optimizer state '{}' differs from {}'s, and only f32 state is "
                    "averaged",
                    s.origin(), mine[i].name, m.files[0].name);
      }
    }
  }
  for (size_t i = 0; i < avg.size(); ++i)
    if (avg[i].tensor.dtype() == DType::f32) {
      float* y = avg[i].tensor.data<float>();
      for (size_t k = 0; k < sums[i].size(); ++k) y[k] = float(sums[i][k] / double(m.world_size));
    }
  return avg;
}

}  // namespace

ReshardPolicy reshard_policy(const std::string& algo,
                             const std::map<std::string, std::string>& config) {
  ReshardPolicy p;
  if (algo == "allreduce") {
    auto c = config.find("allreduce.compress");
    if (c != config.end() && c->second != "none") {
      p.refusal = fmt::format(
          "gradient compression (allreduce.compress = {}) keeps error-feedback residuals per "
          "rank",
          c->second);
      return p;
    }
    p.reshards = true;
    p.consensus = "rank 0's model and optimizer (every replica is identical after each step)";
    return p;
  }
  // At a round's end every replica is the same (DiLoCo: theta; local SGD: the average), and
  // what stays per rank is the inner optimizer's state.
  if (algo == "diloco") {
    p.reshards = true;
    p.round_key = "inner_steps";
    p.average_optimizer = true;
    p.consensus =
        "at a round's end: rank 0's model (theta on every rank), theta and the outer "
        "optimizer's state (global); the inner optimizer's state averaged over the ranks";
    return p;
  }
  if (algo == "local_sgd") {
    p.reshards = true;
    p.round_key = "since_average";
    p.average_optimizer = true;
    p.consensus =
        "at a round's end: rank 0's model (the average on every rank); the optimizer's state "
        "averaged over the ranks";
    return p;
  }
  auto it = refusals().find(algo);
  p.refusal = it != refusals().end()
                  ? it->second
                  : "it has no resharding policy (an algorithm registered outside dplab's own)";
  return p;
}

int64_t resharded_step_in_epoch(int64_t samples_in_epoch, int world, int64_t batch) {
  const int64_t global = int64_t(world) * batch;
  DPLAB_CHECK(samples_in_epoch % global == 0,
              "--reshard: the checkpoint's epoch is {} samples in (the global sample counter); "
              "{} ranks x batch {} = {} samples per step do not divide it, so the epoch's next "
              "samples would not start a step",
              samples_in_epoch, world, batch, global);
  return samples_in_epoch / global;
}

int64_t checkpoint_samples_in_epoch(const Manifest& m) {
  const int64_t counted = m.step_in_epoch * m.world_size * config_int(m, "batch");
  DPLAB_CHECK(m.samples_in_epoch < 0 || m.samples_in_epoch == counted,
              "{}: key 'samples_in_epoch' = {}, but step_in_epoch {} x world_size {} x batch {} "
              "= {}",
              (m.dir / "manifest.json").string(), m.samples_in_epoch, m.step_in_epoch, m.world_size,
              config_int(m, "batch"), counted);
  return counted;
}

std::vector<std::string> plan_reshard(const Manifest& m, int world, int64_t batch,
                                      const std::vector<std::string>& overrides) {
  const ReshardPolicy policy = reshard_policy(m.algo, m.config);
  DPLAB_CHECK(policy.reshards,
              "--resume {} --reshard: algorithm {} cannot continue on {} ranks from a checkpoint "
              "of {}: {} (docs/resharding.md)",
              m.dir.string(), m.algo, world, m.world_size, policy.refusal);
  if (!policy.round_key.empty()) {
    const StateDict s = read_rank_file(m, m.files[0]);
    const int64_t into = s.get_int("algo." + policy.round_key);
    DPLAB_CHECK(into == 0,
                "--resume {} --reshard: algorithm {} reshards only at a round's end, where every "
                "replica is the same; this checkpoint is {} steps into a round (state value "
                "'algo.{}' in {}): resume from a checkpoint written at a round's end",
                m.dir.string(), m.algo, into, policy.round_key, s.origin());
  }
  // The same global batch keeps the step count of every epoch, and with it the global step,
  // the lr schedule's position and the sample counter's step boundaries.
  const int64_t old_batch = config_int(m, "batch");
  const int64_t global = int64_t(m.world_size) * old_batch;
  if (int64_t(world) * batch != global) {
    const std::string fix = global % world == 0
                                ? fmt::format("with {} ranks use --batch {}", world, global / world)
                                : fmt::format("no per-rank batch gives it on {} ranks", world);
    DPLAB_FAIL(
        "--resume {} --reshard: the global batch must stay {} ({} ranks x batch {}) so that "
        "the epoch's steps and the sample position carry over; {} ranks x batch {} = {}: {}",
        m.dir.string(), global, m.world_size, old_batch, world, batch, int64_t(world) * batch, fix);
  }
  resharded_step_in_epoch(checkpoint_samples_in_epoch(m), world, batch);  // divides: same batch
  std::vector<std::string> r = overrides;
  if (batch != old_batch) r.push_back("batch");
  return r;
}

LoopState load_resharded_state(const Manifest& m, int rank, const TrainingParts& parts,
                               int64_t steps_per_epoch) {
  const ReshardPolicy policy = reshard_policy(m.algo, m.config);
  // Identical replicas: rank 0's file is every replica's state (its own checks apply).
  LoopState loop = load_rank_state(m, 0, parts, steps_per_epoch);
  if (policy.average_optimizer) parts.optimizer->load_state(averaged_optimizer_state(m));
  // The epoch's partial sums are per rank; the world's are their sum (tools/train/epoch_loss.h),
  // so the new rank 0 takes every old rank's and the others start from zero.
  loop.epoch_loss_sum = 0;
  loop.epoch_correct = 0;
  loop.epoch_seen = 0;
  if (rank != 0) return loop;
  for (const ManifestFile& f : m.files) {
    const StateDict s = read_rank_file(m, f);
    const std::string& file = s.origin();
    const double sum = s.get_double("loop.epoch_loss_sum");
    const int64_t seen = s.get_int("loop.epoch_seen"), correct = s.get_int("loop.epoch_correct");
    DPLAB_CHECK(std::isfinite(sum) && sum >= 0 && seen >= 0 && correct >= 0 && correct <= seen,
                "{}: state values 'loop.epoch_loss_sum' = {}, 'loop.epoch_seen' = {}, "
                "'loop.epoch_correct' = {}: expected a finite sum >= 0 and 0 <= correct <= seen",
                file, sum, seen, correct);
    DPLAB_CHECK(s.get_int("loop.global_step") == m.step,
                "{}: state value 'loop.global_step' = {}, but its manifest is of step {}", file,
                s.get_int("loop.global_step"), m.step);
    loop.epoch_loss_sum += sum;
    loop.epoch_seen += seen;
    loop.epoch_correct += correct;
  }
  return loop;
}

}  // namespace dplab
