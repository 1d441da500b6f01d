#include "harness/run/selection.hpp"

#include "harness/backend.hpp"
#include "harness/errors.hpp"
#include "harness/message_text.hpp"

namespace attnbench {

std::vector<Implementation*> resolve_implementations(const std::vector<std::string>& requested,
                                                     const std::string& requested_by) {
  auto& registry = ImplementationRegistry::instance();
  std::vector<Implementation*> selected;
  if (requested.empty()) {
    // A simulator's implementations run only when asked for by name.
    std::vector<Implementation*> accelerated, cpu;
    for (Implementation* implementation : registry.all()) {
      if (!implementation->availability().ok) continue;
      const Backend* backend = BackendRegistry::instance().get(implementation->device());
      if (!backend || backend->kind() == BackendKind::simulator) continue;
      (backend->kind() == BackendKind::host ? cpu : accelerated).push_back(implementation);
    }
    return accelerated.empty() ? cpu : accelerated;
  }
  std::vector<Diagnostic> unknown;
  for (const auto& name : requested) {
    Implementation* implementation = registry.find(name);
    if (!implementation) {
      std::string known;
      for (const auto& n : registry.names()) known += (known.empty() ? "" : ", ") + n;
      unknown.push_back({requested_by, "", "unknown implementation " + quote(name) + "; known: " + known});
      continue;
    }
    selected.push_back(implementation);
  }
  if (!unknown.empty()) throw InputError(unknown);
  return selected;
}

std::vector<Implementation*> select_implementations(const std::vector<std::string>& requested,
                                                    const std::string& requested_by) {
  const std::vector<Implementation*> selected = resolve_implementations(requested, requested_by);
  for (Implementation* implementation : selected) {
    const Verdict available = implementation->availability();
    if (!available.ok) {
      throw EnvironmentError(std::string(implementation->name()) + " was requested (" + requested_by +
                             ") but cannot run on this machine: " + available.reason +
                             ". Choose others with --impl (see `attnbench info`).");
    }
  }
  return selected;
}

std::optional<Regex> case_filter(const std::string& pattern) {
  if (pattern.empty()) return std::nullopt;
  try {
    return Regex(pattern);
  } catch (const RegexError& error) {
    throw InputError(std::string("--filter: ") + error.what());
  }
}

}  // namespace attnbench
