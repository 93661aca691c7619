// Merges the per-rank trace files (OUT/trace/rank_R.json, written by Tracer) into one trace
// (OUT/trace.json): every event of every rank, one process per rank. Streams line by line
// (TraceFile's layout), so it needs no more memory than one line whatever the traces' size.
#pragma once
#include <string>
#include <vector>

namespace dplab::trace {

// `rank_files` in rank order; `other_data_json`: the merged file's otherData object. Throws
// naming the file and line when a rank file is not a complete trace of that layout (e.g. its
// rank stopped before closing it).
void merge_traces(const std::vector<std::string>& rank_files, const std::string& out_path,
                  const std::string& other_data_json);

}  // namespace dplab::trace
