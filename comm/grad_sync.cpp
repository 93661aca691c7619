#include "dplab/comm/grad_sync.h"
#include "dplab/core/usage_error.h"

#include "dplab/core/device_intervals.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <optional>
#include <utility>

#include "dplab/comm/cluster/virtual_time.h"
#include "dplab/core/backend.h"
#include "dplab/core/comm_stream_scope.h"
#include "dplab/core/error.h"

namespace dplab {

std::vector<GradBucket> plan_buckets(const std::vector<ArenaSegment>& segments,
                                     double first_bucket_mb, double bucket_cap_mb) {
  DPLAB_CHECK(first_bucket_mb >= 0 && bucket_cap_mb >= 0,
              "bucket sizes must be >= 0 MiB, got first {} cap {}", first_bucket_mb, bucket_cap_mb);
  std::vector<GradBucket> out;
  const double mib = 1024.0 * 1024.0;
  double limit = (bucket_cap_mb == 0 ? 0 : first_bucket_mb) * mib;
  GradBucket cur;
  double bytes = 0;
  bool open = false;
  for (int i = 0; i < static_cast<int>(segments.size()); ++i) {
    const auto& s = segments[i];
    if (!open) {
      cur = GradBucket{s.offset, s.offset, i, i};
      bytes = 0;
      open = true;
    }
    cur.last_segment = i;
    cur.end = s.offset + s.numel;
    bytes += 4.0 * static_cast<double>(s.numel);
    if (bytes >= limit) {
      out.push_back(cur);
      open = false;
      limit = bucket_cap_mb * mib;
    }
  }
  if (open) out.push_back(cur);
  return out;
}

GradSyncOptions GradSyncOptions::from_options(const Options& opt, const std::string& prefix) {
  const OptionTable t = grad_sync_options().prefixed(prefix, "");
  GradSyncOptions o;
  o.first_bucket_mb = t.get_double(opt, prefix + "first_bucket_mb");
  o.bucket_cap_mb = t.get_double(opt, prefix + "bucket_cap_mb");
  o.wire = parse_dtype(t.get_string(opt, prefix + "wire"));
  o.hierarchical = t.get_bool(opt, prefix + "hierarchical");
  o.compress = CompressOptions::from_options(opt, prefix);
  o.reducer = t.get_string(opt, prefix + "reducer");
  DPLAB_CHECK_OPTION(o.reducer.empty() || has_bucket_reducer(o.reducer),
                     "option {}reducer: expected a registered bucket reducer ({}), got '{}'",
                     prefix, fmt::join(bucket_reducer_names(), ", "), o.reducer);
  return o;
}

// Hooks hold a weak reference: after the GradSync is gone they do nothing.
struct GradSync::State {
  GradSync* owner;
};

GradSync::GradSync(ParamArena& arena, std::shared_ptr<Communicator> world,
                   const GradSyncOptions& opt, std::shared_ptr<Communicator> node,
                   std::shared_ptr<Communicator> cross)
    : arena_(arena),
      world_(std::move(world)),
      node_(std::move(node)),
      cross_(std::move(cross)),
      opt_(opt) {
  DPLAB_CHECK(world_ != nullptr, "GradSync: no communicator");
  DPLAB_CHECK(is_floating(opt_.wire), "GradSync: wire type {} is not a float type",
              dtype_name(opt_.wire));
  DPLAB_CHECK(!opt_.hierarchical || (node_ && cross_),
              "GradSync: hierarchical mode needs node and cross communicators (a Topology)");
  // Both modes hand arena slices (and, hierarchical, scratch buffers on the arena's device) to
  // the communicators, which check the device (MPI: CPU, NCCL: this rank's GPU).
  buckets_ = plan_buckets(arena_.segments(), opt_.first_bucket_mb, opt_.bucket_cap_mb);
  bucket_of_segment_.resize(arena_.segments().size());
  pending_.resize(buckets_.size());
  ready_at_.resize(buckets_.size());
  vt_ = world_->virtual_time();
  ready_virtual_.assign(buckets_.size(), 0.0);
  end_virtual_.assign(buckets_.size(), 0.0);
  for (size_t b = 0; b < buckets_.size(); ++b)
    ready_marks_.push_back(std::make_unique<StreamMark>(arena_.device(), DeviceStream::compute));
  buckets_end_ = std::make_unique<StreamMark>(arena_.device(), DeviceStream::comm);
  for (size_t b = 0; b < buckets_.size(); ++b) {
    for (int s = buckets_[b].first_segment; s <= buckets_[b].last_segment; ++s)
      bucket_of_segment_[s] = static_cast<int>(b);
    pending_[b] = buckets_[b].last_segment - buckets_[b].first_segment + 1;
  }
  tensors_.resize(buckets_.size());
  for (size_t b = 0; b < buckets_.size(); ++b)
    for (int s = buckets_[b].first_segment; s <= buckets_[b].last_segment; ++s) {
      const ArenaSegment& seg = arena_.segments()[s];
      tensors_[b].push_back({seg.offset - buckets_[b].begin, seg.numel, seg.shape});
    }
  reducer_ = make_bucket_reducer(
      resolve_reducer_name(opt_),
      ReducerSetup{opt_, buckets_, tensors_, arena_.device(), *world_, node_.get(), cross_.get()});
  state_ = std::make_shared<State>(State{this});
  std::weak_ptr<State> weak = state_;
  for (size_t i = 0; i < arena_.segments().size(); ++i) {
    const int seg = static_cast<int>(i);
    arena_.segments()[i].param.register_grad_ready_hook([weak, seg](const Tensor&) {
      if (auto st = weak.lock()) st->owner->on_ready(seg);
    });
  }
  // Exposed wait on a device: measured with CUDA events (null on the CPU, see finish()).
  // Both modes: on a CUDA arena the communicators are NCCL (MPI takes CPU tensors only).
  device_waits_ = make_device_intervals(arena_.device());
  device_flight_ = make_device_intervals(arena_.device());
  // The device is read here, not by the thread: the thread must touch nothing outside this
  // object before its first bucket.
  thread_ = std::thread([this, device = arena_.device()] { comm_loop(device); });
}

GradSync::~GradSync() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
  state_.reset();
}

