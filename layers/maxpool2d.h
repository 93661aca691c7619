// nn.MaxPool2d (stride defaults to the kernel size, as in PyTorch).
#pragma once
#include "dplab/core/ops/pool.h"
#include "dplab/layers/module.h"

namespace dplab {

class MaxPool2d : public Module {
 public:
  explicit MaxPool2d(const Pool2dOptions& opt);
  explicit MaxPool2d(int64_t kernel, int64_t stride = 0, int64_t padding = 0);
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "MaxPool2d"; }
  std::string extra_repr() const override;
  const Pool2dOptions& options() const { return opt_; }

 private:
  Pool2dOptions opt_;
};

// Printing shared by the pooling layers: "kernel_size=2, stride=2, padding=0".
std::string pool_repr(const Pool2dOptions& o, bool with_dilation);

}  // namespace dplab
