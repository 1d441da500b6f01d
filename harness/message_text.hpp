// User text inside messages and results files. Anything a user typed or a file
// held may be huge or not UTF-8 (file names are bytes), so it is quoted short
// and recorded escaped: a message never echoes more than kQuoteWidth characters
// of a value, and JSON output never sees a byte that is not valid UTF-8.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace attnbench {

// The most characters of one user value a message quotes.
inline constexpr std::size_t kQuoteWidth = 80;

// `text` with every byte that is not part of a valid UTF-8 sequence written as
// the four characters \xHH; valid UTF-8 (so any ASCII path) is unchanged.
std::string escape_invalid_utf8(std::string_view text);

// `text` cut to at most `width` characters, on a character boundary, ending in
// "..." when it was cut.
std::string shorten(std::string_view text, std::size_t width = kQuoteWidth);

// `text` as a JSON string literal ("a\"b", bytes beyond UTF-8 as \xHH), at most
// about `width` characters; a cut one ends in "..." and says how long it was:
// "aaaa..." (10485760 bytes).
std::string quote(std::string_view text, std::size_t width = kQuoteWidth);

// For "did you mean …?": the candidate nearest to `word` in edit distance
// (insertions, deletions, substitutions and swaps of neighbours each cost 1),
// if it is within a third of the longer length (at least one edit); the first
// such in order on a tie. Words over 64 bytes get none: nothing accepted is
// that long, and the distance costs the product of the lengths.
std::optional<std::string> closest_word(std::string_view word, const std::vector<std::string>& candidates);

}  // namespace attnbench
