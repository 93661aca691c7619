// Reads series from a metrics.jsonl file (one JSON object per line, as `dplab train --out`
// writes): the (x, y) pairs of the records of one kind that have both keys as numbers, in file
// order, and optional markers where another key changes value between consecutive records.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "dplab/core/error.h"
#include "dplab/tools/plot/series.h"

namespace dplab::plot {

struct MetricsFile {
  std::string path;
  std::vector<nlohmann::json> records;  // every line's object, in file order
  std::vector<int64_t> lines;           // the line number of each record
  std::vector<std::string> warnings;    // "FILE:LINE: ..." for a skipped torn last line
};

// Throws dplab::Error for a missing/unreadable file ("cannot open") and a line that is not a
// JSON object or holds a number beyond a double ("FILE:LINE: ..., expected ..."). The last
// line alone may be torn (a run killed while writing it, or two runs writing one file): when it
// is not a complete JSON object it is skipped with a warning naming the file and line.
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

// series_of's error when no record of the kind has the x or y key as a number: build_figure
// draws the runs that have it and names those that lack it. The message names the file, the
// kind, the key and the keys there are, with no source location.
class MissingKey : public Error {
 public:
  MissingKey(const std::string& message, std::string key, std::set<std::string> keys)
      : Error(message), key(std::move(key)), keys(std::move(keys)) {}
  std::string key;             // the key asked for
  std::set<std::string> keys;  // the numeric keys the file's records of the kind have
};

// Throws dplab::Error when no record has the kind (naming the kinds there are), MissingKey when
// no record of the kind has one of the keys as a number (naming the keys there are), and
// dplab::Error when no record has both or the running sum of time_s standing in for elapsed_s
// overflows (naming the file and line). A marker is placed at the previous record's x where
// `marker_key` changes value: the new value is in force from that point on (records are written at
// the end of an epoch); its text is "KEY=VALUE". A file without `marker_key` simply has no markers
// (a baseline run next to a staged one).
MetricsSeries series_of(const MetricsFile& file, const SeriesRequest& request);

}  // namespace dplab::plot
