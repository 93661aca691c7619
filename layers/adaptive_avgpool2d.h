// nn.AdaptiveAvgPool2d: averages to a fixed output size (ResNet's (1, 1) head).
#pragma once
#include <array>

#include "dplab/layers/module.h"

namespace dplab {

class AdaptiveAvgPool2d : public Module {
 public:
  explicit AdaptiveAvgPool2d(std::array<int64_t, 2> output_size);
  explicit AdaptiveAvgPool2d(int64_t output_size) : AdaptiveAvgPool2d({output_size, output_size}) {}
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "AdaptiveAvgPool2d"; }
  std::string extra_repr() const override;

 private:
  std::array<int64_t, 2> size_;
};

}  // namespace dplab
