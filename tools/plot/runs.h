// The runs `dplab plot` reads: where their metrics are, their legend names, and the group a run
// belongs to for --group-by (seeds of one configuration drawn as a mean with a band).
#pragma once
#include <string>
#include <vector>

namespace dplab::plot {

// A run argument is a metrics.jsonl file or a run directory holding one (`dplab train --out`).
// Throws dplab::Error for a directory without metrics.jsonl.
std::string metrics_path_of(const std::string& arg);

// Legend names from the runs' directories: the last path component, or as many trailing
// components as make the names distinct (seed0 and seed0 of two configurations become
// a/seed0 and b/seed0).
std::vector<std::string> default_labels(const std::vector<std::string>& run_dirs);

// `label` without a trailing seed: "runs/a/seed1" -> "runs/a", "adam_seed3" -> "adam",
// "adam-seed=3" -> "adam"; anything else unchanged.
std::string strip_seed(const std::string& label);

// A run's value of option `key` from RUN_DIR/run.json ({"options": {...}}, written by
// `dplab train`): the option's value as text, found by its full dotted name ("algo",
// "optim.lr") or by following the dots through nested objects; an option recorded as an object
// with a "value" member gives that member. Returns false when the run has no run.json; throws
// dplab::Error naming the file and the options there are when run.json lacks the key or is
// malformed.
bool run_option(const std::string& run_dir, const std::string& key, std::string* value);

}  // namespace dplab::plot
