// Mixed-precision autocast: inside an AutocastGuard scope, conv2d and linear (core/ops) compute
// on low-precision operands while the parameters stay f32 ("master weights"), and products
// accumulate in f32. How the activations between those layers are held depends on the backend
// (Backend::bf16_activations):
//
// Under bf16 on CUDA and on a CPU with AVX-512, activations stay bf16 from layer to layer (with
// AVX2 the CPU works as f16 does below; core/kernels/conv.h, cpu_bf16_activations, says why). A
// convolution casts its input to bf16 if it is f32 (only a network's first one sees f32), reads
// the f32 weights and bias itself and writes a bf16 output: on the CPU in oneDNN's blocked layout
// where that is the primitive's (oneDNN reorders the weights into bf16 blocks, as it reorders f32
// weights into f32 blocks); on CUDA cuDNN runs on a bf16 copy of the weights and writes dw in
// bf16, widened into the f32 gradient. Batch norm (plain, fused with ReLU, fused with the
// residual add and ReLU), ReLU and add take bf16 and give bf16, computing in f32 and rounding
// each output once; pooling widens, pools and rounds once; batch-norm statistics, parameters and
// their gradients stay f32. Backward mirrors it: dx is bf16, dw and the bias gradient f32.
// linear widens a bf16 input (exactly) on the CPU; on CUDA it takes it as its bf16 operand; the
// loss is f32. With AVX512-BF16 or AMX the CPU's convolutions run oneDNN's bf16 kernels; with
// AVX-512 alone they compute in f32 on the widened values.
//
// Under f16 (CUDA and CPU) and on a CPU without AVX-512, the op casts its input and weight to the
// autocast dtype with the differentiable cast op, so gradients flow back through the casts to
// the f32 weights. On CUDA the kernels run on the 16-bit tensors themselves (tensor cores),
// forward and both backward passes: cast(x), cast(w) -> 16-bit conv/GEMM -> f32 output (linear:
// cuBLAS writes the f32 accumulator; conv: cuDNN writes a 16-bit y, cast to f32 at once).
// Backward, dy is cast to the 16-bit dtype for the kernels, dx and dw come out 16-bit and the
// casts turn them into f32 gradients. Activations stay f32 so everything between these layers is
// f32 math. On the CPU the operands are rounded and cast back to f32 before the f32 kernel runs:
// a product of two 16-bit values is exact in f32, so only the f32 accumulation rounds, as on the
// GPU.
//
// The mode is thread-local state, deliberately: like NoGradGuard it is a scoped mode of the
// thread that runs the forward pass (set and restored by a guard object), not shared state that
// other threads could observe.
#pragma once
#include "dplab/core/dtype.h"
#include "dplab/core/tensor.h"

namespace dplab {

class AutocastGuard {
 public:
  // dtype: bf16 or f16 (the operand precision); f32 turns autocast off inside the scope.
  explicit AutocastGuard(DType dtype = DType::bf16);
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  DType prev_;
};

// The operand dtype of the current scope; f32 when autocast is off.
DType autocast_dtype();
inline bool autocast_enabled() {
  return autocast_dtype() != DType::f32;
}

// An f32 operand rounded to the autocast dtype and back to f32 through differentiable casts
// (the identity outside autocast or for non-f32 tensors). conv2d (f16) and linear apply it to
// their input and weight on the CPU.
Tensor autocast_operand(const Tensor& t);

}  // namespace dplab
