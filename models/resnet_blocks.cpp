#include "dplab/models/resnet_blocks.h"

#include <cmath>
#include <vector>

#include "dplab/core/ops/elementwise.h"

namespace dplab {

namespace {
Conv2dOptions conv_opts(int64_t stride, int64_t padding) {
  Conv2dOptions o;
  o.stride = {stride, stride};
  o.padding = {padding, padding};
  return o;
}
}  // namespace

KaimingConv2d::KaimingConv2d(int64_t in, int64_t out, int64_t kernel, int64_t stride,
                             int64_t padding)
    : Conv2d(in, out, kernel, conv_opts(stride, padding), /*bias=*/false),
      fan_out_(out * kernel * kernel) {}

void KaimingConv2d::reset_parameters(PhiloxStream& rng) {
  // gain sqrt(2) for ReLU over sqrt(fan_out).
  const float std = static_cast<float>(std::sqrt(2.0 / static_cast<double>(fan_out_)));
  Tensor w = weight();
  std::vector<float> v(static_cast<size_t>(w.numel()));
  for (auto& x : v) x = std * rng.normal();
  w.copy_(Tensor::from_vector(v, w.shape()).to(w.device()));
}

void BlockBatchNorm2d::reset_parameters(PhiloxStream& rng) {
  BatchNorm2d::reset_parameters(rng);
  if (zero_) {
    Tensor g = weight();
    g.fill_(0.f);
  }
}

BasicBlock::BasicBlock(int64_t in, int64_t planes, int64_t stride,
                       std::shared_ptr<Sequential> downsample, bool zero_init_residual) {
  conv1_ = register_module("conv1", std::make_shared<KaimingConv2d>(in, planes, 3, stride, 1));
  bn1_ = register_module("bn1", std::make_shared<BlockBatchNorm2d>(planes, false));
  conv2_ = register_module("conv2", std::make_shared<KaimingConv2d>(planes, planes, 3, 1, 1));
  bn2_ = register_module("bn2", std::make_shared<BlockBatchNorm2d>(planes, zero_init_residual));
  if (downsample) downsample_ = register_module("downsample", std::move(downsample));
}

Tensor BasicBlock::forward(const Tensor& x) {
  Tensor y = bn1_->forward_relu((*conv1_)(x));
  y = (*conv2_)(y);
  const Tensor shortcut = downsample_ ? (*downsample_)(x) : x;
  return bn2_->forward_add_relu(y, shortcut);
}

Bottleneck::Bottleneck(int64_t in, int64_t planes, int64_t stride,
                       std::shared_ptr<Sequential> downsample, bool zero_init_residual) {
  const int64_t out = planes * expansion;
  conv1_ = register_module("conv1", std::make_shared<KaimingConv2d>(in, planes, 1, 1, 0));
  bn1_ = register_module("bn1", std::make_shared<BlockBatchNorm2d>(planes, false));
  conv2_ = register_module("conv2", std::make_shared<KaimingConv2d>(planes, planes, 3, stride, 1));
  bn2_ = register_module("bn2", std::make_shared<BlockBatchNorm2d>(planes, false));
  conv3_ = register_module("conv3", std::make_shared<KaimingConv2d>(planes, out, 1, 1, 0));
  bn3_ = register_module("bn3", std::make_shared<BlockBatchNorm2d>(out, zero_init_residual));
  if (downsample) downsample_ = register_module("downsample", std::move(downsample));
}

std::shared_ptr<Sequential> make_resnet_stage(int64_t& in, int64_t planes, int blocks,
                                              int64_t stride, bool bottleneck,
                                              bool zero_init_residual) {
  auto stage = std::make_shared<Sequential>();
  for (int b = 0; b < blocks; ++b) {
    const int64_t st = b == 0 ? stride : 1;
    const int64_t out = planes * (bottleneck ? Bottleneck::expansion : BasicBlock::expansion);
    std::shared_ptr<Sequential> down;
    if (b == 0 && (st != 1 || in != out)) {
      down = std::make_shared<Sequential>();
      down->push_back(std::make_shared<KaimingConv2d>(in, out, 1, st, 0));
      down->push_back(std::make_shared<BlockBatchNorm2d>(out, false));
    }
    if (bottleneck)
      stage->push_back(std::make_shared<Bottleneck>(in, planes, st, down, zero_init_residual));
    else
      stage->push_back(std::make_shared<BasicBlock>(in, planes, st, down, zero_init_residual));
    in = out;
  }
  return stage;
}

Tensor Bottleneck::forward(const Tensor& x) {
  Tensor y = bn1_->forward_relu((*conv1_)(x));
  y = bn2_->forward_relu((*conv2_)(y));
  y = (*conv3_)(y);
  const Tensor shortcut = downsample_ ? (*downsample_)(x) : x;
  return bn3_->forward_add_relu(y, shortcut);
}

}  // namespace dplab
