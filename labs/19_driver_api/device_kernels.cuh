#pragma once
// Lab 19's kernels: what the driver API loads (the lab's student file). The
// course's are lab 01's vector add and lab 05's tiled matmul, unchanged: the
// lesson is the host side, which launches them without the runtime API.
//
// Written by hand instead, they keep what the host code looks them up by
// (lab_kernels.hpp): at global scope, not in a namespace, not extern "C" (the
// host finds the C++ mangled name of the parameter list), with exactly these
// parameter lists, and the matmul for 16×16-thread blocks:
//   __global__ void vector_add_kernel(const float* a, const float* b, float* c, std::int64_t n);
//   __global__ void __launch_bounds__(256) tiled_matmul_kernel(const float* a, const float* b, float* c,
//                                                              int m, int n, int k);
// device_code.cu checks both parameter lists when it compiles this file, and
// a missing kernel is "not found" when the program loads the module.
//
// Device code only: nvcc compiles this file into PTX, cubin and fatbin
// (meson.build), so host functions written here never reach the program.
#include "../01_vector_add/vector_add.cuh"
#include "../05_matmul/tiled_matmul.cuh"
