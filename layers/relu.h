// nn.ReLU (no parameters).
#pragma once
#include "dplab/layers/module.h"

namespace dplab {

class ReLU : public Module {
 public:
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "ReLU"; }
};

}  // namespace dplab
