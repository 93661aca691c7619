// nn.Sequential: children named "0", "1", ... (or given names), run in order.
#pragma once
#include <initializer_list>

#include "dplab/layers/module.h"

namespace dplab {

class Sequential : public Module {
 public:
  Sequential() = default;
  Sequential(std::initializer_list<std::shared_ptr<Module>> modules);
  // Appends under the next index name ("0", "1", ...).
  Sequential& push_back(std::shared_ptr<Module> m);
  // Appends under an explicit name (torchvision's "downsample" keeps "0", "1" too).
  Sequential& add(const std::string& name, std::shared_ptr<Module> m);
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "Sequential"; }
  size_t size() const { return modules_.size(); }
  const std::shared_ptr<Module>& operator[](size_t i) const { return modules_.at(i); }

 private:
  std::vector<std::shared_ptr<Module>> modules_;
};

}  // namespace dplab
