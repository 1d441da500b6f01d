// Simulator build: stands in for CUDA's <cuda_bf16.h> (harness/cudasim/device_runtime.hpp).
#pragma once
#include "harness/cudasim/device_runtime.hpp"
