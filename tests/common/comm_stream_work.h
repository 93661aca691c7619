// The work a bucket reducer does inside a CommStreamScope (core/comm_stream_scope.h): a buffer
// allocated there, a copy into it, a scaling, a 16-bit wire round trip. The scope's CPU test
// (tests/core/test_comm_stream_scope.cpp) and its CUDA test (tests/cuda/test_cuda_comm_stream.cpp)
// assert the same values; the CUDA one also checks which stream ran it.
#pragma once
#include <vector>

#include "dplab/core/backend.h"
#include "dplab/core/tensor.h"

namespace dplab::test {

inline std::vector<float> scoped_work_input() {
  return {1.5f, -2.f, 3.25f, 0.f, 7.f};
}

// 2·x, through bf16 and back: exact, since each 2·x has at most 8 significant bits.
inline std::vector<float> scoped_work_expected() {
  return {3.f, -4.f, 6.5f, 0.f, 14.f};
}

inline Tensor scoped_work(const Tensor& src) {
  const Backend& be = backend_for(src.device());
  Tensor buf = Tensor::zeros({src.numel()}, DType::f32, src.device());
  be.ew.copy(src, buf);
  be.ew.unary(UnaryOp::mul_scalar, 2.0f, buf, buf);
  Tensor wire = Tensor::empty({src.numel()}, DType::bf16, src.device());
  be.ew.copy(buf, wire);
  Tensor out = Tensor::empty({src.numel()}, DType::f32, src.device());
  be.ew.copy(wire, out);
  return out;
}

}  // namespace dplab::test
