#include "dplab/core/trace/merge.h"

#include <filesystem>
#include <fstream>

#include "dplab/core/error.h"
#include "dplab/core/trace/trace_file.h"

namespace dplab::trace {

void merge_traces(const std::vector<std::string>& rank_files, const std::string& out_path,
                  const std::string& other_data_json) {
  // Written to a temporary name first: a reader never sees half a merged trace.
  const std::string tmp = out_path + ".tmp";
  try {
    TraceFile out(tmp, other_data_json);
    for (const std::string& path : rank_files) {
      std::ifstream in(path, std::ios::binary);
      DPLAB_CHECK(in.good(), "trace merge: cannot open {}", path);
      std::string line;
      int64_t n = 0;
      bool ended = false;
      while (std::getline(in, line)) {
        ++n;
        if (n == 1) {
          DPLAB_CHECK(
              line.starts_with("{\"displayTimeUnit\"") && line.ends_with("\"traceEvents\":["),
              "trace merge: {} line 1: expected a dplab trace header, found '{:.60}'", path, line);
          continue;
        }
        if (line == "]}") {
          ended = true;
          break;
        }
        DPLAB_CHECK(line.starts_with("{\"ph\":"),
                    "trace merge: {} line {}: expected an event ({{\"ph\":...), found '{:.60}'",
                    path, n, line);
        if (line.ends_with(",")) line.pop_back();
        out.add(line);
        if (out.buffered_bytes() >= (size_t(1) << 20)) out.flush();
      }
      DPLAB_CHECK(ended,
                  "trace merge: {} ends after line {} without the end of the trace (']}}'): its "
                  "rank did not close it",
                  path, n);
    }
    out.close();
  } catch (...) {
    std::error_code ignored;
    std::filesystem::remove(tmp, ignored);
    throw;
  }
  std::error_code ec;
  std::filesystem::rename(tmp, out_path, ec);
  DPLAB_CHECK(!ec, "trace merge: cannot rename {} to {}: {}", tmp, out_path, ec.message());
}

}  // namespace dplab::trace
