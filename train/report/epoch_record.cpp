#include "dplab/train/report/epoch_record.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "dplab/core/error.h"

namespace dplab {

GlobalEpoch combine_epochs(const std::vector<RankEpoch>& per_rank) {
  GlobalEpoch g;
  g.ranks = int(per_rank.size());
  for (const RankEpoch& r : per_rank) {  // rank order: the same sums on every rank
    g.images += r.images;
    g.samples += r.samples;
    g.correct += r.correct;
    g.loss_sum += r.loss_sum;
    g.time_s = std::max(g.time_s, r.time_s);
    g.wall_s = std::max(g.wall_s, r.wall_s);
  }
  return g;
}

std::vector<RankEpoch> gather_epochs(const RankGroup& ranks, const RankEpoch& mine) {
  // JSON numbers: integers as integers, doubles in shortest round-trip form (exact).
  const nlohmann::json j = {mine.images,  mine.samples, mine.loss_sum,
                            mine.correct, mine.time_s,  mine.wall_s};
  const std::vector<std::string> all = ranks.allgather(j.dump());
  std::vector<RankEpoch> r;
  for (size_t i = 0; i < all.size(); ++i) {
    const nlohmann::json a = nlohmann::json::parse(all[i]);
    DPLAB_CHECK(a.is_array() && a.size() == 6,
                "epoch figures of rank {}: expected 6 numbers, got {}", i, all[i]);
    r.push_back({a[0].get<int64_t>(), a[1].get<int64_t>(), a[2].get<double>(), a[3].get<int64_t>(),
                 a[4].get<double>(), a[5].get<double>()});
  }
  return r;
}

std::string seconds_text(double s) {
  return s < 10 ? fmt::format("{:.3g}", s) : fmt::format("{:.1f}", s);
}

std::string grouped_rate(double v) {
  const std::string digits = fmt::format("{:.0f}", std::max(0.0, v));
  std::string r;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) r += ',';
    r += digits[i];
  }
  return r;
}

RunReport::RunReport(const RankGroup& ranks, MetricsWriter& metrics, MetricsWriter& rank_metrics,
                     const RunClock& clock, RunClock::Mark start)
    : ranks_(ranks), metrics_(metrics), rank_metrics_(rank_metrics), clock_(clock), start_(start) {}

double RunReport::total_images_per_s() const {
  return total_train_time_s_ > 0 ? double(total_images_) / total_train_time_s_ : 0;
}

