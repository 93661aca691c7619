#include "dplab/core/trace/step_window.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

#include "dplab/core/error.h"
#include "dplab/core/usage_error.h"

namespace dplab::trace {
namespace {

bool parse_int(std::string_view s, int64_t& out) {
  if (s.empty()) return false;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), out);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

}  // namespace

std::string StepWindow::str() const {
  if (begin == 0 && end == kAll) return "all";
  return fmt::format("{}:{}", begin, end);
}

StepWindow parse_step_window(const std::string& text, int64_t total_steps) {
  if (text == "all") return {0, StepWindow::kAll};
  if (text == "auto") {
    const int64_t total = std::max<int64_t>(total_steps, 0);
    const int64_t b = std::min<int64_t>(10, std::max<int64_t>(0, total - 10));
    return {b, std::max(b + 1, std::min<int64_t>(b + 10, total))};
  }
  const auto colon = text.find(':');
  int64_t a = 0, b = 0;
  DPLAB_CHECK_OPTION(
      colon != std::string::npos && parse_int(std::string_view(text).substr(0, colon), a) &&
          parse_int(std::string_view(text).substr(colon + 1), b) && a >= 0 && b > a,
      "option trace.steps: expected A:B (global steps A <= step < B, 0 <= A < B), all or "
      "auto, got '{}'",
      text);
  return {a, b};
}

}  // namespace dplab::trace
