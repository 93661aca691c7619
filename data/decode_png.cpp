// PNG through libpng, read from memory. libpng reports errors by longjmp back to the setjmp in
// run_png; that function and libpng's callbacks (read, allocate, error) therefore hold only
// trivially destructible locals (no destructor may be skipped by the jump), and the pixel buffer
// run_png fills is owned by its caller.
//
// Untrusted input, bounded in memory and time:
// - every chunk header is checked as libpng reads it (the read callback sees libpng's
//   PNG_IO_CHUNK_HDR reads): its data and CRC must lie inside the file, and no chunk but IDAT
//   may exceed 8 MiB; the error names the chunk type and its byte offset;
// - ancillary chunks (text, ICC profiles, ...) are discarded unread by libpng
//   (png_set_keep_unknown_chunks): the pixels do not depend on them, as no gamma or colour
//   management is applied; tRNS is still read (libpng keeps it);
// - libpng allocates through a counting allocator (png_create_read_struct_2) that refuses what
//   would take the decode past max_decode_bytes (3x the RGB size + 16 MiB) with our pixels;
// - IDAT data that cannot hold the declared pixels even at deflate's maximum ratio (1032:1) is
//   refused before the pixel buffer is allocated;
// - rows are read one at a time into the pixel buffer (no per-row pointer array).
#include <png.h>

#include <csetjmp>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "dplab/data/image_decoders.h"

