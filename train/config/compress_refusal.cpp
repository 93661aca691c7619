#include "dplab/train/config/compress_refusal.h"

#include <fmt/format.h>

namespace dplab {

namespace {

// The keys GradSync's CompressOptions reads under a prefix (comm/grad_compress.h).
bool is_compression_key(const std::string& key) {
  for (const char* tail : {"compress", "powersgd.rank", "powersgd.start_step",
                           "powersgd.min_compression_rate", "powersgd.warm_start", "topk.ratio"}) {
    const std::string t = tail;
    if (key == t || (key.size() > t.size() && key.ends_with("." + t))) return true;
  }
  return false;
}

}  // namespace

std::string compression_refusal(const std::string& key, const std::string& algo,
                                const std::string& exchanges) {
  if (!is_compression_key(key)) return "";
  std::string s =
      "Gradient compression is read only under the GradSync prefixes of the algorithms that "
      "average gradients through it: allreduce. (allreduce, post_local_sgd), hybrid., "
      "daso.local. (daso) and crossover.sync. (crossover with crossover.hierarchical = true)";
  if (!exchanges.empty()) s += fmt::format("; algorithm '{}' {}", algo, exchanges);
  return s;
}

}  // namespace dplab
