#include "harness/scenario/scenario.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <sstream>

#include "harness/embedded_schemas.hpp"
#include "harness/format.hpp"
#include "harness/implementation.hpp"
#include "harness/scenario/json_schema.hpp"
#include "harness/scenario/json_text.hpp"
#include "harness/common/problem_json.hpp"
#include "harness/message_text.hpp"

namespace attnbench {
namespace {

using Json = nlohmann::ordered_json;

// Keys that stand for others: a layer setting one replaces what earlier layers
// set for the other ("seqlen" is expanded into seqlen_q and seqlen_k instead).
const std::map<std::string, std::string> kAlternatives = {
    {"tokens", "batch"}, {"batch", "tokens"}, {"hidden", "heads"}, {"heads", "hidden"}};

// Keys whose values a sweep axis would override when a case also sets them.
const std::map<std::string, std::vector<std::string>> kOverriddenBy = {
    {"seqlen", {"seqlen", "seqlen_q", "seqlen_k"}},
    {"seqlen_q", {"seqlen", "seqlen_q"}},
    {"seqlen_k", {"seqlen", "seqlen_k"}},
    {"tokens", {"tokens", "batch"}},
    {"batch", {"tokens", "batch"}},
    {"hidden", {"hidden", "heads"}},
    {"heads", {"hidden", "heads"}},
};

// Pairs that may not both appear in one object.
const std::vector<std::pair<std::string, std::string>> kExclusive = {
    {"seqlen", "seqlen_q"}, {"seqlen", "seqlen_k"}, {"tokens", "batch"}, {"hidden", "heads"}};

// The problem keys of all layers merged so far, with the path each came from.
struct MergedProblem {
  Json values = Json::object();
  std::map<std::string, std::string> origin;

  void set(const std::string& key, const Json& value, const std::string& path) {
    if (key == "seqlen") {
      set("seqlen_q", value, path);
      set("seqlen_k", value, path);
      return;
    }
    const auto alternative = kAlternatives.find(key);
    if (alternative != kAlternatives.end()) {
      values.erase(alternative->second);
      origin.erase(alternative->second);
    }
    values[key] = value;
    origin[key] = path;
  }

  // Where a problem key (or a path below it, "padding.lengths_q[2]") came from.
  std::string path_of(const std::string& key, const std::string& fallback) const {
    const auto split = key.find_first_of(".[");
    const std::string head = key.substr(0, split);
    const auto found = origin.find(head);
    if (found == origin.end()) return fallback;
    return found->second + (split == std::string::npos ? "" : key.substr(split));
  }
};

struct SweepAxis {
  std::string key;
  const Json* values;
  std::vector<bool> repeats;  // per value: equal to an earlier value of the axis
};

// The part of a scenario a schema error is in: "cases[3]", "measure", … or
// "defaults" for "defaults.head_dim".
std::string section_of(const std::string& path) {
  if (path.rfind("cases[", 0) == 0) return path.substr(0, path.find(']') + 1);
  return path.substr(0, path.find_first_of(".["));
}

class ScenarioParser {
 public:
  // `broken` lists the paths of the schema errors. A value with a schema error
  // is never used, so the semantic checks of everything else still run and
  // every problem is reported at once: a case is built unless one of the
  // values it takes (from defaults, its entry in cases, a sweep point) is broken.
  ScenarioParser(const std::string& file, std::vector<Diagnostic>& diagnostics, const std::vector<std::string>& broken,
                 ImplementationNames names)
      : file_(file), diagnostics_(diagnostics), broken_paths_(broken.begin(), broken.end()), names_(names) {
    for (const std::string& path : broken_paths_) broken_.insert(section_of(path));
  }

  // Whether the structure every case is expanded from is sound: defaults an
  // object, sweep an object of arrays, cases an array.
  static bool cases_expandable(const Json& document) {
    if (!document.is_object()) return false;
    if (document.contains("defaults") && !document["defaults"].is_object()) return false;
    if (document.contains("cases") && !document["cases"].is_array()) return false;
    if (document.contains("sweep")) {
      const Json& sweep = document["sweep"];
      if (!sweep.is_object()) return false;
      for (const auto& [key, values] : sweep.items()) {
        if (!values.is_array() || values.empty()) return false;
      }
    }
    return true;
  }

