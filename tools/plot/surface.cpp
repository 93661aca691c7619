#include "dplab/tools/plot/surface.h"

#include <cairo-pdf.h>
#include <cairo-svg.h>
#include <cairo.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "dplab/core/error.h"
#include "dplab/core/usage_error.h"

namespace dplab::plot {
namespace {

cairo_status_t append(void* closure, const unsigned char* data, unsigned int length) {
  static_cast<std::string*>(closure)->append(reinterpret_cast<const char*>(data), length);
  return CAIRO_STATUS_SUCCESS;
}

std::string xml_escape(const std::string& s) {
  std::string r;
  for (char c : s) {
    switch (c) {
      case '&':
        r += "&amp;";
        break;
      case '<':
        r += "&lt;";
        break;
      case '>':
        r += "&gt;";
        break;
      case '"':
        r += "&quot;";
        break;
      default:
        r += c;
    }
  }
  return r;
}

// Puts <title> and <desc> right after the opening <svg ...> tag cairo wrote.
void add_svg_text(std::string& svg, const std::string& title, const std::string& description) {
  const size_t open = svg.find("<svg");
  const size_t end = open == std::string::npos ? open : svg.find('>', open);
  DPLAB_CHECK(end != std::string::npos, "cairo's SVG output has no <svg> element");
  svg.insert(end + 1, "\n<title>" + xml_escape(title) + "</title>\n<desc>" +
                          xml_escape(description) + "</desc>");
}

}  // namespace

Format format_for_path(const std::string& path) {
  std::string ext = std::filesystem::path(path).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return char(std::tolower(c)); });
  if (ext == ".png") return Format::png;
  if (ext == ".svg") return Format::svg;
  if (ext == ".pdf") return Format::pdf;
  DPLAB_FAIL_OPTION(
      "cannot tell the figure format of '{}' from its extension '{}': use .png, .svg or .pdf", path,
      ext.empty() ? "(none)" : ext);
}

Surface::Surface(const std::string& path, int width, int height, double scale)
    : path_(path), format_(format_for_path(path)) {
  DPLAB_CHECK_OPTION(width >= 100 && height >= 100 && width <= 20000 && height <= 20000,
                     "figure size {}x{}: width and height must be between 100 and 20000", width,
                     height);
  DPLAB_CHECK_OPTION(scale >= 0.25 && scale <= 10, "figure scale {}: must be between 0.25 and 10",
                     scale);
  if (format_ != Format::png) scale = 1;
  switch (format_) {
    case Format::png:
      surface_ = cairo_image_surface_create(CAIRO_FORMAT_RGB24, int(std::lround(width * scale)),
                                            int(std::lround(height * scale)));
      break;
    case Format::svg:
      surface_ = cairo_svg_surface_create_for_stream(append, &buffer_, width, height);
      break;
    case Format::pdf:
      surface_ = cairo_pdf_surface_create_for_stream(append, &buffer_, width, height);
      break;
  }
  DPLAB_CHECK(cairo_surface_status(surface_) == CAIRO_STATUS_SUCCESS,
              "cannot create a {}x{} cairo surface for '{}': {}", width, height, path,
              cairo_status_to_string(cairo_surface_status(surface_)));
  cr_ = cairo_create(surface_);
  cairo_scale(cr_, scale, scale);  // the chart lays out in width x height units
}

Surface::~Surface() {
  if (cr_) cairo_destroy(cr_);
  if (surface_) cairo_surface_destroy(surface_);
}

void Surface::finish(const std::string& title, const std::string& description) {
  DPLAB_CHECK(cairo_status(cr_) == CAIRO_STATUS_SUCCESS, "drawing '{}' failed: {}", path_,
              cairo_status_to_string(cairo_status(cr_)));
  if (format_ == Format::pdf) {
    cairo_pdf_surface_set_metadata(surface_, CAIRO_PDF_METADATA_TITLE, title.c_str());
    cairo_pdf_surface_set_metadata(surface_, CAIRO_PDF_METADATA_CREATOR, "dplab plot");
  }
  cairo_destroy(cr_);
  cr_ = nullptr;
  cairo_surface_flush(surface_);
  if (format_ == Format::png) {
    const auto st = cairo_surface_write_to_png_stream(surface_, append, &buffer_);
    DPLAB_CHECK(st == CAIRO_STATUS_SUCCESS, "cannot encode PNG '{}': {}", path_,
                cairo_status_to_string(st));
  }
  cairo_surface_finish(surface_);  // the vector surfaces write their document here
  const auto st = cairo_surface_status(surface_);
  DPLAB_CHECK(st == CAIRO_STATUS_SUCCESS, "cannot finish figure '{}': {}", path_,
              cairo_status_to_string(st));
  if (format_ == Format::svg) add_svg_text(buffer_, title, description);
  errno = 0;
  std::ofstream out(path_, std::ios::binary);
  out.write(buffer_.data(), std::streamsize(buffer_.size()));
  out.close();
  DPLAB_CHECK(out.good(), "cannot write figure '{}': {}", path_,
              errno ? std::strerror(errno) : "write failed");
}

}  // namespace dplab::plot
