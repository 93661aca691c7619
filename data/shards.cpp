#include "dplab/data/shards.h"

#include <fcntl.h>
#include <glob.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "dplab/data/image_folder.h"
#include "dplab/data/sampler.h"
#include "dplab/data/tar.h"

namespace dplab {

namespace fs = std::filesystem;

namespace {

// WebDataset naming: key = member path up to the first '.' of its file name; the rest is the
// extension (lower-cased).
void split_key(const std::string& name, std::string& key, std::string& ext) {
  const auto slash = name.rfind('/');
  const auto dot = name.find('.', slash == std::string::npos ? 0 : slash + 1);
  key = dot == std::string::npos ? name : name.substr(0, dot);
  ext = dot == std::string::npos ? "" : name.substr(dot + 1);
  for (char& c : ext) c = char(std::tolower(static_cast<unsigned char>(c)));
}

// A .cls member: decimal digits with optional surrounding whitespace, at most 12 digits (so the
// value fits an int64 whatever it is; the range is checked by the caller).
bool parse_label(const std::vector<uint8_t>& text, int64_t& out) {
  std::string s(text.begin(), text.end());
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  size_t i = 0;
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  if (i == s.size() || s.size() - i > 12) return false;
  out = 0;
  for (; i < s.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(s[i]))) return false;
    out = out * 10 + (s[i] - '0');
  }
  return true;
}

// The bytes of a short member as text for an error message (non-printing bytes escaped).
std::string quoted(const std::vector<uint8_t>& bytes) {
  std::string r = "'";
  for (uint8_t c : bytes) {
    if (c >= 0x20 && c < 0x7f && c != '\\' && c != '\'')
      r += char(c);
    else
      r += fmt::format("\\x{:02x}", c);
  }
  return r + "'";
}

// Index files are a few kilobytes per thousand shards; anything larger is not one.
constexpr uintmax_t kMaxIndexBytes = uintmax_t(64) << 20;

}  // namespace

std::vector<std::string> shard_index_classes(const std::string& first_shard) {
  const fs::path dir = fs::path(first_shard).parent_path();
  const std::string name = fs::path(first_shard).filename().string();
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir.empty() ? fs::path(".") : dir, ec)) {
    if (e.path().extension() != ".json") continue;
    if (std::error_code size_ec; fs::file_size(e.path(), size_ec) > kMaxIndexBytes || size_ec)
      continue;
    try {
      std::ifstream in(e.path());
      const nlohmann::json j = nlohmann::json::parse(in);
      if (!j.contains("shards") || !j.contains("classes") || !j["classes"].is_array()) continue;
      for (const auto& s : j["shards"])
        if (s.is_object() && s.value("name", "") == name) {
          std::vector<std::string> r;
          for (const auto& c : j["classes"]) {
            if (r.size() == size_t(kMaxClassesUnlessGiven)) break;
            r.push_back(c.is_string() ? c.get<std::string>() : c.dump());
          }
          return r;
        }
    } catch (const std::exception&) {
      // Not an index file: ignore.
    }
  }
  return {};
}

namespace {
// Class count from an index file (*.json) beside the shards that lists the first shard.
int classes_from_index(const std::string& first_shard) {
  return int(shard_index_classes(first_shard).size());
}

}  // namespace

