// nn.AvgPool2d (stride defaults to the kernel size; count_include_pad as in PyTorch).
#pragma once
#include "dplab/core/ops/pool.h"
#include "dplab/layers/module.h"

namespace dplab {

class AvgPool2d : public Module {
 public:
  explicit AvgPool2d(const Pool2dOptions& opt);
  explicit AvgPool2d(int64_t kernel, int64_t stride = 0, int64_t padding = 0);
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "AvgPool2d"; }
  std::string extra_repr() const override;

 private:
  Pool2dOptions opt_;
};

}  // namespace dplab