GlobalEpoch RunReport::epoch(const EpochFacts& f, std::ostream& summary) {
  const GlobalEpoch g = combine_epochs(gather_epochs(ranks_, f.mine));
  last_ = g;
  total_images_ += g.images;
  total_train_time_s_ += g.time_s;
  total_images_rank_ += f.mine.images;
  total_train_time_rank_s_ += f.mine.time_s;
  total_train_wall_s_ += g.wall_s;
  const RunClock::Mark elapsed = clock_.now() - start_;
  const bool virt = clock_.is_virtual();
  const double rank_ips = f.mine.time_s > 0 ? double(f.mine.images) / f.mine.time_s : 0;
  const CommStats& c = f.comm;
  nlohmann::json rank_rec = {
      {"kind", "rank_epoch"},
      {"rank", ranks_.rank()},
      {"epoch", f.epoch},
      {"step", f.step},
      {"images", f.mine.images},
      {"samples", f.mine.samples},
      {"loss", f.mine.samples ? f.mine.loss_sum / double(f.mine.samples) : 0},
      {"train_acc", f.mine.samples ? double(f.mine.correct) / double(f.mine.samples) : 0},
      {"time_s", f.mine.time_s},
      {"images_per_s_rank", rank_ips},
      {"computed_steps", f.computed_steps},
      {"slowdown", f.slowdown},
      {"slowdown_sleep_s", f.slowdown_sleep_s},
      {"comm_bytes", c.bytes_sent},
      {"comm_wire_bytes", c.wire_bytes},
      {"comm_messages", c.messages},
      {"comm_in_flight_s", c.in_flight_s},
      {"comm_exposed_wait_s", c.exposed_wait_s},
      {"idle_fraction", f.mine.time_s > 0 ? c.exposed_wait_s / f.mine.time_s : 0},
      {"nonfinite_skipped_steps", f.nonfinite_skipped},
      {"thread_involuntary_switches", f.mine.usage.involuntary_switches},
      {"thread_major_faults", f.mine.usage.major_faults}};
  if (virt) {
    rank_rec["time_base"] = clock_.time_base();
    rank_rec["wall_s"] = f.mine.wall_s;
  }
  rank_metrics_.write(rank_rec);
  if (ranks_.rank() != 0) return g;
  nlohmann::json rec = {{"kind", "epoch"},
                        {"epoch", f.epoch},
                        {"complete", f.complete},
                        {"step", f.step},
                        {"ranks", g.ranks},
                        {"loss", g.loss()},
                        {"train_acc", g.train_acc()},
                        {"test_loss", f.ev.loss},
                        {"test_acc", f.ev.accuracy},
                        {"test_loss_rank0", f.ev_rank0.loss},
                        {"test_acc_rank0", f.ev_rank0.accuracy},
                        {"images", g.images},
                        {"images_per_s", g.images_per_s()},
                        {"images_per_s_rank", rank_ips},
                        {"time_s", g.time_s},
                        {"elapsed_s", elapsed.t},
                        {"lr", f.lr},
                        {"comm_bytes", c.bytes_sent},
                        {"comm_wire_bytes", c.wire_bytes},
                        {"comm_collectives", c.collectives},
                        {"comm_messages", c.messages},
                        {"comm_allreduces", c.allreduces},
                        {"comm_in_flight_s", c.in_flight_s},
                        {"comm_exposed_wait_s", c.exposed_wait_s},
                        {"nonfinite_skipped_steps", f.nonfinite_skipped}};
  if (f.ev.top5) rec["test_acc5"] = f.ev.accuracy5;
  if (f.ev_rank0.top5) rec["test_acc5_rank0"] = f.ev_rank0.accuracy5;
  if (virt) {  // a virtual cluster: the times above are virtual; the wall clock's beside them
    rec["time_base"] = clock_.time_base();
    rec["wall_s"] = g.wall_s;
    rec["elapsed_wall_s"] = elapsed.wall;
  }
  for (const auto& [k, v] : f.algo_state) rec["algo." + k] = v;
  metrics_.write(rec);
  // test_acc is the run's model's; rank 0's own is shown beside it where it is another model.
  summary << fmt::format(
      "epoch {}/{}{}  loss {:.4f}  train_acc {:.4f}  test_acc {:.4f}{}{}  {} img/s{}  {}{}\n",
      f.epoch, f.epochs, f.complete ? "" : " (partial)", g.loss(), g.train_acc(), f.ev.accuracy,
      f.ev.top5 ? fmt::format("  test_acc5 {:.4f}", f.ev.accuracy5) : "",
      f.rank0_separate ? fmt::format(" (the run's model; rank 0's own {:.4f})", f.ev_rank0.accuracy)
                       : "",
      grouped_rate(g.images_per_s()), g.ranks > 1 ? fmt::format(" global ({} ranks)", g.ranks) : "",
      virt ? fmt::format("{} s virtual, {:.1f} s wall", seconds_text(g.time_s), g.wall_s)
           : fmt::format("{} s", seconds_text(g.time_s)),
      f.nonfinite_skipped > 0
          ? fmt::format("  {} non-finite steps skipped (rank 0)", f.nonfinite_skipped)
          : "");
  summary.flush();
  return g;
}

void RunReport::final(const FinalFacts& f) {
  if (ranks_.rank() != 0) return;
  const RunClock::Mark elapsed = clock_.now() - start_;
  nlohmann::json fin = {
      {"kind", "final"},
      {"epoch", f.epoch},
      {"epochs_completed", f.epochs_completed},
      {"step", f.step},
      {"ranks", ranks_.size()},
      {"loss", last_.loss()},
      {"train_acc", last_.train_acc()},
      {"test_loss", f.test_loss},
      {"test_acc", f.test_acc},
      {"test_loss_rank0", f.test_loss_rank0},
      {"test_acc_rank0", f.test_acc_rank0},
      {"total_images", total_images_},
      {"total_train_time_s", total_train_time_s_},
      {"total_images_per_s", total_images_per_s()},
      {"total_images_per_s_rank",
       total_train_time_rank_s_ > 0 ? double(total_images_rank_) / total_train_time_rank_s_ : 0},
      {"total_time_s", elapsed.t},
      {"comm_outside_epochs_bytes", f.comm_outside.bytes_sent},
      {"comm_outside_epochs_wire_bytes", f.comm_outside.wire_bytes},
      {"comm_outside_epochs_allreduces", f.comm_outside.allreduces},
      {"comm_outside_epochs_exposed_wait_s", f.comm_outside.exposed_wait_s},
      {"nonfinite_skipped_steps", f.nonfinite_skipped}};
  if (f.failures) {
    fin["failure_lost_rank_s"] = f.failure_lost_rank_s;
    fin["recovery_s"] = f.recovery_s;
  }
  if (f.test_acc5 >= 0) fin["test_acc5"] = f.test_acc5;
  if (f.test_acc5_rank0 >= 0) fin["test_acc5_rank0"] = f.test_acc5_rank0;
  if (clock_.is_virtual()) {
    fin["time_base"] = clock_.time_base();
    fin["total_train_wall_s"] = total_train_wall_s_;
    fin["total_wall_s"] = elapsed.wall;
  }
  metrics_.write(fin);
}

}  // namespace dplab
