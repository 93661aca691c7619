// builtin_names_for (train/config/option_values.h) for the fuzz build, which builds no models,
// algorithms or optimizers and so has no Registry::with_builtins(): a fixed sample of the
// names `dplab train` knows, enough for the choice checks to accept some values and suggest
// for others. The product's definition is in train/config/builtin_registry.cpp.
#include "dplab/train/config/option_values.h"

namespace dplab {

std::vector<std::string> builtin_names_for(const std::string& key) {
  if (key == "model") return {"mnist_cnn", "resnet18", "resnet50", "resnet20_cifar"};
  if (key == "algo") return {"local", "allreduce", "hybrid", "daso", "dcs3gd", "sgp"};
  if (key == "optim") return {"sgd", "lars", "adamw"};
  if (key == "lr.schedule") return {"constant", "step", "multistep", "poly", "cosine", "plateau"};
  return {};
}

}  // namespace dplab
