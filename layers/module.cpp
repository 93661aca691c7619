#include "dplab/layers/module.h"

#include <functional>
#include <map>
#include <set>

#include <fmt/ranges.h>

#include "dplab/core/autograd.h"

namespace dplab {

Tensor& Module::register_parameter(const std::string& name, Tensor t) {
  DPLAB_CHECK(!name.empty() && name.find('.') == std::string::npos,
              "{}: invalid parameter name '{}'", type_name(), name);
  DPLAB_CHECK(t.defined(), "{}: parameter '{}' is undefined", type_name(), name);
  for (auto& [n, p] : params_)
    DPLAB_CHECK(n != name, "{}: parameter '{}' registered twice", type_name(), name);
  for (auto& [n, b] : buffers_)
    DPLAB_CHECK(n != name, "{}: '{}' is already a buffer", type_name(), name);
  if (t.dtype() != DType::f32) t = t.to(DType::f32);
  // A parameter is a leaf the module owns: detach from any history and any shared storage.
  if (!t.is_leaf() || !t.is_contiguous()) t = t.detach().contiguous().clone();
  t.set_requires_grad(true);
  params_.emplace_back(name, t);
  return params_.back().second;
}

Tensor& Module::register_buffer(const std::string& name, Tensor t) {
  DPLAB_CHECK(!name.empty() && name.find('.') == std::string::npos, "{}: invalid buffer name '{}'",
              type_name(), name);
  DPLAB_CHECK(t.defined(), "{}: buffer '{}' is undefined", type_name(), name);
  for (auto& [n, b] : buffers_)
    DPLAB_CHECK(n != name, "{}: buffer '{}' registered twice", type_name(), name);
  for (auto& [n, p] : params_)
    DPLAB_CHECK(n != name, "{}: '{}' is already a parameter", type_name(), name);
  buffers_.emplace_back(name, t);
  return buffers_.back().second;
}

// PyTorch's state_dict order: own parameters, own buffers, then each child recursively.
void Module::collect(const std::string& prefix, bool params, bool buffers,
                     std::vector<NamedTensor>& out) const {
  if (params)
    for (auto& [n, t] : params_) out.push_back({prefix + n, t});
  if (buffers)
    for (auto& [n, t] : buffers_) out.push_back({prefix + n, t});
  for (auto& [n, m] : children_) m->collect(prefix + n + ".", params, buffers, out);
}

std::vector<NamedTensor> Module::named_parameters() const {
  std::vector<NamedTensor> out;
  collect("", true, false, out);
  return out;
}

std::vector<NamedTensor> Module::named_buffers() const {
  std::vector<NamedTensor> out;
  collect("", false, true, out);
  return out;
}

std::vector<Tensor> Module::parameters() const {
  std::vector<Tensor> out;
  for (auto& nt : named_parameters()) out.push_back(nt.tensor);
  return out;
}

std::vector<NamedTensor> Module::state_dict() const {
  std::vector<NamedTensor> out;
  collect("", true, true, out);
  return out;
}

void Module::load_state_dict(const std::vector<NamedTensor>& state, bool strict) {
  std::map<std::string, const Tensor*> given;
  std::vector<std::string> duplicate;
  for (auto& nt : state)
    if (!given.emplace(nt.name, &nt.tensor).second) duplicate.push_back(nt.name);
  DPLAB_CHECK(duplicate.empty(), "load_state_dict into {}: duplicate keys: {}", type_name(),
              fmt::join(duplicate, ", "));

  const std::vector<NamedTensor> mine = state_dict();
  std::set<std::string> known;
  std::vector<std::string> missing, unexpected, mismatched;
  for (auto& nt : mine) {
    known.insert(nt.name);
    auto it = given.find(nt.name);
    if (it == given.end()) {
      missing.push_back(nt.name);
    } else if (it->second->shape() != nt.tensor.shape()) {
      mismatched.push_back(fmt::format("{} (checkpoint {}, model {})", nt.name,
                                       shape_str(it->second->shape()),
                                       shape_str(nt.tensor.shape())));
    }
  }
  for (auto& nt : state)
    if (!known.count(nt.name)) unexpected.push_back(nt.name);

  std::string problems;
  if (strict && !missing.empty())
    problems += fmt::format("\n  missing keys: {}", fmt::join(missing, ", "));
  if (strict && !unexpected.empty())
    problems += fmt::format("\n  unexpected keys: {}", fmt::join(unexpected, ", "));
  // A shape mismatch is an error even when not strict (as in PyTorch).
  if (!mismatched.empty())
    problems += fmt::format("\n  shape mismatches: {}", fmt::join(mismatched, "; "));
  DPLAB_CHECK(problems.empty(), "load_state_dict into {} failed:{}", type_name(), problems);

  NoGradGuard no_grad;
  for (auto& nt : mine) {
    auto it = given.find(nt.name);
    if (it == given.end()) continue;
    const Tensor& src = *it->second;
    DPLAB_CHECK(is_floating(src.dtype()) == is_floating(nt.tensor.dtype()),
                "load_state_dict into {}: '{}' is {} in the checkpoint but {} in the model",
                type_name(), nt.name, dtype_name(src.dtype()), dtype_name(nt.tensor.dtype()));
    Tensor dst = nt.tensor;
    if (src.device() == dst.device()) {
      dst.copy_(src);
    } else {
      dst.copy_(src.to(dst.device()));
    }
  }
}

void Module::train(bool on) {
  training_ = on;
  for (auto& [n, m] : children_) m->train(on);
}

void Module::to(Device device) {
  // Re-point each tensor (keeping its identity, so layers' handles follow) at a copy on the
  // target device.
  NoGradGuard no_grad;
  auto move = [&](Tensor& t) {
    if (t.device() == device) return;
    DPLAB_CHECK(t.is_contiguous(), "Module::to: {} is not contiguous", t.str());
    Tensor moved = t.to(device);
    t.rebind_storage(moved.storage(), moved.offset());
    if (t.grad().defined()) t.set_grad(Tensor());
  };
  for (auto& [n, t] : params_) move(t);
  for (auto& [n, t] : buffers_) move(t);
  for (auto& [n, m] : children_) m->to(device);
}

int64_t Module::num_parameters() const {
  int64_t n = 0;
  for (auto& nt : named_parameters()) n += nt.tensor.numel();
  return n;
}

std::string Module::describe(int indent) const {
  std::string s = type_name() + "(" + extra_repr();
  if (children_.empty()) return s + ")";
  const std::string pad(static_cast<size_t>(indent) + 2, ' ');
  s += "\n";
  for (auto& [n, m] : children_) s += pad + "(" + n + "): " + m->describe(indent + 2) + "\n";
  return s + std::string(static_cast<size_t>(indent), ' ') + ")";
}

void initialize(Module& root, uint64_t seed) {
  NoGradGuard no_grad;
  PhiloxStream rng(seed, 0);
  // Pre-order over the tree in registration order: a module before its children.
  std::function<void(Module&)> visit = [&](Module& m) {
    m.reset_parameters(rng);
    for (auto& [n, c] : m.named_children()) visit(*c);
  };
  visit(root);
}

namespace {
void collect_norm_parameters(const Module& m, const std::string& prefix,
                             std::vector<std::string>& out) {
  if (m.type_name().rfind("BatchNorm", 0) == 0) {
    for (const NamedTensor& p : m.named_parameters()) out.push_back(prefix + p.name);
    return;
  }
  for (const auto& [name, child] : m.named_children())
    collect_norm_parameters(*child, prefix + name + ".", out);
}
}  // namespace

std::vector<std::string> norm_parameter_names(const Module& root) {
  std::vector<std::string> out;
  collect_norm_parameters(root, "", out);
  return out;
}

}  // namespace dplab
