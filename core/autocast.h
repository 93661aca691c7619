// Mixed-precision autocast: inside an AutocastGuard scope, conv2d and linear (core/ops) compute
// on low-precision operands while the parameters stay f32 ("master weights"): the op casts its
// input and weight to the autocast dtype (bf16) with the differentiable cast op, so gradients
// flow back through the casts to the f32 weights, and the product accumulates in f32. The bias
// is added in f32 and the output is f32.
//
// On CUDA the kernels run on the 16-bit tensors themselves (tensor cores), forward and both
// backward passes: cast(x), cast(w) -> 16-bit conv/GEMM -> f32 output (linear: cuBLAS writes the
// f32 accumulator; conv: cuDNN writes a 16-bit y, cast to f32 at once). Backward, dy is cast to
// the 16-bit dtype for the kernels, dx and dw come out 16-bit and the casts turn them into f32
// gradients. Activations stay f32 so everything between these layers (batch norm, activations,
// the loss, the bias add) is unchanged f32 math.
//
// On CPU the kernels are f32-only, so the operands are rounded to bf16 and cast back to f32
// before the f32 kernel runs. That is the same arithmetic as bf16 tensor cores: a product of two
// bf16 values (8-bit significands) is exact in f32 (24-bit significand), so only the f32
// accumulation rounds, as it does on the GPU (up to summation order, and except that the CUDA
// conv rounds its output and the CUDA backward rounds dy to the 16-bit dtype).
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
// (the identity outside autocast or for non-f32 tensors). conv2d and linear apply it to their
// input and weight on CPU.
Tensor autocast_operand(const Tensor& t);

}  // namespace dplab
