// A small ustar (POSIX tar) reader and writer: 512-byte headers, sizes in octal (or GNU
// base-256), header checksums verified, regular files only (directories and other entry types
// are skipped; GNU 'L' long names and pax 'path' records name the next entry). The reader
// indexes a file's members without reading their data, so datasets can pread one member.
#pragma once
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "dplab/core/error.h"

namespace dplab {

class TarError : public Error {
 public:
  using Error::Error;
};

struct TarMember {
  std::string name;
  uint64_t offset = 0;  // of the data, in bytes from the start of the archive
  uint64_t size = 0;
};

struct TarIndex {
  std::vector<TarMember> members;  // regular files, in archive order
  // Empty when the whole archive was read; otherwise why reading stopped (bad checksum,
  // truncated header or data), with the archive path and byte offset. `members` then holds the
  // entries before the damage.
  std::string error;
};

// Bounds on metadata read whole: member names (GNU 'L' data, pax 'path'; PATH_MAX) and pax
// extended headers (real ones hold a few records).
constexpr uint64_t kMaxMemberNameBytes = 4096;
constexpr uint64_t kMaxPaxHeaderBytes = uint64_t(1) << 20;

// Lists the regular files of the archive at `path`. Throws TarError if the file cannot be
// opened; damage inside it (bad checksum or number, truncation, metadata over the bounds above,
// malformed pax records) is reported in TarIndex::error with the archive and byte offset, never
// by crashing.
TarIndex index_tar(const std::string& path);
// The same for an archive in memory; `name` stands for the path in errors.
TarIndex index_tar_buffer(const uint8_t* data, size_t size, const std::string& name);

// The pax records dplab uses for the next member: 'path' (its name) and 'size' (its data size,
// overriding the header's field, as for members of 8 GiB and more).
struct PaxFields {
  std::string path;
  bool has_size = false;
  uint64_t size = 0;
};
// Parses a pax extended header's data ("LEN key=value\n" records) into `out`; returns "" or
// what is wrong, with the byte offset of the bad record.
std::string parse_pax_records(const uint8_t* data, size_t size, PaxFields& out);
// Parses one 512-byte header: false (and `why`) on a bad checksum or size field.
bool parse_tar_header(const uint8_t* block, std::string& name, uint64_t& size, char& type,
                      std::string& why);

// Reads `size` bytes at `offset` of an open file (pread; safe from several threads).
std::vector<uint8_t> read_file_range(int fd, uint64_t offset, uint64_t size,
                                     const std::string& what);

class TarWriter {
 public:
  explicit TarWriter(const std::string& path);
  ~TarWriter();
  TarWriter(const TarWriter&) = delete;
  TarWriter& operator=(const TarWriter&) = delete;
  // Appends a regular file (names up to 100 bytes, or 255 split at a '/' into the prefix), or
  // another entry type (tests write pax 'x' and GNU 'L' headers).
  void add(const std::string& name, const uint8_t* data, size_t size, char type = '0');
  void add(const std::string& name, const std::vector<uint8_t>& data, char type = '0') {
    add(name, data.data(), data.size(), type);
  }
  // Writes the two zero end blocks and closes; the destructor does it if not called.
  void close();

 private:
  void write(const void* p, size_t n);
  std::string path_;
  std::FILE* f_ = nullptr;
};

}  // namespace dplab
