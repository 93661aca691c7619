#include "dplab/models/resnet.h"

#include "dplab/core/ops/elementwise.h"
#include "dplab/core/ops/shape.h"
#include "dplab/layers/adaptive_avgpool2d.h"
#include "dplab/layers/linear.h"
#include "dplab/layers/maxpool2d.h"
#include "dplab/layers/sequential.h"
#include "dplab/models/resnet_blocks.h"

namespace dplab {

std::vector<int> resnet_stage_blocks(int depth) {
  switch (depth) {
    case 18:
      return {2, 2, 2, 2};
    case 34:
      return {3, 4, 6, 3};
    case 50:
      return {3, 4, 6, 3};
    case 101:
      return {3, 4, 23, 3};
    case 152:
      return {3, 8, 36, 3};
    default:
      DPLAB_FAIL("ResNet: depth {} is not one of 18, 34, 50, 101, 152", depth);
  }
}

namespace {

class ResNet : public Module {
 public:
  explicit ResNet(const ResNetOptions& opt) : opt_(opt) {
    DPLAB_CHECK(opt.num_classes >= 1, "ResNet-{}: num_classes = {} must be positive", opt.depth,
                opt.num_classes);
    const std::vector<int> blocks = resnet_stage_blocks(opt.depth);
    const bool bottleneck = opt.depth >= 50;
    DPLAB_CHECK(opt.in_channels >= 1, "ResNet-{}: in_channels = {} must be positive", opt.depth,
                opt.in_channels);
    if (opt.cifar_stem)
      conv1_ =
          register_module("conv1", std::make_shared<KaimingConv2d>(opt.in_channels, 64, 3, 1, 1));
    else
      conv1_ =
          register_module("conv1", std::make_shared<KaimingConv2d>(opt.in_channels, 64, 7, 2, 3));
    bn1_ = register_module("bn1", std::make_shared<BlockBatchNorm2d>(64, false));
    if (!opt.cifar_stem)
      maxpool_ = register_module("maxpool", std::make_shared<MaxPool2d>(3, 2, 1));
    int64_t in = 64;
    for (int s = 0; s < 4; ++s)
      layers_[s] =
          register_module("layer" + std::to_string(s + 1),
                          make_resnet_stage(in, int64_t(64) << s, blocks[size_t(s)], s == 0 ? 1 : 2,
                                            bottleneck, opt.zero_init_residual));
    avgpool_ = register_module("avgpool", std::make_shared<AdaptiveAvgPool2d>(1));
    fc_ = register_module("fc", std::make_shared<Linear>(in, opt.num_classes));
  }

  Tensor forward(const Tensor& x) override {
    DPLAB_CHECK(x.dim() == 4 && x.size(1) == opt_.in_channels,
                "ResNet-{}: input must be [N, {}, H, W], got {}", opt_.depth, opt_.in_channels,
                x.str());
    Tensor y = bn1_->forward_relu((*conv1_)(x));
    if (maxpool_) y = (*maxpool_)(y);
    for (auto& l : layers_) y = (*l)(y);
    y = flatten((*avgpool_)(y), 1);
    return (*fc_)(y);
  }
  std::string type_name() const override { return "ResNet"; }

 private:
  ResNetOptions opt_;
  std::shared_ptr<Module> conv1_, maxpool_, avgpool_, fc_;
  std::shared_ptr<BatchNorm2d> bn1_;
  std::shared_ptr<Module> layers_[4];
};

}  // namespace

std::shared_ptr<Module> make_resnet(const ResNetOptions& opt) {
  return std::make_shared<ResNet>(opt);
}

}  // namespace dplab
