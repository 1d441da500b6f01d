// `attnbench report` tables and renderers on results documents built here
// (schema-valid, with known times, memory and bytes): each table's numbers
// against hand-computed values, the grouping of a FlashAttention-2-like grid,
// OOM markers, merged files and duplicate refusal, and every format's shape.
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "harness/errors.hpp"
#include "harness/scenario/json_schema.hpp"
#include "harness/common/problem.hpp"
#include "harness/common/problem_json.hpp"
#include "harness/report/table_kinds.hpp"
#include "harness/results/document.hpp"
#include "harness/report/table.hpp"

namespace attnbench {
namespace {

constexpr double kGiB = 1024.0 * 1024 * 1024;

using Json = nlohmann::ordered_json;

Problem make_problem(std::int64_t batch, std::int64_t heads, std::int64_t seqlen, std::int64_t head_dim,
                     Direction direction = Direction::fwd) {
  Problem p;
  p.batch = batch;
  p.heads = heads;
  p.kv_heads = heads;
  p.seqlen_q = seqlen;
  p.seqlen_k = seqlen;
  p.head_dim = head_dim;
  p.direction = direction;
  resolve_lengths(p);
  return p;
}

// What a record says beyond its problem, set by name:
// Outcome("cpu.flash").time(7.3e-3).counted(3.4e9, 1e9).
struct Outcome {
  explicit Outcome(std::string name) : implementation(std::move(name)) {}
  Outcome& time(double seconds) {
    median_seconds = seconds;
    return *this;
  }
  Outcome& memory(std::int64_t peak, std::int64_t inputs_and_outputs) {
    peak_bytes = peak;
    io_bytes = inputs_and_outputs;
    return *this;
  }
  Outcome& counted(double read, double write) {
    counted_bytes = {read, write};
    return *this;
  }
  Outcome& skip(std::string why) {
    status = "skipped";
    reason = std::move(why);
    return *this;
  }
  Outcome& fail(std::string why) {
    status = "failed";
    reason = std::move(why);
    return *this;
  }
  Outcome& rule(double limit) {
    rule_limit = limit;
    return *this;
  }
  Outcome& sampled() {
    partial_sample = true;
    return *this;
  }

