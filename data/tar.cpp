#include "dplab/data/tar.h"

#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <cstring>
#include <functional>

namespace dplab {
namespace {

constexpr size_t kBlock = 512;

uint64_t round_up(uint64_t n) {
  return (n + kBlock - 1) / kBlock * kBlock;
}

// A numeric header field: octal digits padded with spaces/NULs, or GNU base-256 when the first
// byte has its high bit set.
bool parse_number(const uint8_t* p, size_t n, uint64_t& out) {
  out = 0;
  if (p[0] & 0x80) {
    if (p[0] & 0x40) return false;  // negative
    out = p[0] & 0x3f;
    for (size_t i = 1; i < n; ++i) {
      if (out >> 55) return false;
      out = (out << 8) | p[i];
    }
    return true;
  }
  size_t i = 0;
  while (i < n && (p[i] == ' ' || p[i] == 0)) ++i;
  bool any = false;
  for (; i < n && p[i] >= '0' && p[i] <= '7'; ++i) {
    if (out >> 60) return false;
    out = out * 8 + uint64_t(p[i] - '0');
    any = true;
  }
  for (; i < n; ++i)
    if (p[i] != ' ' && p[i] != 0) return false;
  return any;
}

std::string field(const uint8_t* p, size_t n) {
  size_t len = 0;
  while (len < n && p[len] != 0) ++len;
  return std::string(reinterpret_cast<const char*>(p), len);
}

void put_octal(uint8_t* p, size_t n, uint64_t v) {
  // n-1 octal digits, zero padded, then NUL.
  for (size_t i = n - 1; i-- > 0;) {
    p[i] = uint8_t('0' + (v & 7));
    v >>= 3;
  }
  p[n - 1] = 0;
}

uint64_t header_checksum(const uint8_t* b) {
  uint64_t s = 0;
  for (size_t i = 0; i < kBlock; ++i) s += (i >= 148 && i < 156) ? uint8_t(' ') : b[i];
  return s;
}

struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

bool parse_tar_header(const uint8_t* b, std::string& name, uint64_t& size, char& type,
                      std::string& why) {
  uint64_t stored;
  if (!parse_number(b + 148, 8, stored)) {
    why = "unreadable header checksum field";
    return false;
  }
  const uint64_t actual = header_checksum(b);
  if (stored != actual) {
    why = fmt::format("header checksum mismatch (stored {}, computed {})", stored, actual);
    return false;
  }
  if (!parse_number(b + 124, 12, size)) {
    why = "unreadable size field";
    return false;
  }
  type = char(b[156]);
  name = field(b, 100);
  if (std::memcmp(b + 257, "ustar", 5) == 0) {
    const std::string prefix = field(b + 345, 155);
    if (!prefix.empty()) name = prefix + "/" + name;
  }
  return true;
}

std::vector<uint8_t> read_file_range(int fd, uint64_t offset, uint64_t size,
                                     const std::string& what) {
  std::vector<uint8_t> out(size);
  uint64_t done = 0;
  while (done < size) {
    const ssize_t r = ::pread(fd, out.data() + done, size - done, off_t(offset + done));
    if (r < 0) throw TarError(fmt::format("{}: read error: {}", what, std::strerror(errno)));
    if (r == 0)
      throw TarError(
          fmt::format("{}: truncated: expected {} bytes at offset {}, file ends after {}", what,
                      size, offset, done));
    done += uint64_t(r);
  }
  return out;
}

std::string parse_pax_records(const uint8_t* data, size_t size, PaxFields& out) {
  size_t pos = 0;
  while (pos < size) {
    // Some writers pad the body with NULs: the records end there.
    if (data[pos] == 0) {
      for (size_t i = pos; i < size; ++i)
        if (data[i] != 0)
          return fmt::format("record at byte {}: NUL padding followed by data", pos);
      return {};
    }
    // "LEN key=value\n", LEN counting the whole record in decimal.
    size_t sp = pos;
    uint64_t len = 0;
    while (sp < size && data[sp] >= '0' && data[sp] <= '9' && sp - pos < 20)
      len = len * 10 + uint64_t(data[sp++] - '0');
    if (sp == pos || sp >= size || data[sp] != ' ')
      return fmt::format(
          "record at byte {}: expected 'LENGTH key=value\\n' (decimal length, "
          "a space), found byte 0x{:02x} at byte {}",
          pos, sp < size ? data[sp] : 0, sp);
    const uint64_t prefix = sp - pos + 1;  // the digits and the space
    if (len < prefix + 3 || len > size - pos)
      return fmt::format(
          "record at byte {}: length {} is impossible (expected {} to {}: its own "
          "'{} ' prefix plus at least 'k=\\n', within the {}-byte header)",
          pos, len, prefix + 3, size - pos, len, size);
    const size_t end = pos + size_t(len);  // one past the record's '\n'
    if (data[end - 1] != '\n')
      return fmt::format("record at byte {} of length {}: does not end in a newline", pos, len);
    const uint8_t* rec = data + sp + 1;
    const size_t rec_len = end - 1 - (sp + 1);
    const auto* eq = static_cast<const uint8_t*>(std::memchr(rec, '=', rec_len));
    if (eq == nullptr || eq == rec)
      return fmt::format("record at byte {}: expected key=value, found no key or no '='", pos);
    const std::string key(reinterpret_cast<const char*>(rec), size_t(eq - rec));
    const std::string value(reinterpret_cast<const char*>(eq + 1), size_t(rec + rec_len - eq - 1));
    if (key == "path") {
      if (value.empty() || value.size() > kMaxMemberNameBytes ||
          value.find('\0') != std::string::npos)
        return fmt::format("record at byte {}: path of {} bytes: expected 1 to {} bytes, no NUL",
                           pos, value.size(), kMaxMemberNameBytes);
      out.path = value;
    } else if (key == "size") {
      uint64_t v = 0;
      bool ok = !value.empty() && value.size() <= 19;
      for (char c : value) {
        ok = ok && c >= '0' && c <= '9';
        v = v * 10 + uint64_t(c - '0');
      }
      if (!ok)
        return fmt::format("record at byte {}: size '{}': expected at most 19 decimal digits", pos,
                           value.substr(0, 40));
      out.has_size = true;
      out.size = v;
    }
    pos = end;
  }
  return {};
}

namespace {

// Reads n bytes at an offset known to lie inside the archive.
using RangeReader = std::function<std::vector<uint8_t>(uint64_t offset, uint64_t n)>;

TarIndex index_archive(const RangeReader& read, uint64_t file_size, const std::string& path) {
  TarIndex idx;
  uint64_t pos = 0;
  // From a GNU 'L' entry or pax 'path' / 'size' records, for the next member.
  std::string long_name;
  PaxFields pax;
  while (true) {
    if (pos + kBlock > file_size) {
      // No end-of-archive blocks: accept a clean end exactly at a block boundary (many writers
      // omit them), report anything else.
      if (pos != file_size)
        idx.error = fmt::format("{}: truncated header at offset {} (file has {} bytes)", path, pos,
                                file_size);
      break;
    }
    const std::vector<uint8_t> b = read(pos, kBlock);
    bool zero = true;
    for (uint8_t c : b) zero = zero && c == 0;
    if (zero) break;  // end of archive
    std::string name, why;
    uint64_t size = 0;
    char type = 0;
    if (!parse_tar_header(b.data(), name, size, type, why)) {
      idx.error = fmt::format("{}: bad header at offset {}: {}", path, pos, why);
      break;
    }
    const bool regular = type == '0' || type == 0 || type == '7';
    if (regular && pax.has_size) size = pax.size;  // pax 'size' overrides the header field
    if (!long_name.empty()) name = long_name;
    const uint64_t data = pos + kBlock;
    if (size > file_size - data) {
      idx.error = fmt::format(
          "{}: entry '{}' at offset {} is truncated: {} bytes of data, file ends "
          "after {}",
          path, name, pos, size, file_size - data);
      break;
    }
    if (type == 'L' || type == 'x') {
      // Metadata for the next member, read whole: bounded so a header claiming gigabytes of
      // it is damage, not an allocation.
      const uint64_t limit = type == 'L' ? kMaxMemberNameBytes + 1 : kMaxPaxHeaderBytes;
      if (size > limit) {
        idx.error =
            fmt::format("{}: {} header at offset {} holds {} bytes, expected at most {}", path,
                        type == 'L' ? "GNU long-name" : "pax extended", pos, size, limit);
        break;
      }
      const std::vector<uint8_t> body = read(data, size);
      if (type == 'L') {
        long_name = field(body.data(), size_t(size));
        if (long_name.empty()) {
          idx.error =
              fmt::format("{}: GNU long-name header at offset {} holds an empty name", path, pos);
          break;
        }
      } else {
        PaxFields next = pax;  // several 'x' headers may precede one member
        const std::string bad = parse_pax_records(body.data(), body.size(), next);
        if (!bad.empty()) {
          idx.error = fmt::format("{}: pax extended header at offset {} (data at {}): {}", path,
                                  pos, data, bad);
          break;
        }
        pax = next;
        if (!pax.path.empty()) long_name = pax.path;
      }
    } else {
      if (regular) idx.members.push_back({name, data, size});
      // Directories, links, global headers are not samples; either way the metadata was theirs.
      long_name.clear();
      pax = {};
    }
    pos = data + round_up(size);
  }
  return idx;
}

}  // namespace

TarIndex index_tar(const std::string& path) {
  Fd f{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (f.fd < 0)
    throw TarError(fmt::format("cannot open tar file {}: {}", path, std::strerror(errno)));
  const off_t end = ::lseek(f.fd, 0, SEEK_END);
  const uint64_t file_size = end < 0 ? 0 : uint64_t(end);
  return index_archive(
      [&](uint64_t offset, uint64_t n) { return read_file_range(f.fd, offset, n, path); },
      file_size, path);
}

TarIndex index_tar_buffer(const uint8_t* data, size_t size, const std::string& name) {
  return index_archive(
      [&](uint64_t offset, uint64_t n) {
        return std::vector<uint8_t>(data + offset, data + offset + n);
      },
      size, name);
}

TarWriter::TarWriter(const std::string& path) : path_(path) {
  f_ = std::fopen(path.c_str(), "wb");
  if (f_ == nullptr)
    throw TarError(fmt::format("cannot create tar file {}: {}", path, std::strerror(errno)));
}

TarWriter::~TarWriter() {
  try {
    close();
  } catch (...) {
  }
}

void TarWriter::write(const void* p, size_t n) {
  if (n == 0) return;  // (an empty member's data pointer may be null)
  if (std::fwrite(p, 1, n, f_) != n)
    throw TarError(fmt::format("{}: write error: {}", path_, std::strerror(errno)));
}

void TarWriter::add(const std::string& name, const uint8_t* data, size_t size, char type) {
  DPLAB_CHECK(f_ != nullptr, "TarWriter {}: add after close", path_);
  std::array<uint8_t, kBlock> h{};
  std::string prefix, base = name;
  if (name.size() > 100) {
    const auto slash = name.rfind('/', 155);
    if (name.size() > 255 || slash == std::string::npos || name.size() - slash - 1 > 100)
      throw TarError(fmt::format("{}: member name '{}' does not fit a ustar header", path_, name));
    prefix = name.substr(0, slash);
    base = name.substr(slash + 1);
  }
  std::memcpy(h.data(), base.data(), base.size());
  put_octal(h.data() + 100, 8, 0644);
  put_octal(h.data() + 108, 8, 0);
  put_octal(h.data() + 116, 8, 0);
  put_octal(h.data() + 124, 12, size);
  put_octal(h.data() + 136, 12, 0);  // mtime 0: shards are reproducible byte for byte
  h[156] = uint8_t(type);
  std::memcpy(h.data() + 257, "ustar", 6);
  h[263] = '0';
  h[264] = '0';
  std::memcpy(h.data() + 345, prefix.data(), prefix.size());
  put_octal(h.data() + 148, 7, header_checksum(h.data()));
  h[155] = ' ';
  write(h.data(), kBlock);
  write(data, size);
  static const std::array<uint8_t, kBlock> zeros{};
  write(zeros.data(), size_t(round_up(size) - size));
}

void TarWriter::close() {
  if (f_ == nullptr) return;
  static const std::array<uint8_t, kBlock> zeros{};
  write(zeros.data(), kBlock);
  write(zeros.data(), kBlock);
  const int rc = std::fclose(f_);
  f_ = nullptr;
  if (rc != 0) throw TarError(fmt::format("{}: close failed: {}", path_, std::strerror(errno)));
}

}  // namespace dplab
