// Simulator build: stands in for CUDA's <cuda_fp16.h> (harness/cudasim/device_runtime.hpp).
#pragma once
#include "harness/cudasim/device_runtime.hpp"
