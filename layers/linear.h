// nn.Linear: weight [out, in], optional bias [out]; PyTorch's default init.
#pragma once
#include "dplab/layers/module.h"

namespace dplab {

class Linear : public Module {
 public:
  Linear(int64_t in_features, int64_t out_features, bool bias = true);
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "Linear"; }
  std::string extra_repr() const override;
  void reset_parameters(PhiloxStream& rng) override;

  const Tensor& weight() const { return weight_; }
  const Tensor& bias() const { return bias_; }

 private:
  int64_t in_, out_;
  Tensor weight_, bias_;
};

}  // namespace dplab
