// Fuzz target: encoded images (data/decode.h, data/transforms.h) through decode_and_transform,
// what every image sample of `shards:` and `folder:` data goes through: header check, JPEG
// (libjpeg-turbo, DCT scaling) or PNG/PNM/BMP/... decoding, then the crop and resample to CHW.
#include <vector>

#include "dplab/core/error.h"
#include "dplab/data/transforms.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > dplab::fuzz::kMaxInputBytes) return 0;
  // The transform is chosen by the input's length, so a run is a function of the bytes: train
  // (RandomResizedCrop + flip) or eval (Resize + CenterCrop), output side 1, 8 or 224 (the
  // ImageNet size: JPEG DCT scaling and the resample see the product's numbers).
  static constexpr int kSides[] = {1, 8, 224};
  dplab::ImageTransformOptions opt;
  opt.train = size % 2 == 1;
  opt.size = kSides[(size / 2) % 3];
  std::vector<float> out(size_t(3) * size_t(opt.size) * size_t(opt.size));
  dplab::PhiloxStream rng(0, size);
  try {
    dplab::decode_and_transform(data, size, "fuzz-input", opt, &rng, out.data());
  } catch (const dplab::Error&) {
  }
  return 0;
}
