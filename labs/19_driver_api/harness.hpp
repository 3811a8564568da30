#pragma once
// Lab 19's harness: the course's lab contract (DESIGN.md: the flags, the exit
// codes, one JSON record per variant and size) and the measurement procedure
// of cudalabs::Session::measure (lab.hpp), on the driver API.
//
// Why a harness of its own: libcudalabs is built on the runtime API (its
// Session, DeviceBuffer, Stream, Event and timer call cudart), and this lab's
// point is a program that does not link cudart. What it reuses from common/ is
// the CPU part, compiled into the program (meson.build): the command line
// (cli.cpp), checker, seeded inputs, CPU references, the session's procedure
// itself (cudalabs::Recorder in lab.cpp: the checks, the stopping rule of the
// timer, the JSON record and table row, the plausibility gate) and the CUPTI
// trace of GPU work (trace.cpp, which loads CUPTI with dlopen). What it adds
// is the part that touches the GPU, on the driver API. The variants are described with
// the same cudalabs::Measurement as every other lab: a CUstream and a
// cudaStream_t are the same type (struct CUstream_st*).
#include <cuda.h>

#include <functional>
#include <string>
#include <vector>

#include <cudalabs/cli.hpp>
#include <cudalabs/lab.hpp>
#include <cudalabs/report.hpp>

#include "driver.hpp"

namespace lab19 {

// The lab contract's session (cudalabs::Recorder: the records, the four
// steps of measure(), the table and the summary) with the driver API's
// stream, timing and synchronisation. A baseline here is per kernel: a
// variant is compared with the baseline variant of the same size whose name
// ends the same way (driver_vector_add with runtime_vector_add).
class DriverSession : public cudalabs::Recorder {
 public:
  DriverSession(const cudalabs::LabSpec& spec, cudalabs::Options options, const cudalabs::DeviceInfo& device);
  CUstream stream() const { return stream_.get(); }

 private:
  cudaStream_t work_stream() const override { return stream_.get(); }
  void time(const cudalabs::Measurement& m, cudalabs::Record& r) override;
  void synchronize() override;
  // Device-to-device copy, bytes read + written per second (cuMemcpyDtoDAsync
  // of 2 x 256 MiB), measured once: the %ceil column of bandwidth-bound rows.
  double copy_gbps() override;
  const cudalabs::Record* baseline_for(const cudalabs::Record& r) const override;
  cudalabs::TimingStats time_events(const cudalabs::Measurement& m);
  cudalabs::TimingStats time_host_clock(const cudalabs::Measurement& m);

  Stream stream_;
  DeviceArray<unsigned char> l2_flush_;  // allocated on the first --flush-l2 run
  double copy_gbps_ = 0;
};

// Parses the flags, then calls before_driver_init(options) (the last moment
// to set environment variables the driver reads at cuInit), creates the
// device's primary context, runs the body and maps every outcome onto the exit
// codes: 0 all correct, 1 a wrong result, 2 bad usage, 3 CUDA failure, 77 no
// driver or no GPU.
int run_driver_lab(int argc, char** argv, const cudalabs::LabSpec& spec,
                   const std::function<void(const cudalabs::Options&)>& before_driver_init,
                   const std::function<void(DriverSession&)>& body);

}  // namespace lab19
