// Simulator build: stands in for CUDA's <cublas_v2.h> (harness/cudasim/cublas_api.hpp).
#pragma once
#include "harness/cudasim/cublas_api.hpp"
