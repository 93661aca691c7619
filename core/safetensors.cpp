#include "dplab/core/safetensors.h"

#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>

#include "dplab/core/autograd.h"

namespace dplab {

// The format stores raw little-endian data; dplab's hosts (x86-64, aarch64) are little-endian.
static_assert(std::endian::native == std::endian::little, "safetensors I/O assumes little-endian");

namespace {

using json = nlohmann::ordered_json;
constexpr uint64_t kMaxHeaderBytes = 100u << 20;  // the reference implementation's limit

struct FileCloser {
  void operator()(FILE* f) const {
    if (f) std::fclose(f);
  }
};
using File = std::unique_ptr<FILE, FileCloser>;

void write_all(FILE* f, const void* data, size_t n, const std::string& tmp) {
  if (n == 0) return;
  DPLAB_CHECK(std::fwrite(data, 1, n, f) == n, "safetensors: writing '{}' failed: {}", tmp,
              std::strerror(errno));
}

}  // namespace

void save_safetensors(const std::string& path, const std::vector<NamedTensor>& tensors,
                      const std::map<std::string, std::string>& metadata) {
  json header = json::object();
  if (!metadata.empty()) {
    json md = json::object();
    for (const auto& [k, v] : metadata) md[k] = v;
    header["__metadata__"] = md;
  }
  // Host, contiguous copies (views of an arena, device tensors and strided views all work).
  std::vector<Tensor> host;
  host.reserve(tensors.size());
  std::set<std::string> names;
  uint64_t offset = 0;
  NoGradGuard no_grad;
  for (const NamedTensor& nt : tensors) {
    DPLAB_CHECK(!nt.name.empty() && nt.name != "__metadata__",
                "save_safetensors '{}': invalid tensor name '{}'", path, nt.name);
    DPLAB_CHECK(names.insert(nt.name).second, "save_safetensors '{}': tensor '{}' given twice",
                path, nt.name);
    DPLAB_CHECK(nt.tensor.defined(), "save_safetensors '{}': tensor '{}' is undefined", path,
                nt.name);
    Tensor h = nt.tensor.to(Device::cpu()).contiguous();
    const uint64_t n = h.nbytes();
    header[nt.name] = {{"dtype", std::string(dtype_safetensors_name(h.dtype()))},
                       {"shape", h.shape()},
                       {"data_offsets", {offset, offset + n}}};
    offset += n;
    host.push_back(std::move(h));
  }
  std::string text = header.dump();
  // Pad with spaces so the data starts 8-byte aligned (as the reference writer does).
  text.append((8 - text.size() % 8) % 8, ' ');
  const uint64_t header_len = text.size();

  const std::string tmp = path + ".tmp";
  try {
    File f(std::fopen(tmp.c_str(), "wb"));
    DPLAB_CHECK(f != nullptr, "save_safetensors: cannot create '{}': {}", tmp,
                std::strerror(errno));
    unsigned char len[8];
    for (int i = 0; i < 8; ++i) len[i] = static_cast<unsigned char>(header_len >> (8 * i));
    write_all(f.get(), len, 8, tmp);
    write_all(f.get(), text.data(), text.size(), tmp);
    for (const Tensor& h : host) write_all(f.get(), h.raw_data(), h.nbytes(), tmp);
    // Data reaches the disk before the rename makes it visible under the final name.
    DPLAB_CHECK(std::fflush(f.get()) == 0 && ::fsync(fileno(f.get())) == 0,
                "save_safetensors: flushing '{}' failed: {}", tmp, std::strerror(errno));
    FILE* raw = f.release();
    DPLAB_CHECK(std::fclose(raw) == 0, "save_safetensors: closing '{}' failed: {}", tmp,
                std::strerror(errno));
  } catch (...) {
    std::error_code ec;  // a failed write leaves nothing behind
    std::filesystem::remove(tmp, ec);
    throw;
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp);
    DPLAB_FAIL("save_safetensors: renaming '{}' to '{}' failed: {}", tmp, path, ec.message());
  }
}

