// Lab 19's device code: the kernels of device_kernels.cuh (the course's own,
// unchanged, or a submission's), compiled by nvcc into each form the toolkit
// offers (meson.build):
//   --ptx     PTX text for the lowest architecture built: the driver compiles
//             it for the GPU in hand when the module is loaded (JIT)
//   --cubin   SASS for one architecture, one file per architecture built
//   --fatbin  SASS for every architecture built plus the newest one's PTX
// and embedded in the program (embed.py). Nothing here is linked into the
// program as runtime kernels: the host code is plain C++ and finds these
// kernels by name (kernel.hpp's Kernel<>), through cuModuleLoadData.
//
// The launchers in these headers (<<<>>>) are host code: nvcc parses them and
// leaves them out of PTX, cubin and fatbin.
//
// The kernels come from device_kernels.cuh, the lab's student file, included
// by angle brackets so that the include path decides which copy: meson.build
// puts the submission's folder (tools/grade.py's -Dsubmission) ahead of this
// one. This file, the course's, holds it to the host's view of the kernels.
#include <type_traits>

#include <device_kernels.cuh>

#include "lab_kernels.hpp"

static_assert(std::is_same_v<decltype(vector_add_kernel), lab19::VectorAddSignature>,
              "device_kernels.cuh: vector_add_kernel must take (const float* a, const float* b, float* c, "
              "std::int64_t n), as lab_kernels.hpp says: the host looks it up by that parameter list");
static_assert(std::is_same_v<decltype(tiled_matmul_kernel), lab19::TiledMatmulSignature>,
              "device_kernels.cuh: tiled_matmul_kernel must take (const float* a, const float* b, float* c, "
              "int m, int n, int k), as lab_kernels.hpp says: the host looks it up by that parameter list");
