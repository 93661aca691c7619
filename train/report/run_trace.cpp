#include "dplab/train/report/run_trace.h"
#include "dplab/comm/comm_options.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <vector>

#include "dplab/comm/cluster/cluster_option.h"
#include "dplab/core/error.h"
#include "dplab/core/trace/merge.h"
#include "dplab/core/usage_error.h"
#include "dplab/train/config/config.h"
#include "dplab/train/data/device_prefetch.h"
#include "dplab/train/loop/rank_group.h"

namespace dplab {
namespace {

std::string host_name() {
  char buf[256] = {0};
  if (gethostname(buf, sizeof(buf) - 1) != 0) return "unknown";
  return buf;
}

}  // namespace

std::unique_ptr<trace::Tracer> make_run_tracer(const Options& opt, const std::string& out_dir,
                                               Device device) {
  const bool on = train_option_table().get_bool(opt, "trace");
  trace::TracerOptions t;
  t.steps = train_option_table().get_string(opt, "trace.steps");
  (void)trace::parse_step_window(t.steps, 0);  // a bad value fails before training, traced or not
  if (!on) return nullptr;
  DPLAB_CHECK_OPTION(!out_dir.empty(),
                     "option trace: needs an output directory (option out, --out)");
  t.dir = (std::filesystem::path(out_dir) / "trace").string();
  t.device = device;
  return std::make_unique<trace::Tracer>(t);
}

void start_run_trace(trace::Tracer* tracer, const RankGroup& ranks, const Options& opt,
                     int64_t total_steps) {
  if (!tracer) return;
  const std::string host = host_name();
  // The exchange of host names is the barrier: every rank takes its origin as it leaves it.
  const std::vector<std::string> hosts = ranks.allgather(host);
  const auto origin = trace::Clock::now();
  trace::RankPlace place;
  place.rank = ranks.rank();
  place.world_size = ranks.size();
  place.host = host;
  const int64_t rpn = communicator_option_table().get_int(opt, "ranks_per_node");
  if (const auto platform = cluster::platform_from_options(opt)) {
    // A virtual cluster: the platform's nodes (comm/cluster/platform.h shape_of).
    place.node = cluster::shape_of(*platform, ranks.size(), int(rpn)).node_of(ranks.rank());
  } else if (rpn > 0) {
    place.node = int(ranks.rank() / rpn);
  } else {
    std::vector<std::string> distinct;
    for (int r = 0; r <= ranks.rank(); ++r)
      if (std::find(distinct.begin(), distinct.end(), hosts[size_t(r)]) == distinct.end())
        distinct.push_back(hosts[size_t(r)]);
    place.node = int(std::find(distinct.begin(), distinct.end(), host) - distinct.begin());
  }
  tracer->start(place, origin, total_steps);
}

void finish_run_trace(trace::Tracer* tracer, const RankGroup& ranks, const std::string& out_dir,
                      std::ostream* errors) {
  if (!tracer) return;
  if (errors) {
    try {
      finish_run_trace(tracer, ranks, out_dir, nullptr);
    } catch (const std::exception& e) {
      *errors << "dplab: trace not merged: " << e.what() << "\n";
    }
    return;
  }
  // Every rank's file is complete before the merge (closing writes what is buffered).
  ranks.for_files().agree([&] { tracer->close(); });
  if (ranks.rank() != 0) return;
  std::vector<std::string> files;
  for (int r = 0; r < ranks.size(); ++r)
    files.push_back(
        (std::filesystem::path(out_dir) / "trace" / fmt::format("rank_{}.json", r)).string());
  const std::string other = fmt::format(
      "{{\"dplab_trace_version\":1,\"world_size\":{},\"steps\":{},\"clock\":{},"
      "\"time_base\":{}}}",
      ranks.size(), trace::json_string(tracer->window().str()),
      trace::json_string(tracer->clock_text()), trace::json_string(tracer->time_base()));
  trace::merge_traces(files, (std::filesystem::path(out_dir) / "trace.json").string(), other);
}

bool StepTrace::next(DeviceBatches& batches, Batch& b, int64_t step,
                     const std::function<void(const Batch&)>& arrived) {
  if (!trace::kCompiled || !tracer_) {
    if (!batches.next(b)) return false;
    if (arrived) arrived(b);
    return true;
  }
  const int64_t previous = tracer_->step();
  tracer_->begin_step(step);
  open_ = false;
  const bool on = tracer_->recording();
  const auto t0 = tracer_->now();  // the run's time base (virtual under a cluster)
  const auto wall0 = std::chrono::steady_clock::now();
  const bool got = batches.next(b);
  if (!got) {
    // The epoch is over: no step `step` was taken here. What follows (the end of the epoch:
    // the algorithm's end-of-epoch work, the drain, evaluation, checkpoints) belongs to no
    // step, recorded if the step before was (TrainLoop::end_epoch marks it).
    tracer_->begin_step(previous);
    tracer_->between_steps();
    return false;
  }
  if (arrived) arrived(b);
  if (on) {
    tracer_->complete("data_wait", "data", trace::kCompute, t0, tracer_->now(), step);
    start_ = t0;
    wall_start_ = wall0;
    step_ = step;
    open_ = true;
  }
  return true;
}

void StepTrace::end(int64_t epoch, int64_t images, int live_ranks) {
  if (!open_) return;
  open_ = false;
  if (!tracer_->virtual_time()) {
    tracer_->complete("step", "step", trace::kSteps, start_, tracer_->now(), step_,
                      {{"epoch", double(epoch + 1)}, {"images", double(images)}});
    return;
  }
  // Virtual time: the step's wall-clock duration beside it.
  const double wall_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - wall_start_)
          .count();
  if (live_ranks > 0)
    tracer_->complete("step", "step", trace::kSteps, start_, tracer_->now(), step_,
                      {{"epoch", double(epoch + 1)},
                       {"images", double(images)},
                       {"wall_ms", wall_ms},
                       {"live_ranks", double(live_ranks)}});
  else
    tracer_->complete(
        "step", "step", trace::kSteps, start_, tracer_->now(), step_,
        {{"epoch", double(epoch + 1)}, {"images", double(images)}, {"wall_ms", wall_ms}});
}

}  // namespace dplab