  Scenario parse(const Json& document) {
    Scenario scenario;
    scenario.path = file_;
    scenario.source = document;
    scenario.name = document.contains("name") && document["name"].is_string() ? document["name"].get<std::string>() : "";
    scenario.description = document.contains("description") && document["description"].is_string()
                               ? document["description"].get<std::string>()
                               : "";

    const Json empty = Json::object();
    const Json& defaults = document.contains("defaults") ? document["defaults"] : empty;
    check_exclusive(defaults, "defaults");

    std::vector<std::pair<const Json*, std::string>> bases;
    if (document.contains("cases")) {
      const Json& cases = document["cases"];
      for (std::size_t i = 0; i < cases.size(); ++i) {
        const std::string path = "cases[" + std::to_string(i) + "]";
        if (!cases[i].is_object()) continue;  // a schema error says so
        check_exclusive(cases[i], path);
        bases.emplace_back(&cases[i], path);
      }
    } else {
      bases.emplace_back(&empty, "");
    }

    std::vector<SweepAxis> axes;
    if (document.contains("sweep")) {
      for (const auto& [key, values] : document["sweep"].items()) axes.push_back({key, &values, {}});
      check_sweep_conflicts(axes, bases);
      for (SweepAxis& axis : axes) check_repeated_values(axis);
    }
    double points = 1;
    for (const auto& axis : axes) points *= static_cast<double>(axis.values->size());
    if (points * static_cast<double>(bases.size()) > kMaxCases) {
      error("sweep", "expands to " + std::to_string(static_cast<long long>(points * static_cast<double>(bases.size()))) +
                         " cases; at most " + std::to_string(kMaxCases) + " are allowed in one scenario");
      return scenario;
    }

    std::map<std::string, std::string> seen_keys;  // case key -> origin
    std::size_t explicit_lengths = 0;              // over the cases expanded so far
    for (const auto& [base, base_path] : bases) {
      std::vector<std::size_t> index(axes.size(), 0);
      for (;;) {
        MergedProblem merged;
        for (const auto& [key, value] : defaults.items()) merged.set(key, value, "defaults." + key);
        for (const auto& [key, value] : base->items()) merged.set(key, value, base_path + "." + key);
        std::string label = base_path.empty() ? "" : base_path;
        std::string point;
        for (std::size_t a = 0; a < axes.size(); ++a) {
          const Json& value = (*axes[a].values)[index[a]];
          merged.set(axes[a].key, value, "sweep." + axes[a].key + "[" + std::to_string(index[a]) + "]");
          point += (point.empty() ? "" : ", ") + axes[a].key + "=" + shorten(value.dump(), kLabelValueWidth);
        }
        if (!point.empty()) label += (label.empty() ? "" : " x ") + std::string("sweep{") + point + "}";
        if (label.empty()) label = "defaults";

        explicit_lengths += explicit_length_count(merged.values);
        if (explicit_lengths > kMaxExplicitLengths) {
          error(merged.path_of("padding", label),
                "the expanded cases hold more than " + std::to_string(kMaxExplicitLengths) +
                    " explicit padding lengths in all; use random padding (\"shortfall\") for large batches, "
                    "or fewer cases",
                "at " + label);
          return scenario;
        }
        ScenarioCase scenario_case;
        if (uses_broken_value(merged)) {
          // Its schema errors are reported; the case is not expanded.
        } else if (build_problem(merged, label, scenario_case.problem)) {
          scenario_case.key = case_key(scenario_case.problem);
          scenario_case.origin = label;
          const auto [existing, inserted] = seen_keys.emplace(scenario_case.key, label);
          // A point that takes a repeated sweep value repeats a case; its axis says so once.
          bool repeated_value = false;
          for (std::size_t a = 0; a < axes.size(); ++a) repeated_value = repeated_value || axes[a].repeats[index[a]];
          if (!inserted && !repeated_value) {
            error(label, "describes the same case as " + existing->second + "; remove one", "");
          } else {
            scenario.cases.push_back(std::move(scenario_case));
          }
        }

        std::size_t a = axes.size();
        while (a > 0 && ++index[a - 1] == axes[a - 1].values->size()) index[--a] = 0;
        if (a == 0) break;
      }
    }

    report_case_issues(static_cast<std::size_t>(points) * bases.size());

    if (document.contains("implementations") && !broken_.count("implementations")) {
      const Json& names = document["implementations"];
      for (std::size_t i = 0; i < names.size(); ++i) {
        const auto name = names[i].get<std::string>();
        if (names_ == ImplementationNames::registered && !ImplementationRegistry::instance().find(name)) {
          error("implementations[" + std::to_string(i) + "]",
                "unknown implementation \"" + name + "\"; known: " + known_implementations());
        }
        scenario.implementations.push_back(name);
      }
    }
    if (document.contains("published") && !broken_.count("published")) check_published(document["published"], scenario);
    if (document.contains("measure") && !broken_.count("measure")) scenario.measure = parse_measure(document["measure"]);
    if (document.contains("accuracy") && !broken_.count("accuracy")) {
      scenario.accuracy = parse_accuracy(document["accuracy"]);
    }
    return scenario;
  }