GradCompressor* GradSync::compressor() {
  auto* c = dynamic_cast<CompressedReducer*>(reducer_.get());
  return c ? c->compressor() : nullptr;
}

const GradCompressor* GradSync::compressor() const {
  auto* c = dynamic_cast<const CompressedReducer*>(reducer_.get());
  return c ? const_cast<CompressedReducer*>(c)->compressor() : nullptr;
}

void GradSync::add_compression_state(std::map<std::string, double>& state) const {
  if (const GradCompressor* c = compressor()) state["compress_active"] = c->compressing() ? 1 : 0;
}

void GradSync::set_reducer(std::unique_ptr<BucketReducer> r) {
  DPLAB_CHECK(r != nullptr, "GradSync::set_reducer: no reducer");
  std::lock_guard<std::mutex> lock(mu_);
  DPLAB_CHECK(!active_ && next_launch_ == 0 && queue_.empty(),
              "GradSync::set_reducer: a backward pass is under way (call it after finish())");
  reducer_ = std::move(r);
}

void GradSync::on_ready(int segment) {
  if (no_sync_) return;
  std::lock_guard<std::mutex> lock(mu_);
  active_ = true;
  const int b = bucket_of_segment_[segment];
  if (pending_[b] > 0 && --pending_[b] == 0) {
    ready_marks_[b]->record();  // the compute thread: its stream holds the gradients up to here
    if (trace::active(tracer_)) ready_at_[b] = trace::Clock::now();
    // The hooks run on the compute thread; a replayed compute profile says when (virtual_time.h).
    if (vt_)
      ready_virtual_[b] = vt_->ready_time(buckets_[b].first_segment, buckets_[b].last_segment);
  }
  launch_ready_locked();
}

void GradSync::launch_ready_locked() {
  bool launched = false;
  while (next_launch_ < static_cast<int>(buckets_.size()) && pending_[next_launch_] == 0) {
    queue_.push_back(next_launch_++);
    launched = true;
  }
  if (launched) cv_.notify_all();
}

