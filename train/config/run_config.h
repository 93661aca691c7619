// --config FILE: a TOML file (train/config/config.h) or, for a name ending in .json, a run
// record (OUT/run.json, train/report/run_record.h) whose "options" section is read; the rest of
// the record is information and ignored. Errors are UsageErrors naming the file and, for JSON,
// the byte offset or the key.
#pragma once
#include <map>
#include <string>
#include <string_view>

#include "dplab/core/options.h"

namespace dplab {

// `places` (optional, TOML files): where each key's value was written (config.h).
void load_config_file(const std::string& path, Options& opt,
                      std::map<std::string, std::string>* places = nullptr);
// The "options" object of a run record in `text` (`path` names it in errors): each entry is a
// value (string, number, boolean, array: as in TOML files) or an object with a "value".
void load_json_options(std::string_view text, const std::string& path, Options& opt);

}  // namespace dplab
