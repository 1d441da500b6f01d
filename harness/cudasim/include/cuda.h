// Simulator build: stands in for CUDA's <cuda.h> (harness/cudasim/driver_api.hpp).
#pragma once
#include "harness/cudasim/driver_api.hpp"