  std::string implementation;
  double median_seconds = 1e-3;
  std::int64_t peak_bytes = 1000000;
  std::int64_t io_bytes = 400000;                          // inputs plus outputs
  std::optional<std::pair<double, double>> counted_bytes;  // read, write
  std::string status = "ok";
  std::string reason;
  std::optional<double> rule_limit;  // on O
  bool partial_sample = false;
};

Json tensor_error(double max_abs_error, std::optional<double> rule_limit) {
  return Json{{"checked", 100},
              {"max_abs_error", max_abs_error},
              {"mean_abs_error", max_abs_error / 10},
              {"relative_l2_error", 1e-4},
              {"oracle_max_abs", 3.0},
              {"nan", 0},
              {"inf", 0},
              {"infinity_mismatch", 0},
              {"oracle_nonfinite", 0},
              {"bound", 3e-2},
              {"rule_limit", rule_limit ? Json(*rule_limit) : Json(nullptr)},
              {"passed", true}};
}

Json make_record(const Problem& p, const Outcome& o, const std::string& scenario = "sweep") {
  const FlopCount flops = flop_count(p);
  const ByteCount compulsory = compulsory_bytes(p);
  Json record{{"scenario", scenario},
              {"case_index", 0},
              {"case_key", case_key(p)},
              {"case_origin", "test"},
              {"implementation", o.implementation},
              {"device", "cpu"},
              {"problem", problem_to_json(p)},
              {"status", o.status},
              {"reason", o.reason},
              {"configuration", Json::object()},
              {"flops", flops_to_json(p)},
              {"timing", nullptr},
              {"memory", nullptr},
              {"traffic",
               {{"compulsory", {{"read_bytes", compulsory.read}, {"write_bytes", compulsory.write}}},
                {"counted", nullptr},
                {"measured", nullptr}}},
              {"accuracy", nullptr}};
  if (o.counted_bytes) {
    record["traffic"]["counted"] =
        Json{{"read_bytes", o.counted_bytes->first}, {"write_bytes", o.counted_bytes->second}};
  }
  if (o.status == "skipped") return record;
  const double t = o.median_seconds;
  record["timing"] = Json{{"clock", "host"},
                          {"cache", "hot"},
                          {"cache_flush_bytes", 0},
                          {"warmup_iterations", 1},
                          {"warmup_seconds", t},
                          {"samples_seconds", {t, t, t}},
                          {"converged", true},
                          {"stop_reason", "converged"},
                          {"wall_seconds", 3 * t},
                          {"throttled", nullptr},
                          {"statistics",
                           {{"count", 3},
                            {"min", t},
                            {"p10", t},
                            {"p25", t},
                            {"p50", t},
                            {"p75", t},
                            {"p90", t},
                            {"p99", t},
                            {"max", t},
                            {"mean", t},
                            {"stddev", 0},
                            {"median_ci_low", t},
                            {"median_ci_high", t},
                            {"median_ci_confidence", 0.95},
                            {"median_ci_defined", true}}},
                          {"tflops", flops.total / t / 1e12},
                          {"compulsory_bandwidth_gb_per_s", compulsory.total() / t / 1e9}};
  record["memory"] = Json{{"peak_bytes", o.peak_bytes},
                          {"input_bytes", o.io_bytes / 2},
                          {"output_bytes", o.io_bytes / 2},
                          {"workspace_bytes", o.peak_bytes - o.io_bytes},
                          {"extra_bytes", o.peak_bytes - o.io_bytes}};
  Json tensors{{"O", tensor_error(2e-3, o.rule_limit)}, {"LSE", tensor_error(1e-6, std::nullopt)}};
  const Json sample = o.partial_sample ? Json{{"complete", false}, {"query_heads", 8},          {"query_rows", 64},
                                              {"kv_heads", 2},     {"key_side_checked", false}, {"oracle_macs", 1e9}}
                                       : Json{{"complete", true}, {"query_heads", 2},         {"query_rows", 256},
                                              {"kv_heads", 2},    {"key_side_checked", true}, {"oracle_macs", 1e6}};
  record["accuracy"] = Json{{"status", o.status == "failed" ? "failed" : "passed"},
                            {"reason", ""},
                            {"oracle", "cpu.reference"},
                            {"sample", sample},
                            {"baseline", o.rule_limit ? Json("cpu.standard") : Json(nullptr)},
                            {"rule_applied", o.rule_limit.has_value()},
                            {"tensors", tensors}};
  return record;
}

Json make_document(std::vector<Json> records) {
  Json document{{"schema", "attnbench.results/1"},
                {"tool",
                 {{"name", "attnbench"},
                  {"version", "0.1.0"},
                  {"git_revision", "abc1234"},
                  {"build_type", "Release"},
                  {"compiler", "GNU-13"},
                  {"cuda_built", false}}},
                {"command_line", {"attnbench", "run"}},
                {"started_at", "2026-01-01T00:00:00Z"},
                {"finished_at", "2026-01-01T00:01:00Z"},
                {"complete", true},
                {"host",
                 {{"hostname", "test"},
                  {"os", "Linux"},
                  {"cpu_model", "test cpu"},
                  {"logical_cpus", 2},
                  {"memory_bytes", 1 << 30}}},
                {"devices", {{{"kind", "cpu"}, {"name", "test cpu"}}}},
                {"threads", 2},
                {"shard", nullptr},
                {"scenarios", Json::array()},
                {"records", std::move(records)}};
  static const JsonSchema schema(results_schema());
  std::string errors;
  for (const auto& error : schema.validate(document)) errors += format_error(error) + "\n";
  EXPECT_TRUE(errors.empty()) << errors;
  return document;
}

MergedResults merged(std::vector<std::pair<std::string, Json>> files) {
  std::vector<ResultsSource> sources;
  for (auto& [path, document] : files) sources.push_back({path, std::move(document)});
  return MergedResults(std::move(sources));
}

MergedResults one_file(std::vector<Json> records) {
  return merged({{"results.json", make_document(std::move(records))}});
}

std::size_t column_index(const Table& table, const std::string& key) {
  for (std::size_t i = 0; i < table.columns.size(); ++i) {
    if (table.columns[i].key == key) return i;
  }
  ADD_FAILURE() << "no column " << key;
  return 0;
}

bool has_column(const Table& table, const std::string& key) {
  for (const Column& column : table.columns) {
    if (column.key == key) return true;
  }
  return false;
}

const Cell& cell(const Table& table, std::size_t group, std::size_t row, const std::string& key) {
  return table.groups.at(group).rows.at(row).at(column_index(table, key));
}

double number(const Table& table, std::size_t group, std::size_t row, const std::string& key) {
  const Cell& c = cell(table, group, row, key);
  EXPECT_EQ(c.kind, Cell::Kind::number) << key << " holds " << c.text;
  return c.number;
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

// ---- The tables' numbers ----

TEST(ReportFig2, GigaflopsHbmBytesAndRuntimePerImplementation) {
  // The paper's GPT-2 medium case, with its published times and bytes.
  const Problem p = make_problem(64, 16, 1024, 64, Direction::fwd_bwd);
  const MergedResults results = one_file({make_record(p, Outcome("cpu.standard").time(41.7e-3).counted(30.0e9, 10.3e9)),
                                          make_record(p, Outcome("cpu.flash").time(7.3e-3).counted(3.4e9, 1.0e9))});
  const Table table = build_table("fig2", results, {});
  ASSERT_EQ(table.groups.size(), 1u);
  ASSERT_EQ(table.groups[0].rows.size(), 2u);
  EXPECT_NE(table.groups[0].title.find("b64 h16 q1024 k1024 d64 fp16 fwd+bwd"), std::string::npos)
      << table.groups[0].title;
  // 3.5 x 4 d pairs, pairs = B H N^2.
  const double gflops = 3.5 * 4 * 64 * (64.0 * 16 * 1024 * 1024) / 1e9;
  EXPECT_EQ(cell(table, 0, 0, "implementation").text, "cpu.standard");
  EXPECT_NEAR(number(table, 0, 0, "gflops"), gflops, 1e-9);
  EXPECT_NEAR(number(table, 0, 1, "gflops"), gflops, 1e-9);
  // Binary units, the largest in which the largest number is at least 1: 40.3e9 bytes are 37.5 GiB.
  EXPECT_EQ(table.columns[column_index(table, "hbm")].unit, "GiB");
  EXPECT_EQ(table.columns[column_index(table, "hbm")].title, "HBM R/W GiB");
  EXPECT_NEAR(number(table, 0, 0, "hbm"), 40.3e9 / kGiB, 1e-9);
  EXPECT_NEAR(number(table, 0, 1, "hbm"), 4.4e9 / kGiB, 1e-9);
  EXPECT_EQ(cell(table, 0, 1, "hbm_source").text, "counted");
  EXPECT_NEAR(number(table, 0, 0, "runtime"), 41.7, 1e-9);
  EXPECT_NEAR(number(table, 0, 1, "runtime"), 7.3, 1e-9);
  const std::string markdown = render_markdown(table);
  EXPECT_NE(markdown.find("| cpu.flash      |  962.1 |        4.10 | counted    |      7.300 |"), std::string::npos)
      << markdown;
}

TEST(ReportFig2, WithoutBytesTheSourceIsADash) {
  const Problem p = make_problem(1, 1, 64, 16);
  const Table table = build_table("fig2", one_file({make_record(p, Outcome("torch.flash"))}), {});
  EXPECT_EQ(cell(table, 0, 0, "hbm").kind, Cell::Kind::empty);
  EXPECT_EQ(cell(table, 0, 0, "hbm_source").text, "-");
}

// Appendix E's forward times (ms) for N = 512, 1024; the standard one OOM at 2048.
MergedResults appendix_e() {
  std::vector<Json> records;
  const double standard[] = {0.78e-3, 2.54e-3}, flash[] = {0.21e-3, 0.82e-3};
  for (int i = 0; i < 2; ++i) {
    const Problem p = make_problem(16, 8, 512 << i, 64);
    records.push_back(make_record(p, Outcome("cpu.standard").time(standard[i])));
    records.push_back(make_record(p, Outcome("cpu.flash").time(flash[i])));
  }
  const Problem large = make_problem(16, 8, 2048, 64);
  records.push_back(make_record(
      large,
      Outcome("cpu.standard")
          .skip("needs 12.00 GiB (inputs 1.00 GiB, outputs 1.00 GiB, workspace 10.00 GiB); 8.00 GiB available")));
  records.push_back(make_record(large, Outcome("cpu.flash").time(2.85e-3)));
  return one_file(std::move(records));
}

TEST(ReportSeqlen, RuntimeTflopsAndSpeedupOverTheDefaultBaseline) {
  const MergedResults results = appendix_e();
  const Table table = build_table("seqlen", results, {});
  EXPECT_EQ(table.metadata["baseline"], "cpu.standard");
  ASSERT_EQ(table.groups.size(), 1u);
  ASSERT_EQ(table.groups[0].rows.size(), 3u);
  EXPECT_EQ(number(table, 0, 0, "seqlen"), 512);
  EXPECT_EQ(number(table, 0, 2, "seqlen"), 2048);
  EXPECT_EQ(number(table, 0, 0, "batch"), 16);
  EXPECT_NEAR(number(table, 0, 0, "runtime/cpu.standard"), 0.78, 1e-12);
  EXPECT_NEAR(number(table, 0, 1, "runtime/cpu.flash"), 0.82, 1e-12);
  // 4 d B H N^2 FLOPs over the median.
  EXPECT_EQ(table.columns[column_index(table, "throughput/cpu.flash")].unit, "TFLOP/s");
  EXPECT_NEAR(number(table, 0, 0, "throughput/cpu.flash"), 4.0 * 64 * 16 * 8 * 512 * 512 / 0.21e-3 / 1e12, 1e-9);
  EXPECT_NEAR(number(table, 0, 0, "speedup/cpu.flash"), 0.78 / 0.21, 1e-9);
  EXPECT_NEAR(number(table, 0, 1, "speedup/cpu.flash"), 2.54 / 0.82, 1e-9);
  EXPECT_FALSE(has_column(table, "speedup/cpu.standard")) << "the baseline has no speedup over itself";
  // The OOM: a marker with the reason; no speedup without the baseline's time.
  const Cell& oom = cell(table, 0, 2, "runtime/cpu.standard");
  EXPECT_EQ(oom.kind, Cell::Kind::marker);
  EXPECT_EQ(oom.text, "OOM");
  EXPECT_EQ(oom.status, "skipped");
  EXPECT_NE(oom.reason.find("8.00 GiB available"), std::string::npos);
  EXPECT_EQ(cell(table, 0, 2, "throughput/cpu.standard").text, "OOM");
  EXPECT_EQ(cell(table, 0, 2, "speedup/cpu.flash").kind, Cell::Kind::empty);
  EXPECT_NEAR(number(table, 0, 2, "runtime/cpu.flash"), 2.85, 1e-12);
  EXPECT_NE(render_markdown(table).find("OOM: cpu.standard"), std::string::npos) << "the reason is a footnote";
}

TEST(ReportSeqlen, ThroughputTooSlowForTflopsIsInGflops) {
  // A CPU's speed: 4 d B H N^2 = 2^27 FLOPs in 50 ms is 2.7 GFLOP/s, "0.00" in TFLOP/s.
  const Problem p = make_problem(1, 1, 1024, 32);
  const Table table = build_table("seqlen", one_file({make_record(p, Outcome("cpu.flash").time(50e-3))}), {});
  const Column& column = table.columns[column_index(table, "throughput/cpu.flash")];
  EXPECT_EQ(column.unit, "GFLOP/s");
  EXPECT_EQ(column.title, "cpu.flash GFLOP/s");
  EXPECT_NEAR(number(table, 0, 0, "throughput/cpu.flash"), 4.0 * 32 * 1024 * 1024 / 50e-3 / 1e9, 1e-9);
  EXPECT_EQ(cell_text(column, cell(table, 0, 0, "throughput/cpu.flash")), "2.68");
}

TEST(ReportSeqlen, ExplicitBaseline) {
  const Table table = build_table("seqlen", appendix_e(), {.baseline = "cpu.flash"});
  EXPECT_FALSE(has_column(table, "speedup/cpu.flash"));
  EXPECT_NEAR(number(table, 0, 0, "speedup/cpu.standard"), 0.21 / 0.78, 1e-9);
  EXPECT_EQ(cell(table, 0, 2, "speedup/cpu.standard").text, "OOM");
}

TEST(ReportSeqlen, SkippedAndFailedRecordsShowTheirStatus) {
  const Problem p = make_problem(1, 1, 64, 16);
  const Table table =
      build_table("seqlen",
                  one_file({make_record(p, Outcome("cuda.flash").skip("unavailable: no CUDA device")),
                            make_record(p, Outcome("cpu.flash").fail("accuracy: O max abs error 1 > bound 0.01")),
                            make_record(p, Outcome("torch.flash").skip("torch.OutOfMemoryError: CUDA out of memory"))}),
                  {});
  EXPECT_EQ(cell(table, 0, 0, "runtime/cuda.flash").text, "skipped");
  EXPECT_EQ(cell(table, 0, 0, "runtime/cpu.flash").text, "failed");
  EXPECT_EQ(cell(table, 0, 0, "runtime/torch.flash").text, "OOM") << "a peer's wording";
  EXPECT_EQ(table.metadata["baseline"], nullptr) << "neither cuda.cublas nor cpu.standard is there";
  EXPECT_FALSE(has_column(table, "speedup/cpu.flash"));
}

TEST(ReportSeqlen, SimulatedTimesAreNeverShownAsPerformance) {
  const Problem p = make_problem(1, 1, 64, 16);
  Json flash = make_record(p, Outcome("cudasim.flash").time(40e-3));
  Json cublas = make_record(p, Outcome("cudasim.cublas").time(50e-3));
  for (Json* record : {&flash, &cublas}) (*record)["timing"]["simulated"] = true;
  const Json fast_gpu = make_record(p, Outcome("cpu.flash").time(2e-3));  // sets the rate unit alone
  const Table table = build_table("seqlen", one_file({flash, cublas, fast_gpu}), {.baseline = "cudasim.cublas"});
  for (const char* column : {"runtime/cudasim.flash", "throughput/cudasim.flash", "runtime/cudasim.cublas"}) {
    const Cell& simulated = cell(table, 0, 0, column);
    EXPECT_EQ(simulated.kind, Cell::Kind::marker) << column;
    EXPECT_EQ(simulated.text, "sim") << column;
  }
  EXPECT_EQ(cell(table, 0, 0, "speedup/cudasim.flash").kind, Cell::Kind::empty) << "no speedup from simulated times";
  EXPECT_NEAR(number(table, 0, 0, "runtime/cpu.flash"), 2.0, 1e-12);
  EXPECT_EQ(table.columns[column_index(table, "throughput/cpu.flash")].unit, "MFLOP/s")
      << "the unit follows the real measurements only";
  EXPECT_NE(render_markdown(table).find("sim: simulated on the CPU (cudasim)"), std::string::npos);
  EXPECT_EQ(build_table("fig2", one_file({flash}), {}).groups[0].rows[0].back().text, "sim");
}

TEST(ReportSeqlen, DifferentQueryAndKeyLengthsAreLabelled) {
  Problem p = make_problem(1, 1, 64, 16);
  p.seqlen_q = 32;
  resolve_lengths(p);
  const Table table = build_table("seqlen", one_file({make_record(p, Outcome("cpu.flash"))}), {});
  const Cell& n = cell(table, 0, 0, "seqlen");
  EXPECT_EQ(n.number, 64);
  EXPECT_EQ(cell_text(table.columns[column_index(table, "seqlen")], n), "32x64");
}

TEST(ReportMemory, PeakExtraAndReductionFactor) {
  // Table 21's N = 512 and 1024 (MB = 10^6 bytes): FlashAttention 104, 209; PyTorch 336, 1184.
  std::vector<Json> records;
  const std::int64_t standard[] = {336000000, 1184000000}, flash[] = {104000000, 209000000};
  for (int i = 0; i < 2; ++i) {
    const Problem p = make_problem(16, 8, 512 << i, 64, Direction::fwd_bwd);
    records.push_back(make_record(p, Outcome("cpu.standard").memory(standard[i], 64000000)));
    records.push_back(make_record(p, Outcome("cpu.flash").memory(flash[i], 64000000)));
  }
  const Table table = build_table("memory", one_file(std::move(records)), {});
  ASSERT_EQ(table.groups[0].rows.size(), 2u);
  // 1184e6 bytes are 1.10 GiB: the table's unit.
  EXPECT_NEAR(number(table, 0, 0, "peak_memory/cpu.standard"), 336e6 / kGiB, 1e-12);
  EXPECT_NEAR(number(table, 0, 1, "peak_memory/cpu.flash"), 209e6 / kGiB, 1e-12);
  EXPECT_NEAR(number(table, 0, 1, "extra_memory/cpu.standard"), (1184e6 - 64e6) / kGiB, 1e-12);
  EXPECT_NEAR(number(table, 0, 0, "memory_reduction/cpu.flash"), 336.0 / 104, 1e-9);
  EXPECT_NEAR(number(table, 0, 1, "memory_reduction/cpu.flash"), 1184.0 / 209, 1e-9);
  EXPECT_EQ(table.columns[column_index(table, "peak_memory/cpu.flash")].unit, "GiB");
  EXPECT_EQ(table.columns[column_index(table, "peak_memory/cpu.flash")].title, "cpu.flash peak GiB");
  EXPECT_NE(render_markdown(table).find("GiB = 2^30 bytes"), std::string::npos);
}

// A scenarios entry whose file carries `published` (and the records' scenario name).
Json scenario_entry(const Json& published, const std::string& name = "sweep") {
  return Json{{"path", name + ".json"},
              {"name", name},
              {"description", "test"},
              {"source", {{"name", name}, {"description", "test"}, {"published", published}}},
              {"implementations", {"cpu.flash", "cpu.standard"}},
              {"measure",
               {{"warmup_min_iterations", 1}, {"warmup_min_seconds", 0}, {"min_samples", 3}, {"max_samples", 3},
                {"min_seconds", 0}, {"max_seconds", 1}, {"target_ci_width", 0.02}, {"cache", "hot"}}},
              {"accuracy",
               {{"check", true}, {"max_oracle_macs", 1e9}, {"seed", 0}, {"floor_factor", 16}, {"bound", Json::object()}}},
              {"case_count", 2}};
}

TEST(ReportMemory, PlannedAmountsAreMarkedAndTheUnitSuitsASpanOfOrdersOfMagnitude) {
  // 2 MiB measured, 3 TiB planned (run --memory-only): the unit is the
  // geometric middle's (GiB), not TiB where 2 MiB would read 1.9e-06.
  Json small = make_record(make_problem(1, 1, 128, 64), Outcome("cpu.flash").memory(2 << 20, 1 << 20));
  Json large = make_record(make_problem(1, 1, 131072, 64), Outcome("cpu.flash").memory(3LL << 40, 1 << 30));
  large["memory"]["source"] = "planned";
  large["timing"] = nullptr;
  large["reason"] = "memory planned, not run: one call would take at least 3 h";
  const Table table = build_table("memory", one_file({small, large}), {});
  EXPECT_EQ(table.columns[column_index(table, "peak_memory/cpu.flash")].unit, "GiB");
  EXPECT_FALSE(cell(table, 0, 0, "peak_memory/cpu.flash").planned);
  EXPECT_TRUE(cell(table, 0, 1, "peak_memory/cpu.flash").planned);
  const std::string markdown = render_markdown(table);
  EXPECT_NE(markdown.find("3072.00 p |"), std::string::npos) << markdown;
  EXPECT_NE(markdown.find("p: planned, the arena plan of a call that was not run"), std::string::npos) << markdown;
  const Json json = Json::parse(render_json(table));
  EXPECT_EQ(json["groups"][0]["rows"][1][column_index(table, "peak_memory/cpu.flash")],
            Json::parse(R"({"value": 3072.0, "source": "planned"})"));
}

TEST(ReportPublished, PublishedValuesStandBesideOursWithTheRatio) {
  // Table 21 at N 512 and 1024: FlashAttention 104 and 209 MB, PyTorch 336 MB and OOM.
  const Json published = Json::parse(R"([
    {"label": "FlashAttention", "device": "A100", "source": "Table 21", "counterpart": "cpu.flash",
     "quantity": "peak_memory", "unit": "MB",
     "values": [{"where": {"seqlen": 512}, "value": 104}, {"where": {"seqlen": 1024}, "value": 209}]},
    {"label": "PyTorch", "device": "A100", "source": "Table 21", "quantity": "peak_memory", "unit": "MB",
     "values": [{"where": {"seqlen": 512}, "value": 336}, {"where": {"seqlen": 1024}, "value": "OOM"}]},
    {"label": "FlashAttention", "device": "A100", "source": "Appendix E", "counterpart": "cpu.flash",
     "quantity": "runtime", "unit": "ms", "values": [{"where": {"seqlen": 512, "direction": "fwd+bwd"}, "value": 0.95}]}])");
  std::vector<Json> records;
  for (int i = 0; i < 2; ++i) {
    const Problem p = make_problem(16, 8, 512 << i, 64, Direction::fwd_bwd);
    records.push_back(make_record(p, Outcome("cpu.flash").memory(i == 0 ? 208000000 : 209000000, 64000000).time(1.9e-3)));
  }
  Json document = make_document(std::move(records));
  document["scenarios"] = Json::array({scenario_entry(published)});
  const Table memory = build_table("memory", merged({{"results.json", document}}), {});
  const std::string flash = "published_peak_memory/FlashAttention/sweep";
  EXPECT_NEAR(number(memory, 0, 0, flash), 104e6 / (1 << 20), 1e-9);
  EXPECT_EQ(memory.columns[column_index(memory, flash)].title, "FlashAttention (A100) peak MiB");
  EXPECT_EQ(memory.columns[column_index(memory, flash)].reference["source"], "Table 21");
  EXPECT_NEAR(number(memory, 0, 0, "published_ratio/FlashAttention/sweep"), 2.0, 1e-12) << "ours over published";
  EXPECT_NEAR(number(memory, 0, 1, "published_ratio/FlashAttention/sweep"), 1.0, 1e-12);
  EXPECT_EQ(cell(memory, 0, 1, "published_peak_memory/PyTorch/sweep").text, "OOM");
  EXPECT_FALSE(has_column(memory, "published_ratio/PyTorch/sweep")) << "no counterpart, no ratio";
  const Table seqlen = build_table("seqlen", merged({{"results.json", document}}), {});
  EXPECT_NEAR(number(seqlen, 0, 0, "published_runtime/FlashAttention/sweep"), 0.95, 1e-12);
  EXPECT_NEAR(number(seqlen, 0, 0, "published_ratio/FlashAttention/sweep"), 1.9 / 0.95, 1e-9);
  EXPECT_EQ(cell(seqlen, 0, 1, "published_runtime/FlashAttention/sweep").kind, Cell::Kind::empty);
  const Table fig2 = build_table("fig2", merged({{"results.json", document}}), {});
  ASSERT_EQ(fig2.groups[0].rows.size(), 3u) << "ours, then FlashAttention and PyTorch as published";
  EXPECT_EQ(fig2.groups[0].rows[1][0].text, "FlashAttention (A100), published");
  EXPECT_NEAR(fig2.groups[0].rows[1][column_index(fig2, "runtime")].number, 0.95, 1e-12);
  EXPECT_NEAR(number(fig2, 0, 0, "published_ratio"), 1.9 / 0.95, 1e-9);
}

TEST(ReportXAxis, ASweepOfBlockSizesIsOneTableOrderedByBlock) {
  std::vector<Json> records;
  for (const std::int64_t block : {256, 64, 128}) {
    Problem p = make_problem(1, 4, 1024, 64);
    p.tile.block_q = p.tile.block_k = block;
    records.push_back(make_record(p, Outcome("cpu.flash").counted(4e9 / static_cast<double>(block), 1e6)));
  }
  const MergedResults results = one_file(std::move(records));
  EXPECT_EQ(build_table("io", results, {}).groups.size(), 3u) << "by sequence length: one group per block size";
  ReportOptions options;
  options.x_axis = "block";
  const Table table = build_table("io", results, options);
  ASSERT_EQ(table.groups.size(), 1u);
  EXPECT_EQ(table.metadata["x_axis"], "block");
  EXPECT_EQ(table.columns[0].title, "block");
  ASSERT_EQ(table.groups[0].rows.size(), 3u);
  for (std::size_t row = 0; row < 3; ++row) EXPECT_EQ(number(table, 0, row, "x"), 64.0 * (1 << row));
  EXPECT_GT(number(table, 0, 0, "counted"), number(table, 0, 2, "counted")) << "fewer bytes with larger blocks";
  options.x_axis = "tile";
  EXPECT_THROW(build_table("io", results, options), InputError);
}

// An unset block is the one the implementation ran, as its configuration
// records it (cpu.flash's default key block is 512), or 64 where none is recorded.
TEST(ReportXAxis, AnUnsetBlockIsTheConfiguredOne) {
  const Problem p = make_problem(1, 4, 1024, 64);
  Json flash = make_record(p, Outcome("cpu.flash").counted(1e9, 1e6));
  flash["configuration"] = Json{{"block_q", 64}, {"block_k", 512}, {"threads", 2}};
  Json peer = make_record(p, Outcome("cpu.standard").counted(2e9, 1e6));
  ReportOptions options;
  options.x_axis = "block";
  const Table table = build_table("io", one_file({flash, peer}), options);
  ASSERT_EQ(table.groups.size(), 1u);
  ASSERT_EQ(table.groups[0].rows.size(), 2u);
  // The x cell holds block_q, labelled "QxK" where the sides differ.
  std::vector<std::string> blocks;
  for (const auto& row : table.groups[0].rows) {
    EXPECT_EQ(row[0].number, 64.0);
    blocks.push_back(row[0].text);
  }
  std::sort(blocks.begin(), blocks.end());
  EXPECT_EQ(blocks, (std::vector<std::string>{"", "64x512"}));
}

TEST(ReportRoofline, IntensityAchievedRateAndTheHostsCeilings) {
  // 1e9 FLOP... with counted bytes: intensity = FLOPs / bytes; ceilings 100 GFLOP/s and 10 GB/s (ridge 10).
  const Problem p = make_problem(1, 4, 1024, 64);
  const double flops = flop_count(p).total;
  Json fast = make_record(p, Outcome("cpu.flash").time(flops / 20e9).counted(flops / 40, 0));       // intensity 40
  Json slow = make_record(p, Outcome("cpu.standard").time(flops / 5e9).counted(flops / 2, 0));      // intensity 2
  Json document = make_document({fast, slow});
  const Table uncalibrated = build_table("roofline", merged({{"r.json", document}}), {});
  EXPECT_EQ(cell(uncalibrated, 0, 0, "roof").kind, Cell::Kind::empty);
  EXPECT_EQ(uncalibrated.metadata["ceilings"].size(), 0u);
  document["host"]["calibration"] = Json{{"threads", 2},
                                         {"gemm", {{"kernel", "test"}, {"m", 8}, {"n", 8}, {"k", 8}, {"flops_per_second", 100e9}}},
                                         {"copy", {{"bytes", 1 << 24}, {"bytes_per_second", 10e9}}},
                                         {"seconds", 0.1}};
  const Table table = build_table("roofline", merged({{"r.json", document}}), {});
  ASSERT_EQ(table.metadata["ceilings"].size(), 1u);
  EXPECT_DOUBLE_EQ(table.metadata["ceilings"][0]["ridge_flop_per_byte"].get<double>(), 10.0);
  EXPECT_NEAR(number(table, 0, 0, "intensity"), 40.0, 1e-9);
  EXPECT_NEAR(number(table, 0, 0, "achieved"), 20.0, 1e-6);  // GFLOP/s
  EXPECT_NEAR(number(table, 0, 0, "roof"), 100.0, 1e-6);
  EXPECT_NEAR(number(table, 0, 0, "of_roof"), 0.2, 1e-9);
  EXPECT_EQ(cell(table, 0, 0, "bound").text, "compute");
  EXPECT_NEAR(number(table, 0, 1, "roof"), 20.0, 1e-6) << "2 FLOP/byte at 10 GB/s";
  EXPECT_NEAR(number(table, 0, 1, "of_roof"), 0.25, 1e-9);
  EXPECT_EQ(cell(table, 0, 1, "bound").text, "memory");
  EXPECT_EQ(table.metadata["ceilings"][0]["lower_bound"], false);
  for (const std::string& note : table.notes) EXPECT_EQ(note.find("Contradiction"), std::string::npos) << note;

  // A calibration the points outran (taken under load): no roof but a lower bound, and the report says so.
  document["host"]["calibration"]["gemm"]["flops_per_second"] = 15e9;
  const Table outrun = build_table("roofline", merged({{"r.json", document}}), {});
  EXPECT_NEAR(number(outrun, 0, 0, "of_roof"), 20.0 / 15.0, 1e-9);
  EXPECT_EQ(outrun.metadata["ceilings"][0]["lower_bound"], true);
  EXPECT_EQ(outrun.metadata["ceilings"][0]["points_above"], 1);
  std::string named;
  for (const std::string& note : outrun.notes) {
    if (note.rfind("Contradiction: ", 0) == 0) named = note;
  }
  EXPECT_NE(named.find("1 point of "), std::string::npos) << named;
  EXPECT_NE(named.find("cpu.flash "), std::string::npos) << "names the point: " << named;
  EXPECT_NE(named.find("lower bound"), std::string::npos) << named;
  EXPECT_NE(named.find("attnbench run --calibrate"), std::string::npos) << "says how to recalibrate: " << named;
}

TEST(ReportTitles, NameWhatRanAndNoPaperTheScenarioDoesNotCite) {
  const Problem p = make_problem(1, 4, 128, 64);
  const Table table = build_table("seqlen", one_file({make_record(p, Outcome("cpu.flash"))}), {});
  EXPECT_EQ(table.title, "Runtime and throughput by sequence length");
  EXPECT_EQ(build_table("memory", one_file({make_record(p, Outcome("cpu.flash"))}), {}).title,
            "Peak memory by sequence length");
  ASSERT_EQ(table.metadata["ran_on"].size(), 1u);
  EXPECT_EQ(table.metadata["ran_on"][0], "CPU test cpu, 2 threads");
}

TEST(ReportGrouping, TitlesLeaveTheProblemsDefaultsToTheNotes) {
  const Table table = build_table("seqlen", one_file({make_record(make_problem(1, 4, 128, 64), Outcome("cpu.flash"))}), {});
  ASSERT_EQ(table.groups.size(), 1u);
  EXPECT_EQ(table.groups[0].title, "scenario=sweep, heads=4, head_dim=64, dtype=fp16, direction=fwd, causal=false");
  bool listed = false;
  for (const std::string& note : table.notes) listed = listed || note.find("layout=bshd") != std::string::npos;
  EXPECT_TRUE(listed) << "every field is still in a note";
}

TEST(ReportIo, CompulsoryCountedMeasuredAndTheRatio) {
  // B 1, H 1, N 128, d 16, fp16, forward: reads Q, K, V (3 x 128 x 16 x 2 bytes),
  // writes O (4096 bytes) and the fp32 LSE (512 bytes).
  const Problem p = make_problem(1, 1, 128, 16);
  const double compulsory = 3 * 4096 + 4096 + 512;
  const Table table = build_table(
      "io",
      one_file({make_record(p, Outcome("cpu.flash").counted(40000, 10000)), make_record(p, Outcome("torch.flash"))}),
      {});
  ASSERT_EQ(table.groups[0].rows.size(), 2u);
  EXPECT_EQ(cell(table, 0, 0, "implementation").text, "cpu.flash");
  EXPECT_EQ(table.columns[column_index(table, "compulsory")].unit, "KiB") << "50000 bytes at most";
  EXPECT_NEAR(number(table, 0, 0, "compulsory"), compulsory / 1024, 1e-12);
  EXPECT_NEAR(number(table, 0, 0, "counted"), 50000.0 / 1024, 1e-12);
  EXPECT_EQ(cell(table, 0, 0, "measured").kind, Cell::Kind::empty);
  EXPECT_EQ(cell_text(table.columns[column_index(table, "measured")], cell(table, 0, 0, "measured")), "-");
  EXPECT_NEAR(number(table, 0, 0, "ratio"), 50000 / compulsory, 1e-12);
  EXPECT_EQ(cell(table, 0, 0, "source").text, "counted");
  EXPECT_EQ(cell(table, 0, 1, "ratio").kind, Cell::Kind::empty) << "no traffic, no ratio";
  EXPECT_EQ(table.title.rfind("HBM", 0), std::string::npos) << "a CPU's counted bytes are no HBM bytes: " << table.title;
}

TEST(ReportAccuracy, ErrorsRuleLimitsAndTheSample) {
  const Problem p = make_problem(1, 2, 128, 16);
  const Table table = build_table(
      "accuracy",
      one_file({make_record(p, Outcome("cpu.standard")), make_record(p, Outcome("cpu.flash").rule(5e-3).sampled()),
                make_record(p, Outcome("cuda.flash").skip("unavailable: no GPU"))}),
      {});
  EXPECT_FALSE(has_column(table, "max_abs_error/dQ")) << "no record checked dQ";
  EXPECT_FALSE(has_column(table, "rule_limit/LSE")) << "the rule applied to no LSE";
  EXPECT_EQ(cell(table, 0, 0, "status").text, "passed");
  EXPECT_NEAR(number(table, 0, 1, "max_abs_error/O"), 2e-3, 1e-15);
  EXPECT_NEAR(number(table, 0, 1, "max_abs_error/LSE"), 1e-6, 1e-18);
  EXPECT_NEAR(number(table, 0, 1, "rule_limit/O"), 5e-3, 1e-15);
  EXPECT_EQ(cell(table, 0, 0, "rule_limit/O").kind, Cell::Kind::empty);
  EXPECT_EQ(cell(table, 0, 0, "sample").text, "complete");
  EXPECT_EQ(cell(table, 0, 1, "sample").text, "sampled: 8 heads, 64 rows, dK/dV not checked");
  EXPECT_EQ(cell(table, 0, 2, "status").text, "skipped");
  EXPECT_EQ(cell(table, 0, 2, "max_abs_error/O").text, "skipped");
  EXPECT_EQ(cell_text(table.columns[column_index(table, "max_abs_error/O")], cell(table, 0, 1, "max_abs_error/O")),
            "2.00e-03");
}

// ---- Grouping ----

// The FlashAttention-2 grid: 16k tokens (batch = 16384 / N), hidden 2048 (heads =
// 2048 / d), d 64 and 128, causal off and on, fwd+bwd.
TEST(ReportGrouping, Fa2GridSplitsByHeadDimAndCausalNotByBatch) {
  std::vector<Json> records;
  for (const std::int64_t d : {64, 128}) {
    for (const bool causal : {false, true}) {
      for (const std::int64_t n : {512, 1024, 2048}) {
        Problem p = make_problem(16384 / n, 2048 / d, n, d, Direction::fwd_bwd);
        p.mask.causal = causal;
        for (const char* implementation : {"cpu.flash", "cpu.standard"}) {
          records.push_back(make_record(p, Outcome(implementation), "fa2_grid"));
        }
      }
    }
  }
  const Table table = build_table("seqlen", one_file(std::move(records)), {});
  ASSERT_EQ(table.groups.size(), 4u);
  EXPECT_EQ(table.groups[0].title, "heads=32, head_dim=64, causal=false");
  EXPECT_EQ(table.groups[3].title, "heads=16, head_dim=128, causal=true");
  EXPECT_EQ(table.groups[1].fields, (Json{{"heads", 32}, {"head_dim", 64}, {"causal", true}}));
  for (std::size_t g = 0; g < 4; ++g) {
    ASSERT_EQ(table.groups[g].rows.size(), 3u);
    for (std::size_t r = 0; r < 3; ++r) {
      EXPECT_EQ(number(table, g, r, "seqlen"), 512 << r);
      EXPECT_EQ(number(table, g, r, "batch"), 32 >> r);
      EXPECT_EQ(cell(table, g, r, "runtime/cpu.flash").kind, Cell::Kind::number);
    }
  }
  EXPECT_EQ(table.metadata["common"]["direction"], "fwd+bwd");
  EXPECT_EQ(table.metadata["common"]["scenario"], "fa2_grid");
  ASSERT_FALSE(table.notes.empty());
  EXPECT_NE(table.notes[0].find("Every group: scenario=fa2_grid, kv_heads"), std::string::npos) << table.notes[0];
}

TEST(ReportGrouping, DirectionDropoutAndPaddingSplitGroups) {
  std::vector<Json> records;
  Problem forward = make_problem(2, 1, 64, 16);
  Problem padded = make_problem(2, 1, 64, 16, Direction::fwd_bwd);
  padded.padding.kind = PaddingSpec::Kind::random;
  padded.padding.shortfall_max = 20;
  padded.lengths_q = padded.lengths_k = {60, 50};
  padded.dropout.probability = 0.1;
  records.push_back(make_record(forward, Outcome("cpu.flash")));
  records.push_back(make_record(padded, Outcome("cpu.flash")));
  const Table table = build_table("memory", one_file(std::move(records)), {});
  ASSERT_EQ(table.groups.size(), 2u);
  EXPECT_EQ(table.groups[1].title, "direction=fwd+bwd, padding=random[0,20] seed 0, dropout=0.1");
}

// ---- Merged files ----

TEST(ReportMerge, PeerResultsFromAnotherFileJoinTheSameRows) {
  const Problem p = make_problem(16, 8, 512, 64);
  const MergedResults results =
      merged({{"attnbench.json", make_document({make_record(p, Outcome("cpu.standard").time(4e-3)),
                                                make_record(p, Outcome("cpu.flash").time(1e-3))})},
              {"torch.json", make_document({make_record(p, Outcome("torch.flash").time(0.5e-3))})}});
  EXPECT_EQ(results.implementations(), (std::vector<std::string>{"cpu.standard", "cpu.flash", "torch.flash"}));
  const Table table = build_table("seqlen", results, {});
  ASSERT_EQ(table.groups.size(), 1u);
  ASSERT_EQ(table.groups[0].rows.size(), 1u);
  EXPECT_NEAR(number(table, 0, 0, "speedup/torch.flash"), 8.0, 1e-12);
  EXPECT_NEAR(number(table, 0, 0, "speedup/cpu.flash"), 4.0, 1e-12);
  ASSERT_EQ(table.metadata["sources"].size(), 2u);
  EXPECT_EQ(table.metadata["sources"][1]["path"], "torch.json");
}

TEST(ReportMerge, TheSameCellInTwoFilesIsRefusedNamingBoth) {
  const Problem p = make_problem(1, 1, 64, 16);
  try {
    merged({{"first.json", make_document({make_record(p, Outcome("cpu.flash"))})},
            {"second.json", make_document({make_record(p, Outcome("cpu.flash"))})}});
    FAIL() << "a duplicated cell was accepted";
  } catch (const InputError& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("second.json: records[0]"), std::string::npos) << message;
    EXPECT_NE(message.find("also in first.json"), std::string::npos) << message;
  }
  // Other implementations of the same case are not a clash.
  EXPECT_NO_THROW(merged({{"first.json", make_document({make_record(p, Outcome("cpu.flash"))})},
                          {"second.json", make_document({make_record(p, Outcome("torch.flash"))})}}));
}

TEST(ReportMerge, OneProblemUnderTwoCaseKeysIsRefused) {
  const Problem p = make_problem(1, 1, 64, 16);
  Json renamed = make_record(p, Outcome("cpu.flash"));
  renamed["case_key"] = "another spelling";
  const MergedResults results = one_file({make_record(p, Outcome("cpu.flash")), renamed});
  EXPECT_THROW(build_table("seqlen", results, {}), InputError);
}

TEST(Report, UnknownTableAndBaselineAreInputErrors) {
  const MergedResults results = appendix_e();
  EXPECT_THROW(build_table("fig3", results, {}), InputError);
  EXPECT_THROW(build_table("seqlen", results, {.baseline = "cuda.cublas"}), InputError);
}

// ---- Renderers ----

Table escaping_table() {
  Table table;
  table.kind = "test";
  table.title = "Odd_names: 50% & #1";
  table.columns = {Column::text("name", "name", "name"), Column::number("value", "value ms", "ms", "runtime", 3)};
  table.groups = {TableGroup{"a, b",
                             Json::object(),
                             {{Cell::label("quote \" comma, pipe | under_score"), Cell::value(1.0 / 3)},
                              {Cell::label("line\nbreak"), Cell::marker("OOM", "skipped", "needs 9 GiB")}}},
                  TableGroup{"second", Json::object(), {{Cell::label("plain"), Cell::empty()}}}};
  table.notes = {"a note with 100% & more"};
  return table;
}

// RFC 4180 records.
std::vector<std::vector<std::string>> parse_csv(const std::string& text) {
  std::vector<std::vector<std::string>> rows(1, std::vector<std::string>(1));
  bool quoted = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        rows.back().back() += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        rows.back().back() += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      rows.back().emplace_back();
    } else if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') {
      rows.emplace_back(1);
      ++i;
    } else {
      rows.back().back() += c;
    }
  }
  if (rows.back() == std::vector<std::string>(1)) rows.pop_back();
  return rows;
}

