#include "harness/report/published.hpp"

#include <map>
#include <set>
#include <stdexcept>
#include <tuple>

#include "harness/common/problem_json.hpp"

namespace attnbench {

using Json = nlohmann::ordered_json;

double unit_factor(const std::string& unit) {
  static const std::map<std::string, double> kFactors{
      {"s", 1},       {"ms", 1e-3},     {"us", 1e-6},     {"TFLOP/s", 1e12}, {"GFLOP/s", 1e9},  {"B", 1},
      {"KB", 1e3},    {"MB", 1e6},      {"GB", 1e9},      {"TB", 1e12},      {"KiB", 1024.0},  {"MiB", 1048576.0},
      {"GiB", 1073741824.0}, {"TiB", 1099511627776.0}, {"GFLOP", 1e9}, {"TFLOP", 1e12}, {"FLOP", 1}};
  const auto found = kFactors.find(unit);
  if (found == kFactors.end()) throw std::invalid_argument("unknown published unit " + unit);
  return found->second;
}

std::vector<PublishedSeries> published_series(const std::vector<const Json*>& documents) {
  std::vector<PublishedSeries> all;
  std::set<std::tuple<std::string, std::string, std::string, std::string>> seen;
  for (const Json* document : documents) {
    for (const Json& scenario : (*document)["scenarios"]) {
      const Json& source = scenario["source"];
      if (!source.is_object() || !source.contains("published")) continue;
      for (const Json& entry : source["published"]) {
        PublishedSeries series{scenario["name"],
                               entry["label"],
                               entry.value("device", ""),
                               entry["source"],
                               entry.value("counterpart", ""),
                               entry["quantity"],
                               entry["unit"],
                               entry["values"]};
        if (seen.emplace(series.scenario, series.label, series.quantity, series.source).second) {
          all.push_back(std::move(series));
        }
      }
    }
  }
  return all;
}

std::optional<PublishedValue> published_value(const PublishedSeries& series, const Json& record) {
  if (record["scenario"] != series.scenario) return std::nullopt;
  const Json& problem = record["problem"];
  for (const Json& entry : series.values) {
    if (!problem_matches(entry["where"], problem)) continue;
    if (entry["value"].is_string()) return PublishedValue{std::nullopt};  // "OOM"
    return PublishedValue{entry["value"].get<double>() * unit_factor(series.unit)};
  }
  return std::nullopt;
}

}  // namespace attnbench
