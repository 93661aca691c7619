#include "dplab/core/suggest.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

namespace dplab {

namespace {

thread_local size_t cells_computed = 0;

// UTF-8 characters: every byte but continuation bytes (10xxxxxx) starts one.
size_t characters(std::string_view s) {
  return size_t(std::count_if(
      s.begin(), s.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xc0) != 0x80; }));
}

}  // namespace

size_t edit_distance_within(std::string_view a, std::string_view b, size_t max) {
  auto lower = [](char c) { return char(std::tolower(static_cast<unsigned char>(c))); };
  const size_t n = a.size(), m = b.size();
  const size_t big = max + 1;  // every distance above max is stored as max + 1
  if ((n > m ? n - m : m - n) > max) return big;
  // Optimal string alignment: three rows of the dynamic programme (i-2, i-1, i), each computed
  // only within `max` of the diagonal; the cells outside the band hold `big`.
  std::vector<size_t> prev2(m + 1, big), prev(m + 1, big), cur(m + 1, big);
  for (size_t j = 0; j <= std::min(m, max); ++j) prev[j] = j;
  for (size_t i = 1; i <= n; ++i) {
    const size_t lo = i > max ? i - max : 1, hi = std::min(m, i + max);
    cur[0] = std::min(i, big);
    if (lo > 1) cur[lo - 1] = big;
    size_t row_min = cur[0];
    for (size_t j = lo; j <= hi; ++j) {
      const bool same = lower(a[i - 1]) == lower(b[j - 1]);
      size_t d = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (same ? 0 : 1)});
      if (i > 1 && j > 1 && lower(a[i - 1]) == lower(b[j - 2]) &&
          lower(a[i - 2]) == lower(b[j - 1]))
        d = std::min(d, prev2[j - 2] + 1);
      cur[j] = std::min(d, big);
      row_min = std::min(row_min, cur[j]);
    }
    cells_computed += hi >= lo ? hi - lo + 1 : 0;
    if (hi < m) cur[hi + 1] = big;
    if (row_min >= big) return big;  // a row's minimum never falls in the rows below it
    std::swap(prev2, prev);
    std::swap(prev, cur);
  }
  return prev[m];
}

size_t edit_distance(const std::string& a, const std::string& b) {
  return edit_distance_within(a, b, std::max(a.size(), b.size()));
}

size_t edit_distance_cells() {
  return cells_computed;
}

std::string closest_name(const std::string& word, const std::vector<std::string>& candidates) {
  if (word.size() > kMaxSuggestChars) return "";
  const size_t limit = word.size() <= 4 ? 1 : word.size() <= 8 ? 2 : 3;
  std::string best;
  size_t best_d = limit + 1;
  for (const std::string& c : candidates) {
    // The lengths' difference is a lower bound of the distance: only a nearer candidate wins.
    const size_t gap = c.size() > word.size() ? c.size() - word.size() : word.size() - c.size();
    if (gap >= best_d) continue;
    const size_t d = edit_distance_within(word, c, best_d - 1);
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  return best;
}

std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates) {
  const std::string c = closest_name(word, candidates);
  return c.empty() ? "" : " (did you mean '" + c + "'?)";
}

namespace {

// The first `max` characters of a longer `text` (whole UTF-8 sequences), or "".
std::string_view head(std::string_view text, size_t max) {
  if (characters(text) <= max) return {};
  size_t end = 0;
  for (size_t chars = 0; end < text.size(); ++end)
    if ((static_cast<unsigned char>(text[end]) & 0xc0) != 0x80 && chars++ == max) break;
  return text.substr(0, end);
}

}  // namespace

std::string excerpt(std::string_view text, size_t max) {
  const std::string_view h = head(text, max);
  if (h.empty()) return std::string(text);
  return fmt::format("{}… ({} characters)", h, characters(text));
}

std::string quoted_excerpt(std::string_view text) {
  const std::string_view h = head(text, kExcerptChars);
  if (h.empty()) return fmt::format("'{}'", text);
  return fmt::format("'{}…' ({} characters)", h, characters(text));
}

std::string count_text(size_t n) {
  std::string digits = std::to_string(n), r;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) r += ',';
    r += digits[i];
  }
  return r;
}

}  // namespace dplab
