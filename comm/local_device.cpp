#include "dplab/comm/local_device.h"

#include <fmt/format.h>

namespace dplab {

LocalDeviceChoice choose_local_device(int local_rank, int local_size, int visible) {
  if (visible <= 0)
    return {-1, fmt::format("no CUDA device is visible to local rank {} of {}", local_rank,
                            local_size)};
  if (visible == 1) return {0, {}};  // one GPU per rank (CUDA_VISIBLE_DEVICES per task)
  if (local_rank >= 0 && local_rank < visible) return {local_rank, {}};
  return {-1, fmt::format(
                  "comm = nccl needs one CUDA device per rank: local rank {} of {} ranks on this "
                  "host sees only {} device(s) (NCCL rejects two ranks on one GPU); start at most "
                  "{} ranks per host, give each rank one GPU (CUDA_VISIBLE_DEVICES, Slurm "
                  "--gpus-per-task=1), or use comm = mpi",
                  local_rank, local_size, visible, visible)};
}

}  // namespace dplab
