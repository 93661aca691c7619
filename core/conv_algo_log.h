// Which convolution algorithm a backend chose, per (direction, layer shape): what the device
// check reports beside the throughput (issue #19, item 5: "the cuDNN algorithms chosen").
// core/cuda/conv.cpp records one entry per choice it makes (once per algorithm-cache key) and
// counts the calls that reuse it; `dplab bench train --json` prints them as `cudnn_algorithms`.
// Host bookkeeping only, independent of CUDA so it is tested on any machine. Not synchronised:
// the owner (the algorithm cache) holds its own lock around every call.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "dplab/core/dtype.h"

namespace dplab {

struct ConvAlgoUse {
  std::string direction;  // "forward", "backward_data" or "backward_filter"
  std::string shape;      // conv_shape_string()
  std::string algorithm;  // the library's name, e.g. "IMPLICIT_PRECOMP_GEMM"
  std::string math;       // "fma", "tensor_op", ...
  size_t workspace_bytes = 0;
  int64_t calls = 0;  // calls that ran with this choice, the one that made it included
};

// "bf16 x[256,64,56,56] w[64,64,3,3] stride 1x1 pad 1x1 dilation 1x1 groups 1": the operands'
// dtype, the input [N, C, H, W] and the filter [O, C/groups, KH, KW] as the layer sees them.
std::string conv_shape_string(DType dt, int64_t N, int64_t C, int64_t H, int64_t W, int64_t O,
                              int64_t KH, int64_t KW, int64_t stride_h, int64_t stride_w,
                              int64_t pad_h, int64_t pad_w, int64_t dilation_h, int64_t dilation_w,
                              int64_t groups);

class ConvAlgoLog {
 public:
  // A choice was made (calls = 1). A choice equal in direction, shape, algorithm and math to an
  // earlier one (the cache keys also hold the device, the operands' alignment and the workspace
  // limit) is merged into it: the report is per layer shape, not per key. The largest
  // workspace is kept. Returns the entry's index for used().
  size_t chose(const std::string& direction, const std::string& shape, const std::string& algorithm,
               const std::string& math, size_t workspace_bytes);
  // A later call ran with the choice at `index`.
  void used(size_t index);
  // Every entry, in the order the choices were first made.
  const std::vector<ConvAlgoUse>& entries() const { return entries_; }

 private:
  std::vector<ConvAlgoUse> entries_;
};

}  // namespace dplab
