#include "dplab/train/virtual/virtual_run.h"
#include "dplab/comm/comm_options.h"
#include "dplab/train/virtual/virtual_options.h"

#include <fmt/format.h>

#include "dplab/comm/cluster/cluster_option.h"
#include "dplab/comm/cluster/virtual_time_source.h"
#include "dplab/comm/mpi_env.h"
#include "dplab/comm/slowdown.h"
#include "dplab/comm/world.h"
#include "dplab/core/error.h"
#include "dplab/core/usage_error.h"

namespace dplab {

int64_t check_cluster_run(const Options& opt, int64_t threads) {
  if (!cluster::platform_from_options(opt)) return threads;
  const std::string name = communicator_option_table().get_string(opt, "cluster");
  const std::string device = communicator_option_table().get_string(opt, "device");
  DPLAB_CHECK_OPTION(!Device::parse(device).is_cuda(),
                     "option cluster = '{}': the virtual cluster models ranks on the CPU with the "
                     "MPI backend, device is {}; a GPU's compute enters through a profile: record "
                     "one with dplab bench train --device {} --profile-out FILE, then train with "
                     "device = cpu and cluster.compute = profile:FILE",
                     name, device, device);
  const std::string backend = comm_backend(opt);
  DPLAB_CHECK_OPTION(backend == "mpi",
                     "option cluster = '{}': the virtual cluster runs on the MPI backend, comm "
                     "resolves to {} (comm = '{}')",
                     name, backend, communicator_option_table().get_string(opt, "comm"));
  DPLAB_CHECK_OPTION(
      threads == 0 || threads == 1,
      "option threads = {}: under a virtual cluster (cluster = '{}') a rank computes "
      "on one thread, whose CPU time is its compute (docs/virtual_cluster.md); use "
      "threads = 1 or leave it unset (0 becomes 1)",
      threads, name);
  return 1;
}

std::unique_ptr<VirtualRun> make_virtual_run(const Options& opt, Device device,
                                             const std::string& model, int64_t batch,
                                             const ParamArena& arena) {
  if (!cluster::platform_from_options(opt)) return nullptr;
  const MpiEnv& mpi = MpiEnv::get();  // the cluster runs on the MPI backend
  const int rank = mpi.world_rank(), size = mpi.world_size();
  const double slowdown = Slowdown::from_options(opt, rank, size).factor();
  std::unique_ptr<VirtualRun> run = VirtualRun::from_options(opt, device, rank, size, slowdown);
  run->attach_model(model, batch, arena);
  return run;
}

std::unique_ptr<VirtualRun> VirtualRun::from_options(const Options& opt, Device device, int rank,
                                                     int world_size, double slowdown) {
  std::optional<cluster::Platform> platform = cluster::platform_from_options(opt);
  if (!platform) return nullptr;
  const std::string name = communicator_option_table().get_string(opt, "cluster");
  DPLAB_CHECK_OPTION(!device.is_cuda(),
                     "option cluster = '{}': the virtual cluster models ranks on the CPU with the "
                     "MPI backend, device is {}; a GPU's compute enters through a profile: record "
                     "one with dplab bench train --device {} --profile-out FILE, then train with "
                     "device = cpu and cluster.compute = profile:FILE",
                     name, device.str(), device.str());
  const std::string backend = comm_backend(opt);
  DPLAB_CHECK_OPTION(backend == "mpi",
                     "option cluster = '{}': the virtual cluster runs on the MPI backend, comm "
                     "resolves to {} (comm = '{}')",
                     name, backend, communicator_option_table().get_string(opt, "comm"));
  const std::string profile = cluster::compute_profile_path(opt);
  const OptionTable& t = virtual_run_option_table();
  const double data_rate = t.get_double(opt, "cluster.data_rate");
  const FailureData failure_data = parse_failure_data(t.get_string(opt, "cluster.failure_data"));
  DPLAB_CHECK(slowdown >= 1, "virtual cluster: slowdown factor {} < 1", slowdown);
  const cluster::Shape shape = cluster::shape_of(
      *platform, world_size, int(communicator_option_table().get_int(opt, "ranks_per_node")));
  DPLAB_CHECK(rank >= 0 && rank < world_size, "virtual cluster: rank {} of {}", rank, world_size);
  platform->events.check_against(shape);
  // Measured compute: this rank's --slowdown multiplies its clock's CPU time (profile compute
  // multiplies the profile's times instead, in ProfileReplay).
  if (profile.empty()) platform->compute_scale *= slowdown;
  auto vt = std::make_shared<cluster::VirtualTime>(std::move(*platform), shape,
                                                   profile.empty()
                                                       ? cluster::VirtualClock::Compute::measured
                                                       : cluster::VirtualClock::Compute::manual);
  auto run = std::unique_ptr<VirtualRun>(
      new VirtualRun(std::move(vt), rank, profile.empty() ? "measured" : "profile:" + profile,
                     data_rate, slowdown, profile));
  run->failure_data_ = failure_data;
  run->slowdown_spec_ = communicator_option_table().get_string(opt, "slowdown");
  return run;
}

VirtualRun::VirtualRun(std::shared_ptr<cluster::VirtualTime> vt, int rank, std::string compute,
                       double data_rate, double slowdown, std::string profile_path)
    : vt_(vt),
      source_(std::make_shared<cluster::VirtualTimeSource>(vt)),
      compute_(std::move(compute)),
      profile_path_(std::move(profile_path)),
      data_rate_(data_rate),
      rank_(rank),
      slowdown_(slowdown) {
  // Set-up is not compute: the first step resumes counting.
  vt_->clock.count_compute(false);
}

VirtualRun::~VirtualRun() {
  vt_->bucket_ready = nullptr;  // the communicators may outlive this object
}

void VirtualRun::attach_model(const std::string& model, int64_t batch, const ParamArena& arena) {
  if (profile_path_.empty()) return;
  replay_.emplace(profile_path_, model, batch, arena, slowdown_);
  // The profile's fraction of this step's backward (slow events included).
  vt_->bucket_ready = [this](int first, int last) {
    return replay_->bucket_ready(backward_start_, first, last, events_factor_ * batch_share_);
  };
}

std::string VirtualRun::time_base() const {
  return "virtual:" + vt_->platform.name;
}

std::string VirtualRun::describe() const {
  const cluster::Shape& s = vt_->shape;
  std::string compute;
  if (replay_) {
    const auto& p = replay_->profile();
    compute = fmt::format(
        "compute replayed from {} ({} on {}: forward {:.3g} + backward {:.3g} + check {:.3g}{} + "
        "optimizer {:.3g} ms per step)",
        profile_path_, p.model, p.device.empty() ? "?" : p.device, 1e3 * p.forward_s,
        1e3 * p.backward_s, 1e3 * p.check_s, p.check_s > 0 ? "" : " (not in the profile)",
        1e3 * p.optimizer_s);
  } else {
    compute =
        fmt::format("compute = thread CPU time x {:g}", vt_->platform.compute_scale / slowdown_);
  }
  // Every rank's factor, not only the printing rank's.
  if (!slowdown_spec_.empty())
    compute += fmt::format(", times the named ranks' factors (option slowdown {})", slowdown_spec_);
  std::string events;
  for (const auto& e : vt_->platform.events.list())
    events += fmt::format("    event {}\n", cluster::describe(e));
  return fmt::format(
      "  virtual cluster {}: {} node{} x {} rank{} per node; {}; loading {}; times are virtual "
      "(wall_s beside them)\n{}",
      vt_->platform.name, s.nodes, s.nodes == 1 ? "" : "s", s.ranks_per_node,
      s.ranks_per_node == 1 ? "" : "s", compute,
      data_rate_ > 0 ? fmt::format("at {:g} samples/s per rank", data_rate_)
                     : std::string("hidden by prefetch"),
      events);
}

void cluster_facts(const VirtualRun& run, RunFacts& f) {
  f.time_base = run.time_base();
  f.cluster_nodes = run.virtual_time().shape.nodes;
  f.cluster_ranks_per_node = run.virtual_time().shape.ranks_per_node;
  f.cluster_note = run.describe();
}

void VirtualRun::pause() {
  vt_->clock.count_compute(false);
}

void VirtualRun::resume() {
  vt_->clock.count_compute(!down_);  // a down rank's compute is not charged
}

void VirtualRun::step_begin(int64_t step) {
  resume();
  batch_share_ = 1;
  const auto& events = vt_->platform.events;
  if (events.empty()) return;
  if (down_) {  // profile compute: the phases add 0; measured: the clock does not count
    events_factor_ = 0;
    return;
  }
  events_factor_ = events.compute_factor(rank_, vt_->shape.node_of(rank_), step, vt_->clock.now());
  // Measured compute: the clock scales the CPU time (--slowdown is in its compute_scale).
  if (!replay_) vt_->clock.set_compute_factor(events_factor_);
}

void VirtualRun::begin_epoch() {
  loader_ready_ = vt_->clock.now();
}

void VirtualRun::batch_arrived(int64_t samples) {
  if (data_rate_ <= 0) return;
  const double asked = vt_->clock.now();
  loader_ready_ = std::max(asked, loader_ready_ + double(samples) / data_rate_);
  vt_->clock.wait_until(loader_ready_);
}

void VirtualRun::begin(StepPhase phase) {
  if (phase == StepPhase::backward && replay_) backward_start_ = vt_->clock.now();
  if (phase == StepPhase::optimizer) resume();  // paused after the check
}

void VirtualRun::end(StepPhase phase, bool stepped) {
  switch (phase) {
    case StepPhase::forward:
      if (replay_) vt_->clock.add_compute(replay_->forward_s() * events_factor_ * batch_share_);
      break;
    case StepPhase::backward:
      if (replay_) vt_->clock.add_compute(replay_->backward_s() * events_factor_ * batch_share_);
      break;
    case StepPhase::check:
      if (replay_) vt_->clock.add_compute(replay_->check_s() * events_factor_);
      pause();  // the ranks' agreement on the check is not modelled
      break;
    case StepPhase::optimizer:
      if (replay_ && stepped) vt_->clock.add_compute(replay_->optimizer_s() * events_factor_);
      break;
  }
}

}  // namespace dplab
