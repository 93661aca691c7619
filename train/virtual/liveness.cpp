#include "dplab/train/virtual/liveness.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "dplab/comm/cluster/virtual_time.h"
#include "dplab/train/loop/step_agreement.h"
#include "dplab/train/virtual/virtual_run.h"

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
  // One clause per event, naming its ranks together (a node's four ranks in one clause).
  std::vector<std::pair<const cluster::Event*, std::vector<int>>> by_event;
  for (int r : live.down) {
    const cluster::Event* e =
        vt.platform.events.failure_of(r, vt.shape.node_of(r), live.step, live.world_time_s);
    if (!e) continue;
    auto it =
        std::find_if(by_event.begin(), by_event.end(), [e](const auto& p) { return p.first == e; });
    if (it == by_event.end())
      by_event.push_back({e, {r}});
    else
      it->second.push_back(r);
  }
  std::string out;
  for (const auto& [e, ranks] : by_event) {
    const std::string when = e->from_s ? fmt::format("at {:g} s of virtual time", *e->from_s)
                                       : fmt::format("at global step {}", *e->first_step);
    const std::string who = ranks.size() == 1 ? fmt::format("rank {}", ranks[0])
                                              : fmt::format("ranks {}", fmt::join(ranks, ", "));
    out += fmt::format("{}{} failed {} ({})", out.empty() ? "" : "; ", who, when, e->where);
  }
  return out;
}

}  // namespace dplab
