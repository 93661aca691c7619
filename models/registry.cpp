#include "dplab/models/registry.h"

#include <fmt/ranges.h>

#include <functional>

#include "dplab/core/error.h"
#include "dplab/core/suggest.h"
#include "dplab/core/usage_error.h"
#include "dplab/models/mnist_cnn.h"
#include "dplab/models/resnet.h"
#include "dplab/models/resnet_he_cifar.h"

namespace dplab {
namespace {

struct Entry {
  ModelInfo info;
  std::function<std::shared_ptr<Module>(int num_classes, bool zero_init_residual, int in_channels)>
      make;
};

std::function<std::shared_ptr<Module>(int, bool, int)> resnet_maker(int depth, bool cifar) {
  return [depth, cifar](int c, bool zero_init_residual, int in_channels) {
    ResNetOptions o;
    o.depth = depth;
    o.num_classes = c;
    o.zero_init_residual = zero_init_residual;
    o.cifar_stem = cifar;
    o.in_channels = in_channels;
    return make_resnet(o);
  };
}

std::function<std::shared_ptr<Module>(int, bool, int)> he_cifar_maker(int depth) {
  return [depth](int c, bool zero_init_residual, int in_channels) {
    HeCifarResNetOptions o;
    o.depth = depth;
    o.num_classes = c;
    o.zero_init_residual = zero_init_residual;
    o.in_channels = in_channels;
    return make_he_cifar_resnet(o);
  };
}

// Immutable table of known models. "resnetN" is torchvision's ImageNet model; "resnetN_cifar"
// for N in 18, 34, 50, 101, 152 the same network with the 3x3/1 stem and no maxpool for 32x32
// inputs; for N = 6n + 2 in 20, 32, 44, 56, 110 He et al.'s CIFAR ResNets
// (models/resnet_he_cifar.h).
const std::vector<Entry>& table() {
  static const std::vector<Entry> t = [] {
    std::vector<Entry> v = {
        {{"mnist_cnn", {1, 28, 28}, 10},
         [](int c, bool zir, int /*in_channels: always 1*/) {
           DPLAB_CHECK(!zir, "zero_init_residual: mnist_cnn has no residual blocks");
           return make_mnist_cnn(c);
         }},
    };
    for (int d : {18, 34, 50, 101, 152})
      v.push_back(
          {{"resnet" + std::to_string(d), {3, 224, 224}, 1000, true}, resnet_maker(d, false)});
    for (int d : {18, 34, 50, 101, 152})
      v.push_back({{"resnet" + std::to_string(d) + "_cifar", {3, 32, 32}, 10, true},
                   resnet_maker(d, true)});
    for (int d : he_cifar_depths())
      v.push_back(
          {{"resnet" + std::to_string(d) + "_cifar", {3, 32, 32}, 10, true}, he_cifar_maker(d)});
    return v;
  }();
  return t;
}

const Entry& find(const std::string& name) {
  for (const Entry& e : table())
    if (e.info.name == name) return e;
  throw UsageError(fmt::format("option model: unknown model {}{}; known models are {}",
                               quoted_excerpt(name), did_you_mean(name, model_names()),
                               fmt::join(model_names(), ", ")));
}

}  // namespace

std::shared_ptr<Module> make_model(const std::string& name, uint64_t seed, int num_classes,
                                   bool zero_init_residual, int in_channels) {
  const Entry& e = find(name);
  DPLAB_CHECK(num_classes == -1 || num_classes >= 1,
              "make_model('{}'): num_classes = {} (use -1 for the default of {})", name,
              num_classes, e.info.num_classes);
  const int default_channels = static_cast<int>(e.info.input_shape[0]);
  DPLAB_CHECK(in_channels == -1 || in_channels == default_channels ||
                  (e.info.any_channels && in_channels >= 1),
              "make_model('{}'): takes {}-channel inputs, not {}", name, default_channels,
              in_channels);
  auto m = e.make(num_classes == -1 ? e.info.num_classes : num_classes, zero_init_residual,
                  in_channels == -1 ? default_channels : in_channels);
  initialize(*m, seed);
  return m;
}

std::vector<std::string> model_names() {
  std::vector<std::string> r;
  for (const Entry& e : table()) r.push_back(e.info.name);
  return r;
}

ModelInfo model_info(const std::string& name) {
  return find(name).info;
}

}  // namespace dplab
