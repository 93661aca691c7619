// The one translation unit that compiles stb_image_write (Debian's libstb-dev header).
#include "dplab/core/error.h"
#include "dplab/tools/plot/canvas.h"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wunused-function"
#define STB_IMAGE_WRITE_STATIC
#define STB_IMAGE_WRITE_IMPLEMENTATION
#include <stb/stb_image_write.h>
#pragma GCC diagnostic pop

#include <cerrno>
#include <cstring>

namespace dplab::plot {

void write_png(const Canvas& c, const std::string& path) {
  errno = 0;
  const int ok =
      stbi_write_png(path.c_str(), c.width(), c.height(), 3, c.rgb().data(), c.width() * 3);
  DPLAB_CHECK(ok != 0, "cannot write PNG '{}': {}", path,
              errno ? std::strerror(errno) : "stb_image_write failed");
}

}  // namespace dplab::plot