 private:
  static constexpr int kMaxCases = 100000;
  // Explicit padding lengths over all expanded cases (docs/scenarios.md): each
  // case holds its own list, so a sweep multiplies them.
  static constexpr std::size_t kMaxExplicitLengths = std::size_t{1} << 20;
  // The most characters of one sweep value in a case's origin.
  static constexpr std::size_t kLabelValueWidth = 40;

  // `context` says which case showed the problem ("in cases[1] x sweep{…}").
  // Marks the values of a sweep axis that repeat an earlier one, and reports
  // the axis once: "sweep.causal: repeats 2 values (first: [2] is false, as
  // [0]); list each value once". Not while the sweep has schema errors: its
  // values are reported as such first.
  void check_repeated_values(SweepAxis& axis) {
    const Json& values = *axis.values;
    axis.repeats.assign(values.size(), false);
    if (broken_.count("sweep")) return;
    std::map<Json, std::size_t> first_index;
    std::size_t count = 0;
    std::string first;
    for (std::size_t j = 0; j < values.size(); ++j) {
      const auto [found, inserted] = first_index.emplace(values[j], j);
      if (inserted) continue;
      axis.repeats[j] = true;
      if (count++ == 0) {
        first = "[" + std::to_string(j) + "] is " + shorten(values[j].dump(), kLabelValueWidth) + ", as [" +
                std::to_string(found->second) + "]";
      }
    }
    if (count > 0) {
      error("sweep." + axis.key, "repeats " + count_of(count, "value") + " (first: " + first + "); list each value once");
    }
  }

  // Every published value must select at least one case of the scenario, or
  // it would never be shown.
  void check_published(const Json& published, const Scenario& scenario) {
    std::vector<Json> problems;
    for (const ScenarioCase& scenario_case : scenario.cases) problems.push_back(problem_to_json(scenario_case.problem));
    for (std::size_t s = 0; s < published.size(); ++s) {
      const Json& values = published[s]["values"];
      for (std::size_t v = 0; v < values.size(); ++v) {
        const Json& where = values[v]["where"];
        const bool selects = std::any_of(problems.begin(), problems.end(),
                                         [&](const Json& problem) { return problem_matches(where, problem); });
        if (!selects) {
          error("published[" + std::to_string(s) + "].values[" + std::to_string(v) + "].where",
                "selects no case of the scenario (" + shorten(where.dump(), kLabelValueWidth) + ")");
        }
      }
    }
  }

  void error(const std::string& path, const std::string& message, const std::string& context = "") {
    diagnostics_.push_back({file_, path, message, context});
  }

  // Entries of the explicit padding lists a merged problem holds.
  static std::size_t explicit_length_count(const Json& values) {
    const auto padding = values.find("padding");
    if (padding == values.end() || !padding->is_object()) return 0;
    std::size_t count = 0;
    for (const char* key : {"lengths", "lengths_q", "lengths_k"}) {
      const auto lengths = padding->find(key);
      if (lengths != padding->end() && lengths->is_array()) count += lengths->size();
    }
    return count;
  }

  // A problem of the case being built (current_label_). The same problem at
  // the same key in several cases (a bad value in defaults) is reported once,
  // naming the cases, by report_case_issues.
  // Found through an index: a sweep of 100,000 cases can give as many distinct
  // problems, and a scan of the earlier ones per problem would be quadratic.
  void case_error(const std::string& path, const std::string& message) {
    ++case_errors_;
    const auto [found, inserted] = case_issue_index_.try_emplace({path, message}, case_issues_.size());
    if (inserted) {
      case_issues_.push_back({path, message, {current_label_}, 1});
      return;
    }
    CaseIssue& issue = case_issues_[found->second];
    if (issue.cases.size() < kNamedCases) issue.cases.push_back(current_label_);
    ++issue.count;
  }

