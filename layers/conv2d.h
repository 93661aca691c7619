// nn.Conv2d: weight [out, in/groups, kh, kw], optional bias [out]; PyTorch's default init.
#pragma once
#include "dplab/core/ops/conv.h"
#include "dplab/layers/module.h"

namespace dplab {

class Conv2d : public Module {
 public:
  Conv2d(int64_t in_channels, int64_t out_channels, std::array<int64_t, 2> kernel_size,
         const Conv2dOptions& opt = {}, bool bias = true);
  Conv2d(int64_t in_channels, int64_t out_channels, int64_t kernel_size,
         const Conv2dOptions& opt = {}, bool bias = true)
      : Conv2d(in_channels, out_channels, {kernel_size, kernel_size}, opt, bias) {}

  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "Conv2d"; }
  std::string extra_repr() const override;
  void reset_parameters(PhiloxStream& rng) override;

  const Tensor& weight() const { return weight_; }
  const Tensor& bias() const { return bias_; }  // undefined without bias
  const Conv2dOptions& options() const { return opt_; }
  int64_t fan_in() const;

 private:
  int64_t in_, out_;
  std::array<int64_t, 2> kernel_;
  Conv2dOptions opt_;
  Tensor weight_, bias_;
};

}  // namespace dplab
