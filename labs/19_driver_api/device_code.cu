// Lab 19's device code: the course's own kernels, unchanged, compiled by nvcc
// into each form the toolkit offers (meson.build):
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
#include "../01_vector_add/vector_add.cuh"
#include "../05_matmul/tiled_matmul.cuh"
