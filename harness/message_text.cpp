#include "harness/message_text.hpp"

#include <algorithm>
#include <cstdio>
#include <limits>

namespace attnbench {
namespace {

// Length of the valid UTF-8 sequence (RFC 3629: no overlong forms, no
// surrogates, at most U+10FFFF) that starts at text[at], or 0 if none does.
std::size_t utf8_sequence_length(std::string_view text, std::size_t at) {
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned char lead = byte(at);
  if (lead < 0x80) return 1;
  std::size_t length = 0;
  unsigned char low = 0x80, high = 0xBF;  // allowed range of the second byte
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) low = 0xA0;   // overlong
    if (lead == 0xED) high = 0x9F;  // surrogates
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) low = 0x90;   // overlong
    if (lead == 0xF4) high = 0x8F;  // beyond U+10FFFF
  } else {
    return 0;
  }
  if (at + length > text.size()) return 0;
  if (byte(at + 1) < low || byte(at + 1) > high) return 0;
  for (std::size_t i = 2; i < length; ++i) {
    if ((byte(at + i) & 0xC0) != 0x80) return 0;
  }
  return length;
}

std::string hex_escape(unsigned char byte) {
  char buffer[8];
  std::snprintf(buffer, sizeof buffer, "\\x%02X", byte);
  return buffer;
}

// Optimal string alignment distance.
std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
  for (std::size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[a.size()][b.size()];
}

constexpr std::size_t kLongestSuggestedWord = 64;

}  // namespace

std::string escape_invalid_utf8(std::string_view text) {
  std::string escaped;
  escaped.reserve(text.size());
  for (std::size_t at = 0; at < text.size();) {
    const std::size_t length = utf8_sequence_length(text, at);
    if (length == 0) {
      escaped += hex_escape(static_cast<unsigned char>(text[at]));
      ++at;
    } else {
      escaped.append(text.substr(at, length));
      at += length;
    }
  }
  return escaped;
}

std::string shorten(std::string_view text, std::size_t width) {
  std::size_t end = 0, characters = 0;
  while (end < text.size() && characters < width) {
    const std::size_t length = utf8_sequence_length(text, end);
    end += length == 0 ? 1 : length;
    ++characters;
  }
  if (end == text.size()) return std::string(text);
  // Room for the "..." marker: drop three more characters.
  std::size_t cut = end;
  for (int dropped = 0; dropped < 3 && cut > 0; ++dropped) {
    do --cut;
    while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80);
  }
  return std::string(text.substr(0, cut)) + "...";
}

std::string quote(std::string_view text, std::size_t width) {
  std::string out = "\"";
  std::size_t characters = 0, at = 0;
  for (; at < text.size() && characters < width; ++characters) {
    const std::size_t length = utf8_sequence_length(text, at);
    const char c = text[at];
    if (length == 0) {
      out += hex_escape(static_cast<unsigned char>(c));
    } else if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F) {
      char buffer[8];
      std::snprintf(buffer, sizeof buffer, "\\u%04X", static_cast<unsigned>(static_cast<unsigned char>(c)));
      out += buffer;
    } else {
      out.append(text.substr(at, length));
    }
    at += length == 0 ? 1 : length;
  }
  if (at == text.size()) return out + "\"";
  return out + "...\" (" + std::to_string(text.size()) + " bytes)";
}

std::optional<std::string> closest_word(std::string_view word, const std::vector<std::string>& candidates) {
  if (word.size() > kLongestSuggestedWord) return std::nullopt;
  std::optional<std::string> best;
  std::size_t best_distance = std::numeric_limits<std::size_t>::max();
  for (const std::string& candidate : candidates) {
    const std::size_t limit = std::max<std::size_t>(1, std::max(word.size(), candidate.size()) / 3);
    const std::size_t distance = edit_distance(word, candidate);
    if (distance <= limit && distance < best_distance) {
      best = candidate;
      best_distance = distance;
    }
  }
  return best;
}

}  // namespace attnbench
