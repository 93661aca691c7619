#include "dplab/comm/cluster/cluster_option.h"

#include "dplab/comm/cluster/presets.h"
#include "dplab/core/error.h"
#include "dplab/core/usage_error.h"

namespace dplab::cluster {

std::optional<Platform> platform_from_options(const Options& opt) {
  const std::string name = opt.get_string("cluster", "");
  if (name.empty() || name == "off") return std::nullopt;
  Platform p = resolve_platform(name);
  // 0: the platform's own scale.
  const double scale = opt.get_double("cluster.compute_scale", 0.0);
  DPLAB_CHECK(scale >= 0,
              "option cluster.compute_scale: expected a number >= 0 (0: the "
              "platform's), got {}",
              scale);
  if (scale > 0) p.compute_scale = scale;
  return p;
}

std::string compute_profile_path(const Options& opt) {
  const std::string v = opt.get_string("cluster.compute", "measured");
  if (v == "measured") return "";
  const std::string prefix = "profile:";
  DPLAB_CHECK_OPTION(v.rfind(prefix, 0) == 0 && v.size() > prefix.size(),
                     "option cluster.compute: expected 'measured' or 'profile:FILE' (a file "
                     "written by dplab bench train --profile-out), got '{}'",
                     v);
  return v.substr(prefix.size());
}

bool compute_is_profile(const Options& opt) {
  return !compute_profile_path(opt).empty();
}

void refuse_cluster_until_wired(const Options& opt) {
  const auto p = platform_from_options(opt);
  if (!p) return;
  DPLAB_FAIL(
      "option cluster = '{}': the virtual cluster is not yet wired into training (issue #20: "
      "the communicators can run in virtual time, the driver's time figures cannot yet); run "
      "without --cluster, or see `dplab cluster show {}` and `dplab bench allreduce --cluster` "
      "for what it models",
      opt.get_string("cluster", ""), p->name);
}

}  // namespace dplab::cluster
