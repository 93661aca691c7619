// Define-by-run autograd. Each differentiable op (core/ops.h) records a Node whose next_edges
// point at the nodes of its inputs; backward(loss) runs nodes in reverse topological order,
// highest sequence number (latest created) first, and accumulates (+=) into leaf gradients.
// A leaf fires its grad-ready hooks after its last accumulation of the pass: that is where the
// communication engine (comm/grad_sync.h) starts bucket allreduces while backward goes on.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dplab/core/tensor.h"

namespace dplab {

struct Edge {
  std::shared_ptr<Node> fn;  // null: input needs no gradient
  int input_nr = 0;          // which gradient slot of fn receives it
};

class Node : public std::enable_shared_from_this<Node> {
 public:
  Node();
  virtual ~Node() = default;
  // grads[i] is the gradient w.r.t. output i (undefined if that output got none).
  // Returns one gradient per next_edge (undefined allowed where the edge is null).
  virtual std::vector<Tensor> apply(std::vector<Tensor>& grads) = 0;
  virtual std::string name() const = 0;
  // Frees saved tensors once the node has run (the graph is used once).
  virtual void release() {}

  std::vector<Edge> next_edges;
  int num_outputs = 1;
  uint64_t sequence_nr;
};

// Grad mode is per thread, like PyTorch's: a NoGrad scope records nothing.
bool grad_enabled();
class NoGradGuard {
 public:
  NoGradGuard();
  ~NoGradGuard();
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool prev_;
};

// True if grad mode is on and any defined input requires grad.
bool any_requires_grad(std::initializer_list<const Tensor*> inputs);
bool any_requires_grad(const std::vector<Tensor>& inputs);

// Edge for an input tensor: its grad_fn, or its leaf accumulator, or none.
Edge gradient_edge(const Tensor& t);

// Wires `node` to `inputs` and makes `outputs` its results (sets grad_fn / requires_grad).
// Ops call this after computing their outputs, only when any_requires_grad(...) is true.
void set_history(const std::shared_ptr<Node>& node, const std::vector<const Tensor*>& inputs,
                 const std::vector<Tensor*>& outputs);

// Runs the backward pass from `root`. If `grad` is undefined, root must be a scalar and the
// seed gradient is 1.
void backward(const Tensor& root, const Tensor& grad = Tensor());

// Accumulates g into leaf.grad (allocating it on first use): the one place leaf grads grow.
void accumulate_grad(const Tensor& leaf, const Tensor& g);

}  // namespace dplab
