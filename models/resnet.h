// torchvision's ResNet family (He et al. 2016; v1.5 Bottleneck with the stride in the 3x3 conv):
// ResNet-18/34 (BasicBlock [2,2,2,2] / [3,4,6,3]) and ResNet-50/101/152 (Bottleneck [3,4,6,3] /
// [3,4,23,3] / [3,8,36,3]). Parameter and buffer names, order and initialisation follow
// torchvision.models.resnet, so a state_dict loads either way (tools/scripts/resnet_roundtrip.py).
//
// Initialisation: convs kaiming_normal_(fan_out, relu), BatchNorm gamma 1 / beta 0, fc PyTorch's
// Linear default (U(+-1/sqrt(fan_in)) for weight and bias). zero_init_residual sets the gamma of
// each block's last BatchNorm to 0. The CIFAR stem replaces the 7x7/2 conv + 3x3/2 maxpool by a
// 3x3/1 conv (the "resnet*_cifar" models, input 3x32x32, 10 classes).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "dplab/layers/module.h"

namespace dplab {

struct ResNetOptions {
  int depth = 50;  // 18, 34, 50, 101 or 152
  int num_classes = 1000;
  bool zero_init_residual = false;
  bool cifar_stem = false;
  // Channels of the input images (the stem conv's input): 3 for RGB, 1 for grey-scale data such
  // as Fashion-MNIST (the rest of the network does not depend on it).
  int in_channels = 3;
};

// The per-stage block counts for `depth` (throws for an unknown depth).
std::vector<int> resnet_stage_blocks(int depth);
std::shared_ptr<Module> make_resnet(const ResNetOptions& opt);

}  // namespace dplab
