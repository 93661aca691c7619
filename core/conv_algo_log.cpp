#include "dplab/core/conv_algo_log.h"

#include <fmt/format.h>

#include <algorithm>

#include "dplab/core/error.h"

namespace dplab {

std::string conv_shape_string(DType dt, int64_t N, int64_t C, int64_t H, int64_t W, int64_t O,
                              int64_t KH, int64_t KW, int64_t stride_h, int64_t stride_w,
                              int64_t pad_h, int64_t pad_w, int64_t dilation_h, int64_t dilation_w,
                              int64_t groups) {
  DPLAB_CHECK(groups > 0 && C % groups == 0,
              "conv_shape_string: {} input channels do not split into {} groups", C, groups);
  return fmt::format(
      "{} x[{},{},{},{}] w[{},{},{},{}] stride {}x{} pad {}x{} dilation {}x{} groups {}",
      dtype_name(dt), N, C, H, W, O, C / groups, KH, KW, stride_h, stride_w, pad_h, pad_w,
      dilation_h, dilation_w, groups);
}

size_t ConvAlgoLog::chose(const std::string& direction, const std::string& shape,
                          const std::string& algorithm, const std::string& math,
                          size_t workspace_bytes) {
  for (size_t i = 0; i < entries_.size(); ++i) {
    ConvAlgoUse& e = entries_[i];
    if (e.direction == direction && e.shape == shape && e.algorithm == algorithm &&
        e.math == math) {
      e.workspace_bytes = std::max(e.workspace_bytes, workspace_bytes);
      ++e.calls;
      return i;
    }
  }
  entries_.push_back({direction, shape, algorithm, math, workspace_bytes, 1});
  return entries_.size() - 1;
}

void ConvAlgoLog::used(size_t index) {
  DPLAB_CHECK(index < entries_.size(), "ConvAlgoLog::used: entry {} of {}", index, entries_.size());
  ++entries_[index].calls;
}

}  // namespace dplab
