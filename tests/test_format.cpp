// Terminal output: numbers in one unit convention (binary bytes, FLOP/s in the
// largest unit that does not round to zero), counts with their noun's number,
// words wrapped to a width, durations in words.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "harness/format.hpp"

namespace attnbench {
namespace {

TEST(Format, BytesUseBinaryUnits) {
  EXPECT_EQ(format_bytes(512), "512 B");
  EXPECT_EQ(format_bytes(1536), "1.50 KiB");
  EXPECT_EQ(format_bytes(3.0 * 1024 * 1024), "3.00 MiB");
  EXPECT_EQ(format_bytes(1.5 * 1024 * 1024 * 1024), "1.50 GiB");
  EXPECT_STREQ(byte_unit_for(1023).name, "B");
  EXPECT_STREQ(byte_unit_for(5.0 * 1024 * 1024).name, "MiB");
  EXPECT_EQ(byte_unit_for(5.0 * 1024 * 1024).bytes, 1024.0 * 1024);
}

TEST(Format, ThroughputNeverRoundsToZero) {
  EXPECT_EQ(format_flops_rate(312.5e12), "312.5 TFLOP/s");
  EXPECT_EQ(format_flops_rate(2.2041e9), "2.204 GFLOP/s");
  EXPECT_EQ(format_flops_rate(45.23e9), "45.23 GFLOP/s");
  EXPECT_EQ(format_flops_rate(640e6), "640.0 MFLOP/s");
  EXPECT_EQ(format_flops_rate(1.2e15), "1.200 PFLOP/s");
}

TEST(Format, DurationsKeepFourSignificantDigitsWithinNineCharacters) {
  EXPECT_EQ(format_seconds(812.34e-6), "812.3 us");
  EXPECT_EQ(format_seconds(3.2164e-3), "3.216 ms");
  EXPECT_EQ(format_seconds(123.456e-3), "123.5 ms");
  EXPECT_EQ(format_seconds(1.25), "1.250 s");
  for (const double seconds : {1.5e-6, 99.99e-3, 999.4e-3, 12.3456}) EXPECT_LE(format_seconds(seconds).size(), 9u);
}

TEST(Format, CountsAgreeWithTheirNumber) {
  EXPECT_EQ(count_of(1, "case"), "1 case");
  EXPECT_EQ(count_of(0, "case"), "0 cases");
  EXPECT_EQ(count_of(3, "file"), "3 files");
  EXPECT_EQ(count_of(2, "match", "matches"), "2 matches");
}

TEST(Format, WordsWrapToTheWidthWithTheIndent) {
  const std::vector<std::string> lines = wrap_words("one two three four five six", 12, "  ");
  ASSERT_EQ(lines, (std::vector<std::string>{"  one two", "  three four", "  five six"}));
  for (const std::string& line : lines) EXPECT_LE(line.size(), 12u);
  EXPECT_EQ(wrap_words("averyveryverylongword x", 8, ""), (std::vector<std::string>{"averyveryverylongword", "x"}));
}

TEST(Format, DurationsInWords) {
  EXPECT_EQ(format_duration(42.4), "42 s");
  EXPECT_EQ(format_duration(26 * 60 + 10), "26 min");
  EXPECT_EQ(format_duration(3 * 3600 + 12 * 60), "3 h 12 min");
  EXPECT_EQ(format_duration(52 * 3600), "2 days 4 h");
}

}  // namespace
}  // namespace attnbench
