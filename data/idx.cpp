#include "dplab/data/idx.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "dplab/core/error.h"

namespace dplab {
namespace {

constexpr uint32_t kImagesMagic = 0x00000803;
constexpr uint32_t kLabelsMagic = 0x00000801;

uint32_t read_be32(const uint8_t* b, size_t at) {
  return (uint32_t(b[at]) << 24) | (uint32_t(b[at + 1]) << 16) | (uint32_t(b[at + 2]) << 8) |
         uint32_t(b[at + 3]);
}

void put_be32(std::vector<uint8_t>& b, uint32_t v) {
  b.push_back(uint8_t(v >> 24));
  b.push_back(uint8_t(v >> 16));
  b.push_back(uint8_t(v >> 8));
  b.push_back(uint8_t(v));
}

// A forward-only byte stream: read() returns fewer than n bytes only at the end.
class ByteSource {
 public:
  virtual ~ByteSource() = default;
  virtual size_t read(uint8_t* dst, size_t n) = 0;
};

class MemorySource : public ByteSource {
 public:
  MemorySource(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  size_t read(uint8_t* dst, size_t n) override {
    n = std::min(n, size_ - pos_);
    if (n > 0) std::memcpy(dst, data_ + pos_, n);
    pos_ += n;
    return n;
  }

 private:
  const uint8_t* data_;
  size_t size_, pos_ = 0;
};

class FileSource : public ByteSource {
 public:
  explicit FileSource(const std::string& path) : path_(path), f_(std::fopen(path.c_str(), "rb")) {
    DPLAB_CHECK(f_ != nullptr, "{}: cannot open for reading: {}", path, std::strerror(errno));
  }
  ~FileSource() override { std::fclose(f_); }
  FileSource(const FileSource&) = delete;
  FileSource& operator=(const FileSource&) = delete;
  size_t read(uint8_t* dst, size_t n) override {
    const size_t got = std::fread(dst, 1, n, f_);
    DPLAB_CHECK(got == n || !std::ferror(f_), "{}: read error: {}", path_, std::strerror(errno));
    return got;
  }

 private:
  std::string path_;
  std::FILE* f_;
};

// Gunzips a source as it is read (concatenated gzip members, as gzip -d reads them). Errors
// give the compressed byte offset.
class GunzipSource : public ByteSource {
 public:
  GunzipSource(ByteSource& src, std::string name) : src_(src), name_(std::move(name)) {
    // 16 + MAX_WBITS: expect a gzip wrapper.
    DPLAB_CHECK(inflateInit2(&zs_, 16 + MAX_WBITS) == Z_OK, "{}: zlib inflateInit2 failed", name_);
  }
  ~GunzipSource() override { inflateEnd(&zs_); }
  GunzipSource(const GunzipSource&) = delete;
  GunzipSource& operator=(const GunzipSource&) = delete;

  size_t read(uint8_t* dst, size_t n) override {
    size_t got = 0;
    while (got < n && !done_) {
      if (zs_.avail_in == 0 && !refill()) {
        if (in_member_)
          DPLAB_FAIL("{}: truncated gzip stream (compressed data ends at byte {})", name_,
                     offset());
        done_ = true;
        break;
      }
      if (!in_member_) {
        // Another member must start with the gzip magic; anything else after a member is damage.
        if (zs_.avail_in < 2 && !refill()) {
          DPLAB_FAIL("{}: 1 stray byte after the gzip data at compressed byte {}", name_, offset());
        }
        if (zs_.next_in[0] != 0x1f || zs_.next_in[1] != 0x8b)
          DPLAB_FAIL("{}: data after the end of the gzip stream at compressed byte {} is not gzip",
                     name_, offset());
        DPLAB_CHECK(inflateReset(&zs_) == Z_OK, "{}: zlib inflateReset failed", name_);
        in_member_ = true;
      }
      zs_.next_out = dst + got;
      zs_.avail_out = static_cast<uInt>(std::min<size_t>(n - got, 1u << 30));
      const uInt before = zs_.avail_out;
      const int rc = inflate(&zs_, Z_NO_FLUSH);
      got += before - zs_.avail_out;
      if (rc == Z_STREAM_END) {
        in_member_ = false;
      } else if (rc == Z_BUF_ERROR) {
        // No progress without more input: refilled at the top of the loop.
      } else if (rc != Z_OK) {
        DPLAB_FAIL("{}: corrupt gzip data at compressed byte {}: {}", name_, offset(),
                   zs_.msg ? zs_.msg : "zlib error " + std::to_string(rc));
      }
    }
    return got;
  }

 private:
  // Appends source bytes to the unread input; false at the source's end.
  bool refill() {
    if (zs_.avail_in > 0 && zs_.next_in != in_.data())
      std::memmove(in_.data(), zs_.next_in, zs_.avail_in);
    const size_t have = zs_.avail_in;
    const size_t got = src_.read(in_.data() + have, in_.size() - have);
    read_total_ += got;
    zs_.next_in = in_.data();
    zs_.avail_in = static_cast<uInt>(have + got);
    return got > 0;
  }
  uint64_t offset() const { return read_total_ - zs_.avail_in; }

  ByteSource& src_;
  std::string name_;
  z_stream zs_{};
  std::vector<uint8_t> in_ = std::vector<uint8_t>(size_t(1) << 16);
  uint64_t read_total_ = 0;
  bool in_member_ = true, done_ = false;
};

// A source that first replays bytes already read (the magic probe) from another.
class PrefixedSource : public ByteSource {
 public:
  PrefixedSource(std::vector<uint8_t> prefix, ByteSource& rest)
      : prefix_(std::move(prefix)), rest_(rest) {}
  size_t read(uint8_t* dst, size_t n) override {
    size_t got = 0;
    while (got < n && pos_ < prefix_.size()) dst[got++] = prefix_[pos_++];
    if (got < n) got += rest_.read(dst + got, n - got);
    return got;
  }

