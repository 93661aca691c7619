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
