// User text inside messages and results files. Anything a user typed or a file
// held may be huge or not UTF-8 (file names are bytes), so it is quoted short
// and recorded escaped: a message never echoes more than kQuoteWidth characters
// of a value, and JSON output never sees a byte that is not valid UTF-8.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

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

}  // namespace attnbench
