#include "dplab/tools/dplab/unknown_flag.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cctype>
#include <vector>

#include "dplab/core/suggest.h"

namespace dplab::cli {
namespace {

// "--name" for every long name of `app`'s options ("-h" style short names are left out).
std::vector<std::string> long_flags(const CLI::App& app) {
  std::vector<std::string> r;
  for (const CLI::Option* o : app.get_options())
    for (const std::string& n : o->get_lnames()) r.push_back("--" + n);
  return r;
}

bool is_number(const std::string& s) {
  return s.size() > 1 && (std::isdigit(static_cast<unsigned char>(s[1])) || s[1] == '.');
}

}  // namespace

std::string unknown_argument_message(const CLI::App& app, int argc, char** argv) {
  if (argc < 2) return "";
  const std::string first = argv[1];
  if (first.empty() || first[0] == '-') {
    // Flags before the command: the top level's own.
    const std::string name = first.substr(0, first.find('='));
    if (name.rfind("--", 0) == 0 && !app.get_option_no_throw(name))
      return fmt::format("unknown flag {}{}", excerpt(name), did_you_mean(name, long_flags(app)));
    return "";
  }
  const CLI::App* sub = nullptr;
  std::vector<std::string> commands;
  for (const CLI::App* s : app.get_subcommands({})) {
    commands.push_back(s->get_name());
    if (s->get_name() == first) sub = s;
  }
  if (!sub)
    return fmt::format("unknown command {}{}; commands: {}", quoted_excerpt(first),
                       did_you_mean(first, commands), fmt::join(commands, ", "));
  // Follow nested commands (bench loader); a flag is known when the command or one of its
  // parents takes it.
  std::vector<const CLI::App*> chain = {sub};
  std::string path = first;
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--") break;  // positional arguments follow
    if (!arg.empty() && arg[0] != '-') {
      for (const CLI::App* s : chain.back()->get_subcommands({}))
        if (s->get_name() == arg) {
          chain.push_back(s);
          path += " " + arg;
        }
      continue;
    }
    if (arg.size() < 2 || is_number(arg)) continue;
    const std::string name = arg.substr(0, arg.find('='));
    bool known = false;
    for (const CLI::App* c : chain) known = known || c->get_option_no_throw(name) != nullptr;
    if (known) continue;
    return fmt::format("unknown flag {} for dplab {}{}", excerpt(name), path,
                       did_you_mean(name, long_flags(*chain.back())));
  }
  return "";
}

}  // namespace dplab::cli
