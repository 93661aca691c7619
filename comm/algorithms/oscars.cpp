#include "dplab/comm/algorithms/oscars.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "dplab/comm/algorithms/algo_state.h"
#include "dplab/comm/algorithms/algorithm_options.h"
#include "dplab/core/usage_error.h"

namespace dplab {

namespace {
std::vector<int64_t> parse_times(const std::string& s) {
  std::vector<int64_t> r;
  size_t pos = 0;
  while (pos < s.size()) {
    size_t end = s.find(',', pos);
    if (end == std::string::npos) end = s.size();
    const std::string item = s.substr(pos, end - pos);
    try {
      r.push_back(std::stoll(item));
    } catch (const std::exception&) {
      DPLAB_FAIL_OPTION(
          "option oscars.t_us: expected integers >= 1 (us) separated by commas, got '{}' ('{}' "
          "is not an integer)",
          s, item);
    }
    DPLAB_CHECK_OPTION(r.back() >= 1,
                       "option oscars.t_us: expected integers >= 1 (us) separated by commas, got "
                       "'{}' ({} < 1)",
                       s, r.back());
    pos = end + 1;
  }
  return r;
}

// Option oscars.resolution_us: "measured" (-1) or microseconds >= 0.
int64_t parse_resolution(const std::string& s) {
  if (s == "measured") return -1;
  size_t used = 0;
  int64_t v = -1;
  try {
    v = std::stoll(s, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  DPLAB_CHECK_OPTION(used == s.size() && used > 0 && v >= 0,
                     "option oscars.resolution_us: expected 'measured' or an integer >= 0 (us), "
                     "got '{}'",
                     s);
  return v;
}
}  // namespace

// The keys, defaults and ranges: oscars_options.cpp.
OscarsStrategy::OscarsStrategy(std::shared_ptr<Topology> topo, const Options& opt)
    : DistributedStrategy(std::move(topo)),
      discard_(oscars_option_table().get_int(opt, "oscars.profile_discard")),
      measure_(oscars_option_table().get_int(opt, "oscars.profile_measure")),
      reprofile_rounds_(oscars_option_table().get_int(opt, "oscars.reprofile_rounds")) {
  const OptionTable& t = oscars_option_table();
  search_opt_.M = t.get_int(opt, "oscars.M");
  search_opt_.tau_cap = t.get_int(opt, "oscars.tau_max");
  search_opt_.mode = parse_oscars_search_mode(t.get_string(opt, "oscars.search"));
  search_opt_.text_step_us = t.get_int(opt, "oscars.text_step_us");
  fixed_t_us_ = parse_times(t.get_string(opt, "oscars.t_us"));
  resolution_opt_ = parse_resolution(t.get_string(opt, "oscars.resolution_us"));
  if (resolution_opt_ < 0 && fixed_t_us_.empty())  // read only where it applies
    resolution_rel_ = t.get_double(opt, "oscars.resolution_rel");
  DPLAB_CHECK_OPTION(fixed_t_us_.empty() || int(fixed_t_us_.size()) == world_size(),
                     "option oscars.t_us: expected one time per rank ({}), got {} times",
                     world_size(), fixed_t_us_.size());
  // Checked here so a typo fails before training (the search itself runs after profiling): M,
  // tau_max and text_step_us against the search's own limits.
  oscars_search(std::vector<int64_t>{1}, search_opt_);
}

void OscarsStrategy::setup(TrainContext& ctx) {
  DistributedStrategy::setup(ctx);  // step 1: rank 0's parameters on every rank
  if (!fixed_t_us_.empty()) {       // no profiling: schedule at once
    profiling_ = false;
    reschedule();
  }
}

bool OscarsStrategy::timed() const {
  // Iteration times are used while profiling and, with reprofile_rounds, for the next search;
  // only then is a step timed. On a device that costs two host synchronisations per step, which
  // a run without re-profiling must not pay after its profile.
  return fixed_t_us_.empty() && (profiling_ || reprofile_rounds_ > 0);
}

void OscarsStrategy::wait_for_device() const {
  // Copying one parameter back waits for the compute stream, which has waited for every
  // communication the step consumed (a CPU arena needs nothing).
  if (!ctx_.arena->device().is_cpu()) (void)ctx_.arena->params().flat_range(0, 1).item();
}

StepPlan OscarsStrategy::plan(const StepInfo&) {
  // Steps 2 and 4: during profiling every rank computes; in a round, the first tau_i ticks.
  computing_ = profiling_ || round_pos_ < sched_.tau[size_t(rank())];
  // A timed step starts with the device idle: otherwise its time would include the tail of the
  // previous step (the host runs ahead of a device), in particular the previous parameter
  // average, which on NCCL the host never waits for and which ends with the slowest rank.
  if (computing_ && timed()) wait_for_device();
  // On the run's time base: with a virtual cluster the step times, hence T* and tau, are the
  // modelled platform's, not the loaded host's.
  t_plan_ = ctx_.time->now();
  StepPlan p;
  p.compute = computing_;
  return p;
}

int64_t OscarsStrategy::my_median_us() const {
  const size_t n = std::min(samples_us_.size(), size_t(measure_));
  DPLAB_CHECK(n > 0, "oscars: no iteration time measured on rank {}", rank());
  std::vector<int64_t> v(samples_us_.end() - std::ptrdiff_t(n), samples_us_.end());
  std::nth_element(v.begin(), v.begin() + std::ptrdiff_t(n / 2), v.end());
  return std::max<int64_t>(1, v[n / 2]);  // upper median for even n
}

int64_t OscarsStrategy::my_spread_us() const {
  // The range of the middle 80% of the samples the median was taken from (10th to 90th
  // percentile): how far this rank's iteration times scatter, without the odd outlier (a page
  // fault). Wider than the interquartile range, which two identical ranks' medians often
  // exceeded (3660 and 3754 us with ranges of 80 and 91 us on a loaded 2-core host); the
  // search's floor, resolution_rel, covers the slower drifts (reschedule()).
  const size_t n = std::min(samples_us_.size(), size_t(measure_));
  DPLAB_CHECK(n > 0, "oscars: no iteration time measured on rank {}", rank());
  std::vector<int64_t> v(samples_us_.end() - std::ptrdiff_t(n), samples_us_.end());
  std::sort(v.begin(), v.end());
  // Trim n/10 samples at each end, and at least one from 3 samples on: with the 5 samples of a
  // short profile the full range would be set by one hiccup.
  const size_t k = std::max(n / 10, size_t(n >= 3 ? 1 : 0));
  return v[n - 1 - k] - v[k];
}

void OscarsStrategy::reschedule() {
  // Step 3, the "global view": every rank learns every t_i and runs the same search.
  const int N = world_size();
  std::vector<int64_t> t;
  OscarsSearchOptions so = search_opt_;
  if (!fixed_t_us_.empty()) {
    t = fixed_t_us_;
    t_spread_us_ = 0;
    so.resolution_us = std::max<int64_t>(0, resolution_opt_);  // given times are exact
  } else {
    // Host values: they travel on the arena's device (the communicator's) and come back to
    // the host explicitly (to_vector_i64). Per rank: its median and its spread.
    const Device dev = ctx_.arena->device();
    Tensor mine = Tensor::from_vector_i64({my_median_us(), my_spread_us()}, {2}).to(dev);
    Tensor all = Tensor::empty({2 * N}, DType::i64, dev);  // every element is gathered
    Pending gather = meter().iallgather(world(), "oscars time allgather", mine, all);
    meter().complete_blocking(gather, Use::host);
    const std::vector<int64_t> v = all.to_vector_i64();
    int64_t widest = 0;
    for (int i = 0; i < N; ++i) {
      t.push_back(v[size_t(2 * i)]);
      widest = std::max(widest, v[size_t(2 * i + 1)]);
    }
    t_spread_us_ = v[size_t(2 * rank() + 1)];
    // Times that agree within the noisiest rank's spread cannot be told apart by this
    // measurement. Nor can those within resolution_rel of the fastest: a profile window is
    // tens of milliseconds, and a loaded host slows one rank for a whole window and another
    // rank in the next (identical ranks measured 1.5 to 7.8% apart with spreads of 0.04 to
    // 0.19 ms at 3.6-4 ms per step, on 2 shared cores). Below that, Eq. 3 would set rounds of
    // more than 10 local steps from the host's load, to save at most that fraction of idle.
    const int64_t fastest = *std::min_element(t.begin(), t.end());
    so.resolution_us =
        resolution_opt_ >= 0
            ? resolution_opt_
            : std::max(widest, int64_t(std::ceil(resolution_rel_ * double(fastest))));
  }
  t_us_ = t[size_t(rank())];
  sched_ = oscars_search(t, so);
  R_ = *std::max_element(sched_.tau.begin(), sched_.tau.end());
  plan_t_us_ = t;
  wait_pred_us_ = predicted_wait_us(size_t(rank()));
  wait_meas_sum_s_ = 0;
  wait_meas_rounds_ = 0;
  round_pos_ = 0;
  ++searches_;
}

int64_t OscarsStrategy::predicted_wait_us(size_t i) const {
  // Rank i's idle at the round's barrier if every rank j took exactly its planned t_j per
  // step: the longest round, max_j tau_j t_j, less its own tau_i t_i.
  int64_t longest = 0;
  for (size_t j = 0; j < plan_t_us_.size(); ++j)
    longest = std::max(longest, sched_.tau[j] * plan_t_us_[j]);
  return longest - sched_.tau[i] * plan_t_us_[i];
}

void OscarsStrategy::average() {
  // Eq. 4: x = (1/N) Σ_i x_i, one blocking allreduce (on NCCL the next step's kernels wait for
  // it on the device, not the host).
  double waited = 0;
  if (world_size() > 1) {
    Pending avg =
        meter().iallreduce(world(), "parameter average", ctx_.arena->params(), ReduceOp::average);
    waited = meter().complete_blocking(avg);
  }
  // The measured wait per round (state: wait_meas_*). On NCCL the host figure is 0: the
  // device's wait arrives later, summed over a window, in take_stats (comm/device_waits.h),
  // so there the per-round comparison with the prediction is not available.
  if (!profiling_) {
    wait_meas_last_s_ = waited;
    wait_meas_sum_s_ += waited;
    ++wait_meas_rounds_;
  }
  ++averages_;
}

void OscarsStrategy::after_step(const StepInfo& step) {
  if (computing_ && timed()) {
    // On a device the step's kernels are only queued by now: the iteration time counts once
    // they have run.
    wait_for_device();
    // Integer microseconds, rounded (a virtual 3 ms is 0.0029999... s after subtraction).
    samples_us_.push_back(int64_t(std::llround(1e6 * (ctx_.time->now() - t_plan_))));
    // Keep only what a median can use.
    if (samples_us_.size() > size_t(4 * measure_))
      samples_us_.erase(samples_us_.begin(), samples_us_.end() - std::ptrdiff_t(measure_));
  }
  if (profiling_) {
    average();  // tau = 1 while measuring
    ++profile_ticks_;
    if (profile_ticks_ == discard_ + measure_) {
      profiling_ = false;
      reschedule();
    }
    return;
  }
  ++round_pos_;
  if (round_pos_ == R_ || step.last_in_epoch()) {  // round end (cut at the epoch's last tick)
    average();
    round_pos_ = 0;
    ++rounds_;
    if (reprofile_rounds_ > 0 && rounds_ % reprofile_rounds_ == 0) reschedule();
  }
}

void OscarsStrategy::finish_training() {
  // Stopped mid-round (max_steps): all ranks stop at the same tick, so all reach this average.
  if (!profiling_ && round_pos_ > 0) {
    average();
    round_pos_ = 0;
  }
}

void OscarsStrategy::drain() {
  average_buffers();
}

void OscarsStrategy::save_algorithm_state(StateDict& out) const {
  out.put_int("ranks", world_size());
  out.put_bool("profiling", profiling_);
  out.put_int("profile_ticks", profile_ticks_);
  out.put_ints("samples_us", samples_us_);
  out.put_int("T_us", sched_.T_us);
  out.put_ints("tau", sched_.tau);
  out.put_int("max_wait_us", sched_.max_wait_us);
  out.put_bool("feasible", sched_.feasible);
  out.put_int("candidates", sched_.candidates);
  out.put_int("t_us", t_us_);
  out.put_int("t_spread_us", t_spread_us_);
  out.put_int("resolution_us", sched_.resolution_us);
  out.put_ints("plan_t_us", plan_t_us_);
  out.put_int("round_pos", round_pos_);
  out.put_int("rounds", rounds_);
  out.put_int("averages", averages_);
  out.put_int("searches", searches_);
}

void OscarsStrategy::load_algorithm_state(const StateDict& in) {
  const int n = world_size();
  state_int(in, "oscars", "ranks", n, n);
  const std::string where = in.origin().empty() ? std::string("state") : in.origin();
  const bool profiling = in.get_bool("profiling");
  const int64_t ticks = state_int(in, "oscars", "profile_ticks", 0, discard_ + measure_);
  DPLAB_CHECK(profiling == (ticks < discard_ + measure_) || !fixed_t_us_.empty(),
              "{}: oscars state 'profiling' = {} with 'profile_ticks' = {} of {}", where, profiling,
              ticks, discard_ + measure_);
  const std::vector<int64_t> samples = in.get_ints("samples_us");
  for (size_t i = 0; i < samples.size(); ++i)
    DPLAB_CHECK(samples[i] >= 0, "{}: oscars state 'samples_us' element {} = {} < 0", where, i,
                samples[i]);
  OscarsSchedule s;
  s.tau = in.get_ints("tau");
  DPLAB_CHECK(s.tau.empty() ? profiling : int(s.tau.size()) == n,
              "{}: oscars state 'tau' has {} values for {} ranks{}", where, s.tau.size(), n,
              profiling ? "" : " (and profiling is over)");
  for (size_t i = 0; i < s.tau.size(); ++i)
    DPLAB_CHECK(
        s.tau[i] >= 1 && (search_opt_.tau_cap == 0 || s.tau[i] <= search_opt_.tau_cap),
        "{}: oscars state 'tau' element {} = {}: expected a value in [1, {}] "
        "(oscars.tau_max)",
        where, i, s.tau[i],
        search_opt_.tau_cap == 0 ? std::string("inf") : std::to_string(search_opt_.tau_cap));
  s.T_us = state_int(in, "oscars", "T_us", 0, INT64_MAX);
  s.max_wait_us = state_int(in, "oscars", "max_wait_us", 0, INT64_MAX);
  s.feasible = in.get_bool("feasible");
  s.candidates = state_int(in, "oscars", "candidates", 0, INT64_MAX);
  // Checkpoints written before the resolution existed searched with none (Eq. 3 exactly).
  s.resolution_us =
      in.has("resolution_us") ? state_int(in, "oscars", "resolution_us", 0, INT64_MAX) : 0;
  const int64_t spread =
      in.has("t_spread_us") ? state_int(in, "oscars", "t_spread_us", 0, INT64_MAX) : 0;
  const int64_t R = s.tau.empty() ? 1 : *std::max_element(s.tau.begin(), s.tau.end());
  const int64_t pos = state_int(in, "oscars", "round_pos", 0, R - 1);
  const int64_t t_us = state_int(in, "oscars", "t_us", 0, INT64_MAX);
  const int64_t rounds = state_int(in, "oscars", "rounds", 0, INT64_MAX);
  const int64_t averages = state_int(in, "oscars", "averages", 0, INT64_MAX);
  const int64_t searches = state_int(in, "oscars", "searches", 0, INT64_MAX);
  // Every rank's t_i of the last search (for the predicted waits); checkpoints written before
  // it was saved lack it, and the predictions stay unknown until the next search.
  std::vector<int64_t> plan_t;
  if (in.has("plan_t_us")) plan_t = in.get_ints("plan_t_us");
  DPLAB_CHECK(plan_t.empty() || plan_t.size() == s.tau.size(),
              "{}: oscars state 'plan_t_us' has {} values for {} tau values", where, plan_t.size(),
              s.tau.size());
  for (size_t i = 0; i < plan_t.size(); ++i)
    DPLAB_CHECK(plan_t[i] >= 0, "{}: oscars state 'plan_t_us' element {} = {} < 0", where, i,
                plan_t[i]);
  profiling_ = profiling;
  profile_ticks_ = ticks;
  samples_us_ = samples;
  sched_ = std::move(s);
  R_ = R;
  round_pos_ = pos;
  t_us_ = t_us;
  t_spread_us_ = spread;
  rounds_ = rounds;
  averages_ = averages;
  searches_ = searches;
  computing_ = false;
  plan_t_us_ = std::move(plan_t);
  wait_pred_us_ = plan_t_us_.empty() ? -1 : predicted_wait_us(size_t(rank()));
  wait_meas_sum_s_ = wait_meas_last_s_ = 0;
  wait_meas_rounds_ = 0;
}

std::map<std::string, double> OscarsStrategy::state() const {
  std::map<std::string, double> m = {{"rounds", double(rounds_)},
                                     {"averages", double(averages_)},
                                     {"searches", double(searches_)},
                                     {"profiling", profiling_ ? 1.0 : 0.0}};
  if (!sched_.tau.empty()) {
    m["T_us"] = double(sched_.T_us);
    m["tau"] = double(sched_.tau[size_t(rank())]);
    m["tau_min"] = double(*std::min_element(sched_.tau.begin(), sched_.tau.end()));
    m["tau_max"] = double(R_);
    m["t_us"] = double(t_us_);
    m["t_spread_us"] = double(t_spread_us_);
    m["resolution_us"] = double(sched_.resolution_us);
    m["max_wait_us"] = double(sched_.max_wait_us);
    if (wait_pred_us_ >= 0) m["wait_pred_us"] = double(wait_pred_us_);
    if (wait_meas_rounds_ > 0) {
      m["wait_meas_us"] = 1e6 * wait_meas_sum_s_ / double(wait_meas_rounds_);
      m["wait_meas_last_us"] = 1e6 * wait_meas_last_s_;
    }
    m["feasible"] = sched_.feasible ? 1.0 : 0.0;
    for (size_t i = 0; i < sched_.tau.size(); ++i) {
      m[fmt::format("tau_r{}", i)] = double(sched_.tau[i]);
      if (plan_t_us_.size() == sched_.tau.size())
        m[fmt::format("wait_pred_us_r{}", i)] = double(predicted_wait_us(i));
    }
  }
  return m;
}

std::unique_ptr<Strategy> make_oscars_strategy(std::shared_ptr<Topology> topo, const Options& opt) {
  return std::make_unique<OscarsStrategy>(std::move(topo), opt);
}

ReshardPolicy oscars_reshard_policy(const CheckpointConfig&) {
  ReshardPolicy p = averaging_policy(
      "the replicas' average; the per-rank schedule (profile, tau, round position) derived "
      "anew for the new world as at a run's start; the optimizer's state averaged (its step "
      "count rank 0's)");
  p.rules.algo = {{"rounds", Combine::rank0},
                  {"averages", Combine::rank0},
                  {"searches", Combine::rank0},
                  {"*", Combine::fresh}};
  p.rules.differing_step_counts = true;
  return p;
}

}  // namespace dplab
