// The PyTorch side of `dplab bench ... --compare-*`: locating the comparison scripts shipped in
// tools/bench/ and running one with /usr/bin/python3 (or $DPLAB_PYTHON), whose last line of
// output is one JSON object.
#pragma once
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

namespace dplab::cli {

// tools/bench/<file>: $<env_var> if set, else the checkout this binary was built from, else
// <prefix>/share/dplab/bench/ next to an installed dplab. `flag` names the option in errors.
std::filesystem::path bench_script(const std::string& file, const char* env_var,
                                   const std::string& flag);

// 'text' quoted for /bin/sh.
std::string shell_quote(const std::string& text);

// Runs `python script args...` (args already quoted for the shell), stdout and stderr together,
// and parses its last line as JSON; anything before it (warnings) is ignored. Throws with the
// command and its whole output when it fails or prints no JSON object.
nlohmann::json run_python_json(const std::filesystem::path& script, const std::string& args,
                               const std::string& flag);

}  // namespace dplab::cli
