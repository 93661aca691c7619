// Device queries when dplab is built without DPLAB_CUDA.
#include "dplab/core/device.h"

#include "dplab/core/error.h"

namespace dplab {

bool cuda_available() {
  return false;
}
int cuda_device_count() {
  return 0;
}
std::string cuda_unavailable_reason() {
  return "dplab was built without DPLAB_CUDA";
}
bool cuda_probe_failed() {
  return false;
}
void use_device(Device d) {
  DPLAB_CHECK(d.is_cpu(), "cannot use {}: {}", d.str(), cuda_unavailable_reason());
}

}  // namespace dplab
