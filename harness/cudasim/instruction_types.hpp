// Operand kinds of the simulated PTX instructions, shared by the kernels' entry
// points (device_runtime.hpp) and the instructions' semantics (instructions.hpp).
#pragma once

namespace cudasim {

enum class ShuffleMode { up, down, butterfly, index };  // shfl.sync .up .down .bfly .idx
enum class MmaInputType { f16, bf16 };                  // mma .f16 / .bf16 multiplicands

}  // namespace cudasim
