// Fuzz target: IDX files (data/idx.h), plain or gzip-compressed, through the readers the MNIST
// loader uses (read_idx_images, read_idx_labels). Both readers see every input: the magic picks
// which one gets past the header.
#include "dplab/core/error.h"
#include "dplab/data/idx.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > dplab::fuzz::kMaxInputBytes) return 0;
  const std::string path = dplab::fuzz::scratch().write("fuzz-idx-ubyte", data, size);
  try {
    const dplab::IdxImages images = dplab::read_idx_images(path);
    // What the dataset relies on: the pixel buffer holds count * rows * cols bytes.
    if (images.pixels.size() != size_t(images.count * images.rows * images.cols)) std::abort();
  } catch (const dplab::Error&) {
    // A rejected file: the expected outcome for most inputs.
  }
  try {
    dplab::read_idx_labels(path);
  } catch (const dplab::Error&) {
  }
  return 0;
}
