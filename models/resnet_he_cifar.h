// The CIFAR-10 ResNets of He et al. 2016 (§4.2, "Deep Residual Learning for Image Recognition"):
// 6n + 2 weighted layers (ResNet-20, 32, 44, 56, 110 for n = 3, 5, 7, 9, 18). A 3x3 conv of 16
// channels, three stages of n BasicBlocks with 16, 32 and 64 channels (the first block of
// stages 2 and 3 has stride 2), global average pooling and a fully connected layer: 0.27 M
// parameters for ResNet-20, against 11.2 M for resnet18_cifar, the ImageNet network with a CIFAR
// stem. The registry names them "resnet<depth>_cifar" (20, 32, 44, 56, 110).
//
// Where a block changes the shape, the shortcut is a 1x1 conv with the stride and a BatchNorm
// (the paper's option B); the paper's CIFAR runs used option A (zero-padded identity, no
// parameters), so ResNet-20 has 272,474 parameters here (3-channel input) against the paper's
// 0.27 M. Names follow torchvision's layout (conv1, bn1, layer1.0.conv1, layerK.0.downsample.0,
// fc), so Crossover-SGD's "blocks" segments are the stem with the first block, each other block,
// and fc. Initialisation as the other ResNets (models/resnet.h).
#pragma once
#include <memory>
#include <vector>

#include "dplab/layers/module.h"

namespace dplab {

struct HeCifarResNetOptions {
  int depth = 20;  // 6n + 2 with n >= 1
  int num_classes = 10;
  bool zero_init_residual = false;
  int in_channels = 3;
};

// The depths the registry offers as "resnet<depth>_cifar": 20, 32, 44, 56, 110 (the paper's).
const std::vector<int>& he_cifar_depths();
// The blocks per stage, n = (depth - 2) / 6; throws unless depth = 6n + 2, n >= 1.
int he_cifar_blocks_per_stage(int depth);
std::shared_ptr<Module> make_he_cifar_resnet(const HeCifarResNetOptions& opt);

}  // namespace dplab
