// Progress of an epoch on stderr: a redrawn bar when stderr is a terminal, otherwise a plain
// line every N percent (logs of batch jobs stay readable).
#pragma once
#include <chrono>
#include <cstdint>
#include <ostream>
#include <string>

namespace dplab {

class Progress {
 public:
  enum class Mode { off, bar, lines };
  // mode: "auto" (bar on a TTY, else lines), "bar", "lines", "off".
  static Mode parse_mode(const std::string& mode);
  // `scope` follows the figures on every line: under several ranks the running loss and rate
  // are rank 0's own (the epoch's record and line give the global ones), so it says so.
  Progress(Mode mode, int every_percent, std::ostream& out, std::string scope = "");
  void begin_epoch(int64_t epoch, int64_t total_epochs, int64_t steps, int64_t first_step);
  // After step `done` (1-based count within the epoch) with the running mean loss.
  void update(int64_t done, double mean_loss, double images_per_s);
  // Whether update(done, ...) would print now: the trainer reads device-side metrics back only
  // then.
  bool will_draw(int64_t done) const;
  void end_epoch();

 private:
  Mode mode_;
  int every_percent_;
  std::ostream& out_;
  std::string scope_;
  int64_t epoch_ = 0, total_epochs_ = 0, steps_ = 0;
  int next_percent_ = 0;
  std::chrono::steady_clock::time_point last_draw_;
  bool drawn_ = false;
};

}  // namespace dplab
