// Shared plumbing for the oneDNN-backed CPU kernels (conv, pool): the CPU engine, a per-thread
// stream, a per-thread scratchpad, and a small mutex-guarded cache of primitives keyed by
// shape and parameters, so a training loop creates each primitive once.
//
// Primitives are created with scratchpad_mode::user and run with the calling thread's own
// scratchpad buffer: executions from different threads never share oneDNN's internal buffer,
// and a training step reuses one grown buffer instead of allocating per call.
#pragma once
#include <omp.h>

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <unordered_map>

#include "dplab/core/tensor.h"

namespace dplab::dnnl_util {

const dnnl::engine& cpu_engine();
dnnl::stream& thread_stream();
// At least `bytes` of 64-byte aligned memory owned by the calling thread (grow-only).
void* thread_scratchpad(size_t bytes);
// Like thread_scratchpad, but one independent buffer per `slot` (0..kThreadBufferSlots-1):
// kernels stage operands in oneDNN's blocked layouts here, several at once.
constexpr int kThreadBufferSlots = 4;
void* thread_buffer(int slot, size_t bytes);

// Attribute for every primitive dplab creates (user-managed scratchpad).
dnnl::primitive_attr default_attr();

// Plain f32 memory descriptor with the given dims and format.
inline dnnl::memory::desc f32_desc(const dnnl::memory::dims& dims, dnnl::memory::format_tag tag) {
  return dnnl::memory::desc(dims, dnnl::memory::data_type::f32, tag);
}

// A oneDNN memory object that views a dplab tensor's data (no copy).
inline dnnl::memory wrap(const dnnl::memory::desc& md, const Tensor& t) {
  return dnnl::memory(md, cpu_engine(), t.raw_data());
}

// Adds the scratchpad argument (if the primitive needs one) and executes synchronously.
void execute(const dnnl::primitive& prim, const dnnl::primitive_desc_base& pd,
             std::unordered_map<int, dnnl::memory>& args);

// Caches one value per key; `make` runs once per key, under the lock (creating a primitive
// takes milliseconds, a lookup microseconds). Keys include the OpenMP thread count because
// oneDNN sizes its parallel partitioning when a primitive is created. If the cache grows
// past `capacity` (a model with ever-changing shapes) it starts over rather than grow forever.
template <size_t K, typename V>
class PrimitiveCache {
 public:
  using Key = std::array<int64_t, K>;
  template <typename Make>
  std::shared_ptr<const V> get(const Key& key, Make&& make) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = map_.find(key);
    if (it != map_.end()) return it->second;
    if (map_.size() >= capacity_) map_.clear();
    auto v = std::make_shared<const V>(make());
    map_.emplace(key, v);
    return v;
  }

 private:
  static constexpr size_t capacity_ = 512;
  std::mutex mu_;
  std::map<Key, std::shared_ptr<const V>> map_;
};

// True if `e` means "no implementation for this case" (the caller then falls back).
inline bool is_unimplemented(const dnnl::error& e) {
  return e.status == dnnl_unimplemented;
}

inline int64_t num_threads() {
  return omp_get_max_threads();
}

}  // namespace dplab::dnnl_util
