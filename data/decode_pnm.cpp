// Binary PNM (Netpbm P5 greyscale and P6 RGB): an ASCII header "P6 <width> <height> <maxval>"
// (whitespace and '#' comments between the fields, one whitespace byte after maxval), then the
// raster, one byte per sample for maxval < 256, else two (big-endian). Read here rather than by
// stb_image, whose 16-bit path wrote past its buffer on a header claiming more pixels than the
// file holds: the raster's length is checked against the header before anything is read.
#include <algorithm>
#include <cctype>
#include <climits>

#include "dplab/data/image_decoders.h"

namespace dplab::detail {
namespace {

struct PnmHeader {
  int channels = 0;  // 1 (P5) or 3 (P6)
  int64_t width = 0, height = 0, maxval = 0;
  size_t raster = 0;  // offset of the first sample
};

bool is_space(uint8_t c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

// Skips whitespace and comments, then reads one decimal field (at most 10 digits).
int64_t read_field(const uint8_t* d, size_t size, size_t& pos, const char* name,
                   const std::string& what) {
  while (pos < size && (is_space(d[pos]) || d[pos] == '#')) {
    if (d[pos] == '#')
      while (pos < size && d[pos] != '\n' && d[pos] != '\r') ++pos;
    else
      ++pos;
  }
  if (pos >= size)
    throw DecodeError(
        fmt::format("{}: PNM header ends at byte {} before the {} field", what, size, name));
  if (!std::isdigit(d[pos]))
    throw DecodeError(
        fmt::format("{}: PNM {} at byte {}: expected a decimal number, found byte "
                    "0x{:02x}",
                    what, name, pos, d[pos]));
  int64_t v = 0;
  const size_t start = pos;
  while (pos < size && std::isdigit(d[pos])) {
    if (pos - start >= 10)
      throw DecodeError(
          fmt::format("{}: PNM {} at byte {}: more than 10 digits", what, name, start));
    v = v * 10 + (d[pos++] - '0');
  }
  return v;
}

PnmHeader parse_header(const uint8_t* d, size_t size, const std::string& what) {
  if (size < 2 || d[0] != 'P' || (d[1] != '5' && d[1] != '6'))
    throw DecodeError(fmt::format(
        "{}: PNM variant '{}' is not supported (expected binary 'P5' or 'P6' at byte 0)", what,
        std::string(reinterpret_cast<const char*>(d), std::min<size_t>(size, 2))));
  PnmHeader h;
  h.channels = d[1] == '5' ? 1 : 3;
  size_t pos = 2;
  h.width = read_field(d, size, pos, "width", what);
  h.height = read_field(d, size, pos, "height", what);
  h.maxval = read_field(d, size, pos, "maxval", what);
  if (h.maxval < 1 || h.maxval > 65535)
    throw DecodeError(fmt::format("{}: PNM maxval {}: expected 1 to 65535", what, h.maxval));
  if (pos >= size || !is_space(d[pos]))
    throw DecodeError(fmt::format(
        "{}: PNM header: expected one whitespace byte after maxval at byte {}", what, pos));
  h.raster = pos + 1;
  return h;
}

}  // namespace

bool is_pnm(const uint8_t* data, size_t size) {
  return size >= 3 && data[0] == 'P' && data[1] >= '1' && data[1] <= '7' && is_space(data[2]);
}

ImageHeader pnm_header(const uint8_t* data, size_t size, const std::string& what) {
  const PnmHeader p = parse_header(data, size, what);
  return checked_header(p.width, p.height, ImageFormat::pnm, what);
}

RgbImage pnm_decode(const uint8_t* data, size_t size, const std::string& what, int64_t max_pixels) {
  const PnmHeader p = parse_header(data, size, what);
  check_image_size(p.width, p.height, max_pixels, ImageFormat::pnm, what);
  const size_t bytes_per_sample = p.maxval > 255 ? 2 : 1;
  const size_t pixels = size_t(p.width) * size_t(p.height);
  const size_t need = pixels * size_t(p.channels) * bytes_per_sample;
  const size_t have = size - p.raster;
  if (have < need)
    throw DecodeError(fmt::format(
        "{}: truncated PNM: the {}x{} {}-bit {} raster needs {} bytes after the {}-byte header, "
        "the file has {}",
        what, p.width, p.height, bytes_per_sample * 8, p.channels == 1 ? "greyscale" : "RGB", need,
        p.raster, have));
  RgbImage img;
  img.width = int(p.width);
  img.height = int(p.height);
  img.rgb.resize(pixels * 3);
  const uint8_t* s = data + p.raster;
  const uint32_t maxval = uint32_t(p.maxval);
  for (size_t i = 0; i < pixels * size_t(p.channels); ++i) {
    uint32_t v = bytes_per_sample == 2 ? (uint32_t(s[2 * i]) << 8) | s[2 * i + 1] : s[i];
    if (v > maxval)
      throw DecodeError(fmt::format("{}: PNM sample {} at byte {} exceeds maxval {}", what, v,
                                    p.raster + i * bytes_per_sample, maxval));
    if (maxval != 255) v = (v * 255 + maxval / 2) / maxval;  // rounded to 0..255
    if (p.channels == 3) {
      img.rgb[i] = uint8_t(v);
    } else {
      img.rgb[3 * i] = img.rgb[3 * i + 1] = img.rgb[3 * i + 2] = uint8_t(v);
    }
  }
  return img;
}

}  // namespace dplab::detail
