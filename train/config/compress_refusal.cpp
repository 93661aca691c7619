#include "dplab/train/config/compress_refusal.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "dplab/comm/algorithms/algorithm_options.h"
#include "dplab/comm/grad_sync_options.h"

namespace dplab {

namespace {

// The compression keys of GradSync's declaration (comm/grad_sync_options.h), under any prefix.
bool is_compression_key(const std::string& key) {
  for (const OptionDecl& d : grad_sync_options().decls()) {
    const std::string& t = d.key;
    const bool compression =
        t == "compress" || t.starts_with("powersgd.") || t.starts_with("topk.");
    if (compression && (key == t || (key.size() > t.size() && key.ends_with("." + t)))) return true;
  }
  return false;
}

// "allreduce. (allreduce, local_sgd, post_local_sgd), hybrid. (hybrid), ...": the prefixes under
// which the built-in algorithms read the compression keys, from their declarations.
std::string compression_prefixes() {
  std::vector<std::pair<std::string, std::string>> prefixes;  // prefix, algorithms
  for (const AlgorithmOptions& a : builtin_algorithm_options())
    for (const OptionDecl& d : a.options.decls()) {
      if (!d.key.ends_with(".compress")) continue;
      const std::string prefix = d.key.substr(0, d.key.size() - std::string("compress").size());
      auto it = std::find_if(prefixes.begin(), prefixes.end(),
                             [&](const auto& p) { return p.first == prefix; });
      if (it == prefixes.end())
        prefixes.emplace_back(prefix, a.name);
      else
        it->second += ", " + a.name;
    }
  std::string s;
  for (const auto& [prefix, algos] : prefixes)
    s += fmt::format("{}{} ({})", s.empty() ? "" : ", ", prefix, algos);
  return s;
}

}  // namespace

std::string compression_refusal(const std::string& key, const std::string& algo,
                                const std::string& exchanges) {
  if (!is_compression_key(key)) return "";
  std::string s = fmt::format(
      "Gradient compression is read only under the GradSync prefixes of the algorithms that "
      "average gradients through it: {}",
      compression_prefixes());
  if (!exchanges.empty()) s += fmt::format("; algorithm '{}' {}", algo, exchanges);
  return s;
}

}  // namespace dplab
