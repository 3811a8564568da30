// Lab 20's kernel: a row softmax whose row length is a template parameter.
//
// This file is compiled at run time by NVRTC (main.cu embeds its text), once
// per instantiation the run needs, and once ahead of time by nvcc (kernels.cu,
// the baseline). It includes nothing: NVRTC compiles it alone, without the C++
// standard library, so everything it uses is a CUDA builtin.
//
//   softmax_kernel<0, Threads>     generic: the row length is the argument
//                                  `cols`, known only at run time
//   softmax_kernel<Cols, Threads>  specialised: the row length is a constant
//
// What the constant buys. A thread's share of the row can live in registers
// only as an array whose size the compiler knows (registers cannot be indexed
// at run time; a run-time-sized array would go to local memory). So:
//   generic      three passes over the row in global memory: max, sum, write
//                (1 DRAM read; the 2nd and 3rd mostly hit L1/L2; 1 write)
//   specialised  one read into registers, both reductions there, one write:
//                the fewest bytes a softmax can move; float4 loads when
//                Cols % 4 == 0 (the row starts 16-byte aligned), and no bounds
//                checks at all when the threads divide the row exactly.
// Lab 12 gets the same register kernel only for the shapes it compiled ahead
// of time (a ladder of 6, rounded up with bounds checks); here the exact row
// length is compiled when it is first seen.
#ifndef SOFTMAX_JIT_CUH
#define SOFTMAX_JIT_CUH

namespace softmax_jit {

// Rows longer than this are not held in registers: 1024 threads x 16 floats
// (64 registers' worth each) is the most that keeps 1024 threads per SM.
constexpr int max_register_cols = 16384;

__device__ __forceinline__ float negative_infinity() { return -__int_as_float(0x7f800000); }

struct Max {
  __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};
struct Sum {
  __device__ float operator()(float a, float b) const { return a + b; }
};

// Butterfly over the 32 lanes: every lane ends with the warp's result.
template <typename Op>
__device__ __forceinline__ float warp_reduce(float v, Op op) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

// Every thread gets op over the block. Each reduction gets its own scratch
// (one float per warp): reusing one without a barrier between would let a
// fast warp overwrite a value a slow warp has not read yet.
template <int Threads, typename Op>
__device__ float block_reduce(float v, float* scratch, Op op, float identity) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  v = warp_reduce(v, op);
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  return warp_reduce(lane < Threads / 32 ? scratch[lane] : identity, op);
}

// The row in registers: Items vectors of Width floats per thread, thread t
// holding vectors t, t + Threads, ... (consecutive threads, consecutive
// addresses: coalesced).
template <int Cols, int Threads>
__device__ void softmax_row_in_registers(const float* __restrict__ in, float* __restrict__ out, float* max_scratch,
                                         float* sum_scratch) {
  constexpr int Width = Cols % 4 == 0 ? 4 : 1;
  constexpr int Vectors = Cols / Width;
  constexpr int Items = (Vectors + Threads - 1) / Threads;
  constexpr bool exact = Vectors % Threads == 0;  // every thread has Items whole vectors: no bounds checks
  float v[Items][Width];
  float m = negative_infinity();
#pragma unroll
  for (int i = 0; i < Items; ++i) {
    const int c = i * Threads + static_cast<int>(threadIdx.x);
    if (exact || c < Vectors) {
      if constexpr (Width == 4) {
        const float4 f = reinterpret_cast<const float4*>(in)[c];
        v[i][0] = f.x, v[i][1] = f.y, v[i][2] = f.z, v[i][3] = f.w;
      } else {
        v[i][0] = in[c];
      }
    } else {
#pragma unroll
      for (int w = 0; w < Width; ++w) v[i][w] = negative_infinity();  // exp(-inf - m) = 0: adds nothing
    }
#pragma unroll
    for (int w = 0; w < Width; ++w) m = fmaxf(m, v[i][w]);
  }
  m = block_reduce<Threads>(m, max_scratch, Max{}, negative_infinity());

  float s = 0.0f;
#pragma unroll
  for (int i = 0; i < Items; ++i)
#pragma unroll
    for (int w = 0; w < Width; ++w) s += (v[i][w] = expf(v[i][w] - m));
  s = block_reduce<Threads>(s, sum_scratch, Sum{}, 0.0f);

  const float inv = 1.0f / s;
#pragma unroll
  for (int i = 0; i < Items; ++i) {
    const int c = i * Threads + static_cast<int>(threadIdx.x);
    if (exact || c < Vectors) {
      if constexpr (Width == 4)
        reinterpret_cast<float4*>(out)[c] = make_float4(v[i][0] * inv, v[i][1] * inv, v[i][2] * inv, v[i][3] * inv);
      else
        out[c] = v[i][0] * inv;
    }
  }
}

// Three passes over the row in memory, for a row length known only at run
// time (or too long for registers).
template <int Threads>
__device__ void softmax_row_in_memory(const float* __restrict__ in, float* __restrict__ out, int cols,
                                      float* max_scratch, float* sum_scratch) {
  float m = negative_infinity();
  for (int c = threadIdx.x; c < cols; c += Threads) m = fmaxf(m, in[c]);
  m = block_reduce<Threads>(m, max_scratch, Max{}, negative_infinity());
  float s = 0.0f;
  for (int c = threadIdx.x; c < cols; c += Threads) s += expf(in[c] - m);
  s = block_reduce<Threads>(s, sum_scratch, Sum{}, 0.0f);
  const float inv = 1.0f / s;
  for (int c = threadIdx.x; c < cols; c += Threads) out[c] = expf(in[c] - m) * inv;
}

}  // namespace softmax_jit

// One block per row: y[r][c] = exp(x[r][c] - max_r) / sum_c exp(x[r][c] - max_r).
// Cols == 0: the row length is `cols`; otherwise `cols` must equal Cols.
template <int Cols, int Threads>
__global__ void __launch_bounds__(Threads) softmax_kernel(const float* __restrict__ x, float* __restrict__ y, int cols) {
  static_assert(Threads % 32 == 0 && Threads >= 32 && Threads <= 1024, "Threads: whole warps, at most 1024");
  static_assert(Cols >= 0, "Cols: the row length, or 0 for a row length given at run time");
  __shared__ float max_scratch[Threads / 32], sum_scratch[Threads / 32];
  const long long offset = static_cast<long long>(blockIdx.x) * (Cols > 0 ? Cols : cols);
  if constexpr (Cols > 0 && Cols <= softmax_jit::max_register_cols)
    softmax_jit::softmax_row_in_registers<Cols, Threads>(x + offset, y + offset, max_scratch, sum_scratch);
  else
    softmax_jit::softmax_row_in_memory<Threads>(x + offset, y + offset, Cols > 0 ? Cols : cols, max_scratch,
                                                sum_scratch);
}

#endif
