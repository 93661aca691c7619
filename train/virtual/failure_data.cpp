#include "dplab/train/virtual/failure_data.h"

#include "dplab/core/error.h"
#include "dplab/core/usage_error.h"

namespace dplab {

FailureData parse_failure_data(const std::string& value) {
  if (value == "reassign") return FailureData::reassign;
  if (value == "drop") return FailureData::drop;
  DPLAB_FAIL_OPTION("option cluster.failure_data: '{}' is not one of reassign, drop", value);
}

std::vector<int64_t> reassigned_samples(const std::vector<std::vector<int64_t>>& down_batches,
                                        int live_index, int live_count) {
  DPLAB_CHECK(live_count > 0 && live_index >= 0 && live_index < live_count,
              "reassigned_samples: live index {} of {} live ranks", live_index, live_count);
  std::vector<int64_t> all;
  for (const auto& b : down_batches) all.insert(all.end(), b.begin(), b.end());
  const int64_t m = int64_t(all.size());
  const int64_t begin = live_index * m / live_count;
  const int64_t end = (live_index + 1) * m / live_count;
  return std::vector<int64_t>(all.begin() + begin, all.begin() + end);
}

}  // namespace dplab