  void report_case_issues(std::size_t expanded_cases) {
    for (const CaseIssue& issue : case_issues_) {
      std::string where;
      const std::size_t n = issue.count;
      if (expanded_cases > 1 && n == expanded_cases) {
        where = " (in all " + std::to_string(n) + " cases)";
      } else if (expanded_cases > 1) {
        for (std::size_t i = 0; i < std::min(n, kNamedCases); ++i) {
          where += (i == 0 ? "" : i + 1 == n ? " and " : ", ") + issue.cases[i];
        }
        if (n > kNamedCases) where += " and " + count_of(n - kNamedCases, "more case", "more cases");
        where = " (in " + where + ")";
      }
      error(issue.path, issue.message + where);
    }
    case_issues_.clear();
    case_issue_index_.clear();
  }

  // Whether a value the merged problem takes has a schema error (at its path or below).
  // Looked up in the sorted set of broken paths (up to the schema's 1,000
  // errors), not scanned once per case.
  bool uses_broken_value(const MergedProblem& merged) const {
    const auto has_prefix = [this](const std::string& prefix) {
      const auto next = broken_paths_.lower_bound(prefix);
      return next != broken_paths_.end() && next->compare(0, prefix.size(), prefix) == 0;
    };
    for (const auto& [key, origin] : merged.origin) {
      if (broken_paths_.count(origin) || has_prefix(origin + ".") || has_prefix(origin + "[")) return true;
    }
    return false;
  }

  static std::string prefixed(const std::string& prefix, const std::string& key) {
    return prefix.empty() ? key : prefix + "." + key;
  }

  static std::string known_implementations() {
    std::string out;
    for (const auto& name : ImplementationRegistry::instance().names()) out += (out.empty() ? "" : ", ") + name;
    return out;
  }

  void check_exclusive(const Json& object, const std::string& path) {
    for (const auto& [a, b] : kExclusive) {
      if (object.contains(a) && object.contains(b)) {
        error(prefixed(path, a), "\"" + a + "\" and \"" + b + "\" cannot both be set in one object");
      }
    }
  }

  // A case that sets a key the sweep also varies would be silently overridden.
  void check_sweep_conflicts(const std::vector<SweepAxis>& axes,
                             const std::vector<std::pair<const Json*, std::string>>& bases) {
    for (const auto& [base, base_path] : bases) {
      for (const auto& axis : axes) {
        const auto overridden = kOverriddenBy.find(axis.key);
        const std::vector<std::string> keys =
            overridden != kOverriddenBy.end() ? overridden->second : std::vector<std::string>{axis.key};
        for (const auto& key : keys) {
          if (base->contains(key)) {
            error(base_path + "." + key, "conflicts with the sweep axis \"" + axis.key +
                                             "\", which would override it; set it in one place");
          }
        }
      }
    }
  }

  template <typename T>
  bool get_required(const MergedProblem& merged, const std::string& key, T& out, const std::string& how) {
    if (!merged.values.contains(key)) {
      case_error("defaults", "missing \"" + key + "\"" + how + " (set it in defaults, the case or the sweep)");
      return false;
    }
    out = merged.values[key].get<T>();
    return true;
  }

