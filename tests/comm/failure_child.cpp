// Child program of failure_test: ranks run allreduces in a loop; one rank fails.
//   failure_child throw RANK   RANK throws an exception after a few steps
//   failure_child kill RANK    RANK kills itself with SIGKILL after a few steps
//   failure_child hang RANK    RANK stops communicating (sleeps); the others' wait times out
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
  return run_mpi_main([&] {
    CommConfig cfg;
    cfg.wait.timeout_s = 5;  // the "hang" case: others give up after 5 s
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
      }
      world->allreduce(t, ReduceOp::average);
    }
    return 0;
  });
}
