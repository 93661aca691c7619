// The lock that serialises a family of NCCL communicators, and how the family is aborted while a
// thread holds it (issue #31, item 2). Device-free, so its behaviour is tested without a GPU.
//
// Every holder of the lock polls (the NCCL communicators are non-blocking: a call returns at
// once and its completion is polled, comm/nccl_communicator.cpp), and checks at each poll
// whether another thread asked for an abort (abort_if_requested). So:
//  - request_abort(why) from a thread that does not hold the lock sets the request and takes
//    the lock: the holder sees the request at its next poll, aborts and throws, and lets go;
//    the abort never waits for a call stuck in NCCL (PyTorch's watchdog likewise aborts its
//    communicators without the caller's lock);
//  - lock(what, timeout_s) takes the lock with a limit: a thread that cannot get it in time
//    (the holder's call never finishes and nothing else ends it) requests the abort itself and
//    throws, naming what held the lock.
// The abort action (ncclCommAbort on every member) runs under the lock, once per request.
#pragma once
#include <atomic>
#include <functional>
#include <mutex>
#include <string>

namespace dplab {

class AbortableLock {
 public:
  // `abort_all(why)`: aborts every member; called under the lock, must not throw.
  explicit AbortableLock(std::function<void(const std::string& why)> abort_all)
      : abort_all_(std::move(abort_all)) {}
  AbortableLock(const AbortableLock&) = delete;
  AbortableLock& operator=(const AbortableLock&) = delete;

  class Guard {
   public:
    Guard(AbortableLock& l, const std::string& what, double timeout_s);
    ~Guard();
    Guard(const Guard&) = delete;
    Guard& operator=(const Guard&) = delete;

   private:
    AbortableLock& l_;
  };

  // From a thread that does not hold the lock: asks the holder (if any) to abort, then runs the
  // abort under the lock. Returns once it has run. Never throws.
  void request_abort(const std::string& why) noexcept;
  // For the holder, at each poll: when an abort was requested, runs it and throws dplab::Error
  // "<what>: the NCCL communicators were aborted from another thread (<why>)".
  void abort_if_requested(const std::string& what);
  // For the holder: runs the abort now (a failure it saw itself).
  void abort_locked(const std::string& why) noexcept { abort_all_(why); }
  bool abort_requested() const { return requested_.load(std::memory_order_acquire); }

 private:
  void set_holder(const std::string& what);
  std::string holder() const;

  std::mutex mu_;
  std::function<void(const std::string&)> abort_all_;
  std::atomic<bool> requested_{false};
  mutable std::mutex note_mu_;  // guards the strings below; never held across a wait
  std::string why_;             // the first abort request's reason
  std::string holder_;          // what the holder is doing, for messages
};

}  // namespace dplab
