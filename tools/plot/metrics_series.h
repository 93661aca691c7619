// Reads series from a metrics.jsonl file (one JSON object per line, as `dplab train --out`
// writes): the (x, y) pairs of the records of one kind that have both keys as numbers, in file
// order, and optional markers where another key changes value between consecutive records.
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "dplab/tools/plot/series.h"

namespace dplab::plot {

struct MetricsFile {
  std::string path;
  std::vector<nlohmann::json> records;  // every line's object, in file order
  std::vector<int> lines;               // the line number of each record
};

// Throws dplab::Error for a missing/unreadable file ("cannot open") and a line that is not a
// JSON object ("FILE:LINE: ...").
MetricsFile read_metrics_file(const std::string& path);

// A record's kind: its "kind" string; records without one (files written before kinds
// existed) count as "epoch".
std::string record_kind(const nlohmann::json& record);

struct SeriesRequest {
  std::string x_key = "epoch", y_key = "test_acc";
  std::string kind = "epoch";  // only records of this kind are read
  std::string marker_key;      // optional: a marker where this key changes value
};

// elapsed_s, the seconds since the run's start, is what time axes want. Files whose records of
// the kind have no elapsed_s (written before it existed) get it as the running sum of the
// records' time_s (each epoch record's time_s is that epoch's time).
inline constexpr const char* kElapsedKey = "elapsed_s";

struct MetricsSeries {
  Series series;
  bool marker_key_found = false;     // some record of the kind has the marker key
  bool elapsed_from_time_s = false;  // elapsed_s was computed as the running sum of time_s
  std::optional<double> final_y;     // the y key in the last record of kind "final", if any
};

// Throws dplab::Error when no record has the kind (naming the kinds there are), when no
// record of the kind has one of the keys as a number (naming the keys there are), or when no
// record has both. A marker is placed at the previous record's x where `marker_key` changes
// value: the new value is in force from that point on (records are written at the end of an
// epoch); its text is "KEY=VALUE". A file without `marker_key` simply has no markers (a
// baseline run next to a staged one).
MetricsSeries series_of(const MetricsFile& file, const SeriesRequest& request);

}  // namespace dplab::plot
