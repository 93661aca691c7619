#include "dplab/core/device.h"

#include <charconv>

#include "dplab/core/error.h"

namespace dplab {

std::string Device::str() const {
  return is_cpu() ? std::string("cpu") : fmt::format("cuda:{}", index);
}

Device Device::parse(std::string_view s) {
  if (s == "cpu") return cpu();
  if (s == "cuda") return cuda(0);
  if (s.rfind("cuda:", 0) == 0) {
    int i = -1;
    auto r = std::from_chars(s.data() + 5, s.data() + s.size(), i);
    if (r.ec == std::errc() && r.ptr == s.data() + s.size() && i >= 0) return cuda(i);
  }
  DPLAB_FAIL("unknown device '{}': expected cpu, cuda or cuda:N", s);
}

}  // namespace dplab