TEST(ReportRender, CsvParsesBackWithOneHeaderAndAGroupColumn) {
  const std::vector<std::vector<std::string>> rows = parse_csv(render_csv(escaping_table()));
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[0], (std::vector<std::string>{"group", "name", "value ms"}));
  EXPECT_EQ(rows[1], (std::vector<std::string>{"a, b", "quote \" comma, pipe | under_score", rows[1][2]}));
  EXPECT_EQ(std::stod(rows[1][2]), 1.0 / 3) << "every digit is kept";
  EXPECT_EQ(rows[2], (std::vector<std::string>{"a, b", "line\nbreak", "OOM"}));
  EXPECT_EQ(rows[3], (std::vector<std::string>{"second", "plain", ""}));
}

TEST(ReportRender, CsvOfARealTableHasOneFieldPerColumn) {
  const Table table = build_table("seqlen", appendix_e(), {});
  const auto rows = parse_csv(render_csv(table));
  ASSERT_EQ(rows.size(), 4u);
  for (const auto& row : rows) EXPECT_EQ(row.size(), table.columns.size() + 1);
  EXPECT_EQ(rows[3][1], "2048");
}

TEST(ReportRender, MarkdownTablesHaveATitleAHeaderASeparatorAndEqualRows) {
  const std::string markdown = render_markdown(escaping_table());
  EXPECT_EQ(markdown.rfind("## Odd_names: 50% & #1\n", 0), 0u) << markdown;
  EXPECT_NE(markdown.find("### a, b\n\n| name "), std::string::npos) << markdown;
  EXPECT_NE(markdown.find("### second\n"), std::string::npos);
  EXPECT_NE(markdown.find("| :------"), std::string::npos) << "text columns align left";
  EXPECT_NE(markdown.find("-: |\n"), std::string::npos) << "number columns align right";
  EXPECT_NE(markdown.find("pipe \\| under"), std::string::npos) << "a | in a cell is escaped";
  EXPECT_NE(markdown.find("line break"), std::string::npos) << "no line break inside a row";
  EXPECT_NE(markdown.find("    0.333 |"), std::string::npos) << "numbers right-aligned, 3 decimals" << markdown;
  EXPECT_NE(markdown.find("- a note with 100% & more\n"), std::string::npos);
  // Every table line has as many unescaped bars as the header.
  std::size_t lines = 0;
  std::size_t start = 0;
  while (start < markdown.size()) {
    const std::size_t end = markdown.find('\n', start);
    const std::string line = markdown.substr(start, end - start);
    start = end + 1;
    if (line.empty() || line[0] != '|') continue;
    ++lines;
    EXPECT_EQ(count(line, "|") - count(line, "\\|"), 3u) << line;
  }
  EXPECT_EQ(lines, 2u * 2 + 2 + 1) << "header and separator per group, then the rows";
}

