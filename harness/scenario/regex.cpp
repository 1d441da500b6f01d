// ECMAScript pattern syntax translated to RE2's, then compiled by RE2; see harness/scenario/regex.hpp.
#include "harness/scenario/regex.hpp"

#include <re2/re2.h>

#include <cctype>
#include <cstdint>
#include <cstdio>
#include <map>

#include "harness/message_text.hpp"

namespace attnbench {
namespace {

// ECMAScript's \s (WhiteSpace and LineTerminator), as the inside of a class.
constexpr std::string_view kWhiteSpace =
    "\\t\\n\\x{0B}\\f\\r \\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}\\x{FEFF}";

// ECMAScript's `.`: any code point but a line terminator.
constexpr std::string_view kAnyButLineTerminator = "[^\\n\\r\\x{2028}\\x{2029}]";

// Unicode's long General_Category names, which ECMAScript accepts, by RE2's short ones.
const std::map<std::string_view, std::string_view>& general_categories() {
  static const std::map<std::string_view, std::string_view> names = {
      {"Letter", "L"},           {"Cased_Letter", "LC"},       {"Uppercase_Letter", "Lu"},
      {"Lowercase_Letter", "Ll"}, {"Titlecase_Letter", "Lt"},   {"Modifier_Letter", "Lm"},
      {"Other_Letter", "Lo"},    {"Mark", "M"},                {"Combining_Mark", "M"},
      {"Nonspacing_Mark", "Mn"}, {"Spacing_Mark", "Mc"},       {"Enclosing_Mark", "Me"},
      {"Number", "N"},           {"Decimal_Number", "Nd"},     {"digit", "Nd"},
      {"Letter_Number", "Nl"},   {"Other_Number", "No"},       {"Punctuation", "P"},
      {"punct", "P"},            {"Connector_Punctuation", "Pc"}, {"Dash_Punctuation", "Pd"},
      {"Open_Punctuation", "Ps"}, {"Close_Punctuation", "Pe"}, {"Initial_Punctuation", "Pi"},
      {"Final_Punctuation", "Pf"}, {"Other_Punctuation", "Po"}, {"Symbol", "S"},
      {"Math_Symbol", "Sm"},     {"Currency_Symbol", "Sc"},    {"Modifier_Symbol", "Sk"},
      {"Other_Symbol", "So"},    {"Separator", "Z"},           {"Space_Separator", "Zs"},
      {"Line_Separator", "Zl"},  {"Paragraph_Separator", "Zp"}, {"Other", "C"},
      {"Control", "Cc"},         {"cntrl", "Cc"},              {"Format", "Cf"},
      {"Surrogate", "Cs"},       {"Private_Use", "Co"},        {"Unassigned", "Cn"},
  };
  return names;
}

bool is_hex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

std::uint32_t hex_value(char c) {
  if (c >= '0' && c <= '9') return static_cast<std::uint32_t>(c - '0');
  return static_cast<std::uint32_t>((c | 0x20) - 'a' + 10);
}

std::string code_point_escape(std::uint32_t code_point) {
  char buffer[16];
  std::snprintf(buffer, sizeof buffer, "\\x{%X}", static_cast<unsigned>(code_point));
  return buffer;
}

// One pass over an ECMAScript pattern, writing the RE2 equivalent.
class Translator {
 public:
  explicit Translator(std::string_view pattern) : in_(pattern) {}

  std::string translate() {
    while (at_ < in_.size()) {
      const char c = in_[at_];
      if (c == '\\') {
        escape();
      } else if (in_class_) {
        class_character(c);
      } else if (c == '(') {
        group();
      } else if (c == '[') {
        open_class();
      } else if (c == '.') {
        out_ += kAnyButLineTerminator;
        ++at_;
      } else {
        out_ += c;
        ++at_;
      }
    }
    return out_;
  }

 private:
  [[noreturn]] void refuse(const std::string& why) const {
    throw RegexError(quote(in_) + " " + why + ", which the linear-time regular-expression engine (RE2) cannot " +
                     "express; rewrite it without");
  }

  bool next_is(std::string_view text) const { return in_.substr(at_).substr(0, text.size()) == text; }

  void group() {
    if (next_is("(?=") || next_is("(?!")) refuse("uses a lookahead (?= or (?!");
    if (next_is("(?<=") || next_is("(?<!")) refuse("uses a lookbehind (?<= or (?<!");
    if (next_is("(?<")) {  // a named group: RE2 spells it (?P<name>...)
      out_ += "(?P<";
      at_ += 3;
      return;
    }
    out_ += '(';
    ++at_;
  }

  void open_class() {
    ++at_;
    const bool negated = at_ < in_.size() && in_[at_] == '^';
    if (negated) ++at_;
    if (at_ < in_.size() && in_[at_] == ']') {  // [] matches nothing, [^] any code point
      out_ += negated ? "[\\x00-\\x{10FFFF}]" : "[^\\x00-\\x{10FFFF}]";
      ++at_;
      return;
    }
    out_ += negated ? "[^" : "[";
    in_class_ = true;
  }

  void class_character(char c) {
    if (c == ']') in_class_ = false;
    if (c == '[') out_ += '\\';  // literal in an ECMAScript class; RE2 would read [:name:]
    out_ += c;
    ++at_;
  }

