// "Did you mean": the known name closest to a mistyped one by edit distance, for the errors of
// unknown option keys, flags and values (`--algo dasso` -> "did you mean 'daso'?"), and the
// short form of a long name or value in such an error ('aaaa…' (900000 characters)).
#pragma once
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace dplab {

// Words longer than this get no suggestion (no typo of a key, flag or name is that long): one
// closest_name costs at most kMaxSuggestChars x 7 cells of the dynamic programme per candidate,
// whatever the word's length.
constexpr size_t kMaxSuggestChars = 64;

// Levenshtein distance (insertions, deletions, substitutions; an adjacent transposition counts
// as one, the commonest typo), case-insensitive.
size_t edit_distance(const std::string& a, const std::string& b);
// edit_distance(a, b) when it is at most `max`, else max + 1. Only the cells within `max` of the
// diagonal are computed (at most min(|a|, |b| + max) x (2 max + 1)), and it stops at the first
// row whose every cell exceeds `max`.
size_t edit_distance_within(std::string_view a, std::string_view b, size_t max);
// The dynamic programme's cells computed by this thread so far (tests bound the work).
size_t edit_distance_cells();
// The candidate nearest `word` when it is near enough to be a typo: at most 1 edit for words
// of up to 4 characters, 2 up to 8, 3 beyond; ties go to the earlier candidate. Empty if none,
// and for a word longer than kMaxSuggestChars. Candidates whose length differs from the word's
// by the best distance so far or more are skipped unread.
std::string closest_name(const std::string& word, const std::vector<std::string>& candidates);
// " (did you mean 'X'?)" for closest_name's X, or "" when there is none.
std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates);

// `text` for an error message: itself when at most `max` characters, else its first `max`
// characters and its length, "aaaa… (900000 characters)"; quoted_excerpt() puts it in quotes,
// "'aaaa…' (900000 characters)". Names and values are cut at kExcerptChars, a library's whole
// message (a parser's, which may quote the input) at kExcerptMessageChars.
constexpr size_t kExcerptChars = 60;
constexpr size_t kExcerptMessageChars = 300;
std::string excerpt(std::string_view text, size_t max = kExcerptChars);
std::string quoted_excerpt(std::string_view text);
// 59990 -> "59,990".
std::string count_text(size_t n);

}  // namespace dplab
