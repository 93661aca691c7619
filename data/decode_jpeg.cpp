// JPEG decoding through libjpeg-turbo's libjpeg API (the TurboJPEG 2.1 API cannot bound the
// decoder's memory). libjpeg reports errors by longjmp back to the setjmp in run_jpeg; that
// function and libjpeg's callbacks therefore hold only trivially destructible locals, and the
// buffers it fills are owned by its caller.
//
// Bounded like every decoder here (decode.h, max_decode_bytes):
// - libjpeg's memory manager gets max_memory_to_use = the bound less our buffers: a
//   progressive or multi-scan file, whose every coefficient libjpeg keeps (2 bytes per sample),
//   that would need more is refused before the coefficients are allocated (libjpeg's
//   JERR_NO_BACKING_STORE: it has no temporary files), whatever its data holds;
// - progressive files of more than 500 scans are refused (a CPU bomb of a few kilobytes), as
//   TurboJPEG's TJFLAG_LIMITSCANS does;
// - a warning (a truncated scan libjpeg would pad with grey, data after a marker) stops the
//   decode at once: it is a corrupt file for training data, so nothing later is decoded;
// - CMYK/YCCK (Adobe, inverted) is converted to RGB a few rows at a time.
// jpeglib.h needs size_t and FILE declared first.
#include <cstddef>
#include <cstdio>
// clang-format off
#include <jpeglib.h>
#include <jerror.h>
// clang-format on

#include <algorithm>
#include <csetjmp>
#include <cstring>
#include <memory>

#include "dplab/data/image_decoders.h"

