#include "dplab/models/resnet_he_cifar.h"

#include "dplab/core/ops/shape.h"
#include "dplab/layers/adaptive_avgpool2d.h"
#include "dplab/layers/linear.h"
#include "dplab/layers/sequential.h"
#include "dplab/models/resnet_blocks.h"

namespace dplab {

const std::vector<int>& he_cifar_depths() {
  static const std::vector<int> d = {20, 32, 44, 56, 110};
  return d;
}

int he_cifar_blocks_per_stage(int depth) {
  DPLAB_CHECK(depth >= 8 && (depth - 2) % 6 == 0,
              "CIFAR ResNet (He et al.): depth {} is not 6n + 2 with n >= 1 (20, 32, 44, 56, 110)",
              depth);
  return (depth - 2) / 6;
}

namespace {

class HeCifarResNet : public Module {
 public:
  explicit HeCifarResNet(const HeCifarResNetOptions& opt) : opt_(opt) {
    const int n = he_cifar_blocks_per_stage(opt.depth);
    DPLAB_CHECK(opt.num_classes >= 1 && opt.in_channels >= 1,
                "ResNet-{} (CIFAR): num_classes = {} and in_channels = {} must be positive",
                opt.depth, opt.num_classes, opt.in_channels);
    conv1_ =
        register_module("conv1", std::make_shared<KaimingConv2d>(opt.in_channels, 16, 3, 1, 1));
    bn1_ = register_module("bn1", std::make_shared<BlockBatchNorm2d>(16, false));
    int64_t in = 16;
    for (int s = 0; s < 3; ++s)  // option-B shortcuts where the shape changes
      layers_[s] = register_module("layer" + std::to_string(s + 1),
                                   make_resnet_stage(in, int64_t(16) << s, n, s == 0 ? 1 : 2,
                                                     /*bottleneck=*/false, opt.zero_init_residual));
    avgpool_ = register_module("avgpool", std::make_shared<AdaptiveAvgPool2d>(1));
    fc_ = register_module("fc", std::make_shared<Linear>(in, opt.num_classes));
  }

  Tensor forward(const Tensor& x) override {
    DPLAB_CHECK(x.dim() == 4 && x.size(1) == opt_.in_channels,
                "ResNet-{} (CIFAR): input must be [N, {}, H, W], got {}", opt_.depth,
                opt_.in_channels, x.str());
    Tensor y = bn1_->forward_relu((*conv1_)(x));
    for (auto& l : layers_) y = (*l)(y);
    return (*fc_)(flatten((*avgpool_)(y), 1));
  }
  std::string type_name() const override { return "ResNet"; }

 private:
  HeCifarResNetOptions opt_;
  std::shared_ptr<Module> conv1_, avgpool_, fc_;
  std::shared_ptr<BatchNorm2d> bn1_;
  std::shared_ptr<Module> layers_[3];
};

}  // namespace

std::shared_ptr<Module> make_he_cifar_resnet(const HeCifarResNetOptions& opt) {
  return std::make_shared<HeCifarResNet>(opt);
}

}  // namespace dplab
