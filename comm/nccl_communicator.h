// The NCCL backend of Communicator, for CUDA tensors (built only with DPLAB_CUDA).
//
// Bootstrap: each NCCL communicator wraps an MPI communicator over the same ranks. Rank 0 calls
// ncclGetUniqueId and broadcasts it over MPI, then every rank calls ncclCommInitRank. split()
// splits the MPI communicator and creates a new NCCL communicator for the new group, so a
// Topology built on an NCCL world has one NCCL communicator per group (world, node, cross).
// node_of(), wait options and names come from the MPI communicator. The argument checks, the
// requests' names (numbered collectives) and their bookkeeping are the MPI backend's, shared in
// comm/backend_communicator.h; this file keeps only NCCL's posting and progress.
//
// Device: comm/local_device.h: a rank that sees one GPU (CUDA_VISIBLE_DEVICES per rank, Slurm
// --gpus-per-task=1) uses it; otherwise rank r of the host uses device r, the local rank coming
// from MPI_Comm_split_type(SHARED) computed once at MPI start (MpiEnv::local_rank). NCCL refuses
// two ranks on one GPU, so nccl_world() throws when a host runs more ranks than it has devices.
// Tensors must be contiguous CUDA tensors on that device (an error names the tensor otherwise).
//
// Streams and ordering: every operation runs on dplab::cuda::comm_stream(device). Posting one
// records an event on the compute stream and makes the comm stream wait on it (device-side,
// no host synchronisation), so the collective sees everything compute enqueued before the call;
// a completion event is recorded after it. Request::test() queries that event (and NCCL's
// asynchronous error state), never blocking; Request::wait() is the polite MPI wait over it, with
// the same timeout naming the operation. Request::order_before_compute() makes the compute
// stream wait for the completion event instead, and Request::complete_before_compute() does
// that and retires the request (what GradSync and the algorithms use inside a step, so a step
// never waits on the host for its communication; errors NCCL reports asynchronously are thrown
// there too).
// Inside a CommStreamScope (core/comm_stream_scope.h: GradSync's bucket reductions) the comm
// stream waited for compute once, when the scope began; a collective posted there does not wait
// again (that would queue it behind the backward enqueued since), and its wire conversions run
// on the comm stream, the one back right behind the collective.
// All communicators of a device share one comm stream, so their operations run in posting order
// per rank: programs must post collectives in the same order on every rank (as MPI requires per
// communicator), including across communicators that share ranks.
//
// Wire types: f32/bf16/f16 (and i32/i64/u8 where reductions allow) map to NCCL's types. A wire
// type that differs from the tensor's is handled like the MPI backend: the tensor is converted
// into a wire buffer by the element-wise copy kernel on the compute stream (the comm stream
// inside a CommStreamScope) before the collective, and converted back after it (the average's 1/n
// is applied in f32 during that conversion, as in the MPI backend). The back conversion is enqueued
// on the compute stream once the collective is seen complete (test/wait) or by
// order_before_compute(), so it never stalls compute that was enqueued in between (inside a
// CommStreamScope: on the comm stream, right behind the collective). NCCL reduces
// 16-bit wire data with its own kernels: each hop adds two wire-type values and rounds to the wire
// type (the MPI backend's user op does the same, widening to f32 per hop), so the error bound is
// the same (hops * 2^-9 for bf16, 2^-12 for f16, relative); bit patterns can differ from MPI's
// because NCCL's ring/tree order of additions differs. Without a conversion, average is ncclAvg.
//
// Point-to-point: NCCL has no tags and a lone send can deadlock against the peer's lone send.
// isend/irecv therefore queue; the queue of the whole family (the world and every communicator
// split from it, which share the comm stream) is issued before the family's next operation of
// any kind: a collective or split on any of its communicators, or the first test/wait/
// order_before_compute of a queued request (comm/p2p_order.h has the rule and why). Each
// communicator's share goes out as one ncclGroupStart/End group, sorted by (peer, tag) with
// posting order kept for equal tags. Both ranks must post the matching messages before either
// waits (the "post all, then wait all" pattern of Crossover and SGP); a receive that waits while
// its matching send is still queued on a later group is a usage error NCCL cannot detect
// (counts would be paired in the wrong order).
//
// Failures (the watchdog, issue #19 item 3, issue #31 item 2): Request::wait() has the MPI
// backend's limit (comm.timeout_s) and stall report; when it fails (timeout, or an error NCCL
// reports), every communicator of the family is aborted (ncclCommAbort) before the error
// propagates, and later operations on them fail saying so. The communicators are non-blocking
// (ncclConfig_t::blocking = 0): no NCCL call blocks the host, not even the connection set-up that
// NCCL 2.28 does at a communicator's first collective; each call's completion is polled under the
// family's lock with comm.timeout_s, and an abort from another thread never needs that lock to
// be free (comm/abortable_lock.h), as PyTorch's watchdog aborts without the caller's lock.
// comm.timeout_s also bounds every host wait for the device (core/host_wait.h,
// core/cuda/stream_wait.h: reading a tensor back, the non-finite guard's flags), since the
// compute stream may be waiting for a stalled collective. At teardown a communicator whose comm
// stream does not drain within comm.timeout_s, or which has an asynchronous error, is aborted
// instead of destroyed (ncclCommDestroy would wait for the peers).
//
// The virtual cluster (cluster, link.intra / link.inter) is a layer for communicators whose
// operations complete on the host (comm/virtual_communicator.h): nccl_world() rejects it.
#pragma once
#include <memory>

#include "dplab/comm/communicator.h"

namespace dplab {

// The CUDA device this rank uses with NCCL (comm/local_device.h). Not a collective: any rank may
// ask at any time. Throws naming the reason when no device can be chosen.
int nccl_local_device();

// The NCCL world communicator (initialising MPI if needed), configured by `cfg`.
std::shared_ptr<Communicator> nccl_world(const CommConfig& cfg = {});

// An NCCL communicator over the ranks of `mpi` (collective over them), on CUDA device `device`.
std::shared_ptr<Communicator> make_nccl_communicator(std::shared_ptr<Communicator> mpi, int device);

}  // namespace dplab