namespace dplab::detail {
namespace {

// Chunks other than IDAT larger than this are refused (IDAT data is streamed through inflate
// and never held whole; the others would be read whole, were they not discarded).
constexpr uint32_t kMaxChunkBytes = uint32_t(8) << 20;
// deflate's largest compression ratio: a 258-byte match in 2 bits.
constexpr uint64_t kMaxDeflateRatio = 1032;

struct PngJob {
  const uint8_t* data = nullptr;
  size_t size = 0, pos = 0;
  bool header_only = false;
  int64_t max_pixels = 0;
  png_uint_32 width = 0, height = 0;
  // The chunk libpng is reading: its type and the offset of its length field.
  char chunk[5] = {};
  size_t chunk_at = 0;
  // libpng's own allocations (counted with a 16-byte header each) and their limit.
  size_t mem_used = 0, mem_limit = 0, mem_refused = 0;
  uint8_t* pixels = nullptr;  // width * height * 3, provided by the caller after the header
  // Called once the size is known and checked; false when memory is short.
  bool (*allocate)(PngJob*) = nullptr;
  void* owner = nullptr;
  bool located = false;  // the error names its chunk and offset itself
  char error[384] = {};
};

constexpr size_t kHeader = 16;  // keeps malloc's 16-byte alignment

png_voidp png_counted_malloc(png_structp png, png_alloc_size_t n) {
  auto* job = static_cast<PngJob*>(png_get_mem_ptr(png));
  if (job->mem_used > job->mem_limit || n > job->mem_limit - job->mem_used) {
    job->mem_refused = n;
    return nullptr;  // libpng raises "Out of memory" (or warns and skips an optional chunk)
  }
  auto* p = static_cast<uint8_t*>(std::malloc(n + kHeader));
  if (p == nullptr) return nullptr;
  std::memcpy(p, &n, sizeof n);
  job->mem_used += n;
  return p + kHeader;
}

void png_counted_free(png_structp png, png_voidp ptr) {
  if (ptr == nullptr) return;
  auto* job = static_cast<PngJob*>(png_get_mem_ptr(png));
  uint8_t* p = static_cast<uint8_t*>(ptr) - kHeader;
  png_alloc_size_t n = 0;
  std::memcpy(&n, p, sizeof n);
  job->mem_used -= n;
  std::free(p);
}

void on_png_error(png_structp png, png_const_charp msg) {
  auto* job = static_cast<PngJob*>(png_get_error_ptr(png));
  if (msg != job->error) std::snprintf(job->error, sizeof job->error, "%s", msg);
  png_longjmp(png, 1);
}

void on_png_warning(png_structp, png_const_charp) {
  // Warnings (a bad CRC in an ancillary chunk, an incorrect sRGB profile) leave the pixels
  // intact: ignored, as every image library does.
}

uint32_t be32(const uint8_t* p) {
  return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | uint32_t(p[3]);
}

void chunk_name(const uint8_t* p, char out[5]) {
  for (int i = 0; i < 4; ++i) out[i] = p[i] >= 0x20 && p[i] < 0x7f ? char(p[i]) : '?';
  out[4] = 0;
}

// A chunk header (length, type) at `at`, as libpng is about to act on it.
void check_chunk_header(png_structp png, PngJob* job, const uint8_t* hdr, size_t at) {
  const uint32_t length = be32(hdr);
  chunk_name(hdr + 4, job->chunk);
  job->chunk_at = at;
  const size_t after = job->size - at - 8;  // bytes after the header (the caller checked 8)
  const bool idat = std::memcmp(hdr + 4, "IDAT", 4) == 0;
  if (length > 0x7fffffffu || uint64_t(length) + 4 > after) {
    std::snprintf(job->error, sizeof job->error,
                  "chunk '%s' at byte %zu declares %u bytes of data, but only %zu bytes follow "
                  "its header in the %zu-byte file (expected the data and a 4-byte CRC inside "
                  "the file: truncated or damaged)",
                  job->chunk, at, length, after, job->size);
    job->located = true;
    png_error(png, job->error);
  }
  if (!idat && length > kMaxChunkBytes) {
    std::snprintf(job->error, sizeof job->error,
                  "chunk '%s' at byte %zu declares %u bytes of data (expected at most %u for a "
                  "chunk other than IDAT)",
                  job->chunk, at, length, kMaxChunkBytes);
    job->located = true;
    png_error(png, job->error);
  }
}

void read_from_memory(png_structp png, png_bytep out, size_t n) {
  auto* job = static_cast<PngJob*>(png_get_io_ptr(png));
  if (n > job->size - job->pos) png_error(png, "unexpected end of data");
  if ((png_get_io_state(png) & PNG_IO_MASK_LOC) == PNG_IO_CHUNK_HDR && n == 8)
    check_chunk_header(png, job, job->data + job->pos, job->pos);
  std::memcpy(out, job->data + job->pos, n);
  job->pos += n;
}

// Bytes of IDAT data in the file: the chunks from the signature to IEND, stopping at the first
// that does not fit (libpng reports that one when it reaches it).
uint64_t idat_bytes(const uint8_t* d, size_t size) {
  uint64_t sum = 0;
  for (size_t at = 8; at <= size && size - at >= 12;) {
    const uint32_t length = be32(d + at);
    if (length > size - at - 12) break;
    if (std::memcmp(d + at + 4, "IDAT", 4) == 0) sum += length;
    if (std::memcmp(d + at + 4, "IEND", 4) == 0) break;
    at += 12 + size_t(length);
  }
  return sum;
}

// 0: done; 1: libpng error (message in job->error); 2: too large (checked by the caller from
// job->width and job->height).
int run_png(PngJob* job) {
  job->mem_limit = size_t(kDecodeSlackBytes);  // until the header gives the size
  png_structp png =
      png_create_read_struct_2(PNG_LIBPNG_VER_STRING, job, on_png_error, on_png_warning, job,
                               png_counted_malloc, png_counted_free);
  if (png == nullptr) {
    std::snprintf(job->error, sizeof job->error, "cannot create a libpng reader");
    return 1;
  }
  png_infop info = png_create_info_struct(png);
  if (info == nullptr) {
    png_destroy_read_struct(&png, nullptr, nullptr);
    std::snprintf(job->error, sizeof job->error, "cannot create a libpng info struct");
    return 1;
  }
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_read_struct(&png, &info, nullptr);
    return 1;
  }
  png_set_read_fn(png, job, read_from_memory);
  // libpng's own limits, behind the header check above: chunk allocations, stored chunks, and
  // each side at most 2^31 - 1 (the pixel bound is checked below).
  png_set_chunk_malloc_max(png, kMaxChunkBytes);
  png_set_chunk_cache_max(png, 32);
  png_set_user_limits(png, 0x7fffffffu, 0x7fffffffu);
  // Every ancillary chunk but tRNS is skipped unread: the RGB values do not depend on them.
  png_set_keep_unknown_chunks(png, PNG_HANDLE_CHUNK_NEVER, nullptr, -1);
  png_read_info(png, info);
  job->width = png_get_image_width(png, info);
  job->height = png_get_image_height(png, info);
  if (job->header_only || int64_t(job->width) * int64_t(job->height) > job->max_pixels) {
    png_destroy_read_struct(&png, &info, nullptr);
    return job->header_only ? 0 : 2;
  }
  // The compressed data must be able to hold the filtered rows: at least one filter byte per
  // row and width * height * bits / 8 bytes of samples (interlaced images have more).
  const uint64_t bits = uint64_t(png_get_channels(png, info)) * png_get_bit_depth(png, info);
  const uint64_t raw_min =
      uint64_t(job->height) + uint64_t(job->width) * uint64_t(job->height) * bits / 8;
  const uint64_t idat = idat_bytes(job->data, job->size);
  if (idat < raw_min / kMaxDeflateRatio) {
    std::snprintf(
        job->error, sizeof job->error,
        "its IDAT chunks hold %llu bytes, but %llux%llu pixels of %llu bits need at "
        "least %llu (%llu bytes of rows at deflate's largest ratio, 1032:1): truncated "
        "or damaged; refused before decoding",
        static_cast<unsigned long long>(idat), static_cast<unsigned long long>(job->width),
        static_cast<unsigned long long>(job->height), static_cast<unsigned long long>(bits),
        static_cast<unsigned long long>(raw_min / kMaxDeflateRatio),
        static_cast<unsigned long long>(raw_min));
    job->located = true;
    png_error(png, job->error);
  }
  // libpng's share of the bound: what our pixel buffer leaves.
  const uint64_t rgb = uint64_t(job->width) * uint64_t(job->height) * 3;
  job->mem_limit = size_t(max_decode_bytes(job->width, job->height) - rgb);
  // To 8-bit RGB: palettes, low bit depths and tRNS expanded, 16-bit samples rounded to 8
  // (v * 255 / 65535), alpha dropped, greyscale replicated; no gamma correction (the stored
  // values, as PIL and torchvision read them).
  png_set_expand(png);
  png_set_scale_16(png);
  png_set_strip_alpha(png);
  png_set_gray_to_rgb(png);
  const int passes = png_set_interlace_handling(png);
  png_read_update_info(png, info);
  if (png_get_channels(png, info) != 3 || png_get_bit_depth(png, info) != 8 ||
      png_get_rowbytes(png, info) != size_t(job->width) * 3)
    png_error(png, "unexpected row layout after conversion to 8-bit RGB");
  if (!job->allocate(job)) png_error(png, "out of memory for the pixels");
  // Row by row (each pass of an interlaced image fills in its pixels of every row).
  const size_t stride = size_t(job->width) * 3;
  for (int p = 0; p < passes; ++p)
    for (png_uint_32 y = 0; y < job->height; ++y)
      png_read_row(png, job->pixels + size_t(y) * stride, nullptr);
  png_read_end(png, nullptr);
  png_destroy_read_struct(&png, &info, nullptr);
  return 0;
}

// No exception may cross run_png's setjmp frame with libpng's state live: report failure.
bool allocate_pixels(PngJob* job) noexcept {
  auto* img = static_cast<RgbImage*>(job->owner);
  try {
    img->width = int(job->width);
    img->height = int(job->height);
    img->rgb.resize(size_t(job->width) * size_t(job->height) * 3);
  } catch (const std::bad_alloc&) {
    return false;
  }
  job->pixels = img->rgb.data();
  return true;
}

// "corrupt PNG (WxH): MESSAGE (in chunk 'X' at byte N; read up to byte P of S)".
std::string png_failure(const PngJob& job, size_t size) {
  std::string msg = job.error;
  if (job.mem_refused > 0 && std::strstr(job.error, "memory") != nullptr)
    msg = fmt::format(
        "libpng asked for {} more bytes with {} in use; the limit for a {}x{} image is {} bytes "
        "(3x its RGB size + 16 MiB, less the {}-byte pixel buffer)",
        job.mem_refused, job.mem_used, job.width, job.height,
        max_decode_bytes(job.width, job.height), uint64_t(job.width) * job.height * 3);
  if (!job.located) {
    if (job.chunk[0] != 0)
      msg += fmt::format(" (in chunk '{}' at byte {}; read up to byte {} of {})", job.chunk,
                         job.chunk_at, job.pos, size);
    else
      msg += fmt::format(" (at byte {} of {}, in the 8-byte signature)", job.pos, size);
  }
  return msg;
}

}  // namespace

ImageHeader png_header(const uint8_t* data, size_t size, const std::string& what) {
  PngJob job;
  job.data = data;
  job.size = size;
  job.header_only = true;
  if (run_png(&job) != 0)
    throw DecodeError(fmt::format("{}: bad PNG header: {}", what, png_failure(job, size)));
  return checked_header(job.width, job.height, ImageFormat::png, what);
}

RgbImage png_decode(const uint8_t* data, size_t size, const std::string& what, int64_t max_pixels) {
  RgbImage img;
  PngJob job;
  job.data = data;
  job.size = size;
  job.max_pixels = max_pixels;
  job.allocate = allocate_pixels;
  job.owner = &img;
  const int rc = run_png(&job);
  if (rc == 2 || rc == 0)
    check_image_size(job.width, job.height, max_pixels, ImageFormat::png, what);
  if (rc == 1)
    throw DecodeError(
        fmt::format("{}: corrupt PNG{}: {}", what,
                    job.width > 0 ? fmt::format(" ({}x{})", job.width, job.height) : std::string(),
                    png_failure(job, size)));
  return img;
}

}  // namespace dplab::detail
