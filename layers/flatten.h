// nn.Flatten: merges dims start_dim..end_dim (default: everything after the batch dim).
#pragma once
#include "dplab/layers/module.h"

namespace dplab {

class Flatten : public Module {
 public:
  explicit Flatten(int start_dim = 1, int end_dim = -1) : start_(start_dim), end_(end_dim) {}
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "Flatten"; }
  std::string extra_repr() const override;

 private:
  int start_, end_;
};

}  // namespace dplab
