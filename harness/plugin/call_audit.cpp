#include "harness/plugin/call_audit.hpp"

#include "harness/format.hpp"

namespace attnbench {

using Json = nlohmann::ordered_json;

Json CallAudit::to_json() const {
  return Json{{"stream", {{"status", stream}, {"detail", stream_detail}}},
              {"device_memory", {{"status", allocated ? "allocated" : "passed"},
                                 {"detail", memory_detail},
                                 {"free_bytes_before", free_bytes_before},
                                 {"free_bytes_after", free_bytes_after}}}};
}

std::vector<std::string> CallAudit::warnings() const {
  std::vector<std::string> warnings;
  if (allocated) warnings.push_back("device memory of its own: " + memory_detail + "; peak_bytes is incomplete");
  if (stream == "inconclusive") warnings.push_back("stream check inconclusive: " + stream_detail);
  return warnings;
}

void judge_stream_capture(const StreamCapture& capture, CallAudit& audit) {
  const std::string why_inconclusive =
      "; a call that stream capture does not allow (a synchronization, cudaMalloc, a copy from pageable host "
      "memory) stops the capture, so whether all its work is on the given stream is not known";
  if (!capture.capture_error.empty()) {
    audit.stream = "inconclusive";
    audit.stream_detail = "the stream capture failed (" + capture.capture_error + ")" + why_inconclusive;
    return;
  }
  if (!capture.call_error.empty()) {
    audit.stream = "inconclusive";
    audit.stream_detail = "under stream capture the call reported an error (" + capture.call_error + ")" +
                          why_inconclusive;
    return;
  }
  if (capture.nodes() == 0) {
    audit.stream = "failed";
    audit.stream_detail =
        "one call captured on the stream attnbench gave it recorded no work: it launches on another stream (or the "
        "default stream), which the sample timer on the given stream does not time";
    return;
  }
  audit.stream = "passed";
  audit.stream_detail = "one captured call recorded " + count_of(capture.kernels, "kernel") + ", " +
                        count_of(capture.copies, "copy", "copies") + ", " + count_of(capture.memsets, "memset") +
                        " and " + count_of(capture.other, "other operation") + " on the given stream";
  if (capture.allocations > 0) {
    audit.allocated = true;
    audit.memory_detail = "the captured call allocated device memory " + count_of(capture.allocations, "time") +
                          " (cudaMallocAsync)";
  }
}

void judge_free_memory(std::uint64_t before, std::uint64_t after, CallAudit& audit) {
  audit.free_bytes_before = before;
  audit.free_bytes_after = after;
  if (before < after || before - after < kAllocationFlagBytes) return;
  const std::string drop = "free device memory dropped by " + format_bytes(static_cast<double>(before - after)) +
                           " over the checked call (allocated and kept, by it or by another process on the device)";
  audit.memory_detail = audit.allocated ? audit.memory_detail + "; " + drop : drop;
  audit.allocated = true;
}

CallAudit audit_call(CallObserver& observer, const std::function<void()>& call,
                     const std::function<void()>& synchronize) {
  CallAudit audit;
  synchronize();
  judge_stream_capture(observer.capture(call), audit);
  synchronize();
  const std::uint64_t before = observer.free_memory();
  call();
  synchronize();
  judge_free_memory(before, observer.free_memory(), audit);
  return audit;
}

}  // namespace attnbench
