// "Did you mean": the known name closest to a mistyped one by edit distance, for the errors of
// unknown option keys, flags and values (`--algo dasso` -> "did you mean 'daso'?").
#pragma once
#include <string>
#include <vector>

namespace dplab {

// Levenshtein distance (insertions, deletions, substitutions; an adjacent transposition counts
// as one, the commonest typo), case-insensitive.
size_t edit_distance(const std::string& a, const std::string& b);
// The candidate nearest `word` when it is near enough to be a typo: at most 1 edit for words
// of up to 4 characters, 2 up to 8, 3 beyond; ties go to the earlier candidate. Empty if none.
std::string closest_name(const std::string& word, const std::vector<std::string>& candidates);
// " (did you mean 'X'?)" for closest_name's X, or "" when there is none.
std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates);

}  // namespace dplab
