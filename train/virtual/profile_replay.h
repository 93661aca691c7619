// Replaying a compute profile in training (issue #20 item 2; cluster.compute = profile:FILE,
// docs/virtual_cluster.md): the rank's virtual clock is manual and advances by the profile's
// forward, backward, non-finite check and optimizer times at the loop's phase boundaries, times
// this rank's
// --slowdown factor; a gradient bucket is ready at backward's start + the profile's fraction of
// backward for its last tensor. Nothing the host does enters the modelled time, so a run gives
// the same virtual times however loaded the machine is.
#pragma once
#include <cstdint>
#include <string>

#include "dplab/comm/cluster/compute_profile.h"
#include "dplab/core/param_arena.h"

namespace dplab {

class ProfileReplay {
 public:
  // Loads the profile and checks it against the run (a usage error naming the file, what the
  // profile holds and what the run has): the model, the per-rank batch, and the parameter
  // tensors (the arena's segments: count, names and sizes, in order). `factor`: this rank's
  // --slowdown (>= 1).
  ProfileReplay(const std::string& path, const std::string& model, int64_t batch,
                const ParamArena& arena, double factor);
  // The same from a parsed profile (`path` names it in errors).
  ProfileReplay(cluster::ComputeProfile profile, const std::string& path, const std::string& model,
                int64_t batch, const ParamArena& arena, double factor);

  double forward_s() const { return p_.forward_s * factor_; }
  double backward_s() const { return p_.backward_s * factor_; }
  double optimizer_s() const { return p_.optimizer_s * factor_; }
  // The driver's per-step non-finite check (0 from a profile recorded before it was).
  double check_s() const { return p_.check_s * factor_; }
  double factor() const { return factor_; }
  // When the bucket of segments [first, last] is ready, backward having started at
  // `backward_start` (virtual seconds).
  // `factor`: the step's slow events (comm/cluster/events.h) on top of --slowdown.
  double bucket_ready(double backward_start, int first, int last, double factor = 1.0) const {
    return backward_start + p_.bucket_ready_fraction(first, last) * (backward_s() * factor);
  }
  const cluster::ComputeProfile& profile() const { return p_; }

 private:
  cluster::ComputeProfile p_;
  double factor_;
};

}  // namespace dplab
