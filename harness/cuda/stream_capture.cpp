#include "harness/cuda/stream_capture.hpp"

#include <memory>
#include <string>
#include <vector>

#include "harness/cuda/cuda_check.hpp"

namespace attnbench {
namespace {

std::string error_text(cudaError_t error) {
  return std::string(cudaGetErrorName(error)) + ": " + cudaGetErrorString(error);
}

class StreamCaptureObserver final : public CallObserver {
 public:
  explicit StreamCaptureObserver(cudaStream_t stream) : stream_(stream) {}

  std::uint64_t free_memory() override {
    std::size_t free = 0, total = 0;
    ATTNBENCH_CUDA_CHECK(cudaMemGetInfo(&free, &total));
    return free;
  }

  StreamCapture capture(const std::function<void()>& call) override {
    StreamCapture result;
    const cudaError_t begun = cudaStreamBeginCapture(stream_, cudaStreamCaptureModeGlobal);
    if (begun != cudaSuccess) {
      static_cast<void>(cudaGetLastError());
      result.capture_error = "cudaStreamBeginCapture: " + error_text(begun);
      return result;
    }
    try {
      call();
    } catch (const PluginCallError& error) {
      result.call_error = error.what();
    } catch (...) {
      cudaGraph_t abandoned = nullptr;
      if (cudaStreamEndCapture(stream_, &abandoned) == cudaSuccess && abandoned) cudaGraphDestroy(abandoned);
      static_cast<void>(cudaGetLastError());
      throw;
    }
    cudaGraph_t graph = nullptr;
    const cudaError_t ended = cudaStreamEndCapture(stream_, &graph);
    if (ended != cudaSuccess) {
      static_cast<void>(cudaGetLastError());
      if (graph) cudaGraphDestroy(graph);
      result.capture_error = "cudaStreamEndCapture: " + error_text(ended);
      return result;
    }
    count_nodes(graph, result);
    ATTNBENCH_CUDA_CHECK(cudaGraphDestroy(graph));
    return result;
  }

 private:
  static void count_nodes(cudaGraph_t graph, StreamCapture& result) {
    std::size_t count = 0;
    ATTNBENCH_CUDA_CHECK(cudaGraphGetNodes(graph, nullptr, &count));
    std::vector<cudaGraphNode_t> nodes(count);
    if (count) ATTNBENCH_CUDA_CHECK(cudaGraphGetNodes(graph, nodes.data(), &count));
    for (cudaGraphNode_t node : nodes) {
      cudaGraphNodeType type{};
      ATTNBENCH_CUDA_CHECK(cudaGraphNodeGetType(node, &type));
      switch (type) {
        case cudaGraphNodeTypeKernel: ++result.kernels; break;
        case cudaGraphNodeTypeMemcpy: ++result.copies; break;
        case cudaGraphNodeTypeMemset: ++result.memsets; break;
        case cudaGraphNodeTypeMemAlloc: ++result.allocations; break;
        default: ++result.other; break;
      }
    }
  }

  cudaStream_t stream_;
};

class CapturedGraph final : public CapturedCalls {
 public:
  CapturedGraph(cudaStream_t stream, cudaGraph_t graph) : stream_(stream), graph_(graph) {
    const cudaError_t instantiated = cudaGraphInstantiate(&exec_, graph_, 0);
    if (instantiated != cudaSuccess) {
      static_cast<void>(cudaGetLastError());
      cudaGraphDestroy(graph_);
      throw CaptureRefused("cudaGraphInstantiate: " + error_text(instantiated));
    }
  }
  ~CapturedGraph() override {
    cudaGraphExecDestroy(exec_);
    cudaGraphDestroy(graph_);
  }
  CapturedGraph(const CapturedGraph&) = delete;
  CapturedGraph& operator=(const CapturedGraph&) = delete;
  void launch() override { ATTNBENCH_CUDA_CHECK(cudaGraphLaunch(exec_, stream_)); }

 private:
  cudaStream_t stream_;
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
};

}  // namespace

std::unique_ptr<CapturedCalls> capture_graph(cudaStream_t stream, const std::function<void()>& calls) {
  const cudaError_t begun = cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal);
  if (begun != cudaSuccess) {
    static_cast<void>(cudaGetLastError());
    throw CaptureRefused("cudaStreamBeginCapture: " + error_text(begun));
  }
  std::string call_error;
  try {
    calls();
  } catch (const std::exception& error) {
    call_error = error.what();
  }
  cudaGraph_t graph = nullptr;
  const cudaError_t ended = cudaStreamEndCapture(stream, &graph);
  static_cast<void>(cudaGetLastError());
  if (!call_error.empty() || ended != cudaSuccess) {
    if (graph) cudaGraphDestroy(graph);
    throw CaptureRefused("the call cannot be captured into a CUDA graph (" +
                         (call_error.empty() ? "cudaStreamEndCapture: " + error_text(ended) : call_error) + ")");
  }
  return std::make_unique<CapturedGraph>(stream, graph);
}

std::unique_ptr<CallObserver> make_stream_capture_observer(cudaStream_t stream) {
  return std::make_unique<StreamCaptureObserver>(stream);
}

}  // namespace attnbench
