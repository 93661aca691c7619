// Shard file names: brace expansion (WebDataset's `train-{000000..000099}.tar`) and globbing.
#include <glob.h>

#include <algorithm>
#include <cctype>
#include <filesystem>

#include "dplab/core/error.h"
#include "dplab/data/shards.h"

namespace dplab {

namespace {

// At most this many names from one pattern: a typo like {0..99999999} must not take gigabytes.
constexpr size_t kMaxExpanded = size_t(1) << 22;

bool all_digits(const std::string& s) {
  return !s.empty() &&
         std::all_of(s.begin(), s.end(), [](char c) { return std::isdigit((unsigned char)c); });
}

// The alternatives of one brace body: "a,b,c", or "M..N" (decimal, zero-padded to the width of
// M when M has a leading zero, as bash does; descending when M > N).
std::vector<std::string> alternatives(const std::string& body, const std::string& pattern) {
  const auto dots = body.find("..");
  if (dots != std::string::npos && body.find(',') == std::string::npos) {
    const std::string lo = body.substr(0, dots), hi = body.substr(dots + 2);
    DPLAB_CHECK(all_digits(lo) && all_digits(hi) && lo.size() <= 18 && hi.size() <= 18,
                "shard pattern '{}': range {{{}}}: expected {{M..N}} with decimal M and N", pattern,
                body);
    const int64_t a = std::stoll(lo), b = std::stoll(hi);
    const size_t width = lo.size() > 1 && lo[0] == '0' ? lo.size() : 0;
    DPLAB_CHECK(uint64_t(std::llabs(b - a)) < kMaxExpanded,
                "shard pattern '{}': range {{{}}} names more than {} files", pattern, body,
                kMaxExpanded);
    std::vector<std::string> r;
    for (int64_t v = a;; v += a <= b ? 1 : -1) {
      std::string s = std::to_string(v);
      if (s.size() < width) s.insert(0, width - s.size(), '0');
      r.push_back(s);
      if (v == b) break;
    }
    return r;
  }
  std::vector<std::string> r;
  size_t start = 0;
  for (size_t i = 0; i <= body.size(); ++i)
    if (i == body.size() || body[i] == ',') {
      r.push_back(body.substr(start, i - start));
      start = i + 1;
    }
  return r;
}

}  // namespace

std::vector<std::string> expand_braces(const std::string& pattern) {
  const auto open = pattern.find('{');
  if (open == std::string::npos) {
    DPLAB_CHECK(pattern.find('}') == std::string::npos, "shard pattern '{}': '}}' without '{{'",
                pattern);
    return {pattern};
  }
  const auto close = pattern.find('}', open);
  DPLAB_CHECK(close != std::string::npos, "shard pattern '{}': '{{' at offset {} is not closed",
              pattern, open);
  const std::string body = pattern.substr(open + 1, close - open - 1);
  DPLAB_CHECK(body.find('{') == std::string::npos,
              "shard pattern '{}': nested braces are not supported", pattern);
  std::vector<std::string> out;
  const std::vector<std::string> tails = expand_braces(pattern.substr(close + 1));
  for (const std::string& alt : alternatives(body, pattern))
    for (const std::string& tail : tails) {
      out.push_back(pattern.substr(0, open) + alt + tail);
      DPLAB_CHECK(out.size() <= kMaxExpanded, "shard pattern '{}' names more than {} files",
                  pattern, kMaxExpanded);
    }
  return out;
}

std::vector<std::string> expand_glob(const std::string& pattern) {
  std::vector<std::string> out, missing;
  for (const std::string& p : expand_braces(pattern)) {
    if (p.find_first_of("*?[") == std::string::npos) {  // a name: it must exist
      std::error_code ec;
      if (std::filesystem::exists(p, ec))
        out.push_back(p);
      else
        missing.push_back(p);
      continue;
    }
    glob_t g{};
    const int rc = ::glob(p.c_str(), 0, nullptr, &g);
    if (rc == 0)
      for (size_t i = 0; i < g.gl_pathc; ++i) out.emplace_back(g.gl_pathv[i]);
    ::globfree(&g);
  }
  DPLAB_CHECK(missing.empty(), "shard pattern '{}': {} named files do not exist (first: {})",
              pattern, missing.size(), missing.empty() ? "" : missing[0]);
  DPLAB_CHECK(!out.empty(), "no shard files match '{}'", pattern);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace dplab