  // A backslash at at_ and what follows it.
  void escape() {
    if (at_ + 1 >= in_.size()) throw RegexError(quote(in_) + " ends with a lone backslash");
    const char c = in_[at_ + 1];
    at_ += 2;
    if (c >= '1' && c <= '9') refuse("uses a backreference \\" + std::string(1, c));
    if (c == 'k' && at_ < in_.size() && in_[at_] == '<') refuse("uses a named backreference \\k<...>");
    switch (c) {
      case '0':
        if (at_ < in_.size() && in_[at_] >= '0' && in_[at_] <= '9') refuse("uses an octal escape or backreference");
        out_ += "\\x00";
        return;
      case 'u':
        unicode_escape();
        return;
      case 'x':
        if (at_ + 1 < in_.size() && is_hex(in_[at_]) && is_hex(in_[at_ + 1])) {
          out_ += "\\x";
          out_ += in_.substr(at_, 2);
          at_ += 2;
        } else {
          out_ += 'x';
        }
        return;
      case 'c':
        if (at_ < in_.size() && ((in_[at_] >= 'a' && in_[at_] <= 'z') || (in_[at_] >= 'A' && in_[at_] <= 'Z'))) {
          out_ += code_point_escape(static_cast<std::uint32_t>(in_[at_]) % 32);
          ++at_;
        } else {
          out_ += "\\\\c";
        }
        return;
      case 'p':
      case 'P':
        property(c);
        return;
      case 's':
        out_ += in_class_ ? std::string(kWhiteSpace) : "[" + std::string(kWhiteSpace) + "]";
        return;
      case 'S':
        out_ += in_class_ ? std::string("\\S") : "[^" + std::string(kWhiteSpace) + "]";
        return;
      case 'b':
        out_ += in_class_ ? "\\x08" : "\\b";
        return;
      case 'v':
        out_ += "\\x{0B}";
        return;
      case 'd': case 'D': case 'w': case 'W': case 'B': case 'n': case 'r': case 't': case 'f':
        out_ += '\\';
        out_ += c;
        return;
      default:
        break;
    }
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x80 && !std::isalnum(byte)) {
      out_ += '\\';  // an escaped punctuation character stands for itself
      out_ += c;
    } else {
      out_ += c;  // any other identity escape: the character itself
    }
  }

  // \uXXXX (a surrogate pair as one code point) or \u{X...}; otherwise "u".
  void unicode_escape() {
    if (at_ < in_.size() && in_[at_] == '{') {
      const std::size_t close = in_.find('}', at_);
      const std::string_view digits = in_.substr(at_ + 1, close == std::string_view::npos ? 0 : close - at_ - 1);
      if (close != std::string_view::npos && !digits.empty() && digits.size() <= 6) {
        bool hex = true;
        for (const char d : digits) hex = hex && is_hex(d);
        if (hex) {
          out_ += "\\x{" + std::string(digits) + "}";
          at_ = close + 1;
          return;
        }
      }
      throw RegexError(quote(in_) + " has a malformed \\u{...} escape");
    }
    const auto four_hex = [&](std::size_t from, std::uint32_t& value) {
      if (from + 4 > in_.size()) return false;
      value = 0;
      for (std::size_t i = from; i < from + 4; ++i) {
        if (!is_hex(in_[i])) return false;
        value = value * 16 + hex_value(in_[i]);
      }
      return true;
    };
    std::uint32_t unit = 0;
    if (!four_hex(at_, unit)) {
      out_ += 'u';
      return;
    }
    at_ += 4;
    std::uint32_t low = 0;
    if (unit >= 0xD800 && unit <= 0xDBFF && next_is("\\u") && four_hex(at_ + 2, low) && low >= 0xDC00 &&
        low <= 0xDFFF) {
      unit = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00);
      at_ += 6;
    }
    out_ += code_point_escape(unit);
  }

  // \p{Name}, \p{General_Category=Name}, \p{Script=Name}: RE2 knows the short
  // category names and the script names.
  void property(char p) {
    if (at_ >= in_.size() || in_[at_] != '{') {
      out_ += '\\';
      out_ += p;
      return;
    }
    const std::size_t close = in_.find('}', at_);
    if (close == std::string_view::npos) throw RegexError(quote(in_) + " has an unterminated \\p{...}");
    std::string_view name = in_.substr(at_ + 1, close - at_ - 1);
    at_ = close + 1;
    for (const std::string_view prefix :
         {"General_Category=", "gc=", "Script=", "sc=", "Script_Extensions=", "scx="}) {
      if (name.substr(0, prefix.size()) == prefix) {
        name.remove_prefix(prefix.size());
        break;
      }
    }
    const auto category = general_categories().find(name);
    out_ += "\\";
    out_ += p;
    out_ += "{" + std::string(category != general_categories().end() ? category->second : name) + "}";
  }

  std::string_view in_;
  std::size_t at_ = 0;
  bool in_class_ = false;
  std::string out_;
};

}  // namespace

Regex::Regex(std::string_view pattern) : pattern_(pattern) {
  const std::string translated = Translator(pattern).translate();
  RE2::Options options;
  options.set_log_errors(false);
  auto compiled = std::make_shared<const RE2>(translated, options);
  if (!compiled->ok()) {
    throw RegexError(quote(pattern) + " is not a valid regular expression (" + shorten(compiled->error()) + ")");
  }
  compiled_ = std::move(compiled);
}

bool Regex::search(std::string_view text) const {
  return RE2::PartialMatch(re2::StringPiece(text.data(), text.size()), *compiled_);
}

}  // namespace attnbench