void GradSync::finish() {
  if (no_sync_) return;
  const auto t0 = Clock::now();
  const double virtual_t0 = vt_ ? vt_->clock.now() : 0.0;  // end of backward, virtual
  // The trace's axis: virtual when the trace is (then the wait span below, which reads the
  // tracer's time, also runs from here to the clock after the wait).
  const bool virtual_trace = vt_ && tracer_ != nullptr && tracer_->virtual_time();
  const auto trace_t0 = virtual_trace ? tracer_->at(virtual_t0) : t0;
  trace::Span wait_span(tracer_, "wait allreduce", "wait");  // as exposed_wait_s below
  // On a device the exposed wait is the compute stream's stall, measured there between an
  // event at the end of backward (here) and one after the stream may resume (below), in both
  // modes: flat, the compute stream waits for the buckets' completion events; hierarchical, the
  // communication thread waits on the host for each stage, and the next compute work is
  // enqueued after this host wait, so the stream idles for as long as the communication lasts
  // beyond backward (core/device_intervals.h; issue #19, items 3 and 10). The host times only
  // enqueuing there. Closed on every path, errors included, so the next pass can open one.
  const bool on_device = device_waits_ != nullptr && !vt_;
  if (on_device) device_waits_->begin();
  struct CloseWait {
    DeviceIntervals* iv;
    ~CloseWait() {
      try {
        if (iv) iv->end();
      } catch (...) {  // already failing: the first error is the one to report
      }
    }
  } close_wait{on_device ? device_waits_.get() : nullptr};
  std::unique_lock<std::mutex> lock(mu_);
  // Buckets whose tensors got no gradient this pass still travel, in order, on every rank.
  for (size_t b = 0; b < pending_.size(); ++b) {
    if (pending_[b] > 0) ready_marks_[b]->record();
    if (pending_[b] > 0 && trace::active(tracer_)) ready_at_[b] = trace_t0;
    if (pending_[b] > 0) ready_virtual_[b] = virtual_t0;
    pending_[b] = 0;
  }
  launch_ready_locked();
  const double timeout = world_->wait_options().timeout_s;
  auto all_done = [&] { return done_ == static_cast<int>(buckets_.size()); };
  compute_waiting_.store(true, std::memory_order_relaxed);
  struct ClearWaiting {
    std::atomic<bool>& flag;
    ~ClearWaiting() { flag.store(false, std::memory_order_relaxed); }
  } clear_waiting{compute_waiting_};
  // The communication thread enforces the per-operation timeout; this is a backstop.
  if (timeout > 0) {
    if (!cv_.wait_for(lock, std::chrono::duration<double>(2 * timeout + 10), all_done))
      DPLAB_FAIL("GradSync::finish: buckets still in flight after {:.0f} s", 2 * timeout + 10);
  } else {
    cv_.wait(lock, all_done);
  }
  // Re-arm for the next backward pass.
  for (size_t b = 0; b < buckets_.size(); ++b)
    pending_[b] = buckets_[b].last_segment - buckets_[b].first_segment + 1;
  next_launch_ = 0;
  done_ = 0;
  active_ = false;
  double virtual_end = virtual_t0;
  if (vt_ && !error_)
    for (double e : end_virtual_) virtual_end = std::max(virtual_end, e);
  // A synchronised step is over (the communication thread is idle until the next hooks).
  if (!error_) reducer_->end_step();
  std::vector<Request> posted = std::move(device_pending_);
  device_pending_.clear();
  const bool on_comm = std::exchange(on_comm_, false);
  std::exception_ptr err = std::exchange(error_, nullptr);
  lock.unlock();  // the communication thread is idle until the next backward's hooks
  // Device requests: the compute stream waits for them (no host wait). Ordered even after an
  // error, so no later kernel overtakes communication that is still in flight. The exposed wait
  // is then the compute stream's stall, measured on the device between two events around the
  // waits (core/device_intervals.h); the host only enqueued them (issue #19, item 10).
  for (Request& r : posted) {
    try {
      r.complete_before_compute();
    } catch (...) {
      if (!err) err = std::current_exception();
    }
  }
  // And for the buckets' own kernels on the comm stream (stage_kernels_on_comm_stream): the
  // hierarchical reducer's copy back follows its last collective there. Up to the last bucket's
  // end only: communication another thread posts later is not this step's to wait for.
  try {
    if (on_comm) buckets_end_->make_wait(DeviceStream::compute);
  } catch (...) {
    if (!err) err = std::current_exception();
  }
  if (on_device) {
    device_waits_->end();
    close_wait.iv = nullptr;
  }
  double waited = std::chrono::duration<double>(Clock::now() - t0).count();
  if (vt_) {
    // Virtual time: the wait lasts until the last bucket's end, if that is after backward.
    vt_->clock.wait_until(virtual_end);
    waited = virtual_end - virtual_t0;
  }
  wait_span.end();
  if (!on_device) {
    CommStats w;
    w.exposed_wait_s = waited;
    std::lock_guard<std::mutex> relock(mu_);
    meter_.add(w);
  }
  if (err) std::rethrow_exception(err);
}

