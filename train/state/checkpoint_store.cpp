#include "dplab/train/state/checkpoint_store.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "dplab/core/error.h"

namespace dplab {
namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

namespace {

constexpr const char* kManifest = "manifest.json";
constexpr const char* kPrefix = "step_";

std::string crc_text(uint32_t c) {
  return fmt::format("{:08x}", c);
}

}  // namespace

std::string checkpoint_dir_name(int64_t step) {
  return fmt::format("{}{:08d}", kPrefix, step);
}

fs::path checkpoints_root(const fs::path& out_dir) {
  return out_dir / "checkpoints";
}

int64_t step_of_dir_name(const std::string& name) {
  if (!name.starts_with(kPrefix) || name.size() == 5 || name.size() > 5 + 18) return -1;
  int64_t v = 0;
  for (size_t i = 5; i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9') return -1;
    v = v * 10 + (name[i] - '0');
  }
  return v;
}

std::vector<fs::path> list_checkpoint_dirs(const fs::path& out_dir) {
  std::vector<std::pair<int64_t, fs::path>> found;
  std::error_code ec;
  const fs::path root = checkpoints_root(out_dir);
  if (!fs::is_directory(root, ec)) return {};
  for (const auto& e : fs::directory_iterator(root)) {
    const int64_t s = step_of_dir_name(e.path().filename().string());
    if (s >= 0 && e.is_directory()) found.emplace_back(s, e.path());
  }
  std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a > b; });
  std::vector<fs::path> r;
  for (auto& f : found) r.push_back(std::move(f.second));
  return r;
}

void fsync_path(const fs::path& p) {
  const int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
  DPLAB_CHECK(fd >= 0, "cannot open '{}' to fsync it: {}", p.string(), std::strerror(errno));
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  DPLAB_CHECK(rc == 0, "fsync of '{}' failed: {}", p.string(), std::strerror(err));
}

uint32_t file_crc32(const fs::path& p, uint64_t* bytes) {
  std::FILE* f = std::fopen(p.c_str(), "rb");
  DPLAB_CHECK(f != nullptr, "cannot open '{}': {}", p.string(), std::strerror(errno));
  std::vector<unsigned char> buf(1 << 20);
  uLong crc = crc32(0L, Z_NULL, 0);
  uint64_t n = 0;
  size_t got = 0;
  while ((got = std::fread(buf.data(), 1, buf.size(), f)) > 0) {
    crc = crc32_z(crc, buf.data(), got);
    n += got;
  }
  const bool failed = std::ferror(f) != 0;
  std::fclose(f);
  DPLAB_CHECK(!failed, "reading '{}' failed", p.string());
  if (bytes) *bytes = n;
  return uint32_t(crc);
}

void write_manifest(const fs::path& dir, const Manifest& m) {
  json j = {{"format", "dplab-checkpoint"},
            {"version", m.version},
            {"step", m.step},
            {"epoch", m.epoch},
            {"step_in_epoch", m.step_in_epoch},
            {"world_size", m.world_size},
            {"ranks_per_node", m.ranks_per_node},
            {"algo", m.algo},
            {"init_from", m.init_from}};
  json cfg = json::object();
  for (const auto& [k, v] : m.config) cfg[k] = v;
  j["config"] = cfg;
  if (m.samples_in_epoch >= 0) j["samples_in_epoch"] = m.samples_in_epoch;
  json spans = json::array();
  for (const auto& w : m.world_sizes)
    spans.push_back({{"from_step", w.from_step}, {"world_size", w.world_size}});
  if (!m.world_sizes.empty()) j["world_sizes"] = spans;
  json files = json::array();
  for (const auto& f : m.files)
    files.push_back(
        {{"rank", f.rank}, {"file", f.name}, {"bytes", f.bytes}, {"crc32", crc_text(f.crc32)}});
  j["files"] = files;
  const fs::path p = dir / kManifest;
  const std::string text = j.dump(1) + "\n";
  std::FILE* f = std::fopen(p.c_str(), "wb");
  DPLAB_CHECK(f != nullptr, "cannot create '{}': {}", p.string(), std::strerror(errno));
  const bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size() &&
                  std::fflush(f) == 0 && ::fsync(fileno(f)) == 0;
  const int err = errno;
  const bool closed = std::fclose(f) == 0;
  DPLAB_CHECK(ok && closed, "writing '{}' failed: {}", p.string(), std::strerror(err));
}

