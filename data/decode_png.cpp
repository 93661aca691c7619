// PNG through libpng, read from memory. libpng reports errors by longjmp back to the setjmp in
// run_png; that function therefore holds only trivially destructible locals (no destructor may be
// skipped by the jump), and the pixel buffer it fills is owned by its caller.
#include <png.h>

#include <csetjmp>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "dplab/data/image_decoders.h"

namespace dplab::detail {
namespace {

// Ancillary chunks (text, ICC profiles, ...) larger than this are refused by libpng, which would
// otherwise allocate whatever a chunk length claims.
constexpr png_alloc_size_t kMaxChunkBytes = png_alloc_size_t(8) << 20;

struct PngJob {
  const uint8_t* data = nullptr;
  size_t size = 0, pos = 0;
  bool header_only = false;
  int64_t max_pixels = 0;
  png_uint_32 width = 0, height = 0;
  uint8_t* pixels = nullptr;  // width * height * 3, provided by the caller after the header
  png_bytep* rows = nullptr;  // one pointer per row, provided by the caller
  // Called once the size is known and checked; false when memory is short.
  bool (*allocate)(PngJob*) = nullptr;
  void* owner = nullptr;
  char error[256] = {};
};

void on_png_error(png_structp png, png_const_charp msg) {
  auto* job = static_cast<PngJob*>(png_get_error_ptr(png));
  std::snprintf(job->error, sizeof job->error, "%s", msg);
  png_longjmp(png, 1);
}

void on_png_warning(png_structp, png_const_charp) {
  // Warnings (a bad CRC in an ancillary chunk, an incorrect sRGB profile) leave the pixels
  // intact: ignored, as every image library does.
}

void read_from_memory(png_structp png, png_bytep out, size_t n) {
  auto* job = static_cast<PngJob*>(png_get_io_ptr(png));
  if (n > job->size - job->pos) png_error(png, "unexpected end of data");
  std::memcpy(out, job->data + job->pos, n);
  job->pos += n;
}

// 0: done; 1: libpng error (message in job->error); 2: too large (checked by the caller from
// job->width and job->height).
int run_png(PngJob* job) {
  png_structp png =
      png_create_read_struct(PNG_LIBPNG_VER_STRING, job, on_png_error, on_png_warning);
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
  png_set_chunk_malloc_max(png, kMaxChunkBytes);
  png_set_user_limits(png, 0x7fffffffu, 0x7fffffffu);  // the pixel bound is checked below
  png_read_info(png, info);
  job->width = png_get_image_width(png, info);
  job->height = png_get_image_height(png, info);
  if (job->header_only || int64_t(job->width) * int64_t(job->height) > job->max_pixels) {
    png_destroy_read_struct(&png, &info, nullptr);
    return job->header_only ? 0 : 2;
  }
  // To 8-bit RGB: palettes, low bit depths and tRNS expanded, 16-bit samples rounded to 8
  // (v * 255 / 65535), alpha dropped, greyscale replicated; no gamma correction (the stored
  // values, as PIL and torchvision read them).
  png_set_expand(png);
  png_set_scale_16(png);
  png_set_strip_alpha(png);
  png_set_gray_to_rgb(png);
  png_set_interlace_handling(png);
  png_read_update_info(png, info);
  if (png_get_channels(png, info) != 3 || png_get_bit_depth(png, info) != 8 ||
      png_get_rowbytes(png, info) != size_t(job->width) * 3)
    png_error(png, "unexpected row layout after conversion to 8-bit RGB");
  if (!job->allocate(job)) png_error(png, "out of memory for the pixels");
  for (png_uint_32 y = 0; y < job->height; ++y)
    job->rows[y] = job->pixels + size_t(y) * size_t(job->width) * 3;
  png_read_image(png, job->rows);
  png_read_end(png, nullptr);
  png_destroy_read_struct(&png, &info, nullptr);
  return 0;
}

struct PngBuffers {
  RgbImage img;
  std::vector<png_bytep> rows;
};

// No exception may cross run_png's setjmp frame with libpng's state live: report failure.
bool allocate_buffers(PngJob* job) noexcept {
  auto* b = static_cast<PngBuffers*>(job->owner);
  try {
    b->img.width = int(job->width);
    b->img.height = int(job->height);
    b->img.rgb.resize(size_t(job->width) * size_t(job->height) * 3);
    b->rows.resize(job->height);
  } catch (const std::bad_alloc&) {
    return false;
  }
  job->pixels = b->img.rgb.data();
  job->rows = b->rows.data();
  return true;
}

}  // namespace

ImageHeader png_header(const uint8_t* data, size_t size, const std::string& what) {
  PngJob job;
  job.data = data;
  job.size = size;
  job.header_only = true;
  if (run_png(&job) != 0) throw DecodeError(fmt::format("{}: bad PNG header: {}", what, job.error));
  return checked_header(job.width, job.height, ImageFormat::png, what);
}

RgbImage png_decode(const uint8_t* data, size_t size, const std::string& what, int64_t max_pixels) {
  PngBuffers buffers;
  PngJob job;
  job.data = data;
  job.size = size;
  job.max_pixels = max_pixels;
  job.allocate = allocate_buffers;
  job.owner = &buffers;
  const int rc = run_png(&job);
  if (rc == 2 || rc == 0)
    check_image_size(job.width, job.height, max_pixels, ImageFormat::png, what);
  if (rc == 1)
    throw DecodeError(
        fmt::format("{}: corrupt PNG{}: {} (at byte {} of {})", what,
                    job.width > 0 ? fmt::format(" ({}x{})", job.width, job.height) : std::string(),
                    job.error, job.pos, size));
  return std::move(buffers.img);
}

}  // namespace dplab::detail
