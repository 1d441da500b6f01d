#include "harness/common/device_profiler.hpp"

namespace attnbench {

using Json = nlohmann::ordered_json;

Json ProfilerProbe::to_json() const {
  Json json{{"available", available}, {"reason", reason}, {"hint", hint}};
  for (const auto& [key, value] : details.items()) json[key] = value;
  return json;
}

ProfileResult ProfileResult::not_collected(std::string status, std::string reason, std::string hint) {
  ProfileResult result;
  result.status = std::move(status);
  result.reason = std::move(reason);
  result.hint = std::move(hint);
  return result;
}

}  // namespace attnbench
