#pragma once
// The stream contract's hold and marker on the CUDA runtime (stream_contract.cu).
#include <cuda_runtime_api.h>

namespace cudalabs {

class StreamContract {
 public:
  StreamContract();
  ~StreamContract();
  StreamContract(const StreamContract&) = delete;
  StreamContract& operator=(const StreamContract&) = delete;
  void hold(cudaStream_t stream);           // `stream` busy until release() (cudaStreamLegacy: stream 0)
  void mark_and_wait(cudaStream_t stream);  // the marker on `stream`, then wait for `stream` alone
  void release();

 private:
  volatile int* release_ = nullptr;  // mapped host memory the hold kernel reads
  int* marker_ = nullptr;
};

}  // namespace cudalabs
