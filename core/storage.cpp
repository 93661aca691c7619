#include "dplab/core/storage.h"

#include <cstdlib>
#include <new>

#include "dplab/core/error.h"

namespace dplab {

#ifdef DPLAB_WITH_CUDA
std::shared_ptr<Storage> cuda_allocate_storage(size_t nbytes, Device device);  // core/cuda
#endif

void* host_alloc(size_t nbytes) {
  size_t rounded = (nbytes + kHostAlignment - 1) / kHostAlignment * kHostAlignment;
  if (rounded == 0) rounded = kHostAlignment;
  void* p = std::aligned_alloc(kHostAlignment, rounded);
  if (!p) throw std::bad_alloc();
  return p;
}

void host_free(void* p) {
  std::free(p);
}

std::shared_ptr<Storage> Storage::allocate(size_t nbytes, Device device) {
  if (device.is_cpu())
    return std::make_shared<Storage>(host_alloc(nbytes), nbytes, device, host_free);
#ifdef DPLAB_WITH_CUDA
  return cuda_allocate_storage(nbytes, device);
#else
  DPLAB_FAIL("cannot allocate on {}: dplab was built without DPLAB_CUDA", device.str());
#endif
}

}  // namespace dplab
