// Module: the base of every layer and model, PyTorch-style. A module owns named parameters,
// named buffers (running statistics) and named child modules; names compose with dots
// ("layer1.0.conv1.weight"), in registration order, exactly as torch.nn.Module.state_dict().
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "dplab/core/param_arena.h"
#include "dplab/core/philox.h"
#include "dplab/core/tensor.h"

namespace dplab {

class Module {
 public:
  virtual ~Module() = default;
  virtual Tensor forward(const Tensor& x) = 0;
  Tensor operator()(const Tensor& x) { return forward(x); }
  // Short type name for printing ("Conv2d").
  virtual std::string type_name() const = 0;
  // Constructor arguments for printing ("1, 16, kernel_size=(5, 5), stride=(1, 1)"), like
  // PyTorch's extra_repr.
  virtual std::string extra_repr() const { return ""; }

  // Re-draws this module's own parameters with PyTorch's default initialisation (children are
  // visited by initialize()).
  virtual void reset_parameters(PhiloxStream& rng) {}

  // Recursive, registration order, dotted names.
  std::vector<NamedTensor> named_parameters() const;
  std::vector<NamedTensor> named_buffers() const;
  std::vector<Tensor> parameters() const;
  // Parameters then buffers in PyTorch's state_dict order (a module's own parameters, then its
  // own buffers, then each child's, recursively).
  std::vector<NamedTensor> state_dict() const;
  // Copies values into the existing tensors (shapes must match). strict: every key of the
  // module must be present and no unknown key may appear; errors list the offending names.
  void load_state_dict(const std::vector<NamedTensor>& state, bool strict = true);
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> named_children() const {
    return children_;
  }

  void train(bool on = true);
  void eval() { train(false); }
  bool is_training() const { return training_; }
  // Moves parameters and buffers to `device` (before a ParamArena is built).
  void to(Device device);
  int64_t num_parameters() const;
  // A printable tree (like print(model) in PyTorch).
  std::string describe(int indent = 0) const;

 protected:
  // Registers a parameter (f32 leaf, requires_grad) and returns the stored handle.
  Tensor& register_parameter(const std::string& name, Tensor t);
  Tensor& register_buffer(const std::string& name, Tensor t);
  template <typename M>
  std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> m) {
    children_.emplace_back(name, m);
    return m;
  }

 private:
  void collect(const std::string& prefix, bool params, bool buffers,
               std::vector<NamedTensor>& out) const;
  std::vector<std::pair<std::string, Tensor>> params_;
  std::vector<std::pair<std::string, Tensor>> buffers_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
  bool training_ = true;
};

// Dotted names of the parameters owned by normalisation layers (BatchNorm*), found by module
// type, for ParamArena::mark_norm_parameters (algorithms exclude them from weight decay).
std::vector<std::string> norm_parameter_names(const Module& root);

// Initialises every module of the tree (pre-order, registration order) from one Philox stream
// keyed by `seed`: the same seed gives the same weights on every rank and thread count.
void initialize(Module& root, uint64_t seed);

}  // namespace dplab