  bool build_problem(const MergedProblem& merged, const std::string& label, Problem& p) {
    const Json& v = merged.values;
    current_label_ = label;
    const std::size_t errors_before = case_errors_;
    std::int64_t tokens = 0, hidden = 0;
    bool ok = true;
    if (v.contains("tokens")) tokens = v["tokens"].get<std::int64_t>();
    else ok &= get_required(merged, "batch", p.batch, " or \"tokens\"");
    if (v.contains("hidden")) hidden = v["hidden"].get<std::int64_t>();
    else ok &= get_required(merged, "heads", p.heads, " or \"hidden\"");
    ok &= get_required(merged, "seqlen_q", p.seqlen_q, " (or \"seqlen\")");
    ok &= get_required(merged, "seqlen_k", p.seqlen_k, " (or \"seqlen\")");
    ok &= get_required(merged, "head_dim", p.head_dim, "");
    if (!ok) return false;
    const std::string context = "in " + label;
    // What tokens and hidden stand for is checked against the limits of batch
    // and heads before anything of that size exists.
    if (tokens) {
      if (tokens % p.seqlen_q != 0) {
        case_error(merged.path_of("tokens", label), "tokens (" + std::to_string(tokens) +
                                                        ") is not a multiple of seqlen_q (" +
                                                        std::to_string(p.seqlen_q) + ")");
        return false;
      }
      p.batch = tokens / p.seqlen_q;
      if (p.batch > kMaxBatch) {
        error(merged.path_of("tokens", label),
              "gives batch = tokens / seqlen_q = " + std::to_string(tokens) + " / " + std::to_string(p.seqlen_q) +
                  " = " + std::to_string(p.batch) + ", more than the " + std::to_string(kMaxBatch) +
                  " (2^20) allowed",
              context);
        return false;
      }
    }
    if (hidden) {
      if (hidden % p.head_dim != 0) {
        case_error(merged.path_of("hidden", label), "hidden (" + std::to_string(hidden) +
                                                        ") is not a multiple of head_dim (" +
                                                        std::to_string(p.head_dim) + ")");
        return false;
      }
      p.heads = hidden / p.head_dim;
      if (p.heads > kMaxHeads) {
        error(merged.path_of("hidden", label),
              "gives heads = hidden / head_dim = " + std::to_string(p.heads) + ", more than the " +
                  std::to_string(kMaxHeads) + " (2^16) allowed",
              context);
        return false;
      }
    }
    p.kv_heads = v.contains("kv_heads") ? v["kv_heads"].get<std::int64_t>() : p.heads;
    if (v.contains("dtype")) p.dtype = v["dtype"] == "fp16" ? InputDType::fp16 : InputDType::bf16;
    if (v.contains("layout")) p.layout = v["layout"] == "bshd" ? Layout::bshd : Layout::bhsd;
    p.mask.causal = v.value("causal", false);
    p.mask.bottom_right = v.value("align", std::string("bottom_right")) == "bottom_right";
    if (v.contains("window") && !v["window"].is_null()) {
      p.mask.window_left = v["window"][0].get<std::int64_t>();
      p.mask.window_right = v["window"][1].get<std::int64_t>();
      if (p.mask.window_left < 0 && p.mask.window_right < 0) {
        case_error(merged.path_of("window", label), "both bounds unbounded; use null for no window");
      }
    }
    if (v.contains("padding") && !v["padding"].is_null()) {
      parse_padding(v["padding"], merged.path_of("padding", label), p);
    }
    if (v.contains("dropout")) {
      const Json& dropout = v["dropout"];
      if (dropout.is_number()) {
        p.dropout.probability = dropout.get<double>();
      } else {
        p.dropout.probability = dropout["p"].get<double>();
        p.dropout.seed = dropout.value("seed", std::uint64_t{0});
        p.dropout.offset = dropout.value("offset", std::uint32_t{0});
      }
    }
    if (v.contains("scale") && !v["scale"].is_null()) p.scale = v["scale"].get<double>();
    if (v.contains("direction")) {
      const auto direction = v["direction"].get<std::string>();
      p.direction = direction == "fwd" ? Direction::fwd : direction == "bwd" ? Direction::bwd : Direction::fwd_bwd;
    }
    if (v.contains("input")) parse_input(v["input"], merged.path_of("input", label), p);
    if (v.contains("block_q")) p.tile.block_q = v["block_q"].get<std::int64_t>();
    if (v.contains("block_k")) p.tile.block_k = v["block_k"].get<std::int64_t>();
    if (case_errors_ != errors_before) return false;

    // Lengths given once for both sides ("lengths") are reported under that key.
    const bool shared_lengths = v.contains("padding") && v["padding"].is_object() && v["padding"].contains("lengths");
    std::set<std::pair<std::string, std::string>> reported;
    for (const auto& issue : check_problem(p)) {
      std::string key = issue.key;
      for (const char* side : {"padding.lengths_q", "padding.lengths_k"}) {
        if (shared_lengths && key.rfind(side, 0) == 0) key = "padding.lengths" + key.substr(std::string(side).size());
      }
      if (reported.emplace(key, issue.message).second) {
        case_error(merged.path_of(key, label), issue.message);
      }
    }
    return case_errors_ == errors_before;
  }