TEST(ReportRender, LatexUsesBooktabsAndEscapes) {
  const std::string latex = render_latex(escaping_table());
  EXPECT_EQ(count(latex, "\\toprule"), 2u);
  EXPECT_EQ(count(latex, "\\midrule"), 2u);
  EXPECT_EQ(count(latex, "\\bottomrule"), 2u);
  EXPECT_EQ(count(latex, "\\begin{tabular}{lr}"), 2u);
  EXPECT_NE(latex.find("\\caption{Odd\\_names: 50\\% \\& \\#1: a, b}"), std::string::npos) << latex;
  EXPECT_NE(latex.find("under\\_score & 0.333 \\\\"), std::string::npos) << latex;
  EXPECT_NE(latex.find("100\\% \\& more"), std::string::npos);
  EXPECT_NE(latex.find("plain & - \\\\"), std::string::npos);
  // No special character left bare outside the commands we wrote.
  EXPECT_EQ(latex.find("Odd_"), std::string::npos);
  EXPECT_EQ(latex.find(" % "), std::string::npos);
  EXPECT_EQ(latex.find("resizebox"), std::string::npos) << "two columns fit a page";
}

TEST(ReportRender, AWideLatexTableIsScaledToTheTextWidth) {
  const Table table = build_table("seqlen", appendix_e(), {});
  ASSERT_GT(table.columns.size(), 6u);
  const std::string latex = render_latex(table);
  EXPECT_EQ(count(latex, "\\resizebox{\\linewidth}{!}{%\n\\begin{tabular}"), table.groups.size()) << latex;
  EXPECT_EQ(count(latex, "\\end{tabular}}\n\\end{table}"), table.groups.size()) << latex;
  EXPECT_NE(latex.find("\\usepackage{graphicx}"), std::string::npos);
  EXPECT_EQ(latex.find("layout=bshd"), latex.rfind("layout=bshd")) << "the defaults only in the note, not every caption";
}