namespace dplab::detail {
namespace {

constexpr int kMaxScans = 500;
constexpr int kRowsPerRead = 16;

struct JpegError {
  jpeg_error_mgr pub;  // first: libjpeg passes &pub as cinfo->err
  std::jmp_buf jump;
};

struct JpegJob {
  const uint8_t* data = nullptr;
  size_t size = 0;
  bool cmyk = false;
  unsigned scale_num = 1, scale_denom = 1;
  long max_memory = 0;  // libjpeg's share of the bound
  int out_width = 0, out_height = 0;
  uint8_t* rgb = nullptr;   // out_width * out_height * 3, from allocate()
  uint8_t* rows = nullptr;  // CMYK only: kRowsPerRead rows of out_width * 4, from allocate()
  bool (*allocate)(JpegJob*) = nullptr;
  void* owner = nullptr;
  int msg_code = 0;
  size_t read = 0;  // bytes libjpeg had taken from the data when it stopped
  bool too_many_scans = false;
  char error[JMSG_LENGTH_MAX + 64] = {};
};

struct JpegState {
  jpeg_decompress_struct cinfo;
  JpegError err;
  jpeg_progress_mgr progress;
  JpegJob* job;
};

JpegJob* job_of(j_common_ptr cinfo) {
  return static_cast<JpegJob*>(cinfo->client_data);
}

void note_position(j_common_ptr cinfo) {
  JpegJob* job = job_of(cinfo);
  const jpeg_source_mgr* src = reinterpret_cast<j_decompress_ptr>(cinfo)->src;
  if (src != nullptr) job->read = job->size - std::min(job->size, size_t(src->bytes_in_buffer));
}

[[noreturn]] void on_jpeg_error(j_common_ptr cinfo) {
  JpegJob* job = job_of(cinfo);
  note_position(cinfo);
  job->msg_code = cinfo->err->msg_code;
  (*cinfo->err->format_message)(cinfo, job->error);
  std::longjmp(reinterpret_cast<JpegError*>(cinfo->err)->jump, 1);
}

// Warnings (level -1) end the decode; trace messages (levels >= 0) are ignored.
void on_jpeg_message(j_common_ptr cinfo, int level) {
  if (level < 0) on_jpeg_error(cinfo);
}

void on_jpeg_progress(j_common_ptr cinfo) {
  if (reinterpret_cast<j_decompress_ptr>(cinfo)->input_scan_number > kMaxScans) {
    JpegJob* job = job_of(cinfo);
    note_position(cinfo);
    job->too_many_scans = true;
    std::snprintf(job->error, sizeof job->error,
                  "progressive JPEG with more than %d scans (expected at most %d)", kMaxScans,
                  kMaxScans);
    std::longjmp(reinterpret_cast<JpegError*>(cinfo->err)->jump, 1);
  }
}

// 0: done; 1: error (job->error).
int run_jpeg(JpegState* s) {
  JpegJob* job = s->job;
  j_decompress_ptr cinfo = &s->cinfo;
  cinfo->err = jpeg_std_error(&s->err.pub);
  s->err.pub.error_exit = on_jpeg_error;
  s->err.pub.emit_message = on_jpeg_message;
  if (setjmp(s->err.jump)) {
    jpeg_destroy_decompress(cinfo);
    return 1;
  }
  jpeg_create_decompress(cinfo);
  cinfo->client_data = job;
  cinfo->mem->max_memory_to_use = job->max_memory;
  s->progress = {};
  s->progress.progress_monitor = on_jpeg_progress;
  cinfo->progress = &s->progress;
  jpeg_mem_src(cinfo, job->data, static_cast<unsigned long>(job->size));
  jpeg_read_header(cinfo, TRUE);
  // As TurboJPEG's tjDecompress2 with TJPF_RGB / TJPF_CMYK and TJFLAG_ACCURATEDCT.
  cinfo->out_color_space = job->cmyk ? JCS_CMYK : JCS_EXT_RGB;
  cinfo->dct_method = JDCT_ISLOW;
  cinfo->scale_num = job->scale_num;
  cinfo->scale_denom = job->scale_denom;
  jpeg_start_decompress(cinfo);
  if (int(cinfo->output_width) != job->out_width || int(cinfo->output_height) != job->out_height ||
      cinfo->output_components != (job->cmyk ? 4 : 3)) {
    std::snprintf(job->error, sizeof job->error,
                  "libjpeg gives %ux%u with %d components, expected %dx%d with %d",
                  cinfo->output_width, cinfo->output_height, cinfo->output_components,
                  job->out_width, job->out_height, job->cmyk ? 4 : 3);
    jpeg_destroy_decompress(cinfo);
    return 1;
  }
  if (!job->allocate(job)) {
    std::snprintf(job->error, sizeof job->error, "out of memory for the pixels");
    jpeg_destroy_decompress(cinfo);
    return 1;
  }
  const size_t stride = size_t(job->out_width) * 3;
  JSAMPROW rows[kRowsPerRead];
  while (cinfo->output_scanline < cinfo->output_height) {
    const JDIMENSION y0 = cinfo->output_scanline;
    const JDIMENSION n = std::min<JDIMENSION>(kRowsPerRead, cinfo->output_height - y0);
    for (JDIMENSION i = 0; i < n; ++i)
      rows[i] = job->cmyk ? job->rows + size_t(i) * size_t(job->out_width) * 4
                          : job->rgb + size_t(y0 + i) * stride;
    const JDIMENSION got = jpeg_read_scanlines(cinfo, rows, n);
    if (job->cmyk) {
      // Adobe CMYK is stored inverted: R = C * K / 255 on the stored values (as stb_image does).
      for (JDIMENSION i = 0; i < got; ++i) {
        const uint8_t* src = rows[i];
        uint8_t* dst = job->rgb + size_t(y0 + i) * stride;
        for (int x = 0; x < job->out_width; ++x, src += 4, dst += 3) {
          const unsigned k = src[3];
          for (int c = 0; c < 3; ++c) dst[c] = uint8_t((src[c] * k + 127) / 255);
        }
      }
    }
  }
  jpeg_finish_decompress(cinfo);
  jpeg_destroy_decompress(cinfo);
  return 0;
}

struct JpegBuffers {
  RgbImage img;
  std::vector<uint8_t> rows;
};

// No exception may cross run_jpeg's setjmp frame with libjpeg's state live: report failure.
bool allocate_buffers(JpegJob* job) noexcept {
  auto* b = static_cast<JpegBuffers*>(job->owner);
  try {
    b->img.width = job->out_width;
    b->img.height = job->out_height;
    b->img.rgb.resize(size_t(job->out_width) * size_t(job->out_height) * 3);
    if (job->cmyk) b->rows.resize(size_t(job->out_width) * 4 * kRowsPerRead);
  } catch (const std::bad_alloc&) {
    return false;
  }
  job->rgb = b->img.rgb.data();
  job->rows = b->rows.data();
  return true;
}

}  // namespace

RgbImage jpeg_decode(const uint8_t* data, size_t size, const std::string& what,
                     const ImageHeader& hdr, int scale_num, int scale_denom, int out_width,
                     int out_height) {
  JpegBuffers buffers;
  JpegJob job;
  job.data = data;
  job.size = size;
  job.cmyk = hdr.cmyk;
  job.scale_num = unsigned(scale_num);
  job.scale_denom = unsigned(scale_denom);
  job.out_width = out_width;
  job.out_height = out_height;
  job.allocate = allocate_buffers;
  job.owner = &buffers;
  const uint64_t bound = max_decode_bytes(hdr.width, hdr.height);
  const uint64_t ours = uint64_t(out_width) * uint64_t(out_height) * 3 +
                        (hdr.cmyk ? uint64_t(out_width) * 4 * kRowsPerRead : 0);
  job.max_memory = long(bound - ours);  // > 0: ours <= 3 x width x height + a few rows
  // The state is on the heap: jpeg_decompress_struct and its error manager are large.
  auto state = std::make_unique<JpegState>();
  state->job = &job;
  if (run_jpeg(state.get()) != 0) {
    if (job.msg_code == JERR_NO_BACKING_STORE || job.msg_code == JERR_OUT_OF_MEMORY)
      throw DecodeError(fmt::format(
          "{}: JPEG ({}x{}{}) needs more memory than the limit for its size: {} bytes in all "
          "(3x its RGB size + 16 MiB), {} of them for libjpeg's buffers (a progressive or "
          "multi-scan JPEG keeps 2 bytes per sample of every component); libjpeg: {} (after "
          "reading {} of {} bytes)",
          what, hdr.width, hdr.height, hdr.cmyk ? ", CMYK" : "", bound, job.max_memory, job.error,
          job.read, size));
    throw DecodeError(fmt::format("{}: corrupt JPEG ({}x{}): {} (libjpeg stopped at byte {} of {})",
                                  what, hdr.width, hdr.height, job.error, job.read, size));
  }
  return std::move(buffers.img);
}

}  // namespace dplab::detail