  void parse_padding(const Json& padding, const std::string& path, Problem& p) {
    const bool lengths = padding.contains("lengths");
    const bool q = padding.contains("lengths_q");
    const bool k = padding.contains("lengths_k");
    const bool shortfall = padding.contains("shortfall");
    const int forms = (lengths ? 1 : 0) + ((q || k) ? 1 : 0) + (shortfall ? 1 : 0);
    if (forms != 1 || (q != k)) {
      case_error(path, "give exactly one of: \"lengths\"; \"lengths_q\" with \"lengths_k\"; \"shortfall\" (with an optional \"seed\")");
      return;
    }
    if (padding.contains("seed") && !shortfall) {
      case_error(path + ".seed", "only random padding (\"shortfall\") takes a seed");
      return;
    }
    if (shortfall) {
      p.padding.kind = PaddingSpec::Kind::random;
      p.padding.shortfall_min = padding["shortfall"][0].get<std::int64_t>();
      p.padding.shortfall_max = padding["shortfall"][1].get<std::int64_t>();
      p.padding.seed = padding.value("seed", std::uint64_t{0});
      if (p.padding.shortfall_min > p.padding.shortfall_max) {
        case_error(path + ".shortfall", "needs [min, max] with min <= max");
      }
      return;
    }
    p.padding.kind = PaddingSpec::Kind::explicit_lengths;
    p.lengths_q = padding[lengths ? "lengths" : "lengths_q"].get<std::vector<std::int64_t>>();
    p.lengths_k = padding[lengths ? "lengths" : "lengths_k"].get<std::vector<std::int64_t>>();
  }

  void parse_input(const Json& input, const std::string& path, Problem& p) {
    const std::string distribution = input.value("distribution", std::string("normal"));
    const bool normal = distribution == "normal";
    for (const char* key : normal ? std::vector<const char*>{"low", "high"} : std::vector<const char*>{"mean", "std"}) {
      if (input.contains(key)) {
        case_error(path + "." + key, "does not apply to the " + distribution + " distribution (normal takes mean and std; uniform takes low and high)");
      }
    }
    p.input.distribution = normal ? Distribution::normal : Distribution::uniform;
    p.input.a = input.value(normal ? "mean" : "low", normal ? 0.0 : -1.0);
    p.input.b = input.value(normal ? "std" : "high", 1.0);
    p.input.seed = input.value("seed", std::uint64_t{0});
  }

  MeasureSettings parse_measure(const Json& m) {
    MeasureSettings s;
    s.warmup_min_iterations = m.value("warmup_min_iterations", s.warmup_min_iterations);
    s.warmup_min_seconds = m.value("warmup_min_seconds", s.warmup_min_seconds);
    s.warmup_window = m.value("warmup_window", s.warmup_window);
    s.warmup_max_seconds = m.value("warmup_max_seconds", s.warmup_max_seconds);
    s.min_samples = m.value("min_samples", s.min_samples);
    s.max_samples = m.value("max_samples", s.max_samples);
    s.min_seconds = m.value("min_seconds", s.min_seconds);
    s.max_seconds = m.value("max_seconds", s.max_seconds);
    s.target_ci_width = m.value("target_ci_width", s.target_ci_width);
    s.cold_cache = m.value("cache", std::string("cold")) == "cold";
    if (m.contains("timing")) {  // the schema admits a method's name or a list of them
      const Json& timing = m["timing"];
      s.timing.clear();
      for (const Json& name : timing.is_array() ? timing : Json::array({timing})) {
        const TimingMethod method = *parse_timing_method(name.get<std::string>());
        if (std::find(s.timing.begin(), s.timing.end(), method) != s.timing.end()) {
          error("measure.timing", "names " + name.dump() + " twice");
        }
        s.timing.push_back(method);
      }
    }
    s.graph_calls = m.value("graph_calls", s.graph_calls);
    s.clock_mark_share = m.value("clock_mark_share", s.clock_mark_share);
    if (s.max_samples < s.min_samples) {
      error("measure.max_samples", "must be >= min_samples (" + std::to_string(s.min_samples) +
                                       "), got " + std::to_string(s.max_samples));
    }
    return s;
  }

