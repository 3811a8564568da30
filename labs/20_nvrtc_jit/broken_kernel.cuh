// A kernel source with a mistake, for the CPU test that NVRTC's log reaches
// the user with the file name and line, and the program exits 2 (meson.build).
template <int Cols, int Threads>
__global__ void softmax_kernel(const float* x, float* y, int cols) {
  y[threadIdx.x] = x[threadIdx.x] * undeclared_scale;  // line 5: never declared
}