ShardDataset::ShardDataset(std::vector<std::string> shards, ImageTransformOptions transform,
                           OnError on_error, int num_classes)
    : EncodedImageDataset(transform, on_error), paths_(std::move(shards)) {
  DPLAB_CHECK(!paths_.empty(), "ShardDataset: no shards");
  DPLAB_CHECK(num_classes >= 0, "ShardDataset: num_classes {} is negative", num_classes);
  try {
    // The label bound: data.num_classes when given, else the class list of an index file beside
    // the shards, else kMaxClassesUnlessGiven (a label of 5,000,000 would otherwise size the
    // model's last layer at gigabytes).
    const int index_classes = num_classes > 0 ? 0 : classes_from_index(paths_[0]);
    const int64_t bound = num_classes > 0     ? num_classes
                          : index_classes > 0 ? index_classes
                                              : kMaxClassesUnlessGiven;
    const std::string bound_source = num_classes > 0     ? "data.num_classes"
                                     : index_classes > 0 ? "the classes listed in the shard index"
                                                         : "the limit without data.num_classes";
    int64_t max_label = -1;
    for (size_t s = 0; s < paths_.size(); ++s) {
      const std::string& path = paths_[s];
      shard_begin_.push_back(int64_t(samples_.size()));
      const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0)
        throw TarError(fmt::format("cannot open shard {}: {}", path, std::strerror(errno)));
      fds_.push_back(fd);
      const TarIndex idx = index_tar(path);
      if (!idx.error.empty()) report_error(idx.error);
      // Group members by key, keeping first-appearance order. A key with two images or two
      // class members is ambiguous (which image, which label?): refused, naming both.
      struct Group {
        const TarMember* img = nullptr;
        const TarMember* cls = nullptr;
        std::string duplicate;  // why the key is refused
      };
      std::vector<std::string> order;
      std::map<std::string, Group> groups;
      auto member_text = [&](const TarMember& m) {
        return m.size <= 64 ? " = " + quoted(read_file_range(fd, m.offset, m.size, path)) : "";
      };
      for (const TarMember& m : idx.members) {
        std::string key, ext;
        split_key(m.name, key, ext);
        auto [it, fresh] = groups.try_emplace(key);
        if (fresh) order.push_back(key);
        Group& g = it->second;
        const bool cls = ext == "cls", img = !cls && is_image_extension(ext);
        const TarMember* first = cls ? g.cls : img ? g.img : nullptr;
        if (first != nullptr && g.duplicate.empty())
          g.duplicate = fmt::format(
              "{}:{}: duplicate key: {} member '{}' (data at offset {}{}) and '{}' (data at "
              "offset {}{}); one {} per key expected",
              path, key, cls ? "class" : "image", first->name, first->offset,
              cls ? member_text(*first) : "", m.name, m.offset, cls ? member_text(m) : "",
              cls ? ".cls member" : "image member");
        if (cls)
          g.cls = &m;
        else if (img)
          g.img = &m;
      }
      for (const std::string& key : order) {
        const Group& g = groups[key];
        if (!g.duplicate.empty()) {
          report_error(g.duplicate);
          continue;
        }
        const TarMember* img = g.img;
        const TarMember* cls = g.cls;
        const std::string what = fmt::format("{}:{}", path, key);
        if (img == nullptr) {
          report_error(fmt::format("{}: no image member (.jpg, .jpeg, .png)", what));
          continue;
        }
        if (cls == nullptr) {
          report_error(fmt::format("{}: no .cls member", what));
          continue;
        }
        if (img->size > kMaxEncodedImageBytes) {
          report_error(
              fmt::format("{}: member '{}' at offset {} holds {} bytes, more than the {} "
                          "an image decoder accepts",
                          what, img->name, img->offset, img->size, kMaxEncodedImageBytes));
          continue;
        }
        const std::string cls_at =
            fmt::format("{}: member '{}' (data at offset {})", what, cls->name, cls->offset);
        if (cls->size > 64) {
          report_error(fmt::format("{}: a class index of at most 64 bytes expected, found {}",
                                   cls_at, cls->size));
          continue;
        }
        const std::vector<uint8_t> text = read_file_range(fd, cls->offset, cls->size, path);
        int64_t label = 0;
        if (!parse_label(text, label)) {
          report_error(fmt::format("{}: expected a class index (decimal digits), found {}", cls_at,
                                   quoted(text)));
          continue;
        }
        if (label >= bound) {
          report_error(fmt::format("{}: label {} out of range: expected 0 to {} ({} = {}){}",
                                   cls_at, label, bound - 1, bound_source, bound,
                                   num_classes > 0 ? "" : "; set data.num_classes if it is right"));
          continue;
        }
        max_label = std::max(max_label, label);
        samples_.push_back({int32_t(s), key, img->offset, img->size, label});
      }
    }
    shard_begin_.push_back(int64_t(samples_.size()));
    DPLAB_CHECK(!samples_.empty(), "shards {} ... hold no readable samples", paths_[0]);
    num_classes_ = num_classes > 0 ? num_classes : index_classes;
    if (num_classes_ <= max_label) num_classes_ = int(max_label + 1);
  } catch (...) {
    for (int fd : fds_) ::close(fd);
    throw;
  }
}

ShardDataset::~ShardDataset() {
  for (int fd : fds_) ::close(fd);
}

std::string ShardDataset::describe() const {
  return fmt::format("{} shards ({} ... ; {} images, {} classes)", paths_.size(), paths_[0], size(),
                     num_classes());
}

std::string ShardDataset::sample_name(int64_t index) const {
  const ShardSample& s = samples_[size_t(index)];
  return fmt::format("{}:{}", paths_[size_t(s.shard)], s.key);
}

std::vector<uint8_t> ShardDataset::read_encoded(int64_t index) const {
  const ShardSample& s = samples_[size_t(index)];
  return read_file_range(fds_[size_t(s.shard)], s.offset, s.size, sample_name(index));
}

int64_t shard_stream_count(const std::vector<int64_t>& shard_begin, int world) {
  std::vector<int64_t> sizes;
  for (size_t s = 0; s + 1 < shard_begin.size(); ++s)
    sizes.push_back(shard_begin[s + 1] - shard_begin[s]);
  std::sort(sizes.begin(), sizes.end());
  int64_t n = 0;
  for (size_t i = 0; i < sizes.size() / size_t(std::max(world, 1)); ++i) n += sizes[i];
  return n;
}

std::vector<int64_t> shard_stream_order(const std::vector<int64_t>& shard_begin, int rank,
                                        int world, uint64_t seed, int64_t epoch, int64_t buffer) {
  const int64_t nshards = int64_t(shard_begin.size()) - 1;
  DPLAB_CHECK(world >= 1 && rank >= 0 && rank < world, "shard order: rank {} of world {}", rank,
              world);
  DPLAB_CHECK(nshards >= world,
              "{} shards cannot be split across {} ranks (need at least one shard per rank)",
              nshards, world);
  const std::vector<int64_t> perm = philox_permutation(nshards, seed, uint64_t(epoch));
  const int64_t keep = shard_stream_count(shard_begin, world);
  // Stream 2^62 + ...: disjoint from the permutation streams (small epoch numbers).
  PhiloxStream rng(seed, (uint64_t(1) << 62) | (uint64_t(epoch) << 20) | uint64_t(rank));
  std::vector<int64_t> out, buf;
  out.reserve(size_t(keep));
  const size_t cap = size_t(std::max<int64_t>(1, buffer));
  for (int64_t i = rank; i < nshards; i += world) {
    const int64_t s = perm[size_t(i)];
    for (int64_t x = shard_begin[size_t(s)]; x < shard_begin[size_t(s + 1)]; ++x) {
      if (buf.size() < cap) {
        buf.push_back(x);
        continue;
      }
      const size_t j = size_t(rng.below(cap));
      out.push_back(buf[j]);
      buf[j] = x;
    }
  }
  while (!buf.empty()) {
    const size_t j = size_t(rng.below(buf.size()));
    out.push_back(buf[j]);
    buf[j] = buf.back();
    buf.pop_back();
  }
  out.resize(size_t(keep));
  return out;
}

}  // namespace dplab
