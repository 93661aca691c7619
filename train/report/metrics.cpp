#include "dplab/train/report/metrics.h"

#include "dplab/core/error.h"

namespace dplab {

MetricsWriter::MetricsWriter(const std::string& path, bool append)
    : path_(path), out_(path, append ? std::ios::app : std::ios::trunc) {
  DPLAB_CHECK(out_.good(), "{}: cannot open for writing metrics", path);
}

void MetricsWriter::write(const nlohmann::json& record) {
  if (!out_.is_open()) return;
  out_ << record.dump() << '\n';
  out_.flush();
  DPLAB_CHECK(out_.good(), "{}: writing metrics failed", path_);
}

}  // namespace dplab