  AccuracySettings parse_accuracy(const Json& a) {
    AccuracySettings s;
    s.check = a.value("check", s.check);
    s.max_oracle_macs = a.value("max_oracle_macs", s.max_oracle_macs);
    s.seed = a.value("seed", s.seed);
    s.floor_factor = a.value("floor_factor", s.floor_factor);
    if (a.contains("bound")) {
      const std::pair<const char*, ElementType> types[] = {
          {"fp64", ElementType::f64}, {"fp32", ElementType::f32}, {"fp16", ElementType::f16}, {"bf16", ElementType::bf16}};
      for (const auto& [name, type] : types) {
        if (a["bound"].contains(name)) s.bound[type] = a["bound"][name].get<double>();
      }
    }
    return s;
  }

  struct CaseIssue {
    std::string path;
    std::string message;
    std::vector<std::string> cases;  // the labels of the first kNamedCases cases it was found in
    std::size_t count = 0;           // of all the cases it was found in
  };
  static constexpr std::size_t kNamedCases = 3;

  std::string file_;
  std::vector<Diagnostic>& diagnostics_;
  std::set<std::string> broken_paths_;     // of the schema errors
  std::set<std::string> broken_;           // the sections they are in
  ImplementationNames names_;
  std::vector<CaseIssue> case_issues_;
  std::map<std::pair<std::string, std::string>, std::size_t> case_issue_index_;  // (path, message) -> its issue
  std::string current_label_;  // of the case being built
  std::size_t case_errors_ = 0;
};

}  // namespace

const nlohmann::ordered_json& scenario_schema() {
  static const Json schema = Json::parse(embedded_scenario_schema());
  return schema;
}

Scenario parse_scenario(const std::string& text, const std::string& file, std::vector<Diagnostic>& diagnostics,
                        ImplementationNames names) {
  const std::size_t errors_before = diagnostics.size();
  const Json document = parse_json_document(text, file, diagnostics);
  if (diagnostics.size() != errors_before) return Scenario{};

  if (is_json_schema(document)) {
    diagnostics.push_back({file, "$schema", "is a JSON Schema (" + document["$schema"].get<std::string>() +
                                                "), not a scenario file"});
    return Scenario{};
  }
  static const JsonSchema validator(scenario_schema());
  std::vector<std::string> broken;
  for (const auto& problem : validator.validate(document)) {
    diagnostics.push_back({file, problem.path, problem.message});
    broken.push_back(problem.path);
  }
  if (!ScenarioParser::cases_expandable(document)) return Scenario{};
  ScenarioParser parser(file, diagnostics, std::move(broken), names);
  Scenario scenario = parser.parse(document);
  if (diagnostics.size() != errors_before) return Scenario{};
  return scenario;
}

bool is_json_schema(const nlohmann::ordered_json& document) {
  if (!document.is_object() || !document.contains("$schema") || !document["$schema"].is_string()) return false;
  const std::string& uri = document["$schema"].get_ref<const std::string&>();
  return uri.rfind("https://json-schema.org/", 0) == 0 || uri.rfind("http://json-schema.org/", 0) == 0;
}

std::vector<ScenarioFile> load_scenario_files(const std::vector<std::string>& paths, ImplementationNames implementations) {
  std::vector<ScenarioFile> files;
  std::map<std::string, std::string> names;  // scenario name -> the file that uses it first
  for (const auto& path : paths) {
    ScenarioFile& file = files.emplace_back();
    file.path = path;
    std::string text;
    if (!read_text_file(path, text, file.problems)) continue;
    std::vector<Diagnostic> syntax;  // parse_scenario reports them
    file.json_schema = is_json_schema(parse_json_document(text, path, syntax));
    file.scenario = parse_scenario(text, path, file.problems, implementations);
    if (!file.problems.empty()) continue;
    const auto [existing, inserted] = names.emplace(file.scenario.name, path);
    if (!inserted) {
      file.problems.push_back({path, "name", "scenario name \"" + file.scenario.name + "\" is also used by " +
                                                 existing->second + "; names must be unique in one run"});
    }
  }
  return files;
}

std::vector<Scenario> load_scenarios(const std::vector<std::string>& paths, ImplementationNames names) {
  std::vector<Diagnostic> diagnostics;
  std::vector<Scenario> scenarios;
  for (ScenarioFile& file : load_scenario_files(paths, names)) {
    diagnostics.insert(diagnostics.end(), file.problems.begin(), file.problems.end());
    if (file.problems.empty()) scenarios.push_back(std::move(file.scenario));
  }
  if (!diagnostics.empty()) throw InputError(std::move(diagnostics));
  return scenarios;
}

}  // namespace attnbench
