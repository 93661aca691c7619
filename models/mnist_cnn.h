// The network of the hybrid-SGD thesis (Gonçalves Simao, appendix "CNNModel"):
// conv 1->16 k5, ReLU, maxpool 2, conv 16->32 k5, ReLU, maxpool 2, flatten, linear 512->10.
// 18,378 parameters; names cnn1.*, cnn2.*, fc1.* as in the thesis code.
#pragma once
#include <memory>

#include "dplab/layers/module.h"

namespace dplab {

std::shared_ptr<Module> make_mnist_cnn(int num_classes = 10);

}  // namespace dplab
