#include "dplab/tools/train/liveness.h"

#include <fmt/format.h>

#include "dplab/comm/cluster/virtual_time.h"
#include "dplab/tools/train/step_agreement.h"
#include "dplab/tools/train/virtual_run.h"

namespace dplab {

bool models_failures(const VirtualRun* run) {
  return run && run->virtual_time().platform.events.has_fail_events();
}

StepLiveness agree_liveness(VirtualRun& run, StepAgreement& agreement, int64_t step) {
  cluster::VirtualTime& vt = *run.shared_virtual_time();
  StepLiveness live;
  live.step = step;
  live.world_time_s = agreement.max_over_ranks(vt.clock.now());
  live.down = vt.platform.events.down_ranks(vt.shape, step, live.world_time_s);
  return live;
}

std::string describe_failures(const VirtualRun& run, const StepLiveness& live) {
  const cluster::VirtualTime& vt = run.virtual_time();
  std::string out;
  for (int r : live.down) {
    const cluster::Event* e =
        vt.platform.events.failure_of(r, vt.shape.node_of(r), live.step, live.world_time_s);
    if (!e) continue;
    const std::string when = e->from_s ? fmt::format("at {:g} s of virtual time", *e->from_s)
                                       : fmt::format("at global step {}", *e->first_step);
    out += fmt::format("{}rank {} failed {} ({})", out.empty() ? "" : "; ", r, when, e->where);
  }
  return out;
}

}  // namespace dplab
