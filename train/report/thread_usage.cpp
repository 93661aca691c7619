#include "dplab/train/report/thread_usage.h"

#include <sys/resource.h>

namespace dplab {

ThreadUsage thread_usage_now() {
#ifdef RUSAGE_THREAD
  rusage u{};
  if (getrusage(RUSAGE_THREAD, &u) == 0)
    return {int64_t(u.ru_nivcsw), int64_t(u.ru_nvcsw), int64_t(u.ru_majflt), int64_t(u.ru_minflt)};
#endif
  return {};
}

}  // namespace dplab
