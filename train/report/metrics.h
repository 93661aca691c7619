// Metrics as JSON lines: one object per line, flushed at once, so a crashed or running job's
// file is always readable (`dplab plot`, jq, pandas.read_json(lines=True)).
#pragma once
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

namespace dplab {

class MetricsWriter {
 public:
  MetricsWriter() = default;  // disabled: write() does nothing
  // Truncates the file, or appends to it (a resumed run continues its predecessor's file).
  MetricsWriter(const std::string& path, bool append);
  bool enabled() const { return out_.is_open(); }
  void write(const nlohmann::json& record);
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::ofstream out_;
};

}  // namespace dplab
