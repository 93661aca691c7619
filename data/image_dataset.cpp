#include "dplab/data/image_dataset.h"
#include "dplab/core/usage_error.h"

#include <fmt/format.h>

#include <cstdio>

namespace dplab {

OnError parse_on_error(const std::string& s) {
  if (s == "skip") return OnError::skip;
  if (s == "fail") return OnError::fail;
  DPLAB_FAIL_OPTION("option data.on_error: expected skip or fail, got '{}'", s);
}

EncodedImageDataset::EncodedImageDataset(ImageTransformOptions transform, OnError on_error)
    : transform_(transform), on_error_(on_error) {
  DPLAB_CHECK(transform_.size > 0, "image size {} must be positive", transform_.size);
}

void EncodedImageDataset::report_error(const std::string& what) const {
  const int64_t n = ++errors_;
  if (on_error_ == OnError::fail) throw Error(fmt::format("{} (data.on_error=fail)", what));
  std::fprintf(stderr, "%s\n",
               fmt::format("dplab data: skipping damaged sample ({} so far): {}", n, what).c_str());
}

int64_t EncodedImageDataset::get_into(int64_t index, float* out) const {
  PhiloxStream rng(0, uint64_t(index));
  return get_random_into(index, out, rng);
}

int64_t EncodedImageDataset::get_random_into(int64_t index, float* out, PhiloxStream& rng) const {
  const int64_t n = size();
  DPLAB_CHECK(index >= 0 && index < n, "{}: sample index {} out of range [0, {})", describe(),
              index, n);
  // Replacement chain for damaged samples; bounded so an all-damaged dataset ends in an error.
  const int64_t max_tries = std::min<int64_t>(n, 64);
  for (int64_t t = 0; t < max_tries; ++t) {
    const int64_t i = (index + t) % n;
    try {
      const std::vector<uint8_t> bytes = read_encoded(i);
      decode_and_transform(bytes.data(), bytes.size(), sample_name(i), transform_, &rng, out);
      return label(i);
    } catch (const Error& e) {
      report_error(e.what());  // throws with on_error=fail
    }
  }
  DPLAB_FAIL("{}: {} consecutive damaged samples from index {}", describe(), max_tries, index);
}

}  // namespace dplab
