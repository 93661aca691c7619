#include "dplab/data/idx.h"

#include <zlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "dplab/core/error.h"

namespace dplab {
namespace {

constexpr uint32_t kImagesMagic = 0x00000803;
constexpr uint32_t kLabelsMagic = 0x00000801;

uint32_t read_be32(const std::vector<uint8_t>& b, size_t at) {
  return (uint32_t(b[at]) << 24) | (uint32_t(b[at + 1]) << 16) | (uint32_t(b[at + 2]) << 8) |
         uint32_t(b[at + 3]);
}

void put_be32(std::vector<uint8_t>& b, uint32_t v) {
  b.push_back(uint8_t(v >> 24));
  b.push_back(uint8_t(v >> 16));
  b.push_back(uint8_t(v >> 8));
  b.push_back(uint8_t(v));
}

std::vector<uint8_t> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  DPLAB_CHECK(in.good(), "{}: cannot open for reading", path);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

std::vector<uint8_t> gunzip(const std::string& path, const std::vector<uint8_t>& in) {
  z_stream zs{};
  // 16 + MAX_WBITS: expect a gzip wrapper.
  DPLAB_CHECK(inflateInit2(&zs, 16 + MAX_WBITS) == Z_OK, "{}: zlib inflateInit2 failed", path);
  std::vector<uint8_t> out;
  std::vector<uint8_t> chunk(1 << 20);
  zs.next_in = const_cast<Bytef*>(in.data());
  zs.avail_in = static_cast<uInt>(in.size());
  int rc = Z_OK;
  while (rc != Z_STREAM_END) {
    zs.next_out = chunk.data();
    zs.avail_out = static_cast<uInt>(chunk.size());
    rc = inflate(&zs, Z_NO_FLUSH);
    if (rc != Z_OK && rc != Z_STREAM_END) {
      std::string msg = zs.msg ? zs.msg : "error " + std::to_string(rc);
      size_t at = zs.total_in;
      inflateEnd(&zs);
      if (rc == Z_BUF_ERROR)
        DPLAB_FAIL("{}: truncated gzip stream (compressed data ends at byte {})", path, at);
      DPLAB_FAIL("{}: corrupt gzip data at compressed byte {}: {}", path, at, msg);
    }
    out.insert(out.end(), chunk.data(), chunk.data() + (chunk.size() - zs.avail_out));
    if (rc != Z_STREAM_END && zs.avail_in == 0 && zs.avail_out != 0) {
      size_t at = zs.total_in;
      inflateEnd(&zs);
      DPLAB_FAIL("{}: truncated gzip stream (compressed data ends at byte {})", path, at);
    }
  }
  inflateEnd(&zs);
  return out;
}

// Checks the header of an IDX file and returns its dimensions.
std::vector<uint32_t> parse_header(const std::string& path, const std::vector<uint8_t>& b,
                                   uint32_t expected_magic, const char* what) {
  DPLAB_CHECK(b.size() >= 4, "{}: truncated IDX header: file has {} bytes, the magic needs 4", path,
              b.size());
  const uint32_t magic = read_be32(b, 0);
  DPLAB_CHECK(magic == expected_magic,
              "{}: bad IDX magic 0x{:08x} for {} (expected 0x{:08x}: u8 data with {} dims)", path,
              magic, what, expected_magic, expected_magic & 0xff);
  const size_t ndim = expected_magic & 0xff;
  const size_t header = 4 + 4 * ndim;
  DPLAB_CHECK(b.size() >= header,
              "{}: truncated IDX header at byte offset {}: the header needs {} bytes", path,
              b.size(), header);
  std::vector<uint32_t> dims(ndim);
  size_t expected = 1;
  for (size_t d = 0; d < ndim; ++d) {
    dims[d] = read_be32(b, 4 + 4 * d);
    expected *= dims[d];
  }
  const size_t have = b.size() - header;
  DPLAB_CHECK(have >= expected,
              "{}: truncated {} data at byte offset {}: the header promises {} bytes of data "
              "after the {}-byte header, only {} are present",
              path, what, b.size(), expected, header, have);
  DPLAB_CHECK(have == expected,
              "{}: size mismatch: the header promises {} bytes of {} data, the file has {} "
              "({} extra bytes after offset {})",
              path, expected, what, have, have - expected, header + expected);
  return dims;
}

void write_bytes(const std::string& path, const std::vector<uint8_t>& bytes, bool gzip) {
  std::filesystem::path p(path);
  if (p.has_parent_path()) std::filesystem::create_directories(p.parent_path());
  const std::string tmp = path + ".tmp";
  if (gzip) {
    gzFile f = gzopen(tmp.c_str(), "wb9");
    DPLAB_CHECK(f != nullptr, "{}: cannot open for writing", tmp);
    size_t done = 0;
    while (done < bytes.size()) {
      const unsigned n = static_cast<unsigned>(std::min<size_t>(bytes.size() - done, 1u << 30));
      const int w = gzwrite(f, bytes.data() + done, n);
      if (w <= 0) {
        gzclose(f);
        DPLAB_FAIL("{}: gzip write failed", tmp);
      }
      done += static_cast<size_t>(w);
    }
    DPLAB_CHECK(gzclose(f) == Z_OK, "{}: gzip close failed", tmp);
  } else {
    std::ofstream out(tmp, std::ios::binary);
    DPLAB_CHECK(out.good(), "{}: cannot open for writing", tmp);
    out.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
    DPLAB_CHECK(out.good(), "{}: write failed", tmp);
  }
  std::filesystem::rename(tmp, path);
}

}  // namespace

std::vector<uint8_t> read_maybe_gzip(const std::string& path) {
  std::vector<uint8_t> raw = read_file(path);
  if (raw.size() >= 2 && raw[0] == 0x1f && raw[1] == 0x8b) return gunzip(path, raw);
  return raw;
}

IdxImages read_idx_images(const std::string& path) {
  std::vector<uint8_t> b = read_maybe_gzip(path);
  auto dims = parse_header(path, b, kImagesMagic, "image");
  IdxImages r;
  r.count = dims[0];
  r.rows = dims[1];
  r.cols = dims[2];
  r.pixels.assign(b.begin() + 16, b.end());
  return r;
}

std::vector<uint8_t> read_idx_labels(const std::string& path) {
  std::vector<uint8_t> b = read_maybe_gzip(path);
  parse_header(path, b, kLabelsMagic, "label");
  return std::vector<uint8_t>(b.begin() + 8, b.end());
}

void write_idx_images(const std::string& path, const IdxImages& images, bool gzip) {
  DPLAB_CHECK(int64_t(images.pixels.size()) == images.count * images.rows * images.cols,
              "write_idx_images {}: {} pixels for {} images of {}x{}", path, images.pixels.size(),
              images.count, images.rows, images.cols);
  std::vector<uint8_t> b;
  b.reserve(16 + images.pixels.size());
  put_be32(b, kImagesMagic);
  put_be32(b, uint32_t(images.count));
  put_be32(b, uint32_t(images.rows));
  put_be32(b, uint32_t(images.cols));
  b.insert(b.end(), images.pixels.begin(), images.pixels.end());
  write_bytes(path, b, gzip);
}

void write_idx_labels(const std::string& path, const std::vector<uint8_t>& labels, bool gzip) {
  std::vector<uint8_t> b;
  b.reserve(8 + labels.size());
  put_be32(b, kLabelsMagic);
  put_be32(b, uint32_t(labels.size()));
  b.insert(b.end(), labels.begin(), labels.end());
  write_bytes(path, b, gzip);
}

}  // namespace dplab
