// NCCL, the all-reduce baseline of lab 32 (built when meson finds nccl.h and
// libnccl: CUDALABS_HAVE_NCCL).
//
// Teaches: a communicator per GPU, all made by one process (ncclCommInitAll),
// and one all-reduce as a group of calls, one per GPU on that GPU's stream,
// which NCCL launches together at ncclGroupEnd.
// Measures: nothing here; collectives.cpp times nccl_allreduce against the
// hand-written all-reduces.
#include <string>

#include "host_common.hpp"

#if CUDALABS_HAVE_NCCL
namespace lab32host {
namespace {

void check_nccl(ncclResult_t result, const char* call) {
  if (result != ncclSuccess)
    throw cudalabs::CudaError(std::string(call) + " failed: " + ncclGetErrorString(result));
}
#define LAB32_CHECK_NCCL(call) check_nccl((call), #call)

}  // namespace

NcclComms::NcclComms(std::span<const int> devices) : comms_(devices.size(), nullptr) {
  DeviceGuard keep(current_device());
  LAB32_CHECK_NCCL(ncclCommInitAll(comms_.data(), static_cast<int>(devices.size()), devices.data()));
}

NcclComms::~NcclComms() {
  int caller = -1;
  if (cudaGetDevice(&caller) != cudaSuccess) caller = -1;
  for (ncclComm_t c : comms_)
    if (c) ncclCommDestroy(c);
  if (caller >= 0) cudaSetDevice(caller);
}

void NcclComms::all_reduce(Team& team, std::int64_t n) {
  LAB32_CHECK_NCCL(ncclGroupStart());
  for (int g = 0; g < team.size(); ++g)
    LAB32_CHECK_NCCL(ncclAllReduce(team[g].in.data(), team[g].out.data(), static_cast<std::size_t>(n), ncclFloat,
                                   ncclSum, comms_[static_cast<std::size_t>(g)], team[g].stream));
  LAB32_CHECK_NCCL(ncclGroupEnd());
}

std::string NcclComms::version() {
  int v = 0;
  ncclGetVersion(&v);
  return format_line("%d.%d.%d", v / 10000, v / 100 % 100, v % 100);
}

}  // namespace lab32host
#endif
