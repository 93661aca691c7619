#include "dplab/models/mnist_cnn.h"

#include "dplab/layers/conv2d.h"
#include "dplab/layers/flatten.h"
#include "dplab/layers/linear.h"
#include "dplab/layers/maxpool2d.h"
#include "dplab/layers/relu.h"

namespace dplab {
namespace {

// Attribute names follow the thesis' PyTorch class, so its state_dict keys are cnn1.weight,
// cnn1.bias, cnn2.weight, cnn2.bias, fc1.weight, fc1.bias.
class MnistCnn : public Module {
 public:
  explicit MnistCnn(int num_classes) {
    DPLAB_CHECK(num_classes >= 1, "mnist_cnn: num_classes = {} must be positive", num_classes);
    cnn1_ = register_module("cnn1", std::make_shared<Conv2d>(1, 16, 5));  // 28 -> 24
    relu1_ = register_module("relu1", std::make_shared<ReLU>());
    maxpool1_ = register_module("maxpool1", std::make_shared<MaxPool2d>(2));  // -> 12
    cnn2_ = register_module("cnn2", std::make_shared<Conv2d>(16, 32, 5));     // -> 8
    relu2_ = register_module("relu2", std::make_shared<ReLU>());
    maxpool2_ = register_module("maxpool2", std::make_shared<MaxPool2d>(2));  // -> 4
    flatten_ = register_module("flatten", std::make_shared<Flatten>());
    fc1_ = register_module("fc1", std::make_shared<Linear>(32 * 4 * 4, num_classes));
  }
  Tensor forward(const Tensor& x) override {
    DPLAB_CHECK(x.dim() == 4 && x.size(1) == 1 && x.size(2) == 28 && x.size(3) == 28,
                "mnist_cnn: input must be [N, 1, 28, 28], got {}", x.str());
    Tensor y = (*maxpool1_)((*relu1_)((*cnn1_)(x)));
    y = (*maxpool2_)((*relu2_)((*cnn2_)(y)));
    return (*fc1_)((*flatten_)(y));
  }
  std::string type_name() const override { return "CNNModel"; }

 private:
  std::shared_ptr<Module> cnn1_, relu1_, maxpool1_, cnn2_, relu2_, maxpool2_, flatten_, fc1_;
};

}  // namespace

std::shared_ptr<Module> make_mnist_cnn(int num_classes) {
  return std::make_shared<MnistCnn>(num_classes);
}

}  // namespace dplab
