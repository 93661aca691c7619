// The option table as text (`dplab train --help`, `dplab options`) and as JSON
// (`dplab options --json`), grouped by area (train/config/option_keys.h).
#pragma once
#include <CLI/CLI.hpp>

#include <string>

namespace dplab::cli {

// Every key whose name or area starts with `prefix` ("" for all), one line each, under a
// heading per area. With `algo` set, the keys of other algorithms are left out (a line says
// where they are).
std::string option_reference(const std::string& prefix, const std::string& algo = "");
// `dplab options ALGO`: every key the built-in algorithm ALGO reads (algorithm_option_keys:
// its own area's and those of the areas it shares, e.g. post_local_sgd's local_sgd.* and
// allreduce.*), under a heading per area; "" when it reads none.
std::string algorithm_option_reference(const std::string& algo);
// [{"key", "default", "help", "area", "trajectory"}, ...] for the same selection.
std::string option_reference_json(const std::string& prefix);
// `dplab train --algo NAME --help`: the train command's footer shows NAME's keys only.
// Called before parsing, with the raw command line.
void focus_train_help(CLI::App& app, int argc, char** argv);

}  // namespace dplab::cli
