#include "dplab/train/report/step_record.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "dplab/core/error.h"
#include "dplab/core/usage_error.h"

namespace dplab {

CommStats CommTally::window(Strategy& s) {
  const CommStats w = s.take_stats();
  epoch_.add(w);
  return w;
}

CommStats CommTally::epoch(Strategy& s) {
  CommStats e = epoch_;
  e.add(s.take_stats());
  epoch_ = {};
  return e;
}

void CommTally::set_aside(Strategy& s) {
  outside_.add(s.take_stats());
}

StepLog::StepLog(int64_t every_steps, const RankGroup& ranks, MetricsWriter& metrics,
                 MetricsWriter& rank_metrics, const RunClock& clock, RunClock::Mark run_start)
    : every_(every_steps),
      ranks_(ranks),
      metrics_(metrics),
      rank_metrics_(rank_metrics),
      clock_(clock),
      run_start_(run_start) {
  DPLAB_CHECK_OPTION(every_steps >= 0, "option metrics.every_steps: expected >= 0, got {}",
                     every_steps);
}

void StepLog::start_window(const LoopState& loop) {
  window_start_ = last_mark_ = clock_.now();
  window_steps_ = window_images_ = 0;
  data_wait_s_ = 0;
  loss_sum0_ = loop.epoch_loss_sum;
  seen0_ = loop.epoch_seen;
}

void StepLog::begin_epoch(const LoopState& loop) {
  if (!enabled()) return;
  start_window(loop);
}

void StepLog::batch_ready() {
  if (!enabled()) return;
  const RunClock::Mark now = clock_.now();
  data_wait_s_ += now.t - last_mark_.t;
  last_mark_ = now;
}

void StepLog::count_data_wait(const std::function<void()>& fetch) {
  if (!enabled()) return fetch();
  const RunClock::Mark start = clock_.now();
  fetch();
  data_wait_s_ += clock_.now().t - start.t;
}

void StepLog::step_done(LoopState& loop, int64_t images, double lr, StepMetrics& sm, Strategy& s,
                        CommTally& tally) {
  if (!enabled()) return;
  const RunClock::Mark now = clock_.now();
  last_mark_ = now;
  ++window_steps_;
  window_images_ += images;
  if (loop.global_step % every_ != 0) return;
  sm.flush({loop.epoch_loss_sum, loop.epoch_correct, loop.epoch_seen});  // read back once
  const double loss_sum = loop.epoch_loss_sum - loss_sum0_;
  const int64_t seen = loop.epoch_seen - seen0_;
  const double time_s = now.t - window_start_.t;
  const double wall_s = now.wall - window_start_.wall;
  const CommStats comm = tally.window(s);
  const double n = double(window_steps_);
  // Every rank's window in rank order: images, samples, loss sum, time (exact JSON numbers).
  const nlohmann::json mine = {window_images_, seen, loss_sum, time_s};
  int64_t all_images = 0, all_seen = 0;
  double all_loss = 0, max_time = 0;
  for (const std::string& t : ranks_.allgather(mine.dump())) {
    const nlohmann::json a = nlohmann::json::parse(t);
    all_images += a[0].get<int64_t>();
    all_seen += a[1].get<int64_t>();
    all_loss += a[2].get<double>();
    max_time = std::max(max_time, a[3].get<double>());
  }
  const double rank_ips = time_s > 0 ? double(window_images_) / time_s : 0;
  nlohmann::json rank_rec = {{"kind", "step"},
                             {"rank", ranks_.rank()},
                             {"step", loop.global_step},
                             {"epoch", loop.epoch + 1},
                             {"window_steps", window_steps_},
                             {"images", window_images_},
                             {"samples", seen},
                             {"loss", seen ? loss_sum / double(seen) : 0},
                             {"step_time_s", time_s / n},
                             {"data_wait_s", data_wait_s_ / n},
                             {"comm_exposed_wait_s", comm.exposed_wait_s / n},
                             {"images_per_s_rank", rank_ips}};
  const RunClock::Mark elapsed = clock_.now() - run_start_;
  if (clock_.is_virtual()) {  // a virtual cluster: wall-clock time beside the virtual
    rank_rec["time_base"] = clock_.time_base();
    rank_rec["step_wall_s"] = wall_s / n;
  }
  rank_metrics_.write(rank_rec);
  if (ranks_.rank() == 0) {
    nlohmann::json rec = {{"kind", "step"},
                          {"step", loop.global_step},
                          {"epoch", loop.epoch + 1},
                          {"window_steps", window_steps_},
                          {"images", all_images},
                          {"loss", all_seen ? all_loss / double(all_seen) : 0},
                          {"lr", lr},
                          {"step_time_s", time_s / n},
                          {"data_wait_s", data_wait_s_ / n},
                          {"comm_exposed_wait_s", comm.exposed_wait_s / n},
                          {"images_per_s", max_time > 0 ? double(all_images) / max_time : 0},
                          {"images_per_s_rank", rank_ips},
                          {"elapsed_s", elapsed.t}};
    if (clock_.is_virtual()) {
      rec["time_base"] = clock_.time_base();
      rec["step_wall_s"] = wall_s / n;
      rec["elapsed_wall_s"] = elapsed.wall;
    }
    // The algorithm's state after the window's last step, as in the epoch records (e.g.
    // algo.compress_active: whether gradient compression compressed that step).
    for (const auto& [k, v] : s.state()) rec["algo." + k] = v;
    metrics_.write(rec);
  }
  start_window(loop);
}

}  // namespace dplab
