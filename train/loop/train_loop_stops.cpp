// The training loop's checkpoints and its stops on purpose (train_loop.h). Every decision
// here is taken at the same tick on every rank: the ranks agree on each tick's non-finite
// check and pre-emption signals kLag ticks later (train/loop/step_agreement.h), and a
// checkpoint is collective.
#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "dplab/train/loop/run_stopped.h"
#include "dplab/train/loop/train_loop.h"
#include "dplab/train/report/run_trace.h"
#include "dplab/train/virtual/heal.h"
#include "dplab/train/virtual/liveness.h"
#include "dplab/train/virtual/virtual_run.h"

namespace dplab {

// Acts on agreed ticks, on every rank at the same point.
void TrainLoop::act_on(const std::vector<Agreement>& due) {
  for (const Agreement& a : due) {
    if (a.nonfinite && s_.nonfinite == NonfinitePolicy::stop) {
      rep_.progress().end_epoch();  // ends a progress bar's line before the message
      // nonfinite_check = next_step: tick t carries the verdict of the step before it.
      const int64_t at = check_ == NonfiniteCheck::next_step ? a.tick - 1 : a.tick;
      stop_nonfinite(
          fmt::format("at global step {} (0-based; epoch {}, batch {} of {})", at,
                      at / steps_per_epoch_ + 1, at % steps_per_epoch_ + 1, steps_per_epoch_),
          a);
    }
    if (a.preempt && !preempted_) {
      preempted_ = true;
      std::string who;
      for (size_t r = 0; r < a.reports.size(); ++r)
        if (const size_t at = a.reports[r].find("received SIG"); at != std::string::npos)
          who += fmt::format("{}rank {} {}", who.empty() ? "" : ", ", r, a.reports[r].substr(at));
      preempt_reports_ = who;
    }
  }
}

// One tick's part, on every rank at every tick (also the ticks a rank skips). A rank whose own
// loss or gradient is non-finite never applies that update, under either policy; the agreement
// then stops every rank at the same tick (stop). Under skip each rank drops its own non-finite
// steps: with gradients averaged in after_backward every rank drops the same.
void TrainLoop::tick_check(const StepInfo& step, bool local_nonfinite, const std::string& found) {
  const int sig = w_.preemption.received();
  std::string report = found;
  if (sig != 0) report += (report.empty() ? "received " : "; received ") + preempt_signal_name(sig);
  // Under nonfinite_check = next_step (stop only) the failing step's update was applied already:
  // the run stops at the agreed tick and writes nothing (flush_posted_check before every write).
  if (local_nonfinite && check_ == NonfiniteCheck::every_step) {
    drop_step_ = true;
    if (s_.nonfinite == NonfinitePolicy::skip && loop_.nonfinite_skipped < 10)  // the first few
      rep_.messages() << fmt::format(
          "dplab: rank {}: dropped the step at global step {} (nonfinite = skip): {}\n",
          ranks_.rank(), step.global_step, report);
  }
  act_on(w_.agreement.tick(step.global_step, local_nonfinite, sig != 0, report));
}

TrainLoop::Verdict TrainLoop::take_posted_check() {
  if (!posted_) return {};
  const PostedCheck p = std::move(*posted_);
  posted_.reset();
  const NonfiniteFlags f = w_.guard.take_posted();
  if (f.loss) check_targets_of_nonfinite_step(p.labels, p.logits);  // a bad label is named
  if (drops_on_device()) count_dropped_on_device(p, f);
  if (!f.any()) return {};
  return {true, NonfiniteGuard::describe_posted(f, p.global_step)};
}

void TrainLoop::count_dropped_on_device(const PostedCheck& p, const NonfiniteFlags& f) {
  if (f.any()) report_dropped(p.global_step, NonfiniteGuard::describe_posted(f, p.global_step));
  if (!p.group_end || !f.group_dropped()) return;
  // Optimizer::step_unless dropped the update on the device and counted the step: taken back
  // before the next update reads the count (SGD's first step, AdamW's bias corrections).
  p_.optimizer.uncount_step();
  ++loop_.epoch_nonfinite_skipped;
  ++loop_.nonfinite_skipped;
}

void TrainLoop::report_dropped(int64_t global_step, const std::string& what) {
  if (s_.nonfinite != NonfinitePolicy::skip || loop_.nonfinite_skipped >= 10) return;  // a few
  rep_.messages() << fmt::format(
      "dplab: rank {}: dropped the step at global step {} (nonfinite = skip): {}\n", ranks_.rank(),
      global_step, what);
}

void TrainLoop::flush_posted_check() {
  if (check_ != NonfiniteCheck::next_step) return;
  const int64_t at = posted_ ? posted_->global_step : loop_.global_step - 1;
  const Verdict v = take_posted_check();
  const Agreement a = w_.agreement.agree(v.nonfinite, false, [&] { return v.found; });
  if (a.nonfinite && s_.nonfinite == NonfinitePolicy::stop) {
    rep_.progress().end_epoch();
    stop_nonfinite(
        fmt::format("at global step {} (0-based; epoch {}, batch {} of {}; its check "
                    "was read at the end of the epoch or before a checkpoint)",
                    at, at / steps_per_epoch_ + 1, at % steps_per_epoch_ + 1, steps_per_epoch_),
        a);
  }
}

// A run stopped for non-finite values: the record, then RunStopped on every rank (exit 3).
void TrainLoop::stop_nonfinite(const std::string& what, const Agreement& agreed) {
  p_.strategy.drain();  // every rank is here at the same tick: nothing left in flight
  if (rank0_)
    rep_.metrics().write({{"kind", "stopped"},
                          {"reason", "nonfinite"},
                          {"step", loop_.global_step},
                          {"ranks", agreed.reporting_ranks()},
                          {"detail", agreed.joined_reports()}});
  finish_run_trace(p_.tracer, ranks_, s_.out_dir, &rep_.messages());  // the trace so far
  throw RunStopped(
      fmt::format("non-finite values {}: {}; every rank stopped (nonfinite = stop, exit status "
                  "{}); no checkpoint was written{}",
                  what, agreed.joined_reports(), kExitNonfinite,
                  s_.out_dir.empty() ? "" : ", any earlier one in " + s_.out_dir + " is as it was"),
      kExitNonfinite, rank0_);
}

// No checkpoint holds an inf or NaN (the model's state_dict, the optimizer's and the
// algorithm's state): every rank checks its own and they agree before anything is written.
// (Every tick was flushed and acted on first: at the end of its epoch's loop, or by
// checkpoint().)
void TrainLoop::check_state_finite(const std::string& name) {
  std::vector<NamedTensor> state = p_.model.state_dict();
  for (const NamedTensor& t : p_.optimizer.state()) state.push_back(t);
  StateDict algo;
  p_.strategy.save_state(algo);
  std::vector<std::string> bad = nonfinite_names(state);
  for (const std::string& n : nonfinite_entries(algo)) bad.push_back("algo." + n);
  const Agreement agreed = w_.agreement.agree(
      !bad.empty(), false, [&] { return fmt::format("non-finite {}", name_list(bad)); });
  if (agreed.nonfinite)
    stop_nonfinite(fmt::format("in the state to be written to {} after {} step{}", name,
                               loop_.global_step, loop_.global_step == 1 ? "" : "s"),
                   agreed);
}

// A checkpoint of every rank (collective), once per global step, never with an inf or NaN in
// it (train/loop/nonfinite_guard.h). In the middle of an epoch it is written without
// strategy.drain(), which is part of the trajectory for some algorithms (comm/strategy.h): a
// run that checkpoints follows the same trajectory as one that does not. Returns the
// checkpoint's directory.
std::filesystem::path TrainLoop::checkpoint() {
  if (s_.out_dir.empty() || last_checkpoint_step_ == loop_.global_step) return last_checkpoint_dir_;
  trace::Span traced(p_.tracer, "checkpoint", "io");
  act_on(w_.agreement.flush());  // every tick decided before the state check's own vote
  flush_posted_check();          // and the last step's check, when it is read a step later
  // The sums the device holds (StepMetrics) into the loop's, which the checkpoint saves: a
  // resumed run's epoch record then counts the steps before the checkpoint.
  step_metrics_.flush(epoch_sums());
  check_state_finite("a checkpoint");
  // Wall time, not part of the trajectory: a resumed run's elapsed_s continues from it.
  loop_.elapsed_s = rep_.elapsed_s();
  if (models_failures(w_.cluster) && p_.strategy.continues_after_failure()) {
    loop_.failures = true;  // carried to a resumed run (LoopState)
    loop_.down.assign(down_.begin(), down_.end());
    loop_.last_step_world_s = last_step_world_s_;
    loop_.failure_lost_rank_s = lost_rank_s_;
    loop_.recovery_s = recovery_s_;
  }
  last_checkpoint_dir_ =
      write_checkpoint({s_.out_dir, s_.checkpoint_keep}, ranks_, run_, saved_, loop_);
  last_checkpoint_step_ = loop_.global_step;
  return last_checkpoint_dir_;
}

// Mid-epoch checkpoints every checkpoint.every_steps iterations (the epoch's last step is
// checkpointed after end_epoch, with the epoch finished).
void TrainLoop::step_checkpoint() {
  if (s_.checkpoint_every_steps > 0 && loop_.global_step % s_.checkpoint_every_steps == 0 &&
      loop_.step_in_epoch < steps_per_epoch_)
    checkpoint();
}

// Pre-empted (train/loop/preemption.h): checkpoint (collective, committed by rank 0 before
// any rank returns), record, then RunStopped on every rank (exit 4).
void TrainLoop::preempt_exit() {
  const std::string path = checkpoint().string();
  if (rank0_)
    rep_.metrics().write({{"kind", "preempted"},
                          {"epoch", loop_.epoch + 1},
                          {"step", loop_.global_step},
                          {"step_in_epoch", loop_.step_in_epoch},
                          {"detail", preempt_reports_},
                          {"checkpoint", path}});
  w_.agreement.barrier();
  finish_run_trace(p_.tracer, ranks_, s_.out_dir, &rep_.messages());  // the trace so far
  throw RunStopped(fmt::format("pre-empted ({}) after {} step{}: wrote {}; continue with "
                               "--resume {} (exit status {})",
                               preempt_reports_, loop_.global_step,
                               loop_.global_step == 1 ? "" : "s", path, s_.out_dir, kExitPreempted),
                   kExitPreempted, rank0_);
}

// Fail events (train/virtual/liveness.h): every rank learns which ranks are down for the step
// about to begin, alike. An algorithm that cannot go on without them
// (Strategy::continues_after_failure) stops the job here; one that can goes on with the live
// ranks: the algorithm learns which are down (Strategy::set_down_ranks: its averages are then
// over the live ranks) and weighs this rank's loss (Strategy::loss_weight: 0 for a down rank;
// allreduce's quorum W / L for a live one); a down rank's compute is not charged
// (VirtualRun::set_down); a rank back from its failure is healed from a live peer first
// (train/virtual/heal.h). Rank 0 records each change (a "liveness" record).
void TrainLoop::check_liveness() {
  if (!models_failures(w_.cluster)) return;
  const StepLiveness live = agree_liveness(*w_.cluster, w_.agreement, loop_.global_step);
  if (last_step_world_s_ < 0 || loop_.global_step == last_checkpoint_step_)
    restart_world_s_ = live.world_time_s;  // what a restart would resume from
  if (last_step_world_s_ >= 0)             // the previous step's down ranks, for its duration
    lost_rank_s_ += double(down_.size()) * (live.world_time_s - last_step_world_s_);
  last_step_world_s_ = live.world_time_s;
  const int world = ranks_.size();
  const int live_count = world - int(live.down.size());
  if (!live.down.empty() && (!p_.strategy.continues_after_failure() || live_count == 0))
    stop_failed(live);
  if (live.down == down_) return;
  std::vector<int> returned;
  for (int r : down_)
    if (std::find(live.down.begin(), live.down.end(), r) == live.down.end()) returned.push_back(r);
  HealFacts healed;
  if (!returned.empty())
    healed = heal_returning(p_.strategy, p_.model, p_.optimizer, *w_.cluster, w_.agreement,
                            returned, down_, world);
  recovery_s_ += healed.virtual_s;
  set_down(live.down);
  if (rank0_) {
    nlohmann::json rec = {{"kind", "liveness"},
                          {"step", loop_.global_step},
                          {"virtual_time_s", live.world_time_s},
                          {"live_ranks", live_count},
                          {"down", down_},
                          {"returned", returned}};
    if (!down_.empty())
      rec["data"] = w_.cluster->failure_data() == FailureData::reassign ? "reassign" : "drop";
    if (healed.peer >= 0) {
      rec["heal_from"] = healed.peer;
      rec["heal_bytes"] = healed.bytes;
      rec["heal_s"] = healed.virtual_s;
    }
    rep_.metrics().write(rec);
  }
  if (rank0_ && !live.down.empty() && returned.empty())
    rep_.messages() << fmt::format(
        "dplab: {}: global step {} begins at {:.6g} s of virtual time with {} of {} ranks; "
        "algorithm '{}' goes on with them, {}\n",
        describe_failures(*w_.cluster, live), loop_.global_step, live.world_time_s, live_count,
        world, p_.strategy.name(),
        w_.cluster->failure_data() == FailureData::reassign
            ? "which take the down ranks' samples (cluster.failure_data = reassign)"
            : "the down ranks' samples unseen (cluster.failure_data = drop)");
}

void TrainLoop::set_down(const std::vector<int>& down) {
  down_ = down;
  down_here_ = std::find(down_.begin(), down_.end(), ranks_.rank()) != down_.end();
  p_.strategy.set_down_ranks(down_);
  loss_weight_ = p_.strategy.loss_weight();
  w_.cluster->set_down(down_here_);
}

// A failure the algorithm cannot go on without: the job stops at this step on every rank,
// naming the ranks, with what the checkpoint policy wrote so far: the last checkpoint is what a
// restart resumes from (no checkpoint is written here: a rank that died could not write its
// part). Exit status 1, as for a runtime error.
void TrainLoop::stop_failed(const StepLiveness& live) {
  act_on(w_.agreement.flush());  // the ticks so far are decided first (a non-finite stop)
  p_.strategy.drain();           // every rank is here at the same step: nothing in flight
  const std::string who = describe_failures(*w_.cluster, live);
  std::string restart;
  if (s_.out_dir.empty())
    restart = "the run has no output directory, so no checkpoint: a restart begins afresh";
  else if (last_checkpoint_dir_.empty())
    restart = fmt::format(
        "the checkpoint policy wrote no checkpoint before it (checkpoint.every_steps, "
        "checkpoint.every_epochs): a restart begins where this run began");
  else
    restart = fmt::format(
        "a restart resumes from the last checkpoint the policy wrote, {} (global step {}): "
        "--resume {}",
        last_checkpoint_dir_.string(), last_checkpoint_step_, s_.out_dir);
  restart += fmt::format(" ({:.6g} s of virtual training since it are lost)",
                         live.world_time_s - restart_world_s_);
  if (rank0_)
    rep_.metrics().write({{"kind", "stopped"},
                          {"reason", "failure"},
                          {"step", loop_.global_step},
                          {"ranks", live.down},
                          {"detail", who},
                          {"virtual_time_s", live.world_time_s},
                          {"lost_s", live.world_time_s - restart_world_s_},
                          {"checkpoint", last_checkpoint_dir_.string()}});
  finish_run_trace(p_.tracer, ranks_, s_.out_dir, &rep_.messages());  // the trace so far
  const bool all = int(live.down.size()) == ranks_.size();
  throw RunStopped(
      fmt::format("{}: global step {} begins at {:.6g} s of virtual time without {}; {}, so "
                  "every rank stopped there, as an MPI job does when a rank dies (exit status "
                  "{}); {}",
                  who, loop_.global_step, live.world_time_s, live.down.size() == 1 ? "it" : "them",
                  all ? std::string("no rank is live")
                      : fmt::format("algorithm '{}' cannot go on without a rank (continuing with "
                                    "the live ranks is not modelled for it)",
                                    p_.strategy.name()),
                  kExitError, restart),
      kExitError, rank0_);
}

}  // namespace dplab
