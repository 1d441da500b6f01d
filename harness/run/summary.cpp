#include "harness/run/summary.hpp"

#include <algorithm>
#include <cstdio>
#include <map>

#include "harness/format.hpp"
#include "harness/measure/statistics.hpp"

namespace attnbench {

using Json = nlohmann::ordered_json;

std::string short_case_label(const nlohmann::ordered_json& p) {
  const auto number = [&](const char* key) { return std::to_string(p[key].get<std::int64_t>()); };
  std::string label = "b" + number("batch") + " h" + number("heads");
  if (p["kv_heads"] != p["heads"]) label += "/" + number("kv_heads");
  label += " q" + number("seqlen_q") + " k" + number("seqlen_k") + " d" + number("head_dim") + " " +
           p["dtype"].get<std::string>() + " " + p["direction"].get<std::string>();
  const std::string align = p["align"] == "bottom_right" ? ".br" : ".tl";
  if (p["causal"].get<bool>()) label += " causal" + align;
  if (!p["window"].is_null()) label += " win" + align + p["window"].dump();
  if (p["padding"]["kind"] != "none") label += " pad";
  if (p["dropout"]["p"].get<double>() > 0) label += " drop" + format_fixed(p["dropout"]["p"].get<double>(), 2);
  if (p["layout"] == "bhsd") label += " bhsd";
  return label;
}

namespace {

// The worst tensor error of a record, relative to the oracle's magnitude: "dK 4.5e-07".
std::string worst_error(const Json& accuracy) {
  if (accuracy.is_null() || accuracy["tensors"].empty()) return "-";
  std::string worst = "-";
  double largest = -1;
  for (const auto& [tensor, error] : accuracy["tensors"].items()) {
    const double relative =
        error["max_abs_error"].get<double>() / std::max(1.0, error["oracle_max_abs"].get<double>());
    const bool broken = error["nan"].get<std::size_t>() || error["inf"].get<std::size_t>() ||
                        error["infinity_mismatch"].get<std::size_t>();
    if (broken) return tensor + " NaN/Inf";
    if (relative > largest) {
      largest = relative;
      worst = tensor + " " + format_scientific(relative, 1);
    }
  }
  return worst;
}

// The fewest samples that give the median a 95% confidence interval.
std::size_t fewest_samples_with_a_median_interval() {
  std::size_t n = 1;
  while (median_confidence_ranks(n, 0.95).low == 0) ++n;
  return n;
}

}  // namespace

std::string timing_method_line(const Json& timing) {
  if (!timing.is_object()) return "";
  std::string line;
  const std::string method = timing.value("method", std::string("events"));
  if (method == "cupti" && timing.contains("cupti")) {
    const Json& cupti = timing["cupti"];
    line = "timing cupti: kernels " + format_seconds(timing["statistics"]["p50"].get<double>());
    if (cupti["events_p50"].is_number()) line += ", events " + format_seconds(cupti["events_p50"].get<double>());
    if (cupti["launch_overhead_seconds"].is_number()) {
      line += ", launch overhead " + format_seconds(cupti["launch_overhead_seconds"].get<double>());
    }
  } else if (method == "graph" && timing.contains("graph")) {
    const Json& graph = timing["graph"];
    line = "timing graph: " + std::to_string(graph["calls_per_graph"].get<int>()) + " calls per launch";
    if (!graph["flush_graph_seconds"].empty()) {
      line += ", the flush's " + format_seconds(graph["flush_seconds_per_call"].get<double>()) + " per call subtracted";
    }
  }
  if (timing.contains("methods_passed_over")) {
    std::string passed;
    for (const Json& reason : timing["methods_passed_over"]) passed += (passed.empty() ? "" : "; ") + reason.get<std::string>();
    line += std::string(line.empty() ? "timing " + method : "") + " (fell back past " + passed + ")";
  }
  return line;
}

std::string clock_policy_line(const Json& device) {
  if (!device.contains("clock_policy")) return "";
  const std::string name = device.value("name", std::string("the device"));
  const Json& policy = device["clock_policy"];
  if (policy == "default") {
    return "clocks: " + name + " ran with unlocked clocks (the GPU boosts and throttles on its own; "
           "--lock-clocks holds them where permitted, and clock marks flag slow samples either way).";
  }
  return "clocks: " + name + " locked at " + policy.dump() + ", restored at the end.";
}

std::string kernel_timer_cost_line(const Json& device) {
  if (!device.contains("kernel_timer_cost") || !device["kernel_timer_cost"].is_object()) return "";
  const Json& cost = device["kernel_timer_cost"];
  return "cupti: CUPTI's activity records add " + format_seconds(cost["added_seconds_per_launch"].get<double>()) +
         " to a launch on " + device.value("name", std::string("the device")) + " (" +
         format_seconds(cost["launch_seconds_with"].get<double>()) + " with, " +
         format_seconds(cost["launch_seconds_without"].get<double>()) +
         " without, measured once); the kernel times exclude it, the events times beside them do not.";
}

void print_summary(const ResultsDocument& results) {
  const Json& records = results.json()["records"];
  // (--resume keeps a run in one mode, so its first record tells.)
  const bool memory_only = !records.empty() && records[0]["settings"].value("memory_only", false);
  int name_width = 14;
  for (const auto& record : records) {
    name_width = std::max(name_width, static_cast<int>(record["implementation"].get<std::string>().size()));
  }
  const auto print_row = [&](const std::string& name, const std::string& median, const std::string& spread,
                             const std::string& samples, const std::string& throughput, const std::string& peak,
                             const std::string& error) {
    if (memory_only) {
      std::printf("  %-*s %9s %10s %s\n", name_width, name.c_str(), median.c_str(), peak.c_str(), error.c_str());
    } else {
      std::printf("  %-*s %9s %6s %7s %13s %10s %s\n", name_width, name.c_str(), median.c_str(), spread.c_str(),
                  samples.c_str(), throughput.c_str(), peak.c_str(), error.c_str());
    }
  };
  std::map<std::string, std::string> planned_reason_shown;  // by implementation
  std::string current_case;
  bool any_timing = false, any_simulated = false, any_planned = false;
  for (const auto& record : records) {
    const std::string case_label = record["scenario"].get<std::string>() + "#" +
                                   std::to_string(record["case_index"].get<std::size_t>());
    if (case_label != current_case) {
      current_case = case_label;
      const std::string label = short_case_label(record["problem"]);
      if (case_label.size() + 2 + label.size() <= 80) {
        std::printf("\n%s  %s\n", case_label.c_str(), label.c_str());
      } else {
        std::printf("\n%s\n  %s\n", case_label.c_str(), label.c_str());
      }
      print_row("implementation", memory_only ? "status" : "median", "+-CI/2", "samples", "throughput", "peak mem",
                "rel. error");
    }
    const Json& timing = record["timing"];
    const bool ok = record["status"] == "ok";
    std::string median = ok && !memory_only ? "-" : record["status"].get<std::string>();
    std::string spread = "-", samples = "-", throughput = "-", peak = "-";
    if (!timing.is_null()) {
      any_timing = true;
      const Json& statistics = timing["statistics"];
      const double p50 = statistics["p50"].get<double>();
      median = format_seconds(p50);
      if (p50 > 0 && statistics["median_ci_defined"].get<bool>()) {
        const double half_width =
            (statistics["median_ci_high"].get<double>() - statistics["median_ci_low"].get<double>()) / 2 / p50;
        spread = format_fixed(100 * half_width, 1) + "%";
      }
      const bool simulated = timing.value("simulated", false);
      any_simulated = any_simulated || simulated;
      samples = std::to_string(statistics["count"].get<std::size_t>()) +
                (simulated ? "s" : timing["converged"].get<bool>() ? " " : "*");
      if (p50 > 0 && !simulated) throughput = format_flops_rate(record["flops"]["total"].get<double>() / p50);
    }
    const bool planned = record["memory"].is_object() && record["memory"].value("source", "") == "planned";
    any_planned = any_planned || planned;
    if (!record["memory"].is_null()) {
      peak = format_bytes(record["memory"]["peak_bytes"].get<double>()) + (planned ? "p" : "");
    }
    const std::string name = record["implementation"].get<std::string>();
    print_row(name, median, spread, samples, throughput, peak, worst_error(record["accuracy"]));
    const std::string& reason = record["reason"].get_ref<const std::string&>();
    bool show_reason = !ok;
    if (planned) {
      std::string& shown = planned_reason_shown[name];
      show_reason = show_reason || shown != reason;
      shown = reason;
    }
    if (show_reason) {
      for (const std::string& line : wrap_words(reason, 80, "    ")) {
        std::printf("%s\n", line.c_str());
      }
    }
    if (const std::string line = timing_method_line(timing); !line.empty()) {
      for (const std::string& wrapped : wrap_words(line, 80, "    ")) std::printf("%s\n", wrapped.c_str());
    }
    for (const Json& warning : record.value("warnings", Json::array())) {
      for (const std::string& line : wrap_words("warning: " + warning.get<std::string>(), 80, "    ")) {
        std::printf("%s\n", line.c_str());
      }
    }
  }
  if (any_timing) {
    const std::string legend =
        "+-CI/2: half the median's 95% CI, relative (- below " + std::to_string(fewest_samples_with_a_median_interval()) +
        " samples, too few for one). samples: * = stopped at max_samples or max_seconds before the CI reached "
        "target_ci_width." +
        std::string(any_simulated ? " s = simulated on the CPU (cudasim): one call, timed by the host clock, no "
                                    "GPU performance figure (so no throughput)."
                                  : "");
    std::printf("\n");
    for (const std::string& line : wrap_words(legend, 80, "")) std::printf("%s\n", line.c_str());
  }
  for (const Json& device : results.json()["devices"]) {
    for (const std::string& line : {clock_policy_line(device), kernel_timer_cost_line(device)}) {
      if (line.empty()) continue;
      std::printf("\n");
      for (const std::string& wrapped : wrap_words(line, 80, "")) std::printf("%s\n", wrapped.c_str());
    }
  }
  if (any_planned) {
    std::printf("\n");
    for (const std::string& line : wrap_words("peak mem p: planned from the arena plan, not run (--memory-only); "
                                               "a reason is shown where it first applies to an implementation.",
                                               80, "")) {
      std::printf("%s\n", line.c_str());
    }
  }
}

std::string load_warning(const Json& load_average, int threads, const CpuAvailability& cpus) {
  const auto one_minute = [&](const char* when) {
    return load_average.contains(when) && load_average[when].is_array() ? load_average[when][0].get<double>() : 0.0;
  };
  const double start = one_minute("run_start"), end = one_minute("run_end");
  const double limit = cpus.count + 0.5;
  if (start + threads <= limit && end <= limit) return "";
  return "warning: load average " + format_fixed(start, 2) + " at the start, " + format_fixed(end, 2) +
         " at the end, with " + std::to_string(threads) + " thread(s) on " + std::to_string(cpus.count) +
         " available CPU(s): other work competed for the CPUs, so host timings may be noisy.";
}

}  // namespace attnbench
