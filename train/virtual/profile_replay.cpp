#include "dplab/train/virtual/profile_replay.h"

#include "dplab/core/error.h"
#include "dplab/core/usage_error.h"

namespace dplab {

ProfileReplay::ProfileReplay(const std::string& path, const std::string& model, int64_t batch,
                             const ParamArena& arena, double factor)
    : ProfileReplay(cluster::load_compute_profile(path), path, model, batch, arena, factor) {}

ProfileReplay::ProfileReplay(cluster::ComputeProfile profile, const std::string& path,
                             const std::string& model, int64_t batch, const ParamArena& arena,
                             double factor)
    : p_(std::move(profile)), factor_(factor) {
  DPLAB_CHECK(factor >= 1, "compute profile replay: slowdown factor {} < 1", factor);
  // A profile of another model or batch would time a different computation: refused, not
  // rescaled (compute does not scale linearly with the batch on every device).
  DPLAB_CHECK_OPTION(p_.model == model,
                     "option cluster.compute = profile:{}: the profile is of model '{}', the run "
                     "trains '{}' (record one with dplab bench train --model {} --batch {} "
                     "--profile-out FILE)",
                     path, p_.model, model, model, batch);
  DPLAB_CHECK_OPTION(p_.batch == batch,
                     "option cluster.compute = profile:{}: the profile is of batch {} per rank, "
                     "the run has batch {} (record one with dplab bench train --model {} --batch "
                     "{} --profile-out FILE)",
                     path, p_.batch, batch, model, batch);
  const auto& segs = arena.segments();
  DPLAB_CHECK_OPTION(p_.segments.size() == segs.size(),
                     "option cluster.compute = profile:{}: the profile has {} parameter tensors, "
                     "model '{}' has {}",
                     path, p_.segments.size(), model, segs.size());
  for (size_t s = 0; s < segs.size(); ++s)
    DPLAB_CHECK_OPTION(p_.segments[s].name == segs[s].name && p_.segments[s].numel == segs[s].numel,
                       "option cluster.compute = profile:{}: parameter tensor {} is '{}' ({} "
                       "values) in the profile, '{}' ({} values) in model '{}'",
                       path, s, p_.segments[s].name, p_.segments[s].numel, segs[s].name,
                       segs[s].numel, model);
}

}  // namespace dplab
