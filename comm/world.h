// The world communicator of a run, by backend: option comm = mpi | nccl | auto.
//   mpi   MPI (MPICH) on CPU tensors; link emulation available.
//   nccl  NCCL on CUDA tensors (comm/nccl_communicator.h); needs a DPLAB_CUDA build, a device
//         per rank on each host, and no link emulation.
//   auto  nccl when option device names a CUDA device, else mpi.
// Topology::from_options builds its world here, so every algorithm follows the choice.
#pragma once
#include <memory>
#include <string>

#include "dplab/comm/communicator.h"
#include "dplab/core/options.h"

namespace dplab {

// "mpi" or "nccl": option comm with auto resolved from option device (default cpu). Throws
// naming the option for anything else. Reads (and so marks as used) both options.
std::string comm_backend(const Options& opt);

// The world communicator of the chosen backend, configured by CommConfig::from_options(opt).
// `virtual_time`: the rank's virtual clock when option cluster (or the link shorthand) sets a
// platform: the training driver builds it (its compute mode, this rank's --slowdown, profile
// replay) and hands it here, so the world's operations and the driver read one clock. Null
// with a platform: the world builds its own clock from the platform on the calling thread.
std::shared_ptr<Communicator> make_world(
    const Options& opt, std::shared_ptr<cluster::VirtualTime> virtual_time = nullptr);

// The CUDA device NCCL gives this rank (local rank on the host mod device count; initialises
// MPI). Throws without CUDA (build or device).
int nccl_rank_device();

}  // namespace dplab
