// The regular-expression engine (harness/scenario/regex.hpp): ECMAScript syntax on RE2,
// UTF-8 aware, linear in the text, and refusing by name what RE2 cannot express.
#include "harness/scenario/regex.hpp"

#include <gtest/gtest.h>

#include <string>

namespace attnbench {
namespace {

bool matches(const std::string& pattern, const std::string& text) { return Regex(pattern).search(text); }

std::string refusal(const std::string& pattern) {
  try {
    Regex{pattern};
  } catch (const RegexError& error) {
    return error.what();
  }
  return "";
}

TEST(Regex, SearchesAnywhereUnlessAnchored) {
  EXPECT_TRUE(matches("a+", "xxaayy"));
  EXPECT_FALSE(matches("^a+$", "xxaayy"));
  EXPECT_TRUE(matches("^cpu\\.flash$", "cpu.flash"));
  EXPECT_FALSE(matches("^cpu\\.flash$", "cpu.flash\n")) << "$ is the end of the text, as in ECMAScript";
}

TEST(Regex, DotIsOneCodePointButNoLineTerminator) {
  EXPECT_TRUE(matches("^.$", "\xC3\xA9"));           // é: two bytes, one code point
  EXPECT_TRUE(matches("^.$", "\xF0\x9F\x98\x80"));   // U+1F600: four bytes
  EXPECT_FALSE(matches("^..$", "\xC3\xA9"));
  EXPECT_FALSE(matches("^.$", "\n"));
  EXPECT_FALSE(matches("^.$", "\r"));
  EXPECT_FALSE(matches("^.$", "\xE2\x80\xA8"));      // U+2028 LINE SEPARATOR
}

TEST(Regex, TranslatesEcmaScriptOnlySyntax) {
  EXPECT_TRUE(matches("^\\p{Letter}+$", "Hello\xCF\x80"));  // π
  EXPECT_FALSE(matches("^\\p{Letter}+$", "123"));
  EXPECT_TRUE(matches("^\\p{General_Category=Decimal_Number}+$", "123"));
  EXPECT_TRUE(matches("^\\p{Script=Greek}$", "\xCF\x80"));
  EXPECT_TRUE(matches("^\\u00e9$", "\xC3\xA9"));
  EXPECT_TRUE(matches("^\\ud83d\\ude00$", "\xF0\x9F\x98\x80")) << "a surrogate pair is one code point";
  EXPECT_TRUE(matches("^\\u{1F600}$", "\xF0\x9F\x98\x80"));
  EXPECT_TRUE(matches("^\\s$", "\xC2\xA0")) << "no-break space is ECMAScript white space";
  EXPECT_TRUE(matches("^\\s$", "\v"));
  EXPECT_FALSE(matches("^\\S$", "\xE3\x80\x80"));  // ideographic space
  EXPECT_TRUE(matches("^[\\s]$", "\xEF\xBB\xBF"));
  EXPECT_TRUE(matches("^(?<word>ab)+$", "abab"));
  EXPECT_TRUE(matches("^[^]$", "\n")) << "[^] is any code point";
  EXPECT_FALSE(matches("[]", "anything")) << "[] matches nothing";
  EXPECT_TRUE(matches("^[[a]+$", "[a[")) << "[ is literal inside a class";
  EXPECT_TRUE(matches("^[\\b]$", "\b"));
  EXPECT_TRUE(matches("^\\cJ$", "\n"));
  EXPECT_TRUE(matches("^a\\/b\\-c$", "a/b-c"));
}

TEST(Regex, RefusesWhatALinearEngineCannotExpressNamingThePattern) {
  EXPECT_EQ(refusal("(a)\\1").rfind("\"(a)\\\\1\" uses a backreference \\1", 0), 0u) << refusal("(a)\\1");
  EXPECT_NE(refusal("(?<x>a)\\k<x>").find("named backreference"), std::string::npos);
  EXPECT_NE(refusal("a(?=b)").find("\"a(?=b)\" uses a lookahead"), std::string::npos);
  EXPECT_NE(refusal("a(?!b)").find("lookahead"), std::string::npos);
  EXPECT_NE(refusal("(?<=a)b").find("lookbehind"), std::string::npos);
  EXPECT_NE(refusal("(?<!a)b").find("lookbehind"), std::string::npos);
  EXPECT_NE(refusal("(?=a)").find("RE2"), std::string::npos) << "says why";
  EXPECT_EQ(refusal("[(?=a)]"), "") << "inside a class these are plain characters";
}

TEST(Regex, RefusesMalformedPatternsWithAShortMessage) {
  EXPECT_NE(refusal("(").find("\"(\" is not a valid regular expression (missing )"), std::string::npos) << refusal("(");
  EXPECT_NE(refusal("a{1001}").find("not a valid regular expression"), std::string::npos);
  EXPECT_NE(refusal("ab\\").find("ends with a lone backslash"), std::string::npos);
  EXPECT_NE(refusal("\\u{110000x}").find("malformed \\u{...}"), std::string::npos);
  const std::string huge(1 << 20, '(');
  const std::string message = refusal(huge);
  EXPECT_NE(message.find("(1048576 bytes)"), std::string::npos) << "the pattern is quoted short";
  EXPECT_LT(message.size(), 300u);
  EXPECT_NE(refusal("\xFF").find("\"\\xFF\""), std::string::npos) << "bytes that are not UTF-8 are shown escaped";
}

TEST(Regex, LongTextsNeitherRecurseNorBacktrack) {
  // std::regex overflowed the stack on these and took minutes on the second.
  const std::string long_text = "pad(q=" + std::string(1 << 20, '1') + ";k=1)-rest";
  EXPECT_FALSE(matches("pad.*k=1$", long_text));
  EXPECT_TRUE(matches("pad.*k=1", long_text));
  EXPECT_FALSE(matches("(a|b)*c$", std::string(1 << 20, 'a')));
  EXPECT_FALSE(matches("(x+x+)+y", std::string(100000, 'x')));
}

TEST(Regex, CopiesShareTheCompiledPattern) {
  const Regex original("^ab+$");
  const Regex copy = original;
  EXPECT_TRUE(copy.search("abbb"));
  EXPECT_EQ(copy.pattern(), "^ab+$");
}

}  // namespace
}  // namespace attnbench
