// Terminal output: numbers in one unit convention (binary bytes, FLOP/s in the
// largest unit that does not round to zero), counts with their noun's number,
// words wrapped to a width, and the live progress line that never outgrows
// the terminal.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "harness/format.hpp"
#include "harness/run/progress.hpp"

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

TEST(Progress, LineFitsTheTerminalShorteningTheLabel) {
  const std::string head = "[12/345] ";
  const std::string label = "quick#11 b2 h4/2 q100 k77 d64 fp16 fwd+bwd causal.br win.br[32,0] pad drop0.10 bhsd";
  const std::string tail = "  cpu.reference  ETA 1:23";
  for (std::size_t width : {40u, 60u, 80u, 200u}) {
    const std::string line = fit_progress_line(head, label, tail, width);
    EXPECT_LT(line.size(), width) << line;  // the last column stays free, so the terminal never wraps
    EXPECT_EQ(line.rfind(head, 0), 0u) << line;
    if (head.size() + 3 + tail.size() < width) {
      EXPECT_EQ(line.substr(line.size() - tail.size()), tail) << "the ETA and implementation stay: " << line;
    }
  }
  EXPECT_EQ(fit_progress_line(head, label, tail, 200), head + label + tail);
  EXPECT_NE(fit_progress_line(head, label, tail, 60).find("..."), std::string::npos);
  EXPECT_EQ(fit_progress_line(head, label, tail, 10).size(), 9u);
}

}  // namespace
}  // namespace attnbench
