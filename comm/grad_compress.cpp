#include "dplab/comm/grad_compress.h"

#include <fmt/format.h>

#include "dplab/comm/powersgd.h"
#include "dplab/comm/topk_compress.h"
#include "dplab/core/error.h"

namespace dplab {

CompressOptions CompressOptions::from_options(const Options& opt, const std::string& prefix) {
  CompressOptions o;
  o.kind = opt.get_string(prefix + "compress", o.kind);
  DPLAB_CHECK(o.kind == "none" || o.kind == "powersgd" || o.kind == "topk",
              "option {}compress: expected none, powersgd or topk, got '{}'", prefix, o.kind);
  o.rank = opt.get_int(prefix + "powersgd.rank", o.rank);
  DPLAB_CHECK(o.rank >= 1, "option {}powersgd.rank: expected >= 1, got {}", prefix, o.rank);
  o.start_step = opt.get_int(prefix + "powersgd.start_step", o.start_step);
  DPLAB_CHECK(o.start_step >= 0, "option {}powersgd.start_step: expected >= 0, got {}", prefix,
              o.start_step);
  o.min_compression_rate =
      opt.get_double(prefix + "powersgd.min_compression_rate", o.min_compression_rate);
  DPLAB_CHECK(o.min_compression_rate >= 0,
              "option {}powersgd.min_compression_rate: expected >= 0, got {}", prefix,
              o.min_compression_rate);
  o.warm_start = opt.get_bool(prefix + "powersgd.warm_start", o.warm_start);
  o.ratio = opt.get_double(prefix + "topk.ratio", o.ratio);
  DPLAB_CHECK(o.ratio > 0 && o.ratio <= 1, "option {}topk.ratio: expected (0, 1], got {}", prefix,
              o.ratio);
  o.seed = static_cast<uint64_t>(opt.get_int("seed", 0));
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
