// Child program of failure_test: ranks run allreduces in a loop; one rank fails.
//   failure_child throw RANK   RANK throws an exception after a few steps
//   failure_child kill RANK    RANK kills itself with SIGKILL after a few steps
//   failure_child hang RANK    RANK stops communicating (sleeps); the others' wait times out
//   failure_child stop RANK    RANK stops itself with SIGSTOP; the others' wait times out
//   failure_child slowstart RANK  RANK stops (SIGSTOP) after MPI_Init, before creating its world
//                              communicator (as if stuck reading its data)
//   failure_child early RANK   RANK throws before MPI starts (as `dplab train` does when its
//                              data fails to load), through the handler dplab's main() uses
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "dplab/comm/communicator.h"
#include "dplab/comm/mpi_env.h"
#include "dplab/core/error.h"

int main(int argc, char** argv) {
  using namespace dplab;
  const std::string mode = argc > 1 ? argv[1] : "throw";
  const int victim = argc > 2 ? std::atoi(argv[2]) : 1;
  if (mode == "early") {
    // Before MPI_Init: the other ranks are already inside it, waiting for this one.
    const char* me = std::getenv("PMI_RANK");
    if (me && std::atoi(me) == victim) {
      try {
        DPLAB_FAIL("injected start-up failure");
      } catch (const std::exception& e) {
        abort_if_distributed(e.what());
      }
      return 3;  // not reached under mpiexec
    }
  }
  return run_mpi_main([&] {
    CommConfig cfg;
    cfg.wait.timeout_s = 5;  // the "hang" and "stop" cases: others give up after 5 s
    if (mode == "slowstart" && MpiEnv::get().world_rank() == victim) std::raise(SIGSTOP);
    auto world = mpi_world(cfg);
    // Hydra names a killed process by PID only; print the victim's so the test can map it.
    if (world->rank() == victim) {
      std::printf("victim rank %d pid %d\n", victim, static_cast<int>(getpid()));
      std::fflush(stdout);
    }
    Tensor t = Tensor::ones({1000});
    for (int step = 0; step < 1000000; ++step) {
      if (step == 5 && world->rank() == victim) {
        if (mode == "throw") DPLAB_FAIL("injected failure at step {}", step);
        if (mode == "kill") std::raise(SIGKILL);
        if (mode == "hang") std::this_thread::sleep_for(std::chrono::seconds(120));
        if (mode == "stop") std::raise(SIGSTOP);
      }
      world->allreduce(t, ReduceOp::average);
    }
    return 0;
  });
}
