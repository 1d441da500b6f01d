// Simulator build: stands in for CUDA's <cuda_runtime.h> (harness/cudasim/runtime_api.hpp).
#pragma once
#include "harness/cudasim/runtime_api.hpp"
