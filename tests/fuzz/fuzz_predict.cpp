// Fuzz target: what `dplab predict` makes of an input file (train/data/predict_input.h):
// sniff_input, which tells an image, a safetensors batch and anything else apart by content and
// says what it found, and collect_images, which refuses a file that is not an image with that
// description. The sniffer reads the file's first MiB and parses image headers from it (PNG
// chunks, JPEG markers, BMP/GIF/TGA through stb_image), so damaged and truncated headers reach
// the same parsers as in the image target, from a buffer cut at an arbitrary point.
#include <cstdlib>
#include <string>

#include "dplab/core/error.h"
#include "dplab/train/data/predict_input.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > dplab::fuzz::kMaxInputBytes) return 0;
  const std::string path = dplab::fuzz::scratch().write("input", data, size);
  std::string found;
  dplab::InputKind kind = dplab::InputKind::other;
  try {
    kind = dplab::sniff_input(path, &found);
  } catch (const dplab::Error&) {
    std::abort();  // the file exists and is readable: sniffing it must not fail
  }
  // Whatever the bytes, the sniffer says what it found, in the terms of its kind.
  if (found.empty()) std::abort();
  if (kind == dplab::InputKind::image &&
      (found.rfind("a ", 0) != 0 || found.size() < 8 || found.substr(found.size() - 6) != " image"))
    std::abort();
  if (kind == dplab::InputKind::safetensors && found != "a safetensors file") std::abort();
  if (kind == dplab::InputKind::other && size == 0 && found != "an empty file") std::abort();
  // collect_images agrees: an image is taken as it is, anything else refused naming what it is.
  try {
    const std::vector<std::string> images = dplab::collect_images({path});
    if (kind != dplab::InputKind::image || images.size() != 1 || images[0] != path) std::abort();
  } catch (const dplab::Error& e) {
    if (kind == dplab::InputKind::image) std::abort();
    if (std::string(e.what()).find(found) == std::string::npos) std::abort();
  }
  return 0;
}
