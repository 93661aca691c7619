#include "dplab/train/state/checkpoint.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <ostream>

#include "dplab/comm/strategy.h"
#include "dplab/core/error.h"
#include "dplab/core/safetensors.h"
#include "dplab/core/state_dict.h"
#include "dplab/layers/module.h"
#include "dplab/optim/grad_scaler.h"
#include "dplab/optim/optimizer.h"
#include "dplab/optim/schedule.h"
#include "dplab/train/state/reshard.h"

namespace dplab {
namespace fs = std::filesystem;

namespace {

constexpr const char* kModel = "model.";
constexpr const char* kOptim = "optim.";
constexpr const char* kAmp = "amp.";
constexpr const char* kAlgo = "algo.";
constexpr const char* kSchedule = "schedule.";

std::string rank_file_name(int rank) {
  return fmt::format("rank_{}.safetensors", rank);
}

// The tensors of `s` whose names start with `prefix`; `strip` takes the prefix off.
std::vector<NamedTensor> tensors_with(const StateDict& s, const std::string& prefix, bool strip) {
  std::vector<NamedTensor> r;
  for (const auto& t : s.tensors())
    if (t.name.starts_with(prefix))
      r.push_back({strip ? t.name.substr(prefix.size()) : t.name, t.tensor});
  return r;
}

StateDict collect_rank_state(const TrainingParts& p, const LoopState& loop, int rank, int world) {
  StateDict s;
  for (const auto& nt : p.model->state_dict()) s.put_tensor(kModel + nt.name, nt.tensor);
  for (const auto& nt : p.optimizer->state()) {
    DPLAB_CHECK(nt.name.starts_with(kOptim), "optimizer '{}' state '{}' lacks the '{}' prefix",
                p.optimizer->name(), nt.name, kOptim);
    s.put_tensor(nt.name, nt.tensor);
  }
  if (p.scaler)
    for (const auto& nt : p.scaler->state()) {
      DPLAB_CHECK(nt.name.starts_with(kAmp), "GradScaler state '{}' lacks the '{}' prefix", nt.name,
                  kAmp);
      s.put_tensor(nt.name, nt.tensor);
    }
  StateDict algo;
  p.strategy->save_state(algo);
  s.merge(kAlgo, algo);
  for (const auto& [k, v] : p.schedule->state()) s.put_double(kSchedule + k, v);
  s.put_int("loop.epoch", loop.epoch);
  s.put_int("loop.step_in_epoch", loop.step_in_epoch);
  s.put_int("loop.global_step", loop.global_step);
  s.put_int("loop.optimizer_steps", loop.optimizer_steps);
  s.put_double("loop.epoch_loss_sum", loop.epoch_loss_sum);
  s.put_int("loop.epoch_correct", loop.epoch_correct);
  s.put_int("loop.epoch_seen", loop.epoch_seen);
  s.put_int("loop.nonfinite_skipped", loop.nonfinite_skipped);
  s.put_int("loop.epoch_nonfinite_skipped", loop.epoch_nonfinite_skipped);
  s.put_doubles("loop.epoch_losses", loop.epoch_losses);
  s.put_double("loop.elapsed_s", loop.elapsed_s);  // wall time, not part of the trajectory
  if (loop.failures) {
    s.put_ints("loop.failure_down", loop.down);
    s.put_double("loop.failure_last_step_world_s", loop.last_step_world_s);
    s.put_double("loop.failure_lost_rank_s", loop.failure_lost_rank_s);
    s.put_double("loop.failure_recovery_s", loop.recovery_s);
  }
  s.put_int("dplab.format_version", kCheckpointFormatVersion);
  s.put_int("dplab.rank", rank);
  s.put_int("dplab.world_size", world);
  s.put_string("dplab.optimizer", p.optimizer->name());
  s.put_string("dplab.algo", p.strategy->name());
  s.put_bool("dplab.grad_scaler", p.scaler != nullptr);
  return s;
}

// One rank's status in the write protocol, as a short JSON text.
struct Status {
  bool ok = true;
  std::string error;
  uint64_t bytes = 0;
  uint32_t crc32 = 0;
  std::string text() const {
    return nlohmann::json{{"ok", ok}, {"error", error}, {"bytes", bytes}, {"crc32", crc32}}.dump();
  }
  static Status parse(const std::string& s) {
    Status r;
    const auto j = nlohmann::json::parse(s);
    r.ok = j["ok"].get<bool>();
    r.error = j["error"].get<std::string>();
    r.bytes = j["bytes"].get<uint64_t>();
    r.crc32 = j["crc32"].get<uint32_t>();
    return r;
  }
};

// The first failure among every rank's status, as "rank R: why" (empty: all succeeded).
std::string first_failure(const std::vector<std::string>& all, std::vector<Status>* parsed) {
  std::string failure;
  for (size_t r = 0; r < all.size(); ++r) {
    const Status s = Status::parse(all[r]);
    if (parsed) parsed->push_back(s);
    if (!s.ok && failure.empty()) failure = fmt::format("rank {}: {}", r, s.error);
  }
  return failure;
}

template <class F>
Status attempt(F&& f) {
  Status s;
  try {
    f(s);
  } catch (const std::exception& e) {
    s.ok = false;
    s.error = e.what();
  }
  return s;
}

void remove_quietly(const fs::path& p) {
  std::error_code ec;
  fs::remove_all(p, ec);
}

}  // namespace

std::vector<std::string> split_override_list(const std::string& list) {
  std::vector<std::string> r;
  size_t start = 0;
  while (start <= list.size()) {
    size_t comma = list.find(',', start);
    if (comma == std::string::npos) comma = list.size();
    std::string item = list.substr(start, comma - start);
    while (!item.empty() && item.front() == ' ') item.erase(item.begin());
    while (!item.empty() && item.back() == ' ') item.pop_back();
    if (!item.empty()) r.push_back(item);
    start = comma + 1;
  }
  return r;
}

fs::path write_checkpoint(const CheckpointTarget& target, const RankGroup& ranks,
                          const RunIdentity& run, const TrainingParts& parts,
                          const LoopState& loop) {
  const RankGroup group = ranks.for_files();  // a rank may write a large file to a slow disk
  const fs::path root = checkpoints_root(target.out_dir);
  const std::string name = checkpoint_dir_name(loop.global_step);
  const fs::path final_dir = root / name;
  const fs::path tmp = root / ("." + name + ".tmp");
  const fs::path old = root / ("." + name + ".old");
  const bool rank0 = group.rank() == 0;
  // Every call follows an exchange of statuses, so every rank fails here together.
  auto fail = [&](const std::string& why) {
    group.fail_together(
        fmt::format("checkpoint {} (global step {}) not written: {}; nothing was "
                    "committed",
                    final_dir.string(), loop.global_step, why));
  };

  // 1. Rank 0 prepares the temporary directory (and clears leftovers of killed writes).
  Status prepared = attempt([&](Status&) {
    if (!rank0) return;
    fs::create_directories(root);
    remove_stale_temporaries(target.out_dir);
    fs::create_directory(tmp);
  });
  if (!prepared.ok) remove_quietly(tmp);
  if (std::string f = first_failure(group.allgather(prepared.text()), nullptr); !f.empty()) fail(f);

  // 2. Every rank writes and syncs its own file.
  const fs::path mine = tmp / rank_file_name(group.rank());
  Status written = attempt([&](Status& s) {
    const StateDict state = collect_rank_state(parts, loop, group.rank(), group.size());
    save_safetensors(mine.string(), state.tensors(), state.values());
    s.crc32 = file_crc32(mine, &s.bytes);
    if (const char* inject = std::getenv("DPLAB_CHECKPOINT_FAIL_RANK");
        inject && std::atoi(inject) == group.rank())
      DPLAB_FAIL("injected failure (DPLAB_CHECKPOINT_FAIL_RANK={})", inject);
  });
  std::vector<Status> files;
  if (std::string f = first_failure(group.allgather(written.text()), &files); !f.empty()) {
    // Every rank removes its own file, then rank 0 the directory, before anyone throws (a
    // throwing rank aborts the job: rank 0 must be done cleaning by then).
    remove_quietly(mine);
    remove_quietly(fs::path(mine.string() + ".tmp"));
    group.barrier();
    if (rank0) remove_quietly(tmp);
    group.barrier();
    fail(f);
  }

  // 3. Rank 0 commits: manifest last, fsyncs, one rename, fsync of the parent.
  Status committed = attempt([&](Status&) {
    if (!rank0) return;
    Manifest m;
    m.step = loop.global_step;
    m.epoch = loop.epoch;
    m.step_in_epoch = loop.step_in_epoch;
    m.world_size = group.size();
    m.algo = run.algo;
    m.ranks_per_node = run.ranks_per_node;
    m.init_from = run.init_from;
    m.config = run.config;
    // The global sample counter (train/state/reshard.h) and the world sizes so far.
    m.samples_in_epoch = run.batch > 0 ? loop.step_in_epoch * group.size() * run.batch : -1;
    m.world_sizes =
        run.world_sizes.empty() ? std::vector<WorldSpan>{{0, group.size()}} : run.world_sizes;
    for (int r = 0; r < group.size(); ++r)
      m.files.push_back({r, rank_file_name(r), files[size_t(r)].bytes, files[size_t(r)].crc32});
    for (const auto& f : m.files) fsync_path(tmp / f.name);
    write_manifest(tmp, m);
    fsync_path(tmp);
    std::error_code ec;
    if (fs::exists(final_dir, ec)) fs::rename(final_dir, old);  // same step written before
    fs::rename(tmp, final_dir);
    fsync_path(root);
    fsync_path(root.parent_path());  // checkpoints/ itself may be new
    remove_quietly(old);
  });
  if (!committed.ok) {
    remove_quietly(tmp);
    std::error_code ec;  // put back a replaced checkpoint of the same step
    if (fs::exists(old, ec) && !fs::exists(final_dir, ec)) fs::rename(old, final_dir, ec);
  }
  if (std::string f = first_failure(group.allgather(committed.text()), nullptr); !f.empty())
    fail(f);
  if (rank0) prune_checkpoints(target.out_dir, target.keep, final_dir);
  return final_dir;
}

Manifest find_resume_checkpoint(const std::string& path, const RankGroup& group,
                                std::ostream& report) {
  const fs::path p(path);
  std::error_code ec;
  std::vector<fs::path> candidates;
  const bool run_dir = fs::is_directory(p / "checkpoints", ec);
  if (run_dir) {
    candidates = list_checkpoint_dirs(p);
    DPLAB_CHECK(!candidates.empty(),
                "--resume {}: {} holds no checkpoint: expected directories step_<N> with a "
                "manifest.json (the run stopped before its first checkpoint was committed)",
                path, checkpoints_root(p).string());
  } else if (fs::is_directory(p, ec)) {
    DPLAB_CHECK(!fs::exists(p / "final.state.safetensors", ec),
                "--resume {}: a run directory of an older dplab (final.state.safetensors, "
                "checkpoint format 1, without checkpoints/); this dplab resumes format {}. Start a "
                "new run from its weights with --init-from {}",
                path, kCheckpointFormatVersion, (p / "final.safetensors").string());
    // Neither manifest.json nor a rank file: not a checkpoint (an uncommitted one has its rank
    // files), but a run directory that never got as far as checkpoints/ (stopped before its
    // first checkpoint).
    bool rank_files = false;
    for (const auto& e : fs::directory_iterator(p, ec))
      rank_files = rank_files || (e.path().filename().string().starts_with("rank_") &&
                                  e.path().extension() == ".safetensors");
    DPLAB_CHECK(fs::exists(p / "manifest.json", ec) || rank_files,
                "--resume {}: expected a run directory whose checkpoints are in {} "
                "(step_<N>/ with a manifest.json) or a checkpoint directory (manifest.json and "
                "rank_<R>.safetensors); {} does not exist, so the run directory holds no "
                "checkpoint (the run stopped before its first one)",
                path, checkpoints_root(p).string(), checkpoints_root(p).string());
    candidates = {p};
  } else {
    DPLAB_CHECK(!fs::exists(p, ec),
                "--resume {}: expected a run directory (--out of a run) or a "
                "checkpoint directory (RUN/checkpoints/step_<N>), got a file; a model file can "
                "start a new run with --init-from",
                path);
    DPLAB_FAIL("--resume {}: no such directory", path);
  }
  std::vector<std::string> skipped;
  for (const fs::path& dir : candidates) {
    std::string why;
    Manifest m;
    try {
      m = read_manifest(dir);
      // Each rank checks every size and its own file's CRC (check_resume_identity refuses a
      // different world size after this).
      std::vector<int> crc_ranks;
      if (group.rank() < m.world_size) crc_ranks.push_back(group.rank());
      verify_checkpoint_files(m, crc_ranks);
    } catch (const std::exception& e) {
      why = e.what();
    }
    std::string failure;
    const std::vector<std::string> all = group.allgather(why);
    for (const auto& w : all)
      if (!w.empty()) {
        failure = w;
        break;
      }
    if (failure.empty()) return m;
    if (!run_dir) group.fail_together(fmt::format("--resume {}: {}", path, failure));
    skipped.push_back(fmt::format("{}: {}", dir.string(), failure));
    if (group.rank() == 0) report << "dplab train: --resume: skipping " << skipped.back() << "\n";
  }
  std::string list;
  for (const auto& s : skipped) list += "\n  " + s;
  group.fail_together(
      fmt::format("--resume {}: no valid checkpoint in the run directory; skipped:{}", path, list));
}

std::vector<std::string> check_resume_identity(const Manifest& m, const RankGroup& group,
                                               const RunIdentity& now,
                                               const std::vector<std::string>& overrides) {
  DPLAB_CHECK(m.world_size == group.size(),
              "--resume {}: the checkpoint was written by {} ranks, this run has {}; every rank "
              "resumes its own state, so the world size cannot change without --reshard (which "
              "continues from the replicas' consensus where the algorithm allows it: "
              "docs/resharding.md; --init-from starts a new run from its weights)",
              m.dir.string(), m.world_size, group.size());
  auto allowed = [&](const std::string& key) {
    for (const auto& o : overrides) {
      if (o == key) return true;
      if (o.ends_with(".*") && key.starts_with(o.substr(0, o.size() - 1))) return true;
    }
    return false;
  };
  std::map<std::string, std::pair<std::string, std::string>> diff;  // key -> (old, new)
  constexpr const char* kUnused = "(not used)";
  for (const auto& [k, v] : m.config) {
    auto it = now.config.find(k);
    const std::string n = it == now.config.end() ? kUnused : it->second;
    if (n != v) diff[k] = {v, n};
  }
  for (const auto& [k, v] : now.config)
    if (!m.config.count(k)) diff[k] = {kUnused, v};
  // epochs is compared only where both runs plan something from it (RunIdentity): a
  // checkpoint without it planned nothing from it (or predates the check), and a run that now
  // plans nothing from it may change it freely.
  if (auto it = diff.find("epochs");
      it != diff.end() && (it->second.first == kUnused || it->second.second == kUnused))
    diff.erase(it);
  std::vector<std::string> accepted;
  std::string refused;
  for (const auto& [k, ov] : diff) {
    std::string line =
        fmt::format("option {} was '{}' in the checkpointed run, now '{}'", k, ov.first, ov.second);
    if (k == "epochs")
      line +=
          fmt::format(", and the run plans from it: {}", fmt::join(now.planned_from_epochs, "; "));
    if (allowed(k))
      accepted.push_back(line);
    else
      refused += (refused.empty() ? "" : "; ") + line;
  }
  DPLAB_CHECK(refused.empty(),
              "--resume {}: {} (a resumed run must follow the checkpointed trajectory; allow a "
              "change with --resume-override KEY,...)",
              m.dir.string(), refused);
  return accepted;
}

namespace {

LoopState read_loop(const StateDict& s, int64_t steps_per_epoch) {
  const std::string& file = s.origin();
  LoopState l;
  auto in_range = [&](const char* key, int64_t v, int64_t lo, int64_t hi, const char* what) {
    DPLAB_CHECK(v >= lo && v <= hi, "{}: state value '{}' = {}: expected {}", file, key, v, what);
    return v;
  };
  constexpr int64_t kMax = int64_t(1) << 53;
  l.epoch = in_range("loop.epoch", s.get_int("loop.epoch"), 0, kMax, ">= 0");
  l.step_in_epoch = in_range(
      "loop.step_in_epoch", s.get_int("loop.step_in_epoch"), 0, steps_per_epoch - 1,
      fmt::format("0 to {} (steps per epoch {})", steps_per_epoch - 1, steps_per_epoch).c_str());
  l.global_step = s.get_int("loop.global_step");
  DPLAB_CHECK(l.global_step == l.epoch * steps_per_epoch + l.step_in_epoch,
              "{}: state value 'loop.global_step' = {}: expected epoch {} x {} steps per epoch + "
              "step_in_epoch {} = {}",
              file, l.global_step, l.epoch, steps_per_epoch, l.step_in_epoch,
              l.epoch * steps_per_epoch + l.step_in_epoch);
  l.optimizer_steps = in_range("loop.optimizer_steps", s.get_int("loop.optimizer_steps"), 0,
                               l.global_step, "0 to the global step");
  l.epoch_seen = in_range("loop.epoch_seen", s.get_int("loop.epoch_seen"), 0, kMax, ">= 0");
  l.epoch_correct = in_range("loop.epoch_correct", s.get_int("loop.epoch_correct"), 0, l.epoch_seen,
                             "0 to loop.epoch_seen");
  l.nonfinite_skipped = in_range("loop.nonfinite_skipped", s.get_int("loop.nonfinite_skipped"), 0,
                                 l.optimizer_steps, "0 to loop.optimizer_steps");
  l.epoch_nonfinite_skipped =
      in_range("loop.epoch_nonfinite_skipped", s.get_int("loop.epoch_nonfinite_skipped"), 0,
               l.nonfinite_skipped, "0 to loop.nonfinite_skipped");
  l.epoch_loss_sum = s.get_double("loop.epoch_loss_sum");
  DPLAB_CHECK(std::isfinite(l.epoch_loss_sum) && l.epoch_loss_sum >= 0,
              "{}: state value 'loop.epoch_loss_sum' = {}: expected a finite sum >= 0", file,
              l.epoch_loss_sum);
  l.epoch_losses = s.get_doubles("loop.epoch_losses");
  DPLAB_CHECK(int64_t(l.epoch_losses.size()) == l.epoch,
              "{}: state value 'loop.epoch_losses' has {} entries, expected one per finished "
              "epoch ({})",
              file, l.epoch_losses.size(), l.epoch);
  // Written since elapsed_s carries across a resume; a checkpoint without it counts from 0.
  if (s.has("loop.elapsed_s")) {
    l.elapsed_s = s.get_double("loop.elapsed_s");
    DPLAB_CHECK(std::isfinite(l.elapsed_s) && l.elapsed_s >= 0,
                "{}: state value 'loop.elapsed_s' = {}: expected a finite time >= 0", file,
                l.elapsed_s);
  }
  // Written by runs with fail events that went on with the live ranks.
  if (s.has("loop.failure_lost_rank_s")) {
    l.failures = true;
    l.down = s.get_ints("loop.failure_down");
    for (int64_t r : l.down)
      DPLAB_CHECK(r >= 0, "{}: state value 'loop.failure_down' holds rank {}", file, r);
    l.last_step_world_s = s.get_double("loop.failure_last_step_world_s");
    l.failure_lost_rank_s = s.get_double("loop.failure_lost_rank_s");
    l.recovery_s = s.get_double("loop.failure_recovery_s");
    for (const char* k : {"loop.failure_lost_rank_s", "loop.failure_recovery_s"})
      DPLAB_CHECK(std::isfinite(s.get_double(k)) && s.get_double(k) >= 0,
                  "{}: state value '{}' = {}: expected a finite time >= 0", file, k,
                  s.get_double(k));
    DPLAB_CHECK(std::isfinite(l.last_step_world_s) && l.last_step_world_s >= -1,
                "{}: state value 'loop.failure_last_step_world_s' = {}: expected a time >= 0 or "
                "-1",
                file, l.last_step_world_s);
  }
  return l;
}

template <class F>
void naming(const std::string& file, const char* what, F&& f) {
  try {
    f();
  } catch (const Error& e) {
    DPLAB_FAIL("{}: cannot load {}: {}", file, what, e.what());
  }
}

}  // namespace

LoopState load_rank_state(const Manifest& m, int rank, const TrainingParts& p,
                          int64_t steps_per_epoch) {
  DPLAB_CHECK(rank >= 0 && rank < int(m.files.size()), "{}: no file for rank {}", m.dir.string(),
              rank);
  const std::string file = (m.dir / m.files[size_t(rank)].name).string();
  std::map<std::string, std::string> meta;
  std::vector<NamedTensor> tensors = load_safetensors(file, &meta);
  StateDict s(file);
  s.assign(std::move(tensors), std::move(meta));
  DPLAB_CHECK(s.get_int("dplab.format_version") == kCheckpointFormatVersion,
              "{}: state value 'dplab.format_version' = {}, expected {}", file,
              s.get_int("dplab.format_version"), kCheckpointFormatVersion);
  DPLAB_CHECK(s.get_int("dplab.rank") == rank && s.get_int("dplab.world_size") == m.world_size,
              "{}: written by rank {} of {}, loaded as rank {} of {}", file,
              s.get_int("dplab.rank"), s.get_int("dplab.world_size"), rank, m.world_size);
  return load_checkpoint_state(m, s, p, steps_per_epoch);
}

LoopState load_checkpoint_state(const Manifest& m, const StateDict& s, const TrainingParts& p,
                                int64_t steps_per_epoch) {
  const std::string& file = s.origin();
  DPLAB_CHECK(s.get_int("dplab.format_version") == kCheckpointFormatVersion,
              "{}: state value 'dplab.format_version' = {}, expected {}", file,
              s.get_int("dplab.format_version"), kCheckpointFormatVersion);
  for (const auto& t : s.tensors())
    DPLAB_CHECK(t.name.starts_with(kModel) || t.name.starts_with(kOptim) ||
                    t.name.starts_with(kAmp) || t.name.starts_with(kAlgo),
                "{}: unexpected tensor '{}' (expected model.*, optim.*, amp.* or algo.*)", file,
                t.name);
  const LoopState loop = read_loop(s, steps_per_epoch);
  DPLAB_CHECK(loop.global_step == m.step,
              "{}: state value 'loop.global_step' = {}, but its manifest is of step {}", file,
              loop.global_step, m.step);
  // The manifest's own copies of the loop position and the algorithm must agree with what the
  // rank files hold: a manifest paired with another run's rank files is refused.
  const std::string manifest = (m.dir / "manifest.json").string();
  DPLAB_CHECK(loop.epoch == m.epoch && loop.step_in_epoch == m.step_in_epoch,
              "{}: state values 'loop.epoch' = {}, 'loop.step_in_epoch' = {}, but {} says "
              "'epoch' = {}, 'step_in_epoch' = {}",
              file, loop.epoch, loop.step_in_epoch, manifest, m.epoch, m.step_in_epoch);
  DPLAB_CHECK(s.get_string("dplab.algo") == m.algo,
              "{}: state value 'dplab.algo' = '{}', but {} says 'algo' = '{}'", file,
              s.get_string("dplab.algo"), manifest, m.algo);
  naming(file, "the model weights",
         [&] { p.model->load_state_dict(tensors_with(s, kModel, true), /*strict=*/true); });
  DPLAB_CHECK(s.get_string("dplab.optimizer") == p.optimizer->name(),
              "{}: saved by optimizer '{}', resuming with '{}'", file,
              s.get_string("dplab.optimizer"), p.optimizer->name());
  naming(file, "the optimizer state",
         [&] { p.optimizer->load_state(tensors_with(s, kOptim, false)); });
  DPLAB_CHECK(s.get_bool("dplab.grad_scaler") == (p.scaler != nullptr),
              "{}: state value 'dplab.grad_scaler' = {}, but this run {} a loss scaler", file,
              s.get_bool("dplab.grad_scaler"), p.scaler ? "has" : "has no");
  if (p.scaler) {
    naming(file, "the GradScaler state",
           [&] { p.scaler->load_state(tensors_with(s, kAmp, false)); });
    DPLAB_CHECK(std::isfinite(p.scaler->scale()) && p.scaler->scale() > 0 &&
                    p.scaler->growth_tracker() >= 0,
                "{}: state tensors 'amp.scale' = {} and 'amp.growth_tracker' = {}: expected a "
                "finite scale > 0 and a count >= 0",
                file, p.scaler->scale(), p.scaler->growth_tracker());
  }
  std::map<std::string, double> schedule;
  const StateDict sched = s.sub(kSchedule);
  for (const auto& [k, v] : sched.values()) schedule[k] = sched.get_double(k);
  naming(file, "the lr schedule state", [&] { p.schedule->load_state(schedule); });
  naming(file, "the algorithm state", [&] { p.strategy->load_state(s.sub(kAlgo)); });
  return loop;
}

namespace {

// The checkpoint directory a model-weights path names: a checkpoint directory, or a run
// directory's newest committed checkpoint whose rank 0 file checks out.
Manifest weights_checkpoint(const fs::path& p) {
  std::error_code ec;
  if (!fs::is_directory(p / "checkpoints", ec)) {
    Manifest m = read_manifest(p);
    verify_checkpoint_files(m, {0});
    return m;
  }
  std::string skipped;
  for (const fs::path& d : list_checkpoint_dirs(p)) {
    try {
      Manifest m = read_manifest(d);
      verify_checkpoint_files(m, {0});
      return m;
    } catch (const Error& e) {
      skipped += fmt::format("\n  {}", e.what());
    }
  }
  DPLAB_FAIL("{}: no valid checkpoint in the run directory{}{}", p.string(),
             skipped.empty() ? "" : "; skipped:", skipped);
}

}  // namespace

ModelWeights read_model_weights(const std::string& path) {
  std::error_code ec;
  ModelWeights w;
  if (fs::is_directory(path, ec)) {
    const Manifest m = weights_checkpoint(path);
    w.file = (m.dir / m.files[0].name).string();
    StateDict s(w.file);
    std::map<std::string, std::string> meta;
    // Loaded first: the order in which function arguments are evaluated is unspecified, and GCC
    // moved `meta` out before load_safetensors filled it (the checkpoint's meta came back empty).
    std::vector<NamedTensor> tensors = load_safetensors(w.file, &meta);
    s.assign(std::move(tensors), std::move(meta));
    w.tensors = tensors_with(s, kModel, true);
    if (auto it = m.config.find("model"); it != m.config.end()) w.model = it->second;
    w.meta = s.values();
    return w;
  }
  DPLAB_CHECK(fs::exists(path, ec), "checkpoint {} does not exist", path);
  w.file = path;
  w.tensors = load_safetensors(path, &w.meta);
  if (auto it = w.meta.find("dplab.model"); it != w.meta.end()) w.model = it->second;
  return w;
}

void load_model_weights(const std::string& path, Module& model) {
  const ModelWeights w = read_model_weights(path);
  naming(w.file, "the model weights", [&] { model.load_state_dict(w.tensors, /*strict=*/true); });
}

void export_model(const fs::path& path, const Module& model, const std::string& model_name,
                  const LoopState& loop, const std::vector<std::string>& class_names) {
  if (path.has_parent_path()) fs::create_directories(path.parent_path());
  std::map<std::string, std::string> meta = {
      {"format", "pt"},  // what PyTorch's safetensors loader expects
      {"dplab.epoch", std::to_string(loop.epoch)},
      {"dplab.global_step", std::to_string(loop.global_step)},
      {"dplab.model", model_name},
  };
  // Class names (image folders and shard sets) so `dplab predict` can print them.
  if (!class_names.empty()) meta["dplab.classes"] = nlohmann::json(class_names).dump();
  save_safetensors(path.string(), model.state_dict(), meta);
  fsync_path(path.has_parent_path() ? path.parent_path() : fs::path("."));
}

LoopState resume_run(const std::string& path, const std::vector<std::string>& overrides,
                     const RankGroup& ranks, RunIdentity& run, const TrainingParts& parts,
                     int64_t steps_per_epoch, std::ostream& summary, std::ostream& report,
                     bool reshard) {
  const RankGroup group = ranks.for_files();  // each rank reads and checks its own large file
  const Manifest m = find_resume_checkpoint(path, group, report);
  const bool resharding = reshard && m.world_size != group.size();
  std::vector<std::string> allowed;
  LoopState loop;
  group.agree([&] {    // a refusal, or one rank's unreadable file, stops every rank together
    if (resharding) {  // train/state/reshard.h
      Manifest now = m;
      now.world_size = group.size();
      // The CRC-32 of every old file (find_resume_checkpoint checked only those of ranks that
      // exist now), shared out among the new ranks: the consensus reads them all.
      std::vector<int> crc_ranks;
      for (int r = group.rank(); r < m.world_size; r += group.size()) crc_ranks.push_back(r);
      verify_checkpoint_files(m, crc_ranks);
      const std::vector<std::string> plan = plan_reshard(m, group.size(), run.batch, overrides);
      allowed = check_resume_identity(now, group, run, plan);
      if (plan.size() > overrides.size())  // the per-rank batch: reported with the reshard below
        std::erase_if(allowed, [](const std::string& a) { return a.starts_with("option batch "); });
      loop = load_resharded_state(m, group.rank(), parts, steps_per_epoch);
    } else {
      allowed = check_resume_identity(m, group, run, overrides);
      loop = load_rank_state(m, group.rank(), parts, steps_per_epoch);
    }
  });
  if (!m.init_from.empty()) run.init_from = m.init_from;
  run.world_sizes = m.world_sizes;
  if (resharding) {
    run.world_sizes.push_back({m.step, group.size()});
    if (group.rank() == 0)
      summary << fmt::format(
          "resharded: {} ranks -> {} ranks ({}); the epoch continues after its first {} "
          "samples (global sample counter)\n",
          m.world_size, group.size(), reshard_policy(m.algo, m.config).consensus,
          checkpoint_samples_in_epoch(m));
  }
  if (group.rank() == 0) {
    for (const auto& a : allowed) {
      summary << "resume: " << a << " (allowed by resume.override)\n";
      if (a.starts_with("option epochs "))
        report << "warning: --resume-override epochs: " << a
               << ": the resumed run follows neither the checkpointed run's trajectory nor that of "
                  "a run started with the new epochs\n";
    }
    summary << fmt::format("resumed from {} at epoch {} step {} (global step {})\n", m.dir.string(),
                           loop.epoch + 1, loop.step_in_epoch, loop.global_step);
  }
  return loop;
}

}  // namespace dplab
