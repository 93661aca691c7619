#include "dplab/train/config/compress_refusal.h"

#include <fmt/format.h>

#include <map>

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

// What each algorithm without a GradSync exchanges instead of gradients.
std::string why_not(const std::string& algo) {
  static const std::map<std::string, std::string> reasons = {
      {"local", "trains on one rank's gradients without communication"},
      {"local_sgd", "averages parameters every local_sgd.H steps, not gradients"},
      {"dcs3gd",
       "allreduces its delayed updates (the momentum step) itself, not gradients through GradSync"},
      {"sgp", "gossips parameters (push-sum) and averages no gradients"},
      {"oscars", "averages parameters after every round of local steps, not gradients"},
      {"diloco", "averages outer gradients (parameter differences) once per round"},
      {"streaming_diloco",
       "averages outer gradients (parameter differences) per fragment; "
       "streaming_diloco.quantize sends them in 8 or 4 bits (int8, int4, fp8_e4m3, fp4_e2m1)"},
      {"slowmo", "averages parameters once per round (with a local SGD or SGP base)"},
  };
  const auto it = reasons.find(algo);
  return it == reasons.end() ? std::string() : it->second;
}

}  // namespace

std::string compression_refusal(const std::string& key, const std::string& algo) {
  if (!is_compression_key(key)) return "";
  std::string s =
      "Gradient compression is read only under the GradSync prefixes of the algorithms that "
      "average gradients through it: allreduce. (allreduce, post_local_sgd), hybrid., "
      "daso.local. (daso) and crossover.sync. (crossover with crossover.hierarchical = true)";
  const std::string why = why_not(algo);
  if (!why.empty()) s += fmt::format("; algorithm '{}' {}", algo, why);
  return s;
}

}  // namespace dplab
