// Tracer: one rank's timeline (docs/trace.md, the Chrome trace-event format). The training
// driver creates it (option trace) and hands it explicitly to what it instruments: the
// strategy (TrainContext::tracer), GradSync (set_tracer), the loop. No global state: code
// without a tracer (nullptr) records nothing, and so does a tracer outside its step window;
// either costs one pointer test and one relaxed atomic load per span.
//
// Built with -DDPLAB_TRACE=OFF (DPLAB_TRACE_COMPILED 0) Span is an empty object and
// trace::active() a constant nullptr, so the instrumentation compiles away entirely; the
// training driver then refuses option trace = true.
//
// Thread-safe: the compute thread and communication threads record concurrently (events are
// formatted by the recording thread, appended under a mutex).
#pragma once
#include <atomic>
#include <chrono>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "dplab/core/device.h"
#include "dplab/core/time_source.h"
#include "dplab/core/trace/gpu_timeline.h"
#include "dplab/core/trace/step_window.h"
#include "dplab/core/trace/trace_file.h"

#ifndef DPLAB_TRACE_COMPILED
#define DPLAB_TRACE_COMPILED 1
#endif

namespace dplab::trace {

inline constexpr bool kCompiled = DPLAB_TRACE_COMPILED != 0;

// Threads (trace-event tids) of a rank's process.
enum Tid : int {
  kSteps = 0,
  kCompute = 1,
  kComm = 2,
  kLoader = 3,
  kGpuCompute = 4,
  kGpuComm = 5,
};

// A numeric argument of an event (args.key = value).
struct Arg {
  const char* key;
  double value;
};

using Clock = std::chrono::steady_clock;

struct TracerOptions {
  std::string dir;             // OUT/trace: the rank's file is dir/rank_R.json
  std::string steps = "auto";  // option trace.steps, resolved by start()
  // Events are written out as each step begins (the previous ones are over), and within a step
  // once 8 times this much is buffered.
  size_t chunk_bytes = size_t(1) << 20;
  Device device;  // a CUDA device adds the GPU tracks
};

// Where the rank runs, known after the strategy's set-up (TracerStart).
struct RankPlace {
  int rank = 0, world_size = 1, node = 0;
  std::string host;
};

class Tracer {
 public:
  explicit Tracer(TracerOptions opt);
  ~Tracer();  // close(), swallowing errors (an unwinding run)
  Tracer(const Tracer&) = delete;
  Tracer& operator=(const Tracer&) = delete;

  // Opens dir/rank_R.json and writes the metadata (process and thread names, sort order).
  // `origin`: this rank's time zero, taken right after a barrier all ranks pass, so all ranks
  // share one axis. `total_steps` resolves trace.steps = auto. Nothing is recorded before.
  void start(const RankPlace& place, Clock::time_point origin, int64_t total_steps);
  // The compute thread enters global step `step`: recording is on while the step is inside
  // the window. Between steps: writes buffered events out once a chunk is full, and reads
  // the GPU tracks back when the window has just ended.
  void begin_step(int64_t step);
  // The epoch's steps are over (its end: the algorithm's end-of-epoch work, the drain, the
  // evaluation, checkpoints; the end of training) until the next begin_step: what is recorded
  // now belongs to no step (no args.step), as metrics.jsonl counts it outside the epochs
  // (comm_outside_epochs_*). Recording stays as the last step left it: on when that step was in
  // the window. An operation posted in a step and completed after this counts with it too
  // (comm/meter.h): both count communication where it completes.
  void between_steps();
  // True after between_steps() (until the next begin_step).
  bool outside_steps() const { return step() < 0; }
  bool recording() const { return recording_.load(std::memory_order_acquire); }
  // Whether `step` is in the window, for threads that work ahead of the training thread (the
  // loader's workers); false before start().
  bool in_window(int64_t step) const {
    return started_.load(std::memory_order_acquire) && window_.contains(step);
  }
  // The thread of loader worker `worker`: tid 3 (`loader`) for worker 0, 30 + w (`loader w`,
  // named on first use, sorted with tid 3) for the others, so that concurrent workers' events
  // never overlap on one track.
  int loader_tid(int worker);
  int64_t step() const { return step_.load(std::memory_order_relaxed); }
  const StepWindow& window() const { return window_; }
  const RankPlace& place() const { return place_; }
  std::string file_path() const;

