#include "harness/common/modelled_traffic.hpp"

namespace attnbench {

using Json = nlohmann::ordered_json;

ByteCount TrafficModel::bytes() const {
  ByteCount total;
  for (const TrafficTerm& term : terms) {
    total.read += term.read;
    total.write += term.write;
  }
  return total;
}

Json TrafficModel::to_json() const {
  const ByteCount total = bytes();
  Json json{{"algorithm", algorithm}, {"read_bytes", total.read}, {"write_bytes", total.write},
            {"formula", formula},     {"parameters", parameters}, {"terms", Json::array()}};
  for (const TrafficTerm& term : terms) {
    json["terms"].push_back(
        Json{{"pass", term.pass}, {"tensor", term.tensor}, {"read_bytes", term.read}, {"write_bytes", term.write}});
  }
  return json;
}

}  // namespace attnbench
