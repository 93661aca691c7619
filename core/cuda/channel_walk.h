// The walk one thread of a per-channel kernel takes through channel c of a [N, C, HW] tensor:
// elements j = first, first + step, ... of the channel's N·HW values (j = n·HW + i).
// - NCHW-contiguous: element j is at offset (n·C + c)·HW + i, with (n, i) carried from one
//   element to the next so no element costs a 64-bit division.
// - nhwc (channels_last): element j is at j·C + c (row j of the [N·HW, C] matrix), so threads
//   that take neighbouring channels of one row read neighbouring addresses.
// Plain DPLAB_HD code: the CUDA batch-norm kernels use it, and the CPU tests check it against
// the division (tests/core/test_channel_walk.cpp).
#pragma once
#include <cstdint>

#include "dplab/core/hostdevice.h"

namespace dplab::cuda {

class ChannelWalk {
 public:
  // step > 0; first >= 0 (first may be past the channel's end: the caller's bound stops it).
  DPLAB_HD ChannelWalk(int64_t first, int64_t step, int64_t c, int64_t C, int64_t HW,
                       bool channels_last = false)
      : n_(channels_last ? 0 : first / HW),  // (n, i) only walk NCHW: no division otherwise
        i_(channels_last ? 0 : first % HW),
        hw_(HW),
        plane_(C * HW),
        base_(c * HW),
        step_n_(channels_last ? 0 : step / HW),
        step_i_(channels_last ? 0 : step % HW),
        row_offset_(first * C + c),
        row_step_(step * C),
        channels_last_(channels_last) {}

  DPLAB_HD int64_t offset() const {
    return channels_last_ ? row_offset_ : n_ * plane_ + base_ + i_;
  }

  // To element j + step. i and step % HW are both below HW, so one carry is enough.
  DPLAB_HD void next() {
    if (channels_last_) {
      row_offset_ += row_step_;
      return;
    }
    n_ += step_n_;
    i_ += step_i_;
    if (i_ >= hw_) {
      i_ -= hw_;
      ++n_;
    }
  }

 private:
  int64_t n_, i_, hw_, plane_, base_, step_n_, step_i_;
  int64_t row_offset_, row_step_;  // channels_last: the element's offset, and the step's
  bool channels_last_;
};

}  // namespace dplab::cuda
