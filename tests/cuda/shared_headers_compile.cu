// Compile check: the host/device headers of kernels/common/ build with nvcc for
// every configured architecture, as the CUDA kernels will use them. Nothing here
// runs; the build fails if a shared header stops compiling for the device.
#include "kernels/common/dropout.hpp"
#include "kernels/common/input_distribution.hpp"
#include "kernels/common/mask.hpp"
#include "kernels/common/online_softmax.hpp"
#include "kernels/common/philox.hpp"

namespace attnbench {

__global__ void shared_headers_compile_check(DropoutRng rng, MaskSpec mask, float* out) {
  const unsigned i = blockIdx.x, j = threadIdx.x;
  const KeyRange keys = visible_keys(mask, i, 128, 96);
  const KeyRange bound = visible_key_bound(mask, i, i + 16, 128, 96);
  SoftmaxRowState<float> state;
  const float factor = online_softmax_advance<float, ExpBase2>(state, static_cast<float>(j));
  state.sum += ExpBase2::exp(static_cast<float>(j) - exp_reference(state.max));
  const bool keep = dropout_keeps(rng, 0, 1, i, j) && is_visible(mask, i, j, 128, 96) &&
                    tile_fully_visible(mask, 0, 16, 0, 16, 128, 96);
  const float value = static_cast<float>(input_normal(7, InputTensor::q, i * 128 + j, 0.0, 1.0));
  out[i * blockDim.x + j] = keep ? value * factor * online_softmax_lse<float, ExpBase2>(state) +
                                       static_cast<float>(keys.size() + bound.size())
                                 : 0.0f;
}

}  // namespace attnbench