std::vector<NamedTensor> load_safetensors(const std::string& path,
                                          std::map<std::string, std::string>* metadata) {
#define ST_CHECK(cond, ...) \
  DPLAB_CHECK(cond, "safetensors file '{}': {}", path, fmt::format(__VA_ARGS__))
  File f(std::fopen(path.c_str(), "rb"));
  DPLAB_CHECK(f != nullptr, "safetensors file '{}': cannot open: {}", path, std::strerror(errno));
  std::error_code ec;
  const uint64_t file_size = std::filesystem::file_size(path, ec);
  ST_CHECK(!ec, "cannot stat: {}", ec.message());
  ST_CHECK(file_size >= 8, "truncated: {} bytes, fewer than the 8-byte header length", file_size);
  unsigned char len[8];
  ST_CHECK(std::fread(len, 1, 8, f.get()) == 8, "reading the header length failed");
  uint64_t header_len = 0;
  for (int i = 0; i < 8; ++i) header_len |= static_cast<uint64_t>(len[i]) << (8 * i);
  ST_CHECK(header_len <= kMaxHeaderBytes, "header length {} exceeds the {}-byte limit", header_len,
           kMaxHeaderBytes);
  ST_CHECK(header_len <= file_size - 8, "truncated: header length {} but only {} bytes follow",
           header_len, file_size - 8);
  std::string text(header_len, '\0');
  ST_CHECK(std::fread(text.data(), 1, header_len, f.get()) == header_len,
           "reading the header failed");
  const uint64_t data_start = 8 + header_len;
  const uint64_t data_size = file_size - data_start;

  json header;
  try {
    header = json::parse(text);
  } catch (const json::exception& e) {
    DPLAB_FAIL("safetensors file '{}': bad JSON header: {}", path, e.what());
  }
  ST_CHECK(header.is_object(), "the JSON header is not an object");

  struct Entry {
    std::string name;
    DType dtype;
    Shape shape;
    uint64_t begin, end;
  };
  std::vector<Entry> entries;
  if (metadata) metadata->clear();
  for (auto it = header.begin(); it != header.end(); ++it) {
    const std::string& name = it.key();
    const json& v = it.value();
    if (name == "__metadata__") {
      ST_CHECK(v.is_object(), "__metadata__ is not an object");
      for (auto m = v.begin(); m != v.end(); ++m) {
        ST_CHECK(m.value().is_string(), "__metadata__ value for '{}' is not a string", m.key());
        if (metadata) (*metadata)[m.key()] = m.value().get<std::string>();
      }
      continue;
    }
    ST_CHECK(v.is_object(), "entry '{}' is not an object", name);
    for (auto k = v.begin(); k != v.end(); ++k)
      ST_CHECK(k.key() == "dtype" || k.key() == "shape" || k.key() == "data_offsets",
               "entry '{}' has unknown field '{}'", name, k.key());
    ST_CHECK(v.contains("dtype") && v["dtype"].is_string(), "entry '{}' has no dtype string", name);
    ST_CHECK(v.contains("shape") && v["shape"].is_array(), "entry '{}' has no shape array", name);
    ST_CHECK(
        v.contains("data_offsets") && v["data_offsets"].is_array() && v["data_offsets"].size() == 2,
        "entry '{}' needs data_offsets [begin, end]", name);
    Entry e;
    e.name = name;
    const std::string dt = v["dtype"].get<std::string>();
    try {
      e.dtype = dtype_from_safetensors(dt);
    } catch (const Error&) {
      DPLAB_FAIL(
          "safetensors file '{}': tensor '{}' has unknown or unsupported dtype '{}' "
          "(dplab reads F32, BF16, F16, I32, I64, U8)",
          path, name, dt);
    }
    // `extent`, the product of the non-zero dimensions, is bounded rather than the element
    // count: beside a zero dimension any other would pass a bound on the count, yet strides
    // (products of trailing dimensions) and the int64 shape must hold it (found writing the fuzz
    // target: [0, 2^64-1] came back as a tensor of shape [0, -1]).
    uint64_t numel = 1, extent = 1;
    for (const json& d : v["shape"]) {
      ST_CHECK(d.is_number_unsigned() || (d.is_number_integer() && d.get<int64_t>() >= 0),
               "tensor '{}' has an invalid dimension {}", name, d.dump());
      const uint64_t dim = d.get<uint64_t>();
      ST_CHECK(dim == 0 || extent <= uint64_t(INT64_MAX) / dim / 8,
               "tensor '{}' is impossibly large: dimension {} in shape {}", name, dim,
               v["shape"].dump());
      if (dim != 0) extent *= dim;
      numel *= dim;
      e.shape.push_back(static_cast<int64_t>(dim));
    }
    for (const json& o : v["data_offsets"])
      ST_CHECK(o.is_number_unsigned() || (o.is_number_integer() && o.get<int64_t>() >= 0),
               "tensor '{}' has an invalid data offset {}", name, o.dump());
    e.begin = v["data_offsets"][0].get<uint64_t>();
    e.end = v["data_offsets"][1].get<uint64_t>();
    ST_CHECK(e.begin <= e.end, "tensor '{}' has data_offsets [{}, {}] with begin > end", name,
             e.begin, e.end);
    ST_CHECK(e.end <= data_size,
             "tensor '{}' data_offsets [{}, {}] out of range: the data section has {} bytes "
             "(truncated file?)",
             name, e.begin, e.end, data_size);
    ST_CHECK(numel * dtype_size(e.dtype) == e.end - e.begin,
             "tensor '{}': shape {} x {} is {} bytes but data_offsets [{}, {}] span {}", name,
             shape_str(e.shape), dt, numel * dtype_size(e.dtype), e.begin, e.end, e.end - e.begin);
    entries.push_back(std::move(e));
  }
  // The tensors must tile the data section exactly: no overlaps, no holes, nothing after.
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t expect = 0;
  for (size_t i = 0; i < entries.size(); ++i) {
    const Entry& e = entries[i];
    ST_CHECK(e.begin >= expect,
             "tensor '{}' data_offsets [{}, {}] overlap tensor '{}' (ends at {})", e.name, e.begin,
             e.end, entries[i - 1].name, expect);
    ST_CHECK(e.begin == expect, "bytes [{}, {}) before tensor '{}' belong to no tensor", expect,
             e.begin, e.name);
    expect = e.end;
  }
  ST_CHECK(expect == data_size, "the data section has {} bytes but the tensors cover {}", data_size,
           expect);

  std::vector<NamedTensor> out;
  out.reserve(entries.size());
  for (const Entry& e : entries) {
    Tensor t = Tensor::empty(e.shape, e.dtype);
    const size_t n = e.end - e.begin;
    if (n > 0) {
      ST_CHECK(std::fseek(f.get(), static_cast<long>(data_start + e.begin), SEEK_SET) == 0 &&
                   std::fread(t.raw_data(), 1, n, f.get()) == n,
               "reading tensor '{}' failed (truncated?)", e.name);
    }
    out.push_back({e.name, t});
  }
  return out;
#undef ST_CHECK
}

}  // namespace dplab
