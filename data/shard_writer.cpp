// write_shards (`dplab shards`): an image folder into WebDataset tar shards, each image checked
// before it is packed, optionally split into a training and a validation set.
#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "dplab/core/error.h"
#include "dplab/data/decode.h"
#include "dplab/data/image_folder.h"
#include "dplab/data/sampler.h"
#include "dplab/data/shards.h"
#include "dplab/data/tar.h"

namespace dplab {

namespace fs = std::filesystem;

namespace {

// The member extension of an image format: WebDataset's names (.jpg for JPEG whatever the
// source file's extension, so one decoder key covers every JPEG).
const char* member_extension(ImageFormat f) {
  switch (f) {
    case ImageFormat::jpeg:
      return "jpg";
    case ImageFormat::png:
      return "png";
    case ImageFormat::pnm:
      return "ppm";
    case ImageFormat::bmp:
      return "bmp";
    case ImageFormat::gif:
      return "gif";
    case ImageFormat::tga:
      return "tga";
  }
  return "img";
}

// The key of a source file: its path under the folder root without the extension
// ("n01440764/n01440764_10026"). WebDataset splits a member name at the first '.' of its file
// name, so dots left in the stem are replaced by '_'.
std::string source_key(const fs::path& root, const std::string& file) {
  fs::path rel = fs::path(file).lexically_relative(root);
  rel.replace_extension();
  std::string key = rel.generic_string();
  const auto slash = key.rfind('/');
  std::replace(key.begin() + std::ptrdiff_t(slash == std::string::npos ? 0 : slash + 1), key.end(),
               '.', '_');
  return key;
}

// A packed sample: its source, key, member extension, bytes and label.
struct Packed {
  std::string key, ext;
  std::vector<uint8_t> bytes;
  int64_t label = 0;
};

struct ShardSetOut {
  std::vector<std::string> paths;
  std::vector<int64_t> counts;
  std::string index;
};

// Writes `order` (indices into `files`) as shards `stem`-NNNNNN.tar and the index `stem`.json.
ShardSetOut write_set(const std::vector<Packed>& files, const std::vector<size_t>& order,
                      const std::string& stem, const std::vector<std::string>& classes,
                      const ShardWriteOptions& opt, const std::string& input_dir) {
  ShardSetOut out;
  const int64_t n = int64_t(order.size());
  nlohmann::json shards = nlohmann::json::array();
  for (int64_t first = 0; first < n; first += opt.per_shard) {
    const int64_t last = std::min(n, first + opt.per_shard);
    const std::string path = fmt::format("{}-{:06d}.tar", stem, first / opt.per_shard);
    TarWriter w(path);
    for (int64_t i = first; i < last; ++i) {
      const Packed& p = files[order[size_t(i)]];
      w.add(p.key + "." + p.ext, p.bytes);
      const std::string cls = std::to_string(p.label);
      w.add(p.key + ".cls", reinterpret_cast<const uint8_t*>(cls.data()), cls.size());
    }
    w.close();
    out.paths.push_back(path);
    out.counts.push_back(last - first);
    shards.push_back({{"name", fs::path(path).filename().string()}, {"count", last - first}});
  }
  out.index = stem + ".json";
  const nlohmann::json index = {{"format", "webdataset-tar"},
                                {"shards", shards},
                                {"total", n},
                                {"classes", classes},
                                {"per_shard", opt.per_shard},
                                {"seed", opt.seed},
                                {"source", input_dir},
                                {"val_fraction", opt.val_fraction}};
  std::ofstream f(out.index);
  f << index.dump(2) << "\n";
  DPLAB_CHECK(f.good(), "cannot write shard index {}", out.index);
  return out;
}

}  // namespace

ShardWriteResult write_shards(const std::string& input_dir, const std::string& prefix,
                              const ShardWriteOptions& opt) {
  DPLAB_CHECK(opt.per_shard > 0, "shards: --per-shard must be positive, got {}", opt.per_shard);
  DPLAB_CHECK(opt.val_fraction >= 0 && opt.val_fraction < 1,
              "shards: --val-fraction must be in [0, 1), got {}", opt.val_fraction);
  const FolderListing listing = list_image_folder(input_dir);
  ShardWriteResult r;
  r.classes = listing.classes;

  // Every image read and checked (decoded whole, or its header only) before anything is
  // written; bad ones are reported and left out.
  std::vector<Packed> files;
  std::map<std::string, int> key_uses;
  for (const ImageFile& f : listing.files) {
    Packed p;
    p.label = f.label;
    try {
      p.bytes = read_whole_file(f.path);
      DPLAB_CHECK(p.bytes.size() <= kMaxEncodedImageBytes, "{}: {} bytes, more than {}", f.path,
                  p.bytes.size(), kMaxEncodedImageBytes);
      const ImageHeader h =
          read_image_header(p.bytes.data(), p.bytes.size(), f.path, opt.max_pixels);
      if (opt.check == ShardCheck::decode)
        (void)decode_image(p.bytes.data(), p.bytes.size(), f.path, 0, 0, opt.max_pixels);
      p.ext = member_extension(h.format);
    } catch (const Error& e) {
      r.skipped.push_back({f.path, e.what()});
      continue;
    }
    p.key = source_key(input_dir, f.path);
    // Two sources with one key ("a.jpg" and "a.png"): the later ones get "_2", "_3", ...
    if (const int uses = ++key_uses[p.key]; uses > 1) p.key += "_" + std::to_string(uses);
    files.push_back(std::move(p));
  }
  DPLAB_CHECK(!files.empty(), "shards: no readable image in {} ({} skipped)", input_dir,
              r.skipped.size());

  // The validation split: in each class, round(val_fraction * count) images chosen by a
  // Philox permutation of the class's images (seed, stream 1 + class), so the split depends on
  // the seed and the file names only.
  std::vector<size_t> train, val;
  {
    std::map<int64_t, std::vector<size_t>> by_class;
    for (size_t i = 0; i < files.size(); ++i) by_class[files[i].label].push_back(i);
    std::vector<bool> is_val(files.size(), false);
    if (opt.val_fraction > 0)
      for (const auto& [label, idx] : by_class) {
        const auto k = int64_t(std::llround(opt.val_fraction * double(idx.size())));
        const auto perm = philox_permutation(int64_t(idx.size()), opt.seed, uint64_t(1 + label));
        for (int64_t j = 0; j < k; ++j) is_val[idx[size_t(perm[size_t(j)])]] = true;
      }
    for (size_t i = 0; i < files.size(); ++i) (is_val[i] ? val : train).push_back(i);
  }
  // Shuffled order within each set (the training stream reads shards in sequence).
  auto shuffled = [&](const std::vector<size_t>& v) {
    const auto perm = philox_permutation(int64_t(v.size()), opt.seed, 0);
    std::vector<size_t> out(v.size());
    for (size_t i = 0; i < v.size(); ++i) out[i] = v[size_t(perm[i])];
    return out;
  };

  const fs::path parent = fs::path(prefix).parent_path();
  if (!parent.empty()) fs::create_directories(parent);
  const bool split = opt.val_fraction > 0;
  const ShardSetOut t = write_set(files, shuffled(train), split ? prefix + "-train" : prefix,
                                  r.classes, opt, input_dir);
  r.shard_paths = t.paths;
  r.counts = t.counts;
  r.index_path = t.index;
  if (split && !val.empty()) {
    const ShardSetOut v =
        write_set(files, shuffled(val), prefix + "-val", r.classes, opt, input_dir);
    r.val_shard_paths = v.paths;
    r.val_counts = v.counts;
    r.val_index_path = v.index;
  }
  return r;
}

}  // namespace dplab
