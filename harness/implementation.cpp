#include "harness/implementation.hpp"

#include <algorithm>
#include <stdexcept>

namespace attnbench {

nlohmann::ordered_json Implementation::configuration(const Problem&,
                                                     const ExecutionContext&) const {
  return nlohmann::ordered_json::object();
}

ImplementationRegistry& ImplementationRegistry::instance() {
  static ImplementationRegistry registry;
  return registry;
}

void ImplementationRegistry::add(std::unique_ptr<Implementation> implementation) {
  if (find(implementation->name())) {
    throw std::logic_error("implementation registered twice: " + std::string(implementation->name()));
  }
  implementations_.push_back(std::move(implementation));
  std::sort(implementations_.begin(), implementations_.end(),
            [](const auto& a, const auto& b) { return a->name() < b->name(); });
}

Implementation* ImplementationRegistry::find(std::string_view name) const {
  for (const auto& implementation : implementations_) {
    if (implementation->name() == name) return implementation.get();
  }
  return nullptr;
}

std::vector<Implementation*> ImplementationRegistry::all() const {
  std::vector<Implementation*> out;
  for (const auto& implementation : implementations_) out.push_back(implementation.get());
  return out;
}

std::vector<std::string> ImplementationRegistry::names() const {
  std::vector<std::string> out;
  for (const auto& implementation : implementations_) out.emplace_back(implementation->name());
  return out;
}

}  // namespace attnbench
