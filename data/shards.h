// Tar shards in the WebDataset layout: each sample is `key.jpg` / `.jpeg` / `.png` (the image)
// plus `key.cls` (the class index as decimal text), in one ustar archive per shard. A shard set
// is described by an index file (JSON: shard names and counts, class names) written next to
// the shards by write_shards (`dplab shards`).
//
// Samples are numbered shard by shard (shards in the order given, members in archive order).
// shard_stream_order gives a rank's epoch order the WebDataset way: shards permuted by
// (seed, epoch), split across ranks round-robin, read in sequence through a shuffle buffer.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dplab/data/image_dataset.h"

namespace dplab {

struct ShardSample {
  int32_t shard = 0;
  std::string key;
  uint64_t offset = 0, size = 0;  // of the image member's data
  int64_t label = 0;
};

// Without data.num_classes (and without an index file listing the classes), labels must be
// below this: ImageNet-21k has 21,841 classes; a larger label is far more likely a damaged .cls
// (5,000,000 would size a ResNet's last layer at 10 GB) than a real class.
constexpr int64_t kMaxClassesUnlessGiven = 100000;

class ShardDataset : public EncodedImageDataset {
 public:
  // Indexes every shard (headers and .cls members only). Damage found here (bad header, truncated
  // entry, missing or unreadable .cls, label out of range, no image) is counted and reported with
  // shard, key, member and offset, then skipped or thrown per `on_error`. Labels must be below
  // `num_classes` when it is > 0, else below the class count of an index file beside the shards
  // that lists them, else below kMaxClassesUnlessGiven; num_classes() is then the index's count,
  // or max label + 1.
  ShardDataset(std::vector<std::string> shards, ImageTransformOptions transform,
               OnError on_error = OnError::skip, int num_classes = 0);
  ~ShardDataset() override;
  ShardDataset(const ShardDataset&) = delete;
  ShardDataset& operator=(const ShardDataset&) = delete;

  int64_t size() const override { return int64_t(samples_.size()); }
  int num_classes() const override { return num_classes_; }
  std::string describe() const override;
  std::vector<uint8_t> read_encoded(int64_t index) const override;
  int64_t label(int64_t index) const override { return samples_[size_t(index)].label; }
  std::string sample_name(int64_t index) const override;

  const std::vector<std::string>& shards() const { return paths_; }
  const std::vector<ShardSample>& samples() const { return samples_; }
  // Sample numbers of shard s: [shard_begin()[s], shard_begin()[s + 1]).
  const std::vector<int64_t>& shard_begin() const { return shard_begin_; }

 private:
  std::vector<std::string> paths_;
  std::vector<int> fds_;
  std::vector<ShardSample> samples_;
  std::vector<int64_t> shard_begin_;
  int num_classes_ = 0;
};

// The class names of the shard index (*.json beside the shard, written by write_shards) that
// lists `first_shard`, or {} when there is none.
std::vector<std::string> shard_index_classes(const std::string& first_shard);

// The names a shard pattern stands for, before globbing: brace ranges {M..N} (zero-padded to
// M's width when M has a leading zero: {000000..000099}) and lists {a,b}, any number of them
// (not nested), in order. Throws on an unclosed brace or a range of more than 4M names.
std::vector<std::string> expand_braces(const std::string& pattern);

// Sorted paths a shard pattern names (data/shard_names.cpp): braces expanded first, then each
// name with *, ? or [ globbed; a name without them must exist. Throws if none match.
std::vector<std::string> expand_glob(const std::string& pattern);

// This rank's sample order for `epoch`: shards permuted by Philox (seed, epoch), shard i of the
// permutation to rank i % world; the rank's samples in shard order pass through a shuffle
// buffer of `buffer` samples (draws keyed by (seed, epoch, rank)). Every rank gets the same
// count in every epoch, shard_stream_count (the rest is dropped), so collective steps stay in
// lock-step. Throws if there are fewer shards than ranks.
std::vector<int64_t> shard_stream_order(const std::vector<int64_t>& shard_begin, int rank,
                                        int world, uint64_t seed, int64_t epoch, int64_t buffer);
// Samples per rank and epoch: what the rank with the fewest shards (floor(shards / world))
// holds if they are the smallest ones, so it holds for any shard permutation.
int64_t shard_stream_count(const std::vector<int64_t>& shard_begin, int world);

// How write_shards checks each image before packing it: decode it whole (catches truncated
// and corrupt data; the default), or read its header only (format and size; faster).
enum class ShardCheck { decode, header };

struct ShardWriteOptions {
  int64_t per_shard = 1000;
  uint64_t seed = 0;
  double val_fraction = 0;  // in [0, 1): the share of each class packed as the validation set
  ShardCheck check = ShardCheck::decode;
  int64_t max_pixels = kDefaultMaxImagePixels;  // larger images are bad ones
};
struct ShardSkip {
  std::string path, reason;
};
struct ShardWriteResult {
  std::vector<std::string> shard_paths;  // the training (or only) set
  std::vector<int64_t> counts;
  std::vector<std::string> classes;
  std::string index_path;                    // PREFIX.json or PREFIX-train.json
  std::vector<std::string> val_shard_paths;  // with val_fraction > 0
  std::vector<int64_t> val_counts;
  std::string val_index_path;      // PREFIX-val.json
  std::vector<ShardSkip> skipped;  // images that failed the check, left out
};
// Packs the image folder `input_dir` (<class>/<file>) into shuffled shards (data/shard_writer.cpp)
// of `per_shard` samples (the last may be smaller), each with an index file listing the shards,
// their counts and the class names:
//   val_fraction = 0:  PREFIX-000000.tar, ... and PREFIX.json;
//   val_fraction > 0:  PREFIX-train-000000.tar, ... PREFIX-train.json and PREFIX-val-000000.tar,
//                      ... PREFIX-val.json, round(val_fraction * n) images of each class of n
//                      chosen by the seed.
// Sample keys keep the source names, WebDataset style: the path under `input_dir` without the
// extension ("n01440764/n01440764_10026"; dots in the file stem become '_'; a second source with
// the same key gets "_2"); members are KEY.jpg (.png, ... by the detected format, not the file
// name) with the bytes as is, and KEY.cls (the class index in decimal). Each image is checked
// first (opt.check); bad ones (not an image, truncated, too large) are left out and listed in
// `skipped`. Same folder, same options: identical shards.
ShardWriteResult write_shards(const std::string& input_dir, const std::string& prefix,
                              const ShardWriteOptions& opt);

}  // namespace dplab
