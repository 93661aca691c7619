// The CUDA backend table: one kernel family per file pair in core/cuda (validation and error
// context in <family>.cpp, kernels in <family>_kernels.cu).
#include "dplab/core/backend.h"

namespace dplab {

const Backend& cuda_backend_impl() {
  // Activations NCHW, or nhwc where the convolution writes them so (16-bit activations: cuDNN's
  // tensor-core kernels are channels-last); under bf16 autocast they stay bf16 from layer to layer
  // (core/autocast.h), and the batch-norm and element-wise kernels take bf16.
  static const Backend b{"cuda",
                         /*activation_layout=*/Layout::nhwc,
                         /*bf16_activations=*/true,
                         /*bf16_kernels=*/true,
                         cuda_elementwise_kernels(),
                         cuda_reduce_kernels(),
                         cuda_gemm_kernels(),
                         cuda_conv_kernels(),
                         cuda_pool_kernels(),
                         cuda_norm_kernels(),
                         cuda_loss_kernels(),
                         cuda_random_kernels(),
                         cuda_optim_kernels()};
  return b;
}

}  // namespace dplab
