// A kernel launch on the simulator (kernels/cuda/kernel_launch.hpp's simulator
// form): every thread of every CTA calls the kernel with copies of the
// arguments, as a GPU's threads all see the same parameters. The body holds
// its own copy of the arguments, so a captured launch (Stream::captured) can
// run after this call returns.
#pragma once

#include <cstddef>
#include <functional>

#include "harness/cudasim/execution.hpp"
#include "harness/cudasim/runtime_api.hpp"

namespace cudasim {

// Sets the launch error of cudaGetLastError when the configuration is invalid.
void launch_grid(const void* kernel, dim3 grid, dim3 block, std::size_t dynamic_shared_bytes, Stream* stream,
                 const std::function<void()>& body);

template <typename... Params>
void launch(void (*kernel)(Params...), dim3 grid, dim3 block, std::size_t dynamic_shared_bytes, Stream* stream,
            Params... arguments) {
  launch_grid(reinterpret_cast<const void*>(kernel), grid, block, dynamic_shared_bytes, stream,
              [kernel, arguments...] { kernel(arguments...); });
}

}  // namespace cudasim