void GradSync::save_state(StateDict& out) const {
  reducer_->save_state(out);
}

void GradSync::load_state(const StateDict& in) {
  reducer_->load_state(in);
}

CommStats GradSync::take_stats() {
  // Device stalls finished by now (no wait: later ones count in a later window).
  const double device_wait = device_waits_ ? device_waits_->take_seconds() : 0.0;
  const double device_flight = device_flight_ ? device_flight_->take_seconds() : 0.0;
  std::lock_guard<std::mutex> lock(mu_);
  CommStats s = meter_.take_stats();
  s.exposed_wait_s += device_wait;
  s.in_flight_s += device_flight;
  return s;
}

void GradSync::comm_loop(Device device) {
  const HelperWaits helper(&compute_waiting_);  // spin only while finish() waits for us
  try {
    use_device(device);  // see core/device.h: no CUDA context on GPU 0 for this thread
  } catch (...) {
    std::lock_guard<std::mutex> lock(mu_);
    error_ = std::current_exception();  // finish() rethrows it; the buckets are skipped
  }
  for (;;) {
    int b = -1;
    bool failed = false;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stop requested and nothing left
      b = queue_.front();
      queue_.pop_front();
      failed = error_ != nullptr;
    }
    std::exception_ptr err;
    if (!failed) {  // after a failure, later buckets are skipped (finish() rethrows)
      try {
        reduce_bucket(b);
      } catch (...) {
        err = std::current_exception();
      }
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (err && !error_) error_ = err;
      ++done_;
    }
    cv_.notify_all();
  }
}

