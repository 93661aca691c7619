// SGD with momentum, dampening, Nesterov and masked weight decay, exactly PyTorch's rule:
//   g = grad + wd * p                (only where the segment's weight_decay flag is set)
//   buf = g                          (first step)      buf = mu * buf + (1 - dampening) * g
//   d = g + mu * buf  (Nesterov)     d = buf (otherwise; d = g when mu == 0)
//   p -= lr * d
#pragma once
#include "dplab/optim/optimizer.h"

namespace dplab {

struct SGDOptions {
  double lr = 0.01;
  double momentum = 0.0;
  double dampening = 0.0;
  double weight_decay = 0.0;
  bool nesterov = false;
};

class SGD : public Optimizer {
 public:
  SGD(ParamArena& arena, const SGDOptions& opt);
  std::string name() const override { return "sgd"; }
  std::vector<NamedTensor> state() const override;
  void load_state(const std::vector<NamedTensor>& state) override;
  const SGDOptions& options() const { return opt_; }
  const Tensor& momentum_buffer() const { return buf_; }

 protected:
  void update(const Tensor& skip_if) override;

 private:
  SGDOptions opt_;
  Tensor buf_;  // flat, like the arena
};

}  // namespace dplab