  // The run's time base (core/time_source.h). Without one (or with the wall clock) events are
  // stamped with steady_clock; with a virtual clock, with origin + its virtual seconds, so
  // the trace shows modelled time. Set before start(); shared with the driver.
  // `time_base` names it in the file's otherData (the metrics records' "virtual:<platform>";
  // empty: "virtual" or "wall" by the source).
  void set_time(std::shared_ptr<TimeSource> time, std::string time_base = "") {
    time_ = std::move(time);
    time_base_ = std::move(time_base);
  }
  bool virtual_time() const { return time_ && time_->is_virtual(); }
  // otherData.time_base: "wall", or "virtual..." under a virtual cluster (dplab trace then says
  // "virtual" wherever it would say wall time).
  std::string time_base() const;
  // otherData.clock: what ts and dur measure, in words.
  std::string clock_text() const;
  // Now, on the trace's time base. Every instrumented interval reads this, never Clock::now().
  Clock::time_point now() const {
    if (!virtual_time()) return Clock::now();
    return at(time_->now());
  }
  // The instant `seconds` of a virtual clock (a communication thread's event whose virtual
  // start and end the cost model computed), on the trace's axis. Only meaningful when
  // virtual_time().
  Clock::time_point at(double seconds) const {
    return origin_ +
           std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  }

  double us(Clock::time_point t) const {
    return std::chrono::duration<double, std::micro>(t - origin_).count();
  }
  // A complete event ("ph": "X"). step >= 0 adds args.step. Any thread; records only while
  // recording() (checked by the caller, who took `step` when the operation began).
  void complete(std::string_view name, const char* cat, int tid, Clock::time_point t0,
                Clock::time_point t1, int64_t step, std::initializer_list<Arg> args = {});
  void complete_us(std::string_view name, const char* cat, int tid, double ts_us, double dur_us,
                   int64_t step, std::initializer_list<Arg> args = {});

  // GPU tracks (null on a CPU device).
  GpuTimeline* gpu() const { return gpu_.get(); }

  // Reads the GPU tracks back, writes everything out and ends the file (a complete JSON
  // document). Later calls do nothing; recording stops.
  void close();
  // For tests: bytes held in memory, and the most ever held.
  size_t buffered_bytes() const;
  size_t max_buffered_bytes() const { return max_buffered_; }
  // The buffer is written out at once, from any thread, beyond this (a step with many events).
  size_t hard_limit_bytes() const { return 8 * opt_.chunk_bytes; }

 private:
  void add_locked(const std::string& line);
  void resolve_gpu();