TEST(ReportRender, JsonCarriesTypedCellsAndUnits) {
  const Table table = build_table("seqlen", appendix_e(), {});
  const Json report = Json::parse(render_json(table));
  EXPECT_EQ(report["schema"], "attnbench.report/1");
  EXPECT_EQ(report["table"], "seqlen");
  EXPECT_EQ(report["baseline"], "cpu.standard");
  ASSERT_EQ(report["columns"].size(), table.columns.size());
  const std::size_t runtime = column_index(table, "runtime/cpu.flash");
  const std::size_t standard = column_index(table, "runtime/cpu.standard");
  EXPECT_EQ(report["columns"][runtime]["unit"], "ms");
  EXPECT_EQ(report["columns"][runtime]["quantity"], "runtime");
  EXPECT_EQ(report["columns"][runtime]["implementation"], "cpu.flash");
  EXPECT_EQ(report["columns"][column_index(table, "throughput/cpu.flash")]["unit"], "TFLOP/s");
  EXPECT_EQ(report["columns"][0]["type"], "integer");
  const Json& rows = report["groups"][0]["rows"];
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_TRUE(rows[0][0].is_number_integer());
  EXPECT_EQ(rows[0][0], 512);
  EXPECT_DOUBLE_EQ(rows[0][runtime].get<double>(), 0.21);
  EXPECT_EQ(rows[2][standard]["marker"], "OOM");
  EXPECT_EQ(rows[2][standard]["status"], "skipped");
  EXPECT_NE(rows[2][standard]["reason"].get<std::string>().find("available"), std::string::npos);
  EXPECT_TRUE(rows[2][column_index(table, "speedup/cpu.flash")].is_null());
}

