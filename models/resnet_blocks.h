// The residual blocks of torchvision's ResNet (He et al. 2016, "v1.5" variant: a Bottleneck
// downsamples in its 3x3 conv, not its first 1x1). Attribute names match torchvision
// (conv1, bn1, conv2, bn2, conv3, bn3, downsample.0 / downsample.1) so state_dict keys agree.
#pragma once
#include <memory>

#include "dplab/layers/batchnorm2d.h"
#include "dplab/layers/conv2d.h"
#include "dplab/layers/module.h"
#include "dplab/layers/sequential.h"

namespace dplab {

// nn.Conv2d without bias, initialised as torchvision's ResNet does:
// kaiming_normal_(mode="fan_out", nonlinearity="relu"), i.e. N(0, 2 / (out * kh * kw)).
class KaimingConv2d : public Conv2d {
 public:
  KaimingConv2d(int64_t in, int64_t out, int64_t kernel, int64_t stride, int64_t padding);
  void reset_parameters(PhiloxStream& rng) override;

 private:
  int64_t fan_out_;
};

// BatchNorm2d whose gamma starts at 0 when zero_gamma is set (torchvision's
// zero_init_residual / Goyal et al. 2017: each block starts as the identity).
class BlockBatchNorm2d : public BatchNorm2d {
 public:
  BlockBatchNorm2d(int64_t features, bool zero_gamma) : BatchNorm2d(features), zero_(zero_gamma) {}
  void reset_parameters(PhiloxStream& rng) override;

 private:
  bool zero_;
};

// Two 3x3 convs (ResNet-18/34); expansion 1.
class BasicBlock : public Module {
 public:
  static constexpr int64_t expansion = 1;
  // `downsample` (may be null) maps the input to the output's shape for the shortcut.
  BasicBlock(int64_t in, int64_t planes, int64_t stride, std::shared_ptr<Sequential> downsample,
             bool zero_init_residual);
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "BasicBlock"; }

 private:
  std::shared_ptr<Conv2d> conv1_, conv2_;
  std::shared_ptr<BatchNorm2d> bn1_, bn2_;
  std::shared_ptr<Sequential> downsample_;
};

// 1x1 reduce, 3x3 (carries the stride), 1x1 expand (ResNet-50/101/152); expansion 4.
class Bottleneck : public Module {
 public:
  static constexpr int64_t expansion = 4;
  Bottleneck(int64_t in, int64_t planes, int64_t stride, std::shared_ptr<Sequential> downsample,
             bool zero_init_residual);
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "Bottleneck"; }

 private:
  std::shared_ptr<Conv2d> conv1_, conv2_, conv3_;
  std::shared_ptr<BatchNorm2d> bn1_, bn2_, bn3_;
  std::shared_ptr<Sequential> downsample_;
};

// One stage: `blocks` blocks of `planes` (x expansion) output channels taking `in` channels; the
// first carries `stride` and, where the shape changes, the projection shortcut (1x1 conv with
// the stride, then BatchNorm). Returns the stage; `in` becomes its output channels.
std::shared_ptr<Sequential> make_resnet_stage(int64_t& in, int64_t planes, int blocks,
                                              int64_t stride, bool bottleneck,
                                              bool zero_init_residual);

}  // namespace dplab
