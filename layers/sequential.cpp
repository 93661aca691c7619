#include "dplab/layers/sequential.h"

namespace dplab {

Sequential::Sequential(std::initializer_list<std::shared_ptr<Module>> modules) {
  for (auto& m : modules) push_back(m);
}

Sequential& Sequential::push_back(std::shared_ptr<Module> m) {
  return add(std::to_string(modules_.size()), std::move(m));
}

Sequential& Sequential::add(const std::string& name, std::shared_ptr<Module> m) {
  DPLAB_CHECK(m != nullptr, "Sequential: module '{}' is null", name);
  for (auto& [n, c] : named_children())
    DPLAB_CHECK(n != name, "Sequential: a module named '{}' already exists", name);
  register_module(name, m);
  modules_.push_back(std::move(m));
  return *this;
}

Tensor Sequential::forward(const Tensor& x) {
  DPLAB_CHECK(!modules_.empty(), "Sequential: forward of an empty Sequential");
  Tensor y = x;
  for (auto& m : modules_) y = m->forward(y);
  return y;
}

}  // namespace dplab
