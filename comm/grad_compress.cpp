#include "dplab/comm/grad_compress.h"

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
  return o;
}

std::unique_ptr<GradCompressor> make_grad_compressor(
    const CompressOptions& opt, const std::vector<std::vector<BucketTensor>>& buckets) {
  if (opt.kind == "powersgd") return std::make_unique<PowerSgdCompressor>(opt, buckets);
  if (opt.kind == "topk") return std::make_unique<TopKCompressor>(opt, buckets);
  DPLAB_CHECK(opt.kind == "none", "gradient compression: unknown kind '{}'", opt.kind);
  return nullptr;
}

}  // namespace dplab