Manifest read_manifest(const fs::path& dir) {
  const fs::path p = dir / kManifest;
  std::error_code ec;
  DPLAB_CHECK(fs::is_directory(dir, ec), "checkpoint '{}' is not a directory", dir.string());
  DPLAB_CHECK(fs::exists(p, ec),
              "checkpoint '{}' has no {}: it was never committed (a write interrupted before its "
              "manifest)",
              dir.string(), kManifest);
  std::ifstream in(p, std::ios::binary);
  const std::string text((std::istreambuf_iterator<char>(in)), {});
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    DPLAB_FAIL("{}: not valid JSON: {}", p.string(), e.what());
  }
  DPLAB_CHECK(j.is_object(), "{}: expected a JSON object", p.string());
  auto field = [&](const char* key) -> const json& {
    DPLAB_CHECK(j.contains(key), "{}: key '{}' missing", p.string(), key);
    return j[key];
  };
  auto integer = [&](const char* key, int64_t lo, int64_t hi) {
    const json& v = field(key);
    DPLAB_CHECK(v.is_number_integer(), "{}: key '{}' = {}: expected an integer", p.string(), key,
                v.dump());
    const int64_t x = v.get<int64_t>();
    DPLAB_CHECK(x >= lo && x <= hi, "{}: key '{}' = {}: expected {} to {}", p.string(), key, x, lo,
                hi);
    return x;
  };
  auto text_of = [&](const char* key) {
    const json& v = field(key);
    DPLAB_CHECK(v.is_string(), "{}: key '{}' = {}: expected a string", p.string(), key, v.dump());
    return v.get<std::string>();
  };
  DPLAB_CHECK(text_of("format") == "dplab-checkpoint",
              "{}: key 'format' = '{}': expected "
              "'dplab-checkpoint'",
              p.string(), text_of("format"));
  Manifest m;
  m.dir = dir;
  m.version = int(integer("version", 0, INT32_MAX));
  DPLAB_CHECK(m.version == kCheckpointFormatVersion,
              "{}: checkpoint format version {}, this dplab reads version {}", p.string(),
              m.version, kCheckpointFormatVersion);
  constexpr int64_t kBig = int64_t(1) << 53;
  m.step = integer("step", 0, kBig);
  m.epoch = integer("epoch", 0, kBig);
  m.step_in_epoch = integer("step_in_epoch", 0, kBig);
  m.world_size = int(integer("world_size", 1, 1 << 24));
  m.ranks_per_node = text_of("ranks_per_node");
  m.algo = text_of("algo");
  m.init_from = text_of("init_from");
  const json& cfg = field("config");
  DPLAB_CHECK(cfg.is_object(), "{}: key 'config': expected an object", p.string());
  for (auto it = cfg.begin(); it != cfg.end(); ++it) {
    DPLAB_CHECK(it.value().is_string(), "{}: key 'config.{}': expected a string", p.string(),
                it.key());
    m.config[it.key()] = it.value().get<std::string>();
  }
  if (j.contains("samples_in_epoch")) m.samples_in_epoch = integer("samples_in_epoch", 0, kBig);
  if (j.contains("world_sizes")) {
    const json& spans = j["world_sizes"];
    DPLAB_CHECK(spans.is_array() && !spans.empty(),
                "{}: key 'world_sizes': expected a non-empty array, got {}", p.string(),
                spans.dump().substr(0, 200));
    for (size_t i = 0; i < spans.size(); ++i) {
      const json& w = spans[i];
      DPLAB_CHECK(w.is_object() && w.contains("from_step") && w["from_step"].is_number_integer() &&
                      w.contains("world_size") && w["world_size"].is_number_integer(),
                  "{}: world_sizes[{}]: expected {{from_step, world_size}}, got {}", p.string(), i,
                  w.dump());
      const WorldSpan s{w["from_step"].get<int64_t>(), int(w["world_size"].get<int64_t>())};
      DPLAB_CHECK(s.world_size >= 1 && s.from_step >= 0 && s.from_step <= m.step &&
                      (i == 0 ? s.from_step == 0 : s.from_step >= m.world_sizes.back().from_step),
                  "{}: world_sizes[{}] = {}: expected a world size >= 1 from a step in order, "
                  "from 0 to the checkpoint's step {}",
                  p.string(), i, w.dump(), m.step);
      m.world_sizes.push_back(s);
    }
    DPLAB_CHECK(m.world_sizes.back().world_size == m.world_size,
                "{}: key 'world_sizes' ends with {} ranks, but 'world_size' is {}", p.string(),
                m.world_sizes.back().world_size, m.world_size);
  } else {
    m.world_sizes = {{0, m.world_size}};
  }
  const json& files = field("files");
  DPLAB_CHECK(files.is_array() && files.size() == size_t(m.world_size),
              "{}: key 'files': expected an array of {} entries (world_size), got {}", p.string(),
              m.world_size, files.dump().substr(0, 200));
  for (size_t i = 0; i < files.size(); ++i) {
    const json& f = files[i];
    const std::string where = fmt::format("{}: files[{}]", p.string(), i);
    DPLAB_CHECK(f.is_object() && f.contains("rank") && f["rank"].is_number_integer() &&
                    f.contains("file") && f["file"].is_string() && f.contains("bytes") &&
                    f["bytes"].is_number_unsigned() && f.contains("crc32") &&
                    f["crc32"].is_string(),
                "{}: expected {{rank, file, bytes, crc32}}, got {}", where, f.dump());
    ManifestFile mf;
    mf.rank = int(f["rank"].get<int64_t>());
    mf.name = f["file"].get<std::string>();
    mf.bytes = f["bytes"].get<uint64_t>();
    DPLAB_CHECK(mf.rank == int(i), "{}: rank {}, expected {}", where, mf.rank, i);
    DPLAB_CHECK(!mf.name.empty() && mf.name.find('/') == std::string::npos && mf.name[0] != '.',
                "{}: file name '{}' is not a plain file name", where, mf.name);
    const std::string c = f["crc32"].get<std::string>();
    char* end = nullptr;
    const unsigned long v = std::strtoul(c.c_str(), &end, 16);
    DPLAB_CHECK(c.size() == 8 && end == c.c_str() + 8, "{}: crc32 '{}': expected 8 hex digits",
                where, c);
    mf.crc32 = uint32_t(v);
    m.files.push_back(mf);
  }
  return m;
}

