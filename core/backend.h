// A Backend is one implementation of every kernel: "ref" (core/cpu/ref, plain loops, the
// specification), "cpu" (core/cpu, oneDNN and OpenMP) and "cuda" (core/cuda). Kernels are
// grouped by family; each family is a struct of function pointers declared in
// core/kernels/<family>.h. Kernels work on raw tensors with preallocated outputs and record no
// autograd; the differentiable ops in core/ops/ call them through backend_for(device).
// Tests iterate over backends and compare each against ref_backend() (like ggml's
// test-backend-ops).
#pragma once
#include <string>

#include "dplab/core/device.h"
#include "dplab/core/kernels/conv.h"
#include "dplab/core/kernels/elementwise.h"
#include "dplab/core/kernels/gemm.h"
#include "dplab/core/kernels/loss.h"
#include "dplab/core/kernels/norm.h"
#include "dplab/core/kernels/optim.h"
#include "dplab/core/kernels/pool.h"
#include "dplab/core/kernels/random.h"
#include "dplab/core/kernels/reduce.h"

namespace dplab {

struct Backend {
  std::string name;
  // The non-strided layout (core/tensor.h) its conv, batch-norm, pooling and element-wise
  // kernels also read and write activations in, so the ops keep them so between layers: nChw16c
  // on the cpu backend, nhwc on cuda. strided: none; such a backend only ever sees strided
  // tensors (the ops convert for it), as does a backend handed another layout than its own.
  Layout activation_layout = Layout::strided;
  // Autocast keeps activations in bf16 from layer to layer on this backend (core/autocast.h):
  // its conv, batch-norm, pooling and element-wise kernels take bf16 activations beside f32
  // weights and statistics. Where false, autocast casts around each convolution instead.
  bool bf16_activations = false;
  // Its batch-norm, element-wise and pooling kernels take bf16 activations (f32 arithmetic
  // inside) when handed them, whatever autocast does on it: cpu and ref.
  bool bf16_kernels = false;
  ElementwiseKernels ew;
  ReduceKernels reduce;
  GemmKernels gemm;
  ConvKernels conv;
  PoolKernels pool;
  NormKernels norm;
  LossKernels loss;
  RandomKernels random;
  OptimKernels optim;
};

const Backend& ref_backend();
const Backend& cpu_backend();
// Throws with cuda_unavailable_reason() when dplab has no CUDA backend.
const Backend& cuda_backend();
// The backend that runs kernels for tensors on `d` (cpu -> cpu_backend(), unless a
// BackendOverride is alive on this thread).
const Backend& backend_for(Device d);

// For tests: while alive, backend_for(cpu) on the constructing thread returns `cpu` (e.g.
// ref_backend(), so the differentiable ops and their backward run on the reference kernels and
// a whole op can be compared against its specification, ggml test-backend-ops style). Scopes
// nest and restore the previous choice; other threads and devices are unaffected. Library code
// never creates one.
class BackendOverride {
 public:
  explicit BackendOverride(const Backend& cpu);
  ~BackendOverride();
  BackendOverride(const BackendOverride&) = delete;
  BackendOverride& operator=(const BackendOverride&) = delete;

 private:
  const Backend* prev_;
};

}  // namespace dplab
