// Unknown flags and commands: CLI11 says "The following arguments were not expected: 32
// --batch-sise"; dplab names the flag and the nearest known one instead.
#pragma once
#include <CLI/CLI.hpp>

#include <string>

namespace dplab::cli {

// After a failed parse: "unknown flag --batch-sise for dplab train (did you mean --batch?)",
// "unknown command 'trian' (did you mean 'train'?)", or "" when every flag in argv is known (the
// error was something else: CLI11's message says it).
std::string unknown_argument_message(const CLI::App& app, int argc, char** argv);

}  // namespace dplab::cli
