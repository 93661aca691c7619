// Fuzz target: safetensors files (core/safetensors.h) through load_safetensors, the reader of
// checkpoints, --resume and --init-from.
#include "dplab/core/error.h"
#include "dplab/core/safetensors.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > dplab::fuzz::kMaxInputBytes) return 0;
  const std::string path = dplab::fuzz::scratch().write("fuzz.safetensors", data, size);
  try {
    std::map<std::string, std::string> metadata;
    const std::vector<dplab::NamedTensor> tensors = dplab::load_safetensors(path, &metadata);
    // Accepted tensors tile the data section: none can hold more bytes than the file.
    size_t total = 0;
    for (const dplab::NamedTensor& t : tensors) total += t.tensor.nbytes();
    if (total > size) std::abort();
  } catch (const dplab::Error&) {
  }
  return 0;
}
