// A Chrome trace-event JSON file written as a stream (the layout docs/trace.md describes): the
// header line, then one event per line, then the end. Events are collected in a buffer and
// written in chunks, so a trace of any length needs only the buffer's memory; the file is a
// complete JSON document once close() has run. The line layout (header line ending in
// `"traceEvents":[`, one `{"ph":...}` object per line, a last line `]}`) is what merge_traces
// relies on to concatenate files without parsing them whole.
#pragma once
#include <cstddef>
#include <fstream>
#include <string>
#include <string_view>

namespace dplab::trace {

class TraceFile {
 public:
  // Creates (truncates) `path` and writes the header: {"displayTimeUnit": "ms", "otherData":
  // `other_data_json` (a JSON object), "traceEvents": [.
  TraceFile(const std::string& path, const std::string& other_data_json);
  ~TraceFile();
  TraceFile(const TraceFile&) = delete;
  TraceFile& operator=(const TraceFile&) = delete;

  // Appends one event (a JSON object on one line, starting with {"ph":). Not thread-safe.
  void add(std::string_view event_json);
  // Writes the buffered events to the file (to the kernel: they survive a killed process).
  void flush();
  // Flushes and writes the end of the document; later calls do nothing. Throws if the file
  // could not be written.
  void close();
  size_t buffered_bytes() const { return buffer_.size(); }
  size_t events() const { return events_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::ofstream out_;
  std::string buffer_;
  size_t events_ = 0;
  bool closed_ = false;
};

// Escapes `s` as a JSON string, with the quotes.
std::string json_string(std::string_view s);

}  // namespace dplab::trace