void verify_checkpoint_files(const Manifest& m, const std::vector<int>& crc_ranks) {
  for (const ManifestFile& f : m.files) {
    const fs::path p = m.dir / f.name;
    std::error_code ec;
    DPLAB_CHECK(fs::is_regular_file(p, ec), "checkpoint file '{}' is missing (listed in {})",
                p.string(), (m.dir / kManifest).string());
    const uint64_t size = fs::file_size(p, ec);
    DPLAB_CHECK(!ec && size == f.bytes,
                "checkpoint file '{}' has {} bytes, its manifest says {} (truncated or replaced)",
                p.string(), size, f.bytes);
  }
  for (int r : crc_ranks) {
    DPLAB_CHECK(r >= 0 && r < int(m.files.size()), "checkpoint '{}' has no rank {}", m.dir.string(),
                r);
    const ManifestFile& f = m.files[size_t(r)];
    const fs::path p = m.dir / f.name;
    const uint32_t c = file_crc32(p);
    DPLAB_CHECK(c == f.crc32,
                "checkpoint file '{}' has CRC-32 {}, its manifest says {} (corrupted)", p.string(),
                crc_text(c), crc_text(f.crc32));
  }
}

std::vector<fs::path> prune_checkpoints(const fs::path& out_dir, int64_t keep,
                                        const fs::path& except) {
  std::vector<fs::path> removed;
  if (keep <= 0) return removed;
  int64_t kept = 0;
  for (const fs::path& d : list_checkpoint_dirs(out_dir)) {
    std::error_code ec;
    if (!fs::exists(d / kManifest, ec)) continue;  // not a checkpoint: left alone
    if (d == except || kept < keep) {
      ++kept;
      continue;
    }
    fs::remove_all(d, ec);
    if (!ec) removed.push_back(d);
  }
  return removed;
}

void remove_stale_temporaries(const fs::path& out_dir) {
  std::error_code ec;
  const fs::path root = checkpoints_root(out_dir);
  if (!fs::is_directory(root, ec)) return;
  std::vector<fs::path> stale;
  for (const auto& e : fs::directory_iterator(root)) {
    const std::string n = e.path().filename().string();
    if (n.starts_with(".step_") && (n.ends_with(".tmp") || n.ends_with(".old")))
      stale.push_back(e.path());
  }
  for (const auto& p : stale) {
    const std::string n = p.filename().string();
    // ".step_N.old" is a committed checkpoint moved aside to be replaced by a new write of
    // the same step; if that write died before its rename, it is the only copy: put it back.
    const fs::path committed = root / n.substr(1, n.size() - 5);
    if (n.ends_with(".old") && !fs::exists(committed, ec))
      fs::rename(p, committed, ec);
    else
      fs::remove_all(p, ec);
  }
}

}  // namespace dplab
