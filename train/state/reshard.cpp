#include "dplab/train/state/reshard.h"

#include <fmt/format.h>

#include <cmath>

#include "dplab/comm/registry.h"
#include "dplab/comm/strategy.h"
#include "dplab/core/error.h"
#include "dplab/core/state_dict.h"
#include "dplab/train/state/reshard_average.h"

namespace dplab {

namespace {

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

}  // namespace

ReshardPolicy reshard_policy(const std::string& algo,
                             const std::map<std::string, std::string>& config) {
  return builtin_reshard_policy(algo, config);  // each algorithm's own (comm/registry.h)
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
  // The new world's own algorithm state, before anything is loaded: what a rule `fresh` takes.
  StateDict fresh;
  parts.strategy->save_state(fresh);
  const std::vector<StateDict> files = read_rank_files(m);
  LoopState loop = load_checkpoint_state(m, consensus_state(m, files, policy.rules, fresh), parts,
                                         steps_per_epoch);
  // The epoch's partial sums are per rank; the world's are their sum (train/report/epoch_loss.h),
  // so the new rank 0 takes every old rank's and the others start from zero.
  loop.epoch_loss_sum = 0;
  loop.epoch_correct = 0;
  loop.epoch_seen = 0;
  // The ranks down are the old world's: the new world starts with every rank live (the figures
  // of the failures so far carry over).
  loop.down.clear();
  loop.last_step_world_s = -1;
  if (rank != 0) return loop;
  for (const StateDict& s : files) {
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
