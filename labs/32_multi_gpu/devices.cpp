// Lab 32's devices: what one process needs before it can drive several GPUs.
//
// Teaches: each GPU's primary context (the one cudaSetDevice makes current),
// reached through the driver API as well (cuDevicePrimaryCtxRetain and
// cuCtxSetCurrent, looked up through the runtime in host_common.hpp: no
// libcuda link); peer access between every pair that has it
// (cudaDeviceCanAccessPeer, cudaDeviceEnablePeerAccess); and how work on
// several GPUs is ordered without the host waiting: an event recorded
// on one device's stream, waited on by another device's stream.
// Measures: nothing by itself. fan_out is what every multi-GPU row's time is:
// the session's two events bracket a fork to every GPU's stream and the join
// back, on the session GPU's clock.
#include <algorithm>
#include <string>
#include <vector>

#include "host_common.hpp"

namespace lab32host {

int current_device() {
  int device = 0;
  CUDALABS_CHECK(cudaGetDevice(&device));
  return device;
}

namespace {

// Lets each GPU of the team read and write each other one's memory directly,
// where the hardware can (NVLink, or PCIe peer-to-peer): after
// cudaDeviceEnablePeerAccess(j) on device i, a kernel on i may dereference a
// pointer into j's memory, and copies between them skip the host.
std::vector<std::vector<bool>> enable_peer_access(const std::vector<int>& ids) {
  const std::size_t g = ids.size();
  std::vector<std::vector<bool>> peer(g, std::vector<bool>(g, true));
  for (std::size_t i = 0; i < g; ++i)
    for (std::size_t j = 0; j < g; ++j) {
      if (i == j) continue;
      int can = 0;
      CUDALABS_CHECK(cudaDeviceCanAccessPeer(&can, ids[i], ids[j]));
      peer[i][j] = can != 0;
      if (!can) continue;
      DeviceGuard on(ids[i]);
      const cudaError_t err = cudaDeviceEnablePeerAccess(ids[j], 0);
      if (err == cudaErrorPeerAccessAlreadyEnabled)
        cudaGetLastError();  // enabled earlier in this process: fine, and not an error to keep
      else
        CUDALABS_CHECK(err);
    }
  return peer;
}

}  // namespace

Team make_team(int session_device, std::int64_t wanted) {
  int visible = 0;
  CUDALABS_CHECK(cudaGetDeviceCount(&visible));
  if (wanted > visible)
    throw cudalabs::NoDeviceError("--gpus " + std::to_string(wanted) + " asks for more GPUs than the " +
                                  std::to_string(visible) + " visible ones");
  const int count = std::min(wanted > 0 ? static_cast<int>(wanted) : visible, lab32::max_gpus);
  std::vector<int> ids{session_device};
  for (int d = 0; d < visible && static_cast<int>(ids.size()) < count; ++d)
    if (d != session_device) ids.push_back(d);
  Team team;
  const int step_events = std::max(staged_chunks, lab32::ring_events(count));
  for (int id : ids) team.gpus.push_back(std::make_unique<Gpu>(id, step_events));
  team.peer = enable_peer_access(ids);
  return team;
}

void fan_out(cudaStream_t session, Team& team, std::span<Gpu* const> gpus, const std::function<void()>& enqueue) {
  const int home = current_device();
  team.fork.record(session);
  for (Gpu* g : gpus) CUDALABS_CHECK(cudaStreamWaitEvent(g->stream, team.fork, 0));
  {
    DeviceGuard keep(home);
    enqueue();
  }
  for (Gpu* g : gpus) {
    DeviceGuard on(g->id);
    g->joined.record(g->stream);
  }
  for (Gpu* g : gpus) CUDALABS_CHECK(cudaStreamWaitEvent(session, g->joined, 0));
}

}  // namespace lab32host

// The course's half of kernels.hpp: the driver's cuCtxSetCurrent, checked.
void lab32::set_current_context(CUcontext context) {
  lab32host::check_driver(lab32host::driver().set_current(context), "cuCtxSetCurrent");
}
