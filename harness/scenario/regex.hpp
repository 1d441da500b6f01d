// The one regular-expression engine of the tool: `run --filter`, `list
// --filter`, compare overrides ("match") and JSON Schema's `pattern` and
// `patternProperties` all go through Regex. Patterns are written in the
// ECMAScript syntax JSON Schema specifies, translated to RE2's and evaluated by
// RE2 in time linear in the text and with bounded memory, so no text or pattern
// can make a search recurse, run for minutes or exhaust the stack.
//
// Semantics are ECMAScript's with the `u` flag: the text is UTF-8 and `.`
// matches one code point (not a line terminator), `\s` is ECMAScript's white
// space, `\p{Letter}` and the other long property names work, `\uXXXX` and
// `\u{X…}` escapes too. What RE2 cannot express in linear time is refused when
// the pattern is read, naming it: backreferences (`\1`, `\k<name>`),
// lookahead (`(?=`, `(?!`) and lookbehind (`(?<=`, `(?<!`). Repetition
// counts are at most 1000 (RE2's limit).
#pragma once

#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>

namespace re2 {
class RE2;
}

namespace attnbench {

// A pattern that cannot be used; the message quotes it (shortened) and says why.
class RegexError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

class Regex {
 public:
  // Throws RegexError for a malformed pattern or one RE2 cannot express.
  explicit Regex(std::string_view pattern);

  // Whether some part of `text` matches (ECMAScript's RegExp.prototype.test,
  // which JSON Schema's `pattern` uses: not anchored).
  bool search(std::string_view text) const;

  const std::string& pattern() const { return pattern_; }

 private:
  std::string pattern_;
  std::shared_ptr<const re2::RE2> compiled_;
};

}  // namespace attnbench