  TracerOptions opt_;
  RankPlace place_;
  StepWindow window_;
  Clock::time_point origin_{};
  std::shared_ptr<TimeSource> time_;
  std::string time_base_;
  std::atomic<bool> recording_{false};
  std::atomic<int64_t> step_{-1};
  std::atomic<bool> started_{false};
  std::vector<int> named_loader_tids_;  // under mu_
  bool gpu_resolved_ = true;            // no GPU spans waiting since the last resolve
  mutable std::mutex mu_;
  std::unique_ptr<TraceFile> file_;
  std::unique_ptr<GpuTimeline> gpu_;
  size_t max_buffered_ = 0;
};

// `t` when it is recording, else nullptr (always nullptr with the instrumentation compiled
// out): the one test instrumented code makes.
inline Tracer* active(Tracer* t) {
  if constexpr (!kCompiled) return nullptr;
  return t && t->recording() ? t : nullptr;
}

// A complete event from construction to end() or destruction, on the compute thread's track
// by default, with args.step (the tracer's step at construction). On a CUDA device, spans made
// with gpu = true also measure the device's compute stream over the same program interval
// (tid 4, read back later).
class Span {
 public:
  Span(Tracer* t, const char* name, const char* cat, int tid = kCompute, bool gpu = false) {
    if constexpr (kCompiled) {
      if ((t_ = active(t))) {
        name_ = name;
        cat_ = cat;
        tid_ = tid;
        step_ = t_->step();
        if (gpu && t_->gpu()) gpu_handle_ = t_->gpu()->begin(kGpuCompute);
        t0_ = t_->now();
      }
    }
  }
  ~Span() { end(); }
  Span(const Span&) = delete;
  Span& operator=(const Span&) = delete;
  // No args.step (events that belong to no one step, e.g. eval).
  void without_step() { step_ = -1; }
  // One extra numeric argument (the last call wins).
  void arg(const char* key, double value) { extra_ = {key, value}; }
  void end() {
    if constexpr (kCompiled) {
      if (t_) {
        const auto t1 = t_->now();
        if (gpu_handle_ >= 0) t_->gpu()->end(gpu_handle_, name_, cat_, step_);
        if (extra_.key)
          t_->complete(name_, cat_, tid_, t0_, t1, step_, {extra_});
        else
          t_->complete(name_, cat_, tid_, t0_, t1, step_);
        t_ = nullptr;
      }
    }
  }

 private:
  Tracer* t_ = nullptr;
  const char* name_ = nullptr;
  const char* cat_ = nullptr;
  int tid_ = 0;
  int gpu_handle_ = -1;
  int64_t step_ = -1;
  Arg extra_{nullptr, 0};
  Clock::time_point t0_{};
};

// A blocking communication operation of the compute thread (launch, then wait: parameter
// averages, gossip, broadcasts): the same interval is a `comm` event on tid 2 (in flight) and
// a `wait <what>` event on tid 1 (the compute thread stood still), as CommStats counts it in
// both in_flight_s and exposed_wait_s. `bytes`: this rank's payload.
class BlockingComm {
 public:
  BlockingComm(Tracer* t, const char* comm_name, const char* wait_name, double bytes) {
    if constexpr (kCompiled) {
      if ((t_ = active(t))) {
        comm_ = comm_name;
        wait_ = wait_name;
        bytes_ = bytes;
        step_ = t_->step();
        t0_ = t_->now();
      }
    }
  }
  ~BlockingComm() {
    if constexpr (kCompiled) {
      if (t_) {
        const auto t1 = t_->now();
        t_->complete(comm_, "comm", kComm, t0_, t1, step_, {{"bytes", bytes_}});
        t_->complete(wait_, "wait", kCompute, t0_, t1, step_);
      }
    }
  }
  BlockingComm(const BlockingComm&) = delete;
  BlockingComm& operator=(const BlockingComm&) = delete;

 private:
  Tracer* t_ = nullptr;
  const char* comm_ = nullptr;
  const char* wait_ = nullptr;
  double bytes_ = 0;
  int64_t step_ = -1;
  Clock::time_point t0_{};
};

// An operation launched at `launch` whose completion the compute thread waited for from
// `wait_from` to `done`: a `comm_name` comm event (launch to done, args.bytes) and a `wait_name`
// wait event (wait_from to done), for the tracer's current step. Does nothing unless tracing.
inline void record_comm(Tracer* t, const char* comm_name, const char* wait_name,
                        Clock::time_point launch, Clock::time_point wait_from,
                        Clock::time_point done, double bytes) {
  if constexpr (kCompiled) {
    if ((t = active(t))) {
      t->complete(comm_name, "comm", kComm, launch, done, t->step(), {{"bytes", bytes}});
      t->complete(wait_name, "wait", kCompute, wait_from, done, t->step());
    }
  }
}

}  // namespace dplab::trace
