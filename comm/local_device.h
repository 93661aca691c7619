// Which CUDA device a rank uses with NCCL (pure logic, no CUDA or MPI: unit-tested everywhere).
//
// Two launch styles must both work (issue #19, item 2):
//  - every rank sees all of the host's GPUs (mpiexec alone): rank r of the host takes device r,
//    which needs local ranks <= visible devices (NCCL rejects two ranks on one GPU);
//  - every rank sees exactly one GPU (Slurm --gpus-per-task=1, or a launcher that sets
//    CUDA_VISIBLE_DEVICES per rank): that one device is device 0 of the rank, whatever its
//    local rank. Whether two ranks then share a GPU is for NCCL to find ("Duplicate GPU
//    detected"), which its error names.
// PyTorch's recipes do the same: LOCAL_RANK when all GPUs are visible, cuda:0 under one GPU per
// task.
#pragma once
#include <string>

namespace dplab {

struct LocalDeviceChoice {
  int device = -1;    // the CUDA device index of this rank, or -1 with `error` set
  std::string error;  // why no device can be chosen
};

// `local_rank` of `local_size` ranks on this host; `visible` = cudaGetDeviceCount of this rank.
LocalDeviceChoice choose_local_device(int local_rank, int local_size, int visible);

}  // namespace dplab
