// DiLoCo's option keys (read by DiLoCoOptions::from_options, diloco.cpp).
#include "dplab/comm/algorithms/algorithm_options.h"

namespace dplab {

const OptionTable& diloco_option_table() {
  static const OptionTable t({
      {"diloco.H", "50",
       "inner steps per round (the paper's 500 is for language models; 50, the smallest H of "
       "its ablation, gives several rounds per epoch of this project's models)",
       integer(1)},
      {"diloco.outer_optim", "nesterov",
       "outer optimizer on the averaged outer gradient: nesterov (the paper's), sgd (momentum "
       "without Nesterov) or adam (torch.optim.Adam)",
       choice({"nesterov", "sgd", "adam"})},
      {"diloco.outer_lr", "0.7",
       "outer learning rate (the paper's 0.7); with outer_optim = adam 0.001 (PyTorch's)",
       number(0)},
      {"diloco.outer_momentum", "0.9",
       "momentum of the outer SGD, nesterov or sgd (0: plain SGD); refused with adam",
       number(0, 1, true)},
      {"diloco.outer_beta1", "0.9", "outer Adam's beta1 (PyTorch's default); adam only",
       number(0, 1, true)},
      {"diloco.outer_beta2", "0.999", "outer Adam's beta2 (PyTorch's default); adam only",
       number(0, 1, true)},
      {"diloco.outer_eps", "1e-08", "outer Adam's eps (PyTorch's default); adam only", number(0)},
      {"diloco.round_spans_epochs", "false",
       "true: a round continues across epoch boundaries (the epoch's test_acc then evaluates "
       "the global model of the last outer step); false: every epoch ends with an outer step",
       boolean()},
  });
  return t;
}

}  // namespace dplab