TEST(ReportRender, SmallNumbersKeepTwoSignificantDigitsInFixedDecimals) {
  const Column column = Column::number("x", "x", "", "x", 2);
  EXPECT_EQ(cell_text(column, Cell::value(0.0197)), "0.020") << "a small CPU footprint in GiB, not 1.97e-02";
  EXPECT_EQ(cell_text(column, Cell::value(0.004)), "0.0040");
  EXPECT_EQ(cell_text(column, Cell::value(0.05)), "0.050") << "0.05 would show one significant digit";
  EXPECT_EQ(cell_text(column, Cell::value(0.0001)), "0.00010");
  EXPECT_EQ(cell_text(column, Cell::value(0.00004)), "4.00e-05") << "scientific only below 1e-4";
  Cell planned = Cell::value(0.0197);
  planned.planned = true;
  EXPECT_EQ(cell_text(column, planned), "0.020 p");
  EXPECT_EQ(cell_text(column, Cell::value(0.1)), "0.10");
  EXPECT_EQ(cell_text(column, Cell::value(0.0)), "0.00");
  EXPECT_EQ(cell_text(column, Cell::value(12.345)), "12.35");
  EXPECT_EQ(cell_text(Column::integer("n", "N", "seqlen_k"), Cell::value(2048)), "2048");
  EXPECT_EQ(cell_text(column, Cell::empty()), "-");
}

TEST(ReportRender, LatexWritesScientificNumbersAsPowersOfTen) {
  Table table;
  table.kind = "accuracy";
  table.title = "Errors";
  Column error = Column::number("err", "O max err", "", "max_abs_error", 2);
  error.scientific = true;
  table.columns = {Column::text("name", "name", "implementation"), error, Column::number("tiny", "tiny", "", "x", 2)};
  table.groups.push_back(TableGroup{"g", Json::object(), {{Cell::label("cpu.flash"), Cell::value(4.73e-3),
                                                           Cell::value(2e-6)}}});
  const std::string latex = render_latex(table);
  EXPECT_NE(latex.find("cpu.flash & $4.73 \\times 10^{-3}$ & $2.00 \\times 10^{-6}$ \\\\"), std::string::npos)
      << latex;
  EXPECT_EQ(latex.find("e-0"), std::string::npos) << "no 1.97e-02 in LaTeX:\n" << latex;
}

TEST(ReportRender, EveryFormatIsListed) {
  for (const char* name : {"md", "csv", "latex", "json"}) EXPECT_NE(find_table_format(name), nullptr) << name;
  EXPECT_EQ(find_table_format("html"), nullptr);
}

}  // namespace
}  // namespace attnbench
