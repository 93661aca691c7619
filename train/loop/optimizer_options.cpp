#include "dplab/train/loop/optimizer_options.h"

#include "dplab/train/config/config.h"

namespace dplab {

std::string optimizer_key_default(const OptimizerEntry& entry, const std::string& key) {
  if (auto it = entry.defaults.find(key); it != entry.defaults.end()) return it->second;
  return option_default(key);
}

SGDOptions read_shared_optimizer_options(const Options& opt, const OptimizerEntry& entry) {
  // The shared keys' declarations (train/config/config.cpp) check the values; the defaults are
  // the optimizer's (OptimizerEntry::defaults) where it has its own.
  const OptionTable& t = train_option_table();
  auto number = [&](const std::string& key) {
    return t.get_double(opt, key, std::stod(optimizer_key_default(entry, key)));
  };
  SGDOptions so;
  so.lr = number("lr");
  so.momentum = number("momentum");
  so.nesterov = t.get_bool(opt, "nesterov", optimizer_key_default(entry, "nesterov") == "true");
  so.dampening = number("dampening");
  so.weight_decay = number("wd");
  return so;
}

std::map<std::string, std::string> optimizer_defaulted(const Options& opt,
                                                       const OptimizerEntry& entry) {
  const std::map<std::string, std::string> read = opt.read_values();
  std::map<std::string, std::string> r;
  for (const std::string& key : entry.keys)
    if (!opt.has(key))
      if (auto it = read.find(key); it != read.end()) r[key] = it->second;
  return r;
}

}  // namespace dplab
