#include "dplab/train/config/train_flags.h"

#include <fmt/format.h>

#include <algorithm>

#include "dplab/core/error.h"
#include "dplab/core/usage_error.h"
#include "dplab/train/config/config.h"

namespace dplab {
namespace {

// "--batch,--batch-size" -> {"--batch", "--batch-size"}.
std::vector<std::string> split_names(const std::string& names) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at <= names.size()) {
    const size_t comma = names.find(',', at);
    out.push_back(names.substr(at, comma == std::string::npos ? std::string::npos : comma - at));
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  return out;
}

const TrainFlag* find_flag(const std::string& name) {
  for (const TrainFlag& f : train_flags())
    for (const std::string& n : split_names(f.names))
      if (n == name) return &f;
  return nullptr;
}

}  // namespace

const std::vector<TrainFlag>& train_flags() {
  static const std::vector<TrainFlag> flags = {
      {"--model", "model", false, ""},
      {"--data", "data", false, ""},
      {"--epochs", "epochs", false, ""},
      {"--batch,--batch-size", "batch", false, ""},
      {"--lr", "lr", false, ""},
      {"--momentum", "momentum", false, ""},
      {"--nesterov", "nesterov", true, "true"},
      {"--no-nesterov", "nesterov", true, "false"},
      {"--trace", "trace", true, "true"},
      {"--wd,--weight-decay", "wd", false, ""},
      {"--seed", "seed", false, ""},
      {"--threads", "threads", false, ""},
      {"--max-steps", "max_steps", false, ""},
      {"--device", "device", false, ""},
      {"--out", "out", false, ""},
      {"--resume", "resume", false, ""},
      {"--resume-override", "resume.override", false, ""},
      {"--reshard", "resume.reshard", true, "true"},
      {"--init-from", "init_from", false, ""},
      {"--algo", "algo", false, ""},
      {"--slowdown", "slowdown", false, ""},
      {"--cluster", "cluster", false, ""},
      {"--ranks-per-node", "ranks_per_node", false, ""},
      {"--wait", "comm.wait", false, ""},
  };
  return flags;
}

const std::string& train_flag_names(const std::string& key) {
  for (const TrainFlag& f : train_flags())
    if (f.key == key && !f.is_switch) return f.names;
  DPLAB_FAIL("no dplab train flag sets option {}", key);
}

void apply_experiment_args(const std::vector<std::string>& args, Options& opt,
                           const std::string& program) {
  const std::string forms = fmt::format(
      "{} takes option keys as KEY=VALUE (threads=1), --set KEY=VALUE, or dplab train's flags "
      "(--threads 1, --out DIR, --trace)",
      program);
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (!a.starts_with("-")) {
      const size_t eq = a.find('=');
      if (eq == std::string::npos || eq == 0)
        throw UsageError(fmt::format("argument '{}': expected KEY=VALUE; {}", a, forms));
      apply_set_option(a, opt);
      continue;
    }
    // --NAME=VALUE or --NAME [VALUE]
    const size_t eq = a.find('=');
    const std::string name = a.substr(0, eq);
    const bool inline_value = eq != std::string::npos;
    const auto value = [&]() -> std::string {
      if (inline_value) return a.substr(eq + 1);
      if (i + 1 >= args.size() || args[i + 1].starts_with("--"))
        throw UsageError(fmt::format("'{}' needs a value ({} VALUE); {}", name, name, forms));
      return args[++i];
    };
    if (name == "--set") {
      apply_set_option(value(), opt);
      continue;
    }
    const TrainFlag* f = find_flag(name);
    if (f == nullptr) {
      // The key a user most likely meant: the flag's name without dashes (--eval.batch).
      const size_t start = name.find_first_not_of('-');
      const std::string key = start == std::string::npos ? "" : name.substr(start);
      throw UsageError(fmt::format("'{}': not a flag of {} (give option keys as KEY=VALUE{}); {}",
                                   a, program,
                                   key.empty() ? "" : fmt::format(", e.g. {}=VALUE", key), forms));
    }
    if (f->is_switch) {
      if (inline_value)
        throw UsageError(
            fmt::format("'{}' takes no value (it sets {} = {}; another value: {}=VALUE); {}", a,
                        f->key, f->value, f->key, forms));
      opt.set(f->key, f->value);
      continue;
    }
    opt.set(f->key, value());
  }
}

}  // namespace dplab
