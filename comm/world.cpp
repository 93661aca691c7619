#include "dplab/comm/world.h"

#include "dplab/comm/comm_options.h"
#include "dplab/core/device.h"
#include "dplab/core/error.h"
#include "dplab/core/usage_error.h"
#ifdef DPLAB_WITH_CUDA
#include "dplab/comm/nccl_communicator.h"
#endif

namespace dplab {

std::string comm_backend(const Options& opt) {
  const OptionTable& t = communicator_option_table();
  const std::string comm = t.get_string(opt, "comm");
  const std::string device = t.get_string(opt, "device");
  if (comm != "auto") return comm;
  return Device::parse(device).is_cuda() ? "nccl" : "mpi";
}

std::shared_ptr<Communicator> make_world(const Options& opt,
                                         std::shared_ptr<cluster::VirtualTime> virtual_time) {
  const std::string backend = comm_backend(opt);
  CommConfig cfg = CommConfig::from_options(opt);
  // The virtual cluster models the MPI backend on CPU tensors (a GPU's compute enters through a
  // compute profile, docs/virtual_cluster.md).
  DPLAB_CHECK_OPTION(!cfg.platform || backend == "mpi",
                     "option cluster = '{}': the virtual cluster runs on the MPI backend (CPU "
                     "tensors); comm resolves to {} (comm = '{}', device = '{}'). Use device = cpu "
                     "and, for a GPU's compute, cluster.compute = profile:FILE",
                     communicator_option_table().get_string(opt, "cluster"), backend,
                     communicator_option_table().get_string(opt, "comm"),
                     communicator_option_table().get_string(opt, "device"));
  if (cfg.platform && virtual_time) cfg.virtual_time = std::move(virtual_time);
  if (backend == "mpi") return mpi_world(cfg);
#ifdef DPLAB_WITH_CUDA
  return nccl_world(cfg);
#else
  DPLAB_FAIL_OPTION(
      "option comm resolves to nccl (comm = '{}', device = '{}'), but dplab was built "
      "without DPLAB_CUDA",
      communicator_option_table().get_string(opt, "comm"),
      communicator_option_table().get_string(opt, "device"));
#endif
}

int nccl_rank_device() {
#ifdef DPLAB_WITH_CUDA
  return nccl_local_device();
#else
  DPLAB_FAIL("NCCL device placement: dplab was built without DPLAB_CUDA");
#endif
}

}  // namespace dplab
