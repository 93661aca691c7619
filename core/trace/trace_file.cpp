#include "dplab/core/trace/trace_file.h"

#include <fmt/format.h>

#include "dplab/core/error.h"

namespace dplab::trace {

std::string json_string(std::string_view s) {
  std::string r;
  r.reserve(s.size() + 2);
  r += '"';
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      r += '\\';
      r += ch;
    } else if (c < 0x20) {
      r += fmt::format("\\u{:04x}", c);
    } else {
      r += ch;
    }
  }
  r += '"';
  return r;
}

TraceFile::TraceFile(const std::string& path, const std::string& other_data_json)
    : path_(path), out_(path, std::ios::binary | std::ios::trunc) {
  DPLAB_CHECK(out_.good(), "trace: cannot create {}", path);
  out_ << "{\"displayTimeUnit\":\"ms\",\"otherData\":" << other_data_json << ",\"traceEvents\":[";
  DPLAB_CHECK(out_.good(), "trace: cannot write {}", path);
}

TraceFile::~TraceFile() {
  try {
    close();
  } catch (...) {  // a destructor in an unwinding run: the error was reported by close() if
  }                // called in order; here the file is left as far as it got
}

void TraceFile::add(std::string_view event_json) {
  if (closed_) return;
  buffer_ += events_ == 0 ? "\n" : ",\n";
  buffer_ += event_json;
  ++events_;
}

void TraceFile::flush() {
  if (closed_ || buffer_.empty()) return;
  out_.write(buffer_.data(), std::streamsize(buffer_.size()));
  out_.flush();  // to the kernel: what was flushed survives the process being killed
  buffer_.clear();
  DPLAB_CHECK(out_.good(), "trace: cannot write {}", path_);
}

void TraceFile::close() {
  if (closed_) return;
  flush();
  closed_ = true;
  out_ << "\n]}\n";
  out_.close();
  DPLAB_CHECK(!out_.fail(), "trace: cannot write the end of {}", path_);
}

}  // namespace dplab::trace
