#include "harness/message_text.hpp"

#include <cstdio>

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

}  // namespace attnbench
