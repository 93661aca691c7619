// Which rank did not arrive? When a wait times out (comm.timeout_s) the rank that gave up asks
// the other ranks what they are waiting for, over a communicator of its own (MpiEnv's dup of
// MPI_COMM_WORLD, so no application message can match). Every rank answers from inside its
// own waits (polite_wait calls answer_stall_queries every 64 tests), so a rank that is blocked
// in a collective answers within milliseconds. A rank that does not answer within the grace
// period is not waiting in any communication: stopped (SIGSTOP, a debugger, a swapped-out
// node), hung, or still computing: that is the rank that did not arrive, and the timeout
// message names it, along with what each answering rank waits in (collective numbers per
// communicator show a rank that is one collective behind). This is Horovod's "missing ranks"
// report and the spirit of PyTorch's NCCL flight recorder, done with MPI point-to-point.
#pragma once
#include <functional>
#include <string>
#include <vector>

namespace dplab {

// How long a stalled job may take to end after its first timeout (comm.timeout_s): the grace
// for the answers, the failure message with the wait until the launcher has read it
// (comm/pipe_drain.h, at most 2 s) and MPI_Abort share these seconds. Nothing else may wait
// once a wait has timed out (communication_timed_out()): a destructor that waited for the lost
// rank again made a job with comm.timeout_s = 10 end 25 s after a rank was stopped (issue #38).
constexpr double kEndAfterTimeoutS = 5.0;
// Of kEndAfterTimeoutS, what the message, the pipe drain and MPI_Abort keep.
constexpr double kAfterStallReportS = 2.5;

// The grace period of the stall report for a wait with limit `timeout_s` that gave up after
// `waited_s` (>= timeout_s; more when the rank was descheduled): long enough for a rank blocked
// in a wait to answer (it checks every 64 tests), even on an oversubscribed host; short next to
// the timeout (timeout_s / 4); and capped by what remains of kEndAfterTimeoutS after
// kAfterStallReportS, though never below 0.5 s (answers take milliseconds; a shorter grace
// would name ranks that are merely slow to answer).
double stall_grace_s(double timeout_s, double waited_s);

// Marks that a wait of this process timed out (polite_wait and the device waits do, before the
// stall report): the job is ending.
void note_communication_timeout();
// True once a wait of this process has timed out. A wait that only cleans up (a destructor's)
// then leaves its requests in flight instead of waiting for the lost rank a second time.
bool communication_timed_out();

// Answers pending queries from ranks that timed out, with what(): what this rank waits in.
// Non-blocking, thread-safe (matched probes), a no-op when MPI is not active.
void answer_stall_queries(const std::function<std::string()>& what);

// Asks `members` (world ranks; empty: every rank) what they wait in and waits up to grace_s
// seconds for their answers, answering others' queries meanwhile. Returns a sentence for the
// timeout message: "rank 3 did not arrive: it did not answer within 2 s (...); waiting: rank 1
// in ..., rank 2 in ..." (empty when MPI is not active or there is nobody to ask).
std::string ask_who_did_not_arrive(const std::string& waiting_on, const std::vector<int>& members,
                                   double grace_s);

}  // namespace dplab
