#include "dplab/core/autograd.h"

#include <queue>
#include <unordered_map>

#include "dplab/core/ops.h"

namespace dplab {

namespace {
thread_local bool t_grad_enabled = true;
thread_local uint64_t t_next_sequence_nr = 0;

// Leaf accumulator: adds into leaf.grad, then fires the leaf's grad-ready hooks. The engine
// runs it only once all gradient contributions of the pass have been summed, so "ran" means
// "this leaf's gradient is final for this pass".
class AccumulateGrad : public Node {
 public:
  explicit AccumulateGrad(std::weak_ptr<TensorImpl> leaf) : leaf_(std::move(leaf)) {
    sequence_nr = UINT64_MAX;  // run as soon as ready
  }
  std::vector<Tensor> apply(std::vector<Tensor>& grads) override {
    auto impl = leaf_.lock();
    if (!impl) return {};
    Tensor leaf(impl);
    if (grads[0].defined()) accumulate_grad(leaf, grads[0]);
    for (auto& hook : impl->grad_ready_hooks) hook(leaf);
    return {};
  }
  std::string name() const override { return "AccumulateGrad"; }

 private:
  std::weak_ptr<TensorImpl> leaf_;
};
}  // namespace

Node::Node() : sequence_nr(t_next_sequence_nr++) {}

bool grad_enabled() {
  return t_grad_enabled;
}
NoGradGuard::NoGradGuard() : prev_(t_grad_enabled) {
  t_grad_enabled = false;
}
NoGradGuard::~NoGradGuard() {
  t_grad_enabled = prev_;
}

bool any_requires_grad(std::initializer_list<const Tensor*> inputs) {
  if (!t_grad_enabled) return false;
  for (const Tensor* t : inputs)
    if (t && t->defined() && t->requires_grad()) return true;
  return false;
}

bool any_requires_grad(const std::vector<Tensor>& inputs) {
  if (!t_grad_enabled) return false;
  for (const Tensor& t : inputs)
    if (t.defined() && t.requires_grad()) return true;
  return false;
}

Edge gradient_edge(const Tensor& t) {
  if (!t.defined() || !t.requires_grad()) return {};
  auto& impl = t.impl();
  if (impl.grad_fn) return {impl.grad_fn, impl.output_nr};
  if (!impl.grad_accumulator)
    impl.grad_accumulator = std::make_shared<AccumulateGrad>(t.impl_ptr());
  return {impl.grad_accumulator, 0};
}

void set_history(const std::shared_ptr<Node>& node, const std::vector<const Tensor*>& inputs,
                 const std::vector<Tensor*>& outputs) {
  node->next_edges.clear();
  for (const Tensor* in : inputs) node->next_edges.push_back(in ? gradient_edge(*in) : Edge{});
  node->num_outputs = static_cast<int>(outputs.size());
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (!outputs[i] || !outputs[i]->defined()) continue;
    auto& impl = outputs[i]->impl();
    impl.grad_fn = node;
    impl.output_nr = static_cast<int>(i);
    impl.requires_grad = true;
  }
}

void accumulate_grad(const Tensor& leaf, const Tensor& g) {
  auto& impl = leaf.impl();
  DPLAB_CHECK(g.shape() == leaf.shape(), "gradient of {} has shape {}, expected {}",
              impl.name.empty() ? leaf.str() : impl.name, shape_str(g.shape()),
              shape_str(leaf.shape()));
  NoGradGuard no_grad;
  if (!impl.grad) {
    // A fresh strided tensor (g may alias a saved value, and may be in a non-strided layout).
    Tensor fresh =
        g.dtype() == leaf.dtype() ? g.clone() : g.contiguous_if_blocked().to(leaf.dtype());
    impl.grad = fresh.impl_ptr();
  } else {
    Tensor acc(impl.grad);
    add_(acc, g);
  }
}

void backward(const Tensor& root, const Tensor& grad) {
  DPLAB_CHECK(root.requires_grad(), "backward() on a tensor that does not require grad");
  Tensor seed = grad;
  if (!seed.defined()) {
    DPLAB_CHECK(root.numel() == 1, "backward() without a gradient needs a scalar, got {}",
                root.str());
    seed = Tensor::ones(root.shape(), root.dtype(), root.device());
  }
  Edge root_edge = gradient_edge(root);
  NoGradGuard no_grad;

  // 1. Count, for each node, how many edges point at it (its dependencies).
  std::unordered_map<Node*, int> deps;
  std::vector<Node*> stack{root_edge.fn.get()};
  deps[root_edge.fn.get()] = 0;
  std::unordered_map<Node*, bool> seen{{root_edge.fn.get(), true}};
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    for (auto& e : n->next_edges) {
      if (!e.fn) continue;
      deps[e.fn.get()] += 1;
      if (!seen[e.fn.get()]) {
        seen[e.fn.get()] = true;
        stack.push_back(e.fn.get());
      }
    }
  }

  // 2. Run ready nodes, latest-created first, summing gradients into per-node input buffers.
  auto later = [](const std::shared_ptr<Node>& a, const std::shared_ptr<Node>& b) {
    return a->sequence_nr < b->sequence_nr;
  };
  std::priority_queue<std::shared_ptr<Node>, std::vector<std::shared_ptr<Node>>, decltype(later)>
      ready(later);
  std::unordered_map<Node*, std::vector<Tensor>> buffers;
  auto add_to_buffer = [&](const Edge& e, const Tensor& g) {
    auto& buf = buffers[e.fn.get()];
    if (buf.empty()) buf.resize(e.fn->num_outputs);
    Tensor& slot = buf[e.input_nr];
    if (!slot.defined()) {
      slot = g;
    } else {
      slot = add(slot, g);  // fresh tensor: g may alias a saved value
    }
  };
  add_to_buffer(root_edge, seed);
  ready.push(root_edge.fn);
  while (!ready.empty()) {
    std::shared_ptr<Node> node = ready.top();
    ready.pop();
    std::vector<Tensor> grads = std::move(buffers[node.get()]);
    buffers.erase(node.get());
    if (grads.empty()) grads.resize(node->num_outputs);
    std::vector<Tensor> in_grads = node->apply(grads);
    node->release();
    for (size_t i = 0; i < node->next_edges.size(); ++i) {
      const Edge& e = node->next_edges[i];
      if (!e.fn) continue;
      if (i < in_grads.size() && in_grads[i].defined()) add_to_buffer(e, in_grads[i]);
      if (--deps[e.fn.get()] == 0) ready.push(e.fn);
    }
  }
}

}  // namespace dplab
