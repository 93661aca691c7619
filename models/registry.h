// Model factory by name: "mnist_cnn", "resnet18" ... "resnet152" (torchvision), their CIFAR-stem
// variants "resnet18_cifar" ... "resnet152_cifar", and He et al.'s CIFAR ResNets "resnet20_cifar"
// ... "resnet110_cifar".
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "dplab/layers/module.h"

namespace dplab {

struct ModelInfo {
  std::string name;
  Shape input_shape;  // per sample, e.g. {1, 28, 28}
  int num_classes;
  // Takes images of any channel count (the ResNets: the stem conv adapts); input_shape[0] is
  // then only the default.
  bool any_channels = false;
};

// Builds the model with its parameters initialised from `seed`. Throws, listing the known
// names, for an unknown one.
// zero_init_residual: zero the gamma of each residual block's last BatchNorm (Goyal et al.);
// resnets only. in_channels: the input images' channels (-1: the model's default); only models
// with ModelInfo::any_channels accept another value.
std::shared_ptr<Module> make_model(const std::string& name, uint64_t seed, int num_classes = -1,
                                   bool zero_init_residual = false, int in_channels = -1);
std::vector<std::string> model_names();
ModelInfo model_info(const std::string& name);

}  // namespace dplab
