#include "dplab/train/config/registry_help.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace dplab {
namespace {

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.rfind(prefix, 0) == 0;
}

// One kind's entries (name, help, keys) under "KIND (option KEY):".
template <class Entry>
std::string section(const char* kind, const char* key, const std::vector<Entry>& entries,
                    const std::string& prefix) {
  const bool whole = prefix.empty() || starts_with(kind, prefix) || starts_with(key, prefix);
  std::string lines;
  for (const Entry& e : entries) {
    if (!whole && !starts_with(e.name, prefix)) continue;
    std::string line = fmt::format("  {:<16} {}", e.name, e.help);
    if (!e.keys.empty()) line += fmt::format(" [keys: {}]", fmt::join(e.keys, ", "));
    lines += line + "\n";
  }
  return lines.empty() ? "" : fmt::format("{} (option {}):\n{}", kind, key, lines);
}

}  // namespace

std::string registry_reference(const Registry& r, const std::string& prefix) {
  std::string out;
  for (const std::string& s : {section("models", "model", r.models(), prefix),
                               section("datasets", "data", r.datasets(), prefix),
                               section("algorithms", "algo", r.strategies(), prefix),
                               section("optimizers", "optim", r.optimizers(), prefix),
                               section("schedules", "lr.schedule", r.schedules(), prefix)})
    if (!s.empty()) out += (out.empty() ? "" : "\n") + s;
  return out;
}

}  // namespace dplab
