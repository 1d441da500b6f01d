#include "harness/measure/trace.hpp"

#if defined(ATTNBENCH_HAVE_NVTX)
#include <nvtx3/nvToolsExt.h>
#endif

namespace attnbench {

#if defined(ATTNBENCH_HAVE_NVTX)

namespace {

nvtxDomainHandle_t attnbench_domain() {
  static const nvtxDomainHandle_t domain = nvtxDomainCreateA("attnbench");
  return domain;
}

}  // namespace

TraceRange::TraceRange(const std::string& name) {
  nvtxEventAttributes_t attributes{};
  attributes.version = NVTX_VERSION;
  attributes.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  attributes.messageType = NVTX_MESSAGE_TYPE_ASCII;
  attributes.message.ascii = name.c_str();
  nvtxDomainRangePushEx(attnbench_domain(), &attributes);
}

TraceRange::~TraceRange() { nvtxDomainRangePop(attnbench_domain()); }

#else

TraceRange::TraceRange(const std::string&) {}
TraceRange::~TraceRange() = default;

#endif

}  // namespace attnbench
