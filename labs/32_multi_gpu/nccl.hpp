#pragma once
// NCCL, the collectives' baselines of lab 32 (built when meson finds nccl.h and
// libnccl: CUDALABS_HAVE_NCCL).
//
// Teaches: a communicator per GPU, all made by one process (ncclCommInitAll),
// and one collective as a group of calls, one per GPU on that GPU's stream,
// which NCCL launches together at ncclGroupEnd.
// Measures: nothing here; collectives.cpp times nccl_allreduce,
// nccl_reduce_scatter and nccl_all_gather against the hand-written ones.
#include <span>
#include <string>
#include <vector>

#include "host_common.hpp"

#if CUDALABS_HAVE_NCCL
#include <nccl.h>
#endif

namespace lab32host {

#if CUDALABS_HAVE_NCCL
inline void check_nccl(ncclResult_t result, const char* call) {
  if (result != ncclSuccess)
    throw cudalabs::CudaError(std::string(call) + " failed: " + ncclGetErrorString(result));
}
#define LAB32_CHECK_NCCL(call) check_nccl((call), #call)

// One communicator per GPU of the team, all in this process (ncclCommInitAll).
class NcclComms {
 public:
  // NCCL switches devices inside; the caller's is put back.
  explicit NcclComms(std::span<const int> devices) : comms_(devices.size(), nullptr) {
    DeviceGuard keep(current_device());
    LAB32_CHECK_NCCL(ncclCommInitAll(comms_.data(), static_cast<int>(devices.size()), devices.data()));
  }
  ~NcclComms() {
    int caller = -1;
    if (cudaGetDevice(&caller) != cudaSuccess) caller = -1;
    for (ncclComm_t c : comms_)
      if (c) ncclCommDestroy(c);
    if (caller >= 0) cudaSetDevice(caller);
  }
  NcclComms(const NcclComms&) = delete;
  NcclComms& operator=(const NcclComms&) = delete;

  // One all-reduce: every GPU's out = the sum of every GPU's in. One thread
  // drives every GPU, so the calls form one group: NCCL launches them together
  // at ncclGroupEnd instead of waiting in the first call for the others.
  void all_reduce(Team& team, std::int64_t n) {
    LAB32_CHECK_NCCL(ncclGroupStart());
    for (int g = 0; g < team.size(); ++g)
      LAB32_CHECK_NCCL(ncclAllReduce(team[g].in.data(), team[g].out.data(), static_cast<std::size_t>(n), ncclFloat,
                                     ncclSum, comms_[static_cast<std::size_t>(g)], team[g].stream));
    LAB32_CHECK_NCCL(ncclGroupEnd());
  }

  // ncclReduceScatter: GPU g's out[g·per, (g+1)·per) = the sum of that range of
  // every in, per = n / G (NCCL's chunks are equal; the n mod G floats left over
  // take no part). ncclAllGather: every out[g·per, (g+1)·per) = GPU g's in there.
  void reduce_scatter(Team& team, std::int64_t n) {
    const auto per = static_cast<std::size_t>(n / team.size());
    LAB32_CHECK_NCCL(ncclGroupStart());
    for (int g = 0; g < team.size(); ++g)
      LAB32_CHECK_NCCL(ncclReduceScatter(team[g].in.data(), team[g].out.data() + per * static_cast<std::size_t>(g), per,
                                         ncclFloat, ncclSum, comms_[static_cast<std::size_t>(g)], team[g].stream));
    LAB32_CHECK_NCCL(ncclGroupEnd());
  }
  void all_gather(Team& team, std::int64_t n) {
    const auto per = static_cast<std::size_t>(n / team.size());
    LAB32_CHECK_NCCL(ncclGroupStart());
    for (int g = 0; g < team.size(); ++g)
      LAB32_CHECK_NCCL(ncclAllGather(team[g].in.data() + per * static_cast<std::size_t>(g), team[g].out.data(), per,
                                     ncclFloat, comms_[static_cast<std::size_t>(g)], team[g].stream));
    LAB32_CHECK_NCCL(ncclGroupEnd());
  }

  static std::string version() {
    int v = 0;
    ncclGetVersion(&v);
    return format_line("%d.%d.%d", v / 10000, v / 100 % 100, v % 100);
  }

 private:
  std::vector<ncclComm_t> comms_;
};
#else
// Built without NCCL: the type exists so that the code reads the same.
class NcclComms {
 public:
  void all_reduce(Team&, std::int64_t) {}
  void reduce_scatter(Team&, std::int64_t) {}
  void all_gather(Team&, std::int64_t) {}
};
#endif

}  // namespace lab32host
