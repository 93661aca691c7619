#include "dplab/core/cpu/dnnl_common.h"

#include <cstdlib>

namespace dplab::dnnl_util {

const dnnl::engine& cpu_engine() {
  static const dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  return eng;
}

dnnl::stream& thread_stream() {
  thread_local dnnl::stream s(cpu_engine());
  return s;
}

namespace {
struct Buffer {
  void* p = nullptr;
  size_t size = 0;
  ~Buffer() { std::free(p); }
};

void* grow(Buffer& buf, size_t bytes) {
  if (bytes > buf.size) {
    std::free(buf.p);
    const size_t rounded = (bytes + 63) / 64 * 64;
    buf.p = std::aligned_alloc(64, rounded);
    DPLAB_CHECK(buf.p != nullptr, "oneDNN scratchpad: cannot allocate {} bytes", rounded);
    buf.size = rounded;
  }
  return buf.p;
}
}  // namespace

void* thread_scratchpad(size_t bytes) {
  thread_local Buffer buf;
  return grow(buf, bytes);
}

void* thread_buffer(int slot, size_t bytes) {
  DPLAB_CHECK(slot >= 0 && slot < kThreadBufferSlots, "thread_buffer: slot {} out of [0, {})", slot,
              kThreadBufferSlots);
  thread_local Buffer bufs[kThreadBufferSlots];
  return grow(bufs[slot], bytes);
}

dnnl::primitive_attr default_attr() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

void execute(const dnnl::primitive& prim, const dnnl::primitive_desc_base& pd,
             std::unordered_map<int, dnnl::memory>& args) {
  const dnnl::memory::desc sd = pd.scratchpad_desc();
  const size_t bytes = sd.get_size();
  if (bytes > 0)
    args.emplace(DNNL_ARG_SCRATCHPAD, dnnl::memory(sd, cpu_engine(), thread_scratchpad(bytes)));
  prim.execute(thread_stream(), args);
  thread_stream().wait();
}

}  // namespace dplab::dnnl_util