 private:
  std::vector<uint8_t> prefix_;
  size_t pos_ = 0;
  ByteSource& rest_;
};

struct IdxData {
  std::vector<uint32_t> dims;
  std::vector<uint8_t> data;
};

// Checks the header of an IDX stream against the expected magic and the size bound, then reads
// exactly the data it declares and probes for more.
IdxData parse_idx(ByteSource& src, const std::string& path, uint32_t expected_magic,
                  const char* what, uint64_t max_bytes) {
  uint8_t head[4 + 4 * 3];
  size_t got = src.read(head, 4);
  DPLAB_CHECK(got == 4, "{}: truncated IDX header: file has {} bytes, the magic needs 4", path,
              got);
  const uint32_t magic = read_be32(head, 0);
  DPLAB_CHECK(magic == expected_magic,
              "{}: bad IDX magic 0x{:08x} for {} (expected 0x{:08x}: u8 data with {} dims)", path,
              magic, what, expected_magic, expected_magic & 0xff);
  const size_t ndim = expected_magic & 0xff;
  const size_t header = 4 + 4 * ndim;
  got += src.read(head + 4, header - 4);
  DPLAB_CHECK(got == header,
              "{}: truncated IDX header at byte offset {}: the header needs {} bytes", path, got,
              header);
  IdxData r;
  r.dims.resize(ndim);
  uint64_t expected = 1;
  std::string shape;
  for (size_t d = 0; d < ndim; ++d) {
    r.dims[d] = read_be32(head, 4 + 4 * d);
    shape += (d ? " x " : "") + std::to_string(r.dims[d]);
  }
  for (size_t d = 1; d < ndim; ++d)
    DPLAB_CHECK(r.dims[d] > 0, "{}: IDX dimension {} (byte offset {}) is 0: {} {} is empty", path,
                d, 4 + 4 * d, what, shape);
  bool too_big = false;  // (the product saturates: dims are < 2^32 each)
  for (size_t d = 0; d < ndim; ++d) {
    if (r.dims[d] != 0 && expected > UINT64_MAX / r.dims[d]) {
      expected = UINT64_MAX;
      too_big = true;
    } else {
      expected *= r.dims[d];
    }
  }
  DPLAB_CHECK(!too_big && expected <= max_bytes,
              "{}: the IDX header declares {} data of {} = {} bytes, more than the limit of {} "
              "(refused before reading the data)",
              path, what, shape, too_big ? "over 2^64" : std::to_string(expected), max_bytes);
  r.data.resize(size_t(expected));
  const size_t have = src.read(r.data.data(), r.data.size());
  DPLAB_CHECK(have == expected,
              "{}: truncated {} data at byte offset {}: the header promises {} bytes of data "
              "after the {}-byte header, only {} are present",
              path, what, header + have, expected, header, have);
  // Extra bytes: counted up to a bound (reading on through a bomb would defeat the point).
  constexpr size_t kProbe = size_t(1) << 20;
  std::vector<uint8_t> probe(size_t(1) << 16);
  size_t extra = 0;
  while (extra <= kProbe) {
    const size_t n = src.read(probe.data(), probe.size());
    if (n == 0) break;
    extra += n;
  }
  if (extra > kProbe)
    DPLAB_FAIL(
        "{}: size mismatch: the header promises {} bytes of {} data, the file has more than {} "
        "extra bytes after offset {} (not read further)",
        path, expected, what, kProbe, header + expected);
  DPLAB_CHECK(extra == 0,
              "{}: size mismatch: the header promises {} bytes of {} data, the file has {} ({} "
              "extra bytes after offset {})",
              path, expected, what, expected + extra, extra, header + expected);
  return r;
}

IdxData parse_idx_source(ByteSource& raw, const std::string& path, uint32_t magic, const char* what,
                         uint64_t max_bytes) {
  // Gzip is detected by its magic 0x1f 0x8b, not by the file name.
  std::vector<uint8_t> probe(2);
  probe.resize(raw.read(probe.data(), 2));
  PrefixedSource src(probe, raw);
  if (probe.size() == 2 && probe[0] == 0x1f && probe[1] == 0x8b) {
    GunzipSource gz(src, path);
    return parse_idx(gz, path, magic, what, max_bytes);
  }
  return parse_idx(src, path, magic, what, max_bytes);
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

namespace {

IdxImages images_of(IdxData d) {
  IdxImages r;
  r.count = d.dims[0];
  r.rows = d.dims[1];
  r.cols = d.dims[2];
  r.pixels = std::move(d.data);
  return r;
}

}  // namespace

IdxImages read_idx_images(const std::string& path, uint64_t max_bytes) {
  FileSource f(path);
  return images_of(parse_idx_source(f, path, kImagesMagic, "image", max_bytes));
}

std::vector<uint8_t> read_idx_labels(const std::string& path, uint64_t max_bytes) {
  FileSource f(path);
  return parse_idx_source(f, path, kLabelsMagic, "label", max_bytes).data;
}

IdxImages parse_idx_images(const uint8_t* data, size_t size, const std::string& name,
                           uint64_t max_bytes) {
  MemorySource m(data, size);
  return images_of(parse_idx_source(m, name, kImagesMagic, "image", max_bytes));
}

std::vector<uint8_t> parse_idx_labels(const uint8_t* data, size_t size, const std::string& name,
                                      uint64_t max_bytes) {
  MemorySource m(data, size);
  return parse_idx_source(m, name, kLabelsMagic, "label", max_bytes).data;
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
