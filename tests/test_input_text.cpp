// User text as the tool reads and quotes it: input files bounded
// (harness/scenario/json_text.hpp), file names checked as names (harness/user_paths.hpp),
// values quoted short and bytes escaped (harness/message_text.hpp).
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "cli_test_support.hpp"
#include "harness/scenario/json_text.hpp"
#include "harness/message_text.hpp"
#include "harness/user_paths.hpp"

namespace attnbench {
namespace {

namespace fs = std::filesystem;

std::string read_problem(const std::string& path) {
  std::vector<Diagnostic> diagnostics;
  std::string text;
  if (read_text_file(path, text, diagnostics)) return "";
  EXPECT_EQ(diagnostics.size(), 1u);
  EXPECT_EQ(diagnostics[0].file, path);
  return diagnostics[0].message;
}

class InputFiles : public test::TempDirectoryTest {};

TEST_F(InputFiles, ReadsARegularFileWhole) {
  const std::string content = std::string("{\"a\": 1}\n") + std::string(200000, ' ');
  const fs::path file = write("a.json", content);
  std::vector<Diagnostic> diagnostics;
  std::string text;
  ASSERT_TRUE(read_text_file(file.string(), text, diagnostics));
  EXPECT_EQ(text, content);
  EXPECT_TRUE(diagnostics.empty());
}

TEST_F(InputFiles, RefusesWhatIsNotARegularFile) {
  EXPECT_EQ(read_problem("/dev/zero"), "is not a regular file (a device); give the path of a file");
  EXPECT_EQ(read_problem(directory_.string()), "is a directory, not a file");
  ASSERT_EQ(mkfifo(path("fifo").c_str(), 0600), 0);
  EXPECT_EQ(read_problem(path("fifo").string()), "is not a regular file (a FIFO); give the path of a file")
      << "refused without waiting for a writer";
  EXPECT_EQ(read_problem(path("missing.json").string()), "cannot read the file: No such file or directory");
}

TEST_F(InputFiles, RefusesFilesOverTheLimit) {
  const fs::path limit = path("limit.json"), over = path("over.json");
  std::ofstream(limit).close();
  std::ofstream(over).close();
  fs::resize_file(limit, kMaxInputFileBytes);  // sparse files: no disk used
  fs::resize_file(over, kMaxInputFileBytes + 1);
  EXPECT_EQ(read_problem(limit.string()), "") << "exactly the limit is allowed";
  EXPECT_EQ(read_problem(over.string()), "is larger than 64 MiB, the most an input file may hold");

  // Results files, which attnbench writes itself, are read far beyond it.
  const fs::path results_over = path("results_over.json");
  std::ofstream(results_over).close();
  fs::resize_file(results_over, kMaxResultsFileBytes + 1);
  std::vector<Diagnostic> diagnostics;
  std::string text;
  EXPECT_FALSE(read_text_file(results_over.string(), text, diagnostics, kResultsFileBound));
  ASSERT_EQ(diagnostics.size(), 1u);
  EXPECT_EQ(diagnostics[0].message, "is larger than 16 GiB, the most a results file may hold");
  diagnostics.clear();
  EXPECT_TRUE(parse_json_file(over.string(), kResultsFileBound, diagnostics).is_null());
  ASSERT_EQ(diagnostics.size(), 1u);
  EXPECT_EQ(diagnostics[0].message.rfind("not valid JSON", 0), 0u) << "read as text, not refused for its size";
}

TEST_F(InputFiles, ParsesAFileAsItIsRead) {
  std::string content = "// comment\n{\"a\": [";
  for (int i = 0; i < 300000; ++i) content += std::to_string(i) + ",";  // pieces of 1 MiB
  content += "-1], \"b\": \"x\"}";
  const fs::path file = write("a.json", content);
  std::vector<Diagnostic> diagnostics;
  const auto parsed = parse_json_file(file.string(), kInputFileBound, diagnostics);
  EXPECT_TRUE(diagnostics.empty());
  EXPECT_EQ(parsed["a"].size(), 300001u);
  EXPECT_EQ(parsed["b"], "x");
  write("twice.json", "{\"a\": 1, \"a\": 2}");
  EXPECT_TRUE(parse_json_file(path("twice.json").string(), kInputFileBound, diagnostics).is_null());
  ASSERT_EQ(diagnostics.size(), 1u);
  EXPECT_EQ(diagnostics[0].path, "a");
  diagnostics.clear();
  EXPECT_TRUE(parse_json_file(directory_.string(), kInputFileBound, diagnostics).is_null());
  ASSERT_EQ(diagnostics.size(), 1u);
  EXPECT_EQ(diagnostics[0].message, "is a directory, not a file");
}

TEST(UserPaths, RefusesNamesNoFileSystemHolds) {
  EXPECT_EQ(path_name_problem("scenarios/quick.json"), "");
  EXPECT_EQ(path_name_problem(std::string(255, 'a')), "");
  EXPECT_EQ(path_name_problem(""), "empty file name");
  const std::string too_long = path_name_problem("dir/" + std::string(300, 'a') + "/x.json");
  EXPECT_NE(too_long.find("is longer than 255 bytes"), std::string::npos) << too_long;
  EXPECT_NE(too_long.find("(300 bytes)"), std::string::npos) << "the name is quoted short: " << too_long;
  EXPECT_NE(path_name_problem(std::string(5000, '/')).find("at most 4095"), std::string::npos);
  EXPECT_EQ(path_name_problem(std::string("a\0b", 3)), "the file name holds a NUL byte");
  EXPECT_EQ(read_problem(std::string(300, 'b')).find("is longer than 255 bytes") != std::string::npos, true);
}

TEST(MessageText, QuotesShortWithTheFullLength) {
  EXPECT_EQ(quote("fp8"), "\"fp8\"");
  EXPECT_EQ(quote("a\"b\\c\nd"), "\"a\\\"b\\\\c\\nd\"");
  const std::string long_value(10 << 20, 'x');
  const std::string quoted = quote(long_value);
  EXPECT_EQ(quoted, "\"" + std::string(kQuoteWidth, 'x') + "...\" (10485760 bytes)");
  EXPECT_EQ(quote("\xC3\xA9t\xC3\xA9", 2), "\"\xC3\xA9t...\" (5 bytes)") << "cut on a character boundary";
  EXPECT_EQ(quote("a\xFF"), "\"a\\xFF\"");
}

TEST(MessageText, ShortensOnCharacterBoundaries) {
  EXPECT_EQ(shorten("abcdef", 10), "abcdef");
  EXPECT_EQ(shorten("abcdefghij", 6), "abc...");
  EXPECT_EQ(shorten("\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9", 4), "\xC3\xA9...");
}

TEST(MessageText, EscapesOnlyBytesThatAreNotUtf8) {
  EXPECT_EQ(escape_invalid_utf8("plain/path.json"), "plain/path.json");
  EXPECT_EQ(escape_invalid_utf8("caf\xC3\xA9 \xF0\x9F\x98\x80"), "caf\xC3\xA9 \xF0\x9F\x98\x80");
  EXPECT_EQ(escape_invalid_utf8("s\xFF.json"), "s\\xFF.json");
  EXPECT_EQ(escape_invalid_utf8("\xC3"), "\\xC3") << "a truncated sequence";
  EXPECT_EQ(escape_invalid_utf8("\xC0\xAF"), "\\xC0\\xAF") << "an overlong form";
  EXPECT_EQ(escape_invalid_utf8("\xED\xA0\x80"), "\\xED\\xA0\\x80") << "a surrogate";
  EXPECT_EQ(escape_invalid_utf8("\xF4\x90\x80\x80"), "\\xF4\\x90\\x80\\x80") << "beyond U+10FFFF";
}

}  // namespace
}  // namespace attnbench
