// Reads a series from a metrics.jsonl file (one JSON object per line, as `dplab train --out`
// writes): the (x, y) pairs of every record that has both keys as numbers, in file order, and
// optional markers where another key changes value between consecutive records.
#pragma once
#include <string>

#include "dplab/tools/plot/chart.h"

namespace dplab::plot {

// Throws dplab::Error for a missing/unreadable file ("cannot open"), a line that is not a JSON
// object ("FILE:LINE: ..."), and a key that no record has (naming the keys that do exist).
// A marker is placed at the previous record's x where `marker_key` changes value: the new
// value is in force from that point on (records are written at the end of an epoch). The
// marker's text is "KEY=VALUE". A file without `marker_key` simply has no markers (a baseline
// run next to a staged one); `marker_key_found` tells the caller whether any record had it.
Series read_metrics_series(const std::string& path, const std::string& x_key,
                           const std::string& y_key, const std::string& marker_key = {},
                           bool* marker_key_found = nullptr);

}  // namespace dplab::plot