void GradSync::reduce_bucket(int b) {
  const GradBucket& bk = buckets_[b];
  BucketView view{b, bk, arena_.grads().flat_range(bk.begin, bk.end), tensors_[b]};
  BucketContext ctx;
  ctx.bucket_ = b;
  ctx.world_ = world_.get();
  ctx.node_ = node_.get();
  ctx.cross_ = cross_.get();
  ctx.average_ = opt_.average;
  ctx.wire_ = opt_.wire;
  ctx.meter_ = &meter_;
  ctx.mu_ = &mu_;
  ctx.device_pending_ = &device_pending_;
  // On a device, the time in flight is measured there (see the header).
  ctx.flight_ = device_flight_.get();
  // Tracing: the step was set by the compute thread before this backward pass began, and
  // finish() waits for this bucket before the step ends.
  trace::Tracer* const tr = trace::active(tracer_);
  const int64_t step = tr ? tr->step() : -1;
  ctx.tracer_ = tr;
  ctx.step_ = step;
  // On a CUDA arena a reducer with stage_kernels_on_comm_stream() runs on the comm stream, which
  // first waits for the bucket's gradients (ready_marks_) and nothing later (issue #34).
  std::optional<CommStreamScope> on_comm;
  if (reducer_->stage_kernels_on_comm_stream())
    on_comm.emplace(arena_.device(), ready_marks_[b].get());
  // Its flight then starts on the comm stream: from the gradients, or from the end of what the
  // stream queued before (the previous bucket), as on the virtual clock.
  if (on_comm) ctx.open_flight_on_comm();
  // However reduce() ends, finish() makes the compute stream wait for what the bucket enqueued on
  // the comm stream (a failing bucket too: nothing later may overtake it).
  struct MarkEnd {
    StreamMark* mark;
    std::mutex& mu;
    bool& flag;
    ~MarkEnd() {
      if (!mark) return;
      try {
        mark->record();
        std::lock_guard<std::mutex> lock(mu);
        flag = true;
      } catch (...) {  // already failing: the first error is the one to report
      }
    }
  } mark_end{on_comm ? buckets_end_.get() : nullptr, mu_, on_comm_};
  // The GPU span starts when the comm stream has caught up with the compute stream (the
  // gradients are ready there), not when the comm stream reaches this bucket's wait for them.
  const int gpu_span = !tr || !tr->gpu() ? -1
                       : on_comm         ? tr->gpu()->begin(trace::kGpuComm)
                                         : tr->gpu()->begin_comm_after_compute();
  // Virtual time: each operation of the bucket is posted at the virtual time it could start on
  // the compute thread's clock (the bucket's ready time, then the previous operation's end), not
  // when this thread gets to it; the waits are real only (this is not the clock's thread).
  double virtual_ready = 0;
  if (vt_) {
    std::lock_guard<std::mutex> lock(mu_);
    virtual_ready = ready_virtual_[b];
  }
  ctx.vt_ = vt_.get();
  ctx.virtual_end_ = virtual_ready;
  // The trace's axis: on a virtual trace the bucket's events are its virtual interval (ready
  // to end, each stage from its post to its end, through Tracer::at), not when this thread ran
  // them; on a wall-clock trace, steady_clock as this thread runs them.
  ctx.virtual_trace_ = tr && vt_ && tr->virtual_time();
  const auto t0 = ctx.mark();
  ctx.post_at(virtual_ready);
  reducer_->reduce(view, ctx);
  ctx.close_flight();
  const auto t1 = ctx.mark();
  // The reducer's collectives are counted by the meter; the bucket's time in flight is GradSync's:
  // from the device (take_stats() adds it), or here.
  CommStats s;
  s.in_flight_s = ctx.flight_measured_ ? 0.0 : std::chrono::duration<double>(t1 - t0).count();
  const double virtual_end = ctx.virtual_end_;
  if (vt_) {
    std::lock_guard<std::mutex> lock(mu_);
    // In flight from when it could start: its ready time, or the end of the pass's previous
    // bucket when it queued behind it (the communicator runs one operation at a time). So the
    // buckets' intervals do not overlap, and their sum is at most the time the pass
    // communicated, as on the wall clock, where this thread launches them one by one.
    const double start = b > 0 ? std::max(virtual_ready, end_virtual_[b - 1]) : virtual_ready;
    s.in_flight_s = virtual_end - start;
    end_virtual_[b] = virtual_end;
  }
  if (tr) {
    if (gpu_span >= 0)
      tr->gpu()->end(gpu_span, fmt::format("allreduce bucket {}", b), "comm", step);
    trace::Clock::time_point ready = t0;  // virtual: posted at its ready time
    if (!ctx.virtual_trace_) {
      std::lock_guard<std::mutex> lock(mu_);
      ready = ready_at_[b];
    }
    tr->complete(fmt::format("allreduce bucket {}", b), "comm", trace::kComm, t0, t1, step,
                 {{"bucket", double(b)},
                  {"bytes", ctx.payload_},
                  {"wire_bytes", ctx.wire_bytes_},
                  {"tensors", double(bk.last_segment - bk.first_segment + 1)},
                  {"ready_us", tr->us(ready)},
                  {"launch_us", tr->us(t0)}});
  }
  std::lock_guard<std::mutex> lock(mu_);
  meter_.add(s);
}

}  // namespace dplab
