#include "dplab/core/storage.h"

#include <cstdlib>
#include <map>
#include <mutex>
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

namespace {

// Keeps freed large host blocks for reuse. A training step allocates the same activation and
// gradient sizes every step; without the cache glibc serves blocks this large with mmap and
// hands them back with munmap, so every step page-faults its whole working set in again
// (measured: a fifth of an mnist_cnn step in the kernel). Small blocks stay with malloc,
// which recycles them cheaply. Idle cached bytes are capped so a model whose shapes keep
// changing cannot hoard memory.
class HostBlockCache {
 public:
  static constexpr size_t kMinBytes = size_t{64} << 10;     // below this, plain malloc
  static constexpr size_t kPage = size_t{4} << 10;          // sizes are rounded to pages
  static constexpr size_t kMaxIdleBytes = size_t{1} << 30;  // idle bytes kept at most

  static size_t round(size_t nbytes) { return (nbytes + kPage - 1) / kPage * kPage; }

  // A block of at least `bytes` (already rounded): a cached one whose size is within 1/8 of
  // the request (so a small tensor never pins a huge block), else a fresh one.
  std::pair<void*, size_t> take(size_t bytes) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = idle_.lower_bound(bytes);
      if (it != idle_.end() && it->first <= bytes + bytes / 8) {
        std::pair<void*, size_t> block{it->second, it->first};
        idle_bytes_ -= it->first;
        idle_.erase(it);
        return block;
      }
    }
    return {host_alloc(bytes), bytes};
  }

  void give(void* p, size_t bytes) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (idle_bytes_ + bytes <= kMaxIdleBytes) {
        idle_.emplace(bytes, p);
        idle_bytes_ += bytes;
        return;
      }
    }
    host_free(p);
  }

  ~HostBlockCache() {
    for (auto& [bytes, p] : idle_) host_free(p);
  }

 private:
  std::mutex mu_;
  std::multimap<size_t, void*> idle_;
  size_t idle_bytes_ = 0;
};

HostBlockCache& host_block_cache() {
  static HostBlockCache* cache = new HostBlockCache();  // never destroyed: storages may
  return *cache;                                        // outlive static destruction
}

std::shared_ptr<Storage> allocate_host(size_t nbytes, Device device) {
  if (nbytes < HostBlockCache::kMinBytes)
    return std::make_shared<Storage>(host_alloc(nbytes), nbytes, device, host_free);
  auto [p, bytes] = host_block_cache().take(HostBlockCache::round(nbytes));
  return std::make_shared<Storage>(p, nbytes, device,
                                   [bytes = bytes](void* q) { host_block_cache().give(q, bytes); });
}

}  // namespace

std::shared_ptr<Storage> Storage::allocate(size_t nbytes, Device device) {
  if (device.is_cpu()) return allocate_host(nbytes, device);
#ifdef DPLAB_WITH_CUDA
  return cuda_allocate_storage(nbytes, device);
#else
  DPLAB_FAIL("cannot allocate on {}: dplab was built without DPLAB_CUDA", device.str());
#endif
}

}  // namespace dplab
