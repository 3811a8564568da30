// Instantiations of template_matmul that must NOT compile, one per CASE, and
// (CASE 0) the four the lab uses, which must. Not part of the build: the lab's
// CPU tests (meson.build) compile this file once per case and check that the
// compiler stops with the message the rule promises, e.g.
//
//   nvcc -std=c++20 -arch=sm_90 -I common/include -DCASE=1 -c \
//        labs/09_template_matmul/compile_fail_examples.cu -o /tmp/x.o
//
// Try one by hand and read the message: it is the lesson.
#include "template_matmul.cuh"

#ifndef CASE
#error "compile with -DCASE=N (0: the valid instantiations, 1..6: the rejected ones)"
#endif

#if CASE == 0
// The lab's own instantiations (and a double accumulator, allowed but not run).
template void template_matmul<float, float, 8>(const float*, const float*, float*, int, int, int, cudaStream_t);
template void template_matmul<float, float, 16>(const float*, const float*, float*, int, int, int, cudaStream_t);
template void template_matmul<float, float, 32>(const float*, const float*, float*, int, int, int, cudaStream_t);
template void template_matmul<__half, float, 16>(const __half*, const __half*, float*, int, int, int, cudaStream_t);
template void template_matmul<float, double, 16>(const float*, const float*, float*, int, int, int, cudaStream_t);
#elif CASE == 1
// FP32 inputs summed in FP16: the accumulator is narrower than the inputs.
template void template_matmul<float, __half, 16>(const float*, const float*, float*, int, int, int, cudaStream_t);
#elif CASE == 2
// FP16 inputs summed in FP16: as wide as the inputs, still too few bits for a long sum.
template void template_matmul<__half, __half, 16>(const __half*, const __half*, float*, int, int, int, cudaStream_t);
#elif CASE == 3
// 64×64 = 4096 threads per block: more than any GPU runs.
template void template_matmul<float, float, 64>(const float*, const float*, float*, int, int, int, cudaStream_t);
#elif CASE == 4
// 12×12 = 144 threads: 4.5 warps, the last one half empty in every block.
template void template_matmul<float, float, 12>(const float*, const float*, float*, int, int, int, cudaStream_t);
#elif CASE == 5
// Integer matrices: not an input type the kernel knows (the MatmulInput concept).
template void template_matmul<int, float, 16>(const int*, const int*, float*, int, int, int, cudaStream_t);
#elif CASE == 6
// An integer accumulator for float inputs.
template void template_matmul<float, int, 16>(const float*, const float*, float*, int, int, int, cudaStream_t);
#else
#error "no such CASE"
#endif
