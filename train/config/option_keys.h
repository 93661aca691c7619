// Every option key of `dplab train` in one table, grouped by area: the driver's own keys
// (train/config/config.cpp) and those of its parts (option_keys.cpp: communicator, lr schedule,
// each algorithm). `dplab train --help` and `dplab options` print it.
#pragma once
#include <string>
#include <vector>

#include "dplab/train/config/config.h"

namespace dplab {

// The communicator's, the schedule's and the algorithms' keys (part of train_option_specs()).
const std::vector<OptionSpec>& component_option_specs();
// The area a key is listed under: run, model, data, optimizer, schedule, checkpoint,
// reporting, comm, or an algorithm's name (allreduce, hybrid, daso, ..., local_sgd).
std::string option_area(const std::string& key);
// The areas in help order.
const std::vector<std::string>& option_areas();
// Whether `area` holds an algorithm's own keys (allreduce, hybrid, daso, ..., local_sgd).
bool is_algorithm_area(const std::string& area);
// Whether a run with algo = `algo` reads the keys of algorithm area `area`: its own, and for
// local_sgd and post_local_sgd also allreduce (the averaging phase's GradSync).
bool algorithm_reads_area(const std::string& algo, const std::string& area);
// The table's keys a built-in algorithm reads (its areas above), in table order; the built-in
// registry's StrategyEntry::keys.
std::vector<std::string> algorithm_option_keys(const std::string& algo);

}  // namespace dplab
