// Weight gradients out of oneDNN's ABcd16b16a blocks into dplab's plain OIHW.
//
// oneDNN's backward-weights kernels write f32 weight gradients in ABcd16b16a: blocks of 16 output
// × 16 input channels, each block's H·W taps one after another, inside a tap 16 input channels of
// 16 output channels each. Converting that to OIHW with oneDNN's own reorder measured 17 ms per
// ResNet-50 step at batch 8 on 2 threads (25.5 M gradients, 204 MB moved: 12 GB/s); this loop,
// which writes every plain row contiguously from a block held in L1, about 11 ms.
#pragma once

#include <cstdint>

namespace dplab {

// src: O·I·K floats in ABcd16b16a (K = H·W taps); dst: the same gradients in OIHW. O and I must be
// multiples of 16 (no padded blocks). Runs an OpenMP loop over the blocks.
void unblock_weights_16b16a(const float* src, float* dst, int64_t O, int64_t I, int64_t K);

}  // namespace dplab
