// Test helpers for checkpoint directories (train/state/checkpoint_store.h): listing, and
// rewriting a rank file's metadata while keeping its manifest entry consistent (so a test can
// reach the value checks behind the manifest's size and CRC-32 checks). The CRC here is zlib's,
// computed independently of the code under test.
#pragma once
#include <fmt/format.h>
#include <zlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "dplab/core/safetensors.h"
#include "run_cli.h"

namespace dplab::test {

// Every entry (file or directory, hidden ones too) under `dir`, relative, sorted.
inline std::vector<std::string> tree(const std::filesystem::path& dir) {
  std::vector<std::string> r;
  if (!std::filesystem::exists(dir)) return r;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir))
    r.push_back(std::filesystem::relative(e.path(), dir).string());
  std::sort(r.begin(), r.end());
  return r;
}

// Names of the entries directly in `dir`, sorted.
inline std::vector<std::string> entries(const std::filesystem::path& dir) {
  std::vector<std::string> r;
  if (!std::filesystem::exists(dir)) return r;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    r.push_back(e.path().filename().string());
  std::sort(r.begin(), r.end());
  return r;
}

inline std::string crc_hex(const std::string& bytes) {
  const uLong c =
      crc32(crc32(0L, Z_NULL, 0), reinterpret_cast<const Bytef*>(bytes.data()), uInt(bytes.size()));
  char buf[16];
  std::snprintf(buf, sizeof buf, "%08lx", static_cast<unsigned long>(c));
  return buf;
}

// Points the manifest entry of `rank` at the file's current size and CRC-32.
inline void reseal_manifest(const std::filesystem::path& ckpt, int rank) {
  const auto mp = ckpt / "manifest.json";
  auto j = nlohmann::ordered_json::parse(slurp(mp));
  const std::string bytes = slurp(ckpt / fmt::format("rank_{}.safetensors", rank));
  j["files"][rank]["bytes"] = bytes.size();
  j["files"][rank]["crc32"] = crc_hex(bytes);
  std::ofstream(mp) << j.dump(1);
}

// Sets metadata values of a rank file, then reseals the manifest.
inline void set_rank_values(const std::filesystem::path& ckpt, int rank,
                            const std::map<std::string, std::string>& values) {
  const std::string f = (ckpt / fmt::format("rank_{}.safetensors", rank)).string();
  std::map<std::string, std::string> meta;
  auto tensors = load_safetensors(f, &meta);
  for (const auto& [k, v] : values) meta[k] = v;
  save_safetensors(f, tensors, meta);
  reseal_manifest(ckpt, rank);
}

// What differs between two checkpoint rank files, or "" when they hold the same state: every
// tensor's bytes and every metadata value, except the measured wall times (values named
// algo.*_s or loop.*_s, e.g. Oscars' profiled step times and loop.elapsed_s), which differ
// between runs of one trajectory.
inline std::string state_difference(const std::filesystem::path& x,
                                    const std::filesystem::path& y) {
  std::map<std::string, std::string> mx, my;
  const auto tx = load_safetensors(x.string(), &mx), ty = load_safetensors(y.string(), &my);
  std::string d;
  std::map<std::string, std::string> bytes_x;
  for (const auto& t : tx)
    bytes_x[t.name] = std::string(static_cast<const char*>(t.tensor.raw_data()), t.tensor.nbytes());
  if (tx.size() != ty.size()) d += fmt::format(" {} vs {} tensors;", tx.size(), ty.size());
  for (const auto& t : ty) {
    auto it = bytes_x.find(t.name);
    if (it == bytes_x.end() ||
        it->second != std::string(static_cast<const char*>(t.tensor.raw_data()), t.tensor.nbytes()))
      d += " tensor " + t.name + ";";
  }
  auto measured = [](const std::string& k) {
    return (k.starts_with("algo.") || k.starts_with("loop.")) && k.ends_with("_s");
  };
  for (const auto& [k, v] : mx)
    if (!measured(k) && (!my.count(k) || my[k] != v))
      d += fmt::format(" value {} '{}' vs '{}';", k, v, my.count(k) ? my[k] : "(none)");
  for (const auto& [k, v] : my)
    if (!mx.count(k)) d += fmt::format(" value {} only in the second;", k);
  return d;
}

}  // namespace dplab::test
