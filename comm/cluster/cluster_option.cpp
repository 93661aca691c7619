#include "dplab/comm/cluster/cluster_option.h"

#include "dplab/comm/cluster/presets.h"
#include "dplab/core/error.h"

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
