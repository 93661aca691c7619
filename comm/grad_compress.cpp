#include "dplab/comm/grad_compress.h"
#include "dplab/core/run_options.h"

#include <fmt/format.h>

#include "dplab/comm/grad_sync_options.h"
#include "dplab/comm/powersgd.h"
#include "dplab/comm/topk_compress.h"
#include "dplab/core/error.h"
#include "dplab/core/usage_error.h"

namespace dplab {

CompressOptions CompressOptions::from_options(const Options& opt, const std::string& prefix) {
  const OptionTable t = grad_sync_options().prefixed(prefix, "");
  CompressOptions o;
  o.kind = t.get_string(opt, prefix + "compress");
  o.rank = t.get_int(opt, prefix + "powersgd.rank");
  o.start_step = t.get_int(opt, prefix + "powersgd.start_step");
  o.min_compression_rate = t.get_double(opt, prefix + "powersgd.min_compression_rate");
  o.warm_start = t.get_bool(opt, prefix + "powersgd.warm_start");
  o.ratio = t.get_double(opt, prefix + "topk.ratio");
  DPLAB_CHECK_OPTION(o.ratio > 0, "option {}topk.ratio: expected a number in (0, 1], got {}",
                     prefix, o.ratio);
  o.seed = static_cast<uint64_t>(run_option_table().get_int(opt, "seed"));
  o.prefix = prefix;
  return o;
}

std::vector<std::string> compression_notes(const CompressOptions& o, int64_t max_syncs) {
  if (!o.enabled()) return {};
  if (o.kind == "topk")
    return {
        fmt::format("gradient compression: top-k ({}compress = topk, {}topk.ratio = {}) on "
                    "every synchronised step",
                    o.prefix, o.prefix, o.ratio)};
  std::vector<std::string> v = {fmt::format(
      "gradient compression: PowerSGD ({}compress = powersgd, rank {}) from synchronised step "
      "{} ({}powersgd.start_step); the steps before it are plain allreduces",
      o.prefix, o.rank, o.start_step + 1, o.prefix)};
  if (o.start_step >= max_syncs)
    v.push_back(fmt::format(
        "warning: {}powersgd.start_step = {} but the run plans at most {} synchronised step{}: "
        "PowerSGD never starts and every step is a plain allreduce; set {}powersgd.start_step "
        "below {} (PyTorch's default is 1000)",
        o.prefix, o.start_step, max_syncs, max_syncs == 1 ? "" : "s", o.prefix, max_syncs));
  return v;
}

std::unique_ptr<GradCompressor> make_grad_compressor(
    const CompressOptions& opt, const std::vector<std::vector<BucketTensor>>& buckets) {
  if (opt.kind == "powersgd") return std::make_unique<PowerSgdCompressor>(opt, buckets);
  if (opt.kind == "topk") return std::make_unique<TopKCompressor>(opt, buckets);
  DPLAB_CHECK(opt.kind == "none", "gradient compression: unknown kind '{}'", opt.kind);
  return nullptr;
}

}  // namespace dplab
