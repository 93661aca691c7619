// Fuzz target: tar shards (data/tar.h, data/shards.h). The input is one shard; it goes through
// ShardDataset, the product's reader of `shards:` data: index_tar (ustar, GNU base-256 sizes,
// 'L' long names, pax 'path' records), grouping of members by key, .cls labels, then every
// sample's image bytes read back (decoding is fuzz_image's part).
#include "dplab/core/error.h"
#include "dplab/data/shards.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > dplab::fuzz::kMaxInputBytes) return 0;
  const std::string path = dplab::fuzz::scratch().write("fuzz-000000.tar", data, size);
  dplab::ImageTransformOptions transform;
  transform.size = 8;
  // Both policies: `skip` goes on past damage (and reaches more of the grouping code), `fail`
  // stops at the first report. Chosen by the input so that a run is a function of the bytes.
  const dplab::OnError on_error = size % 2 ? dplab::OnError::fail : dplab::OnError::skip;
  try {
    const dplab::ShardDataset ds({path}, transform, on_error);
    for (int64_t i = 0; i < ds.size(); ++i) {
      const std::vector<uint8_t> bytes = ds.read_encoded(i);
      // A sample's bytes come from inside the shard, and labels index the classes.
      if (bytes.size() > size || ds.label(i) < 0 || ds.label(i) >= ds.num_classes()) std::abort();
    }
  } catch (const dplab::Error&) {
  }
  return 0;
}
