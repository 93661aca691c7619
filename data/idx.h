// IDX files (the MNIST / Fashion-MNIST format, http://yann.lecun.com/exdb/mnist/): a big-endian
// magic 0x0000TTDD (TT = element type, 0x08 = unsigned byte; DD = number of dimensions), DD
// big-endian u32 sizes, then the row-major data. Files may be gzip-compressed (detected by the
// gzip magic 0x1f 0x8b, not by the file name). Errors name the file and what is wrong.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace dplab {

struct IdxImages {
  int64_t count = 0, rows = 0, cols = 0;
  std::vector<uint8_t> pixels;  // count * rows * cols, row-major
};

// Bound on the data an IDX header may declare (option-free: EMNIST, the largest IDX data set,
// holds 0.55 GB). Files are read as a stream, gzip or not: the header is checked against this
// before the data is allocated, and no more than the header declares (plus a probe for extra
// bytes) is ever inflated, so a small .gz cannot expand to gigabytes.
constexpr uint64_t kMaxIdxDataBytes = uint64_t(1) << 30;

// u8 images: magic 0x00000803, dims [count, rows, cols], rows and cols positive.
IdxImages read_idx_images(const std::string& path, uint64_t max_bytes = kMaxIdxDataBytes);
// u8 labels: magic 0x00000801, dims [count].
std::vector<uint8_t> read_idx_labels(const std::string& path,
                                     uint64_t max_bytes = kMaxIdxDataBytes);
// The same for file contents in memory (gzip or not); `name` stands for the path in errors.
IdxImages parse_idx_images(const uint8_t* data, size_t size, const std::string& name,
                           uint64_t max_bytes = kMaxIdxDataBytes);
std::vector<uint8_t> parse_idx_labels(const uint8_t* data, size_t size, const std::string& name,
                                      uint64_t max_bytes = kMaxIdxDataBytes);

// Writers (gzip when `gzip` is true; the gzip header carries no time stamp, so the same
// contents give the same bytes).
void write_idx_images(const std::string& path, const IdxImages& images, bool gzip = true);
void write_idx_labels(const std::string& path, const std::vector<uint8_t>& labels,
                      bool gzip = true);

}  // namespace dplab
