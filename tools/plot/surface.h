// The drawing surface of a figure, chosen by the output file's extension: PNG (cairo's image
// surface, width x height pixels), SVG or PDF (vector surfaces, width x height points).
#pragma once
#include <string>

typedef struct _cairo cairo_t;
typedef struct _cairo_surface cairo_surface_t;

namespace dplab::plot {

enum class Format { png, svg, pdf };

// The format for `path`'s extension (.png, .svg, .pdf, any case); throws dplab::UsageError
// naming the path, its extension and the accepted ones for anything else, before anything is
// written.
Format format_for_path(const std::string& path);

// A cairo surface and context for one figure. finish() writes the file and throws
// dplab::Error naming the path when it cannot; a Surface destroyed without finish() leaves no
// file behind (the vector surfaces write to memory until finish()).
class Surface {
 public:
  // `scale` multiplies a PNG's pixels (2: the same figure at twice the resolution); the vector
  // formats are resolution-free and ignore it. Throws dplab::UsageError for an unknown
  // extension, a size outside 100..20000 or a scale outside 0.25..10.
  Surface(const std::string& path, int width, int height, double scale = 1);
  ~Surface();
  Surface(const Surface&) = delete;
  Surface& operator=(const Surface&) = delete;

  cairo_t* cr() const { return cr_; }
  Format format() const { return format_; }
  // `title` goes into the file's metadata (PDF Title, SVG <title>); `description` (the figure's
  // words) into the SVG's <desc>, so that the figure can be searched and read by screen readers
  // (cairo draws SVG text as glyph outlines).
  void finish(const std::string& title, const std::string& description);

 private:
  std::string path_;
  Format format_;
  cairo_surface_t* surface_ = nullptr;
  cairo_t* cr_ = nullptr;
  std::string buffer_;  // SVG and PDF bytes, written to the file by finish()
};

}  // namespace dplab::plot
