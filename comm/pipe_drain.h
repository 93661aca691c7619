// Waiting until a pipe's reader has taken what this process wrote: a failing rank's last words.
//
// Under MPICH's launcher a rank's stderr is a pipe to its hydra proxy. MPI_Abort (or the SIGKILL
// before MPI starts) makes the launcher kill the job and exit; bytes still in that pipe are then
// lost, and the failure message with them (1 job in 8 when the cores were busy: CI's
// test_comm_failure). The proxy forwards what it has read before it handles the abort, so a
// failing rank first waits until its stderr pipe is empty.
#pragma once
#include <chrono>

namespace dplab {

// Returns once nothing written to `fd` is left unread, or after `limit` (then false). A file
// descriptor that is not a pipe (a terminal, a file) has no reader to wait for: true at once.
// Linux answers FIONREAD on either end of a pipe. Bounded: a reader that never reads must not
// keep a failed rank alive.
bool wait_until_pipe_is_read(int fd, std::chrono::milliseconds limit);

}  // namespace dplab
