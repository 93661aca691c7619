#include "dplab/train/report/progress.h"

#include <fmt/format.h>
#include <unistd.h>

#include <utility>

#include "dplab/core/error.h"
#include "dplab/core/usage_error.h"

namespace dplab {

Progress::Mode Progress::parse_mode(const std::string& mode) {
  if (mode == "auto") return isatty(STDERR_FILENO) ? Mode::bar : Mode::lines;
  if (mode == "bar") return Mode::bar;
  if (mode == "lines") return Mode::lines;
  if (mode == "off") return Mode::off;
  DPLAB_FAIL_OPTION("option progress: expected auto, bar, lines or off, got '{}'", mode);
}

Progress::Progress(Mode mode, int every_percent, std::ostream& out, std::string scope)
    : mode_(mode),
      every_percent_(every_percent < 1 ? 1 : every_percent),
      out_(out),
      scope_(std::move(scope)) {}

void Progress::begin_epoch(int64_t epoch, int64_t total_epochs, int64_t steps, int64_t first_step) {
  epoch_ = epoch;
  total_epochs_ = total_epochs;
  steps_ = steps;
  next_percent_ =
      steps > 0 ? int(100 * first_step / steps / every_percent_ + 1) * every_percent_ : 100;
  drawn_ = false;
}

void Progress::update(int64_t done, double mean_loss, double images_per_s) {
  if (mode_ == Mode::off || steps_ == 0) return;
  const int percent = int(100 * done / steps_);
  if (mode_ == Mode::lines) {
    if (percent < next_percent_) return;
    while (next_percent_ <= percent) next_percent_ += every_percent_;
    out_ << fmt::format("epoch {}/{} {:3d}% step {}/{} loss {:.4f} {:.0f} img/s{}\n", epoch_ + 1,
                        total_epochs_, percent, done, steps_, mean_loss, images_per_s, scope_);
    out_.flush();
    return;
  }
  // Bar: redraw at most 10 times a second, and always at the end.
  const auto now = std::chrono::steady_clock::now();
  if (drawn_ && done != steps_ && now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  drawn_ = true;
  constexpr int kWidth = 30;
  const int filled = int(kWidth * done / steps_);
  out_ << fmt::format("\repoch {}/{} [{}{}] {:3d}% {}/{} loss {:.4f} {:.0f} img/s{}", epoch_ + 1,
                      total_epochs_, std::string(size_t(filled), '#'),
                      std::string(size_t(kWidth - filled), '.'), percent, done, steps_, mean_loss,
                      images_per_s, scope_);
  out_.flush();
}

bool Progress::will_draw(int64_t done) const {
  if (mode_ == Mode::off || steps_ == 0) return false;
  if (mode_ == Mode::lines) return int(100 * done / steps_) >= next_percent_;
  return !drawn_ || done == steps_ ||
         std::chrono::steady_clock::now() - last_draw_ >= std::chrono::milliseconds(100);
}

void Progress::end_epoch() {
  if (mode_ == Mode::bar && drawn_) out_ << "\n";
  out_.flush();
}

}  // namespace dplab
