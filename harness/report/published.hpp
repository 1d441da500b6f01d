// Published numbers a scenario reproduces, carried by the scenario itself
// ("published" in scenario files, docs/scenarios.md) and so by every results
// file that ran it (scenarios[].source). A series is one implementation's
// values of one quantity in one publication, each value for the cases a
// `where` clause selects ({"seqlen": 1024, "direction": "fwd"}); `report` puts
// them beside ours with the ratio, and plot.py draws them as reference marks.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace attnbench {

struct PublishedSeries {
  std::string scenario;     // the scenario whose file carries it
  std::string label;        // the published implementation: "FlashAttention"
  std::string device;       // where it was measured: "A100"
  std::string source;       // "Dao et al. 2022, FlashAttention, Table 21"
  std::string counterpart;  // ours that it compares with ("" when none)
  std::string quantity;     // runtime, throughput, peak_memory, hbm_bytes, flops
  std::string unit;         // as published: ms, s, TFLOP/s, GFLOP/s, MB, GB, MiB, GiB, B, GFLOP
  nlohmann::ordered_json values;  // [{"where": {...}, "value": number or "OOM"}]
};

// A published value in the base unit of its quantity (seconds, FLOP/s,
// bytes, FLOP), or "OOM".
struct PublishedValue {
  std::optional<double> amount;  // nullopt: out of memory in the publication
};

// The series of every scenario of the results files (documents), each once.
std::vector<PublishedSeries> published_series(const std::vector<const nlohmann::ordered_json*>& documents);

// The series' value for a record's problem (of its scenario): the first value
// whose `where` matches; nullopt when none does.
std::optional<PublishedValue> published_value(const PublishedSeries& series, const nlohmann::ordered_json& record);

// The factor from a published unit to the base unit of its quantity (ms ->
// 1e-3 s, MB -> 1e6 bytes, TFLOP/s -> 1e12 FLOP/s, ...).
double unit_factor(const std::string& unit);

}  // namespace attnbench
