#pragma once
// Hopper's (sm_90a) instructions for a GEMM main loop behind small named
// device functions (STYLE.md, habit 15): mbarriers, TMA tensor loads (and
// their multicast to a cluster), wgmma and its fences, setmaxnreg, named and
// cluster barriers; and, on the host, the calls
// that encode TMA tensor maps (tensor_map_128b for wgmma's swizzled tiles,
// tensor_map_floats for a vector of FP32 values). Used by lab 30 (GEMM),
// lab 31 (FlashAttention) and lab 33 (FP8 GEMM).
//
// wgmma and setmaxnreg exist only in the architecture-specific target sm_90a
// (compute_90a), not in sm_90 nor in the PTX a newer GPU would compile: every
// body here is compiled only where __CUDA_ARCH_FEAT_SM90_ALL is defined, and
// is empty elsewhere. A kernel that uses them guards its own body the same
// way, and its host side checks that the sm_90a code is what the GPU runs.
//
// Shared-memory tiles for wgmma here are K-major with the 128-byte swizzle:
// rows of 64 16-bit elements (128 bytes), row r's 16-byte chunk c stored at
// chunk c XOR (r mod 8), in atoms of 8 rows × 128 bytes = 1024 bytes — the
// layout TMA writes with CU_TENSOR_MAP_SWIZZLE_128B. Tiles start on 1024-byte
// boundaries (the XOR is taken from address bits 7-9).
#include <cuda.h>           // CUtensorMap and its enums: types only, no libcuda at link time
#include <cudaTypedefs.h>   // PFN_cuTensorMapEncodeTiled
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime_api.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

#include "device.hpp"
#include "error.hpp"
#include "memory.hpp"
#include "mma.cuh"

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define CUDALABS_SM90A 1
#endif

namespace cudalabs::hopper {

// mbarrier.init.shared::cta.b64: a barrier that completes a phase when
// `arrivals` threads have arrived (and, with expect_tx, the bytes announced
// have landed). Phases alternate parity 0, 1, 0, ...
__device__ inline void mbarrier_init(std::uint64_t* bar, int arrivals) {
#ifdef CUDALABS_SM90A
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(ptx::smem_address(bar)), "r"(arrivals) : "memory");
#else
  (void)bar, (void)arrivals;
#endif
}
// fence.mbarrier_init.release.cluster: makes initialised barriers visible to
// the async proxy (TMA) before any copy signals them.
__device__ inline void fence_barrier_init() {
#ifdef CUDALABS_SM90A
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
#endif
}
// mbarrier.arrive.expect_tx.shared::cta.b64: arrive, and announce `bytes`
// that asynchronous copies will deliver before the phase may complete.
__device__ inline void mbarrier_arrive_expect_tx(std::uint64_t* bar, std::uint32_t bytes) {
#ifdef CUDALABS_SM90A
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(ptx::smem_address(bar)), "r"(bytes)
               : "memory");
#else
  (void)bar, (void)bytes;
#endif
}
// mbarrier.arrive.shared::cta.b64: one arrival.
__device__ inline void mbarrier_arrive(std::uint64_t* bar) {
#ifdef CUDALABS_SM90A
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(ptx::smem_address(bar)) : "memory");
#else
  (void)bar;
#endif
}
// mbarrier.try_wait.parity.shared::cta.b64, until it succeeds: waits for the
// phase of parity `parity` to complete. A fresh barrier is in phase 0, and
// waiting for parity 1 returns at once (the phase "before" it counts as done):
// that is how a producer's first pass over empty stages does not block.
__device__ inline void mbarrier_wait(std::uint64_t* bar, std::uint32_t parity) {
#ifdef CUDALABS_SM90A
  asm volatile(
      "{\n"
      ".reg .pred done;\n"
      "wait_again:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra wait_again;\n"
      "}\n" ::"r"(ptx::smem_address(bar)),
      "r"(parity)
      : "memory");
#else
  (void)bar, (void)parity;
#endif
}

// cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes:
// the TMA unit copies the box of the tensor map at coordinates (inner, outer)
// — here (k, row) — into shared memory, zeros where the box leaves the
// tensor, and signals `bar` with the bytes written. One thread issues it; no
// thread computes an address or moves a byte.
__device__ inline void tma_load_2d(void* dst, const void* tensor_map, int inner, int outer, std::uint64_t* bar) {
#ifdef CUDALABS_SM90A
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n" ::"r"(
          ptx::smem_address(dst)),
      "l"(tensor_map), "r"(inner), "r"(outer), "r"(ptx::smem_address(bar))
      : "memory");
#else
  (void)dst, (void)tensor_map, (void)inner, (void)outer, (void)bar;
#endif
}

// The same load multicast to every CTA of the cluster named in `cta_mask`
// (bit r: the CTA of rank r): the box lands at the same shared-memory offset
// in each of them, and each one's mbarrier at `bar`'s offset is signalled
// with the bytes it received. One read from L2 serves several SMs (lab 30:
// two CTAs with the same columns of C share their slices of B).
__device__ inline void tma_load_2d_multicast(void* dst, const void* tensor_map, int inner, int outer,
                                             std::uint64_t* bar, std::uint16_t cta_mask) {
#ifdef CUDALABS_SM90A
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
      " [%0], [%1, {%2, %3}], [%4], %5;\n" ::"r"(ptx::smem_address(dst)),
      "l"(tensor_map), "r"(inner), "r"(outer), "r"(ptx::smem_address(bar)), "h"(cta_mask)
      : "memory");
#else
  (void)dst, (void)tensor_map, (void)inner, (void)outer, (void)bar, (void)cta_mask;
#endif
}

// tma_load_2d's one-dimensional form: the box of a 1D tensor map starting
// at element `x` (a 16-byte boundary: tensor_map_floats), zeros past the
// tensor's end. Lab 33 stages a tile's FP32 scales with it.
__device__ inline void tma_load_1d(void* dst, const void* tensor_map, int x, std::uint64_t* bar) {
#ifdef CUDALABS_SM90A
  asm volatile(
      "cp.async.bulk.tensor.1d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2}], [%3];\n" ::"r"(
          ptx::smem_address(dst)),
      "l"(tensor_map), "r"(x), "r"(ptx::smem_address(bar))
      : "memory");
#else
  (void)dst, (void)tensor_map, (void)x, (void)bar;
#endif
}

// ld.shared.f32: one float of shared memory. A kernel that aligns its
// dynamic shared memory through an integer (to 1024 bytes for the swizzle)
// has pointers the compiler no longer knows are shared: dereferenced, they
// compile to generic loads (LD), slower than LDS. Volatile, with a memory
// clobber, so that it stays before a later mbarrier arrive that frees the
// memory it reads.
__device__ inline float ld_shared_f32(const float* p) {
#ifdef CUDALABS_SM90A
  float v;
  asm volatile("ld.shared.f32 %0, [%1];\n" : "=f"(v) : "r"(ptx::smem_address(p)) : "memory");
  return v;
#else
  return *p;
#endif
}

// Thread block clusters (sm_90): CTAs launched together on one GPC, each
// able to reach the others' shared memory.
// %cluster_ctarank: this CTA's rank in its cluster, 0 .. cluster size - 1.
__device__ inline unsigned cluster_cta_rank() {
  unsigned rank = 0;
#ifdef CUDALABS_SM90A
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(rank));
#endif
  return rank;
}
// barrier.cluster.arrive.release + barrier.cluster.wait.acquire: every thread
// of every CTA of the cluster meets here — after barrier initialisation (no
// CTA may signal a peer's barrier before the peer initialised it) and before
// exit (none may leave while a peer can still write into its shared memory).
__device__ inline void cluster_sync() {
#ifdef CUDALABS_SM90A
  asm volatile("barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;\n" ::: "memory");
#endif
}
// mbarrier.arrive on the barrier at `bar`'s offset in the shared memory of
// the CTA of rank `cta` (mapa gives its cluster address). The default
// semantics (release at CTA scope), as CUTLASS's ClusterBarrier: spelling out
// .release.cluster makes ptxas put a MEMBAR.ALL.GPU, a fence of the whole
// GPU's memory, before every arrival.
__device__ inline void mbarrier_arrive_cluster(std::uint64_t* bar, unsigned cta) {
#ifdef CUDALABS_SM90A
  asm volatile(
      "{\n"
      ".reg .b32 remote;\n"
      "mapa.shared::cluster.u32 remote, %0, %1;\n"
      "mbarrier.arrive.shared::cluster.b64 _, [remote];\n"
      "}\n" ::"r"(ptx::smem_address(bar)),
      "r"(cta)
      : "memory");
#else
  (void)bar, (void)cta;
#endif
}

// cp.async.bulk.tensor.3d...: the same for a 3-D tensor map, coordinates
// innermost first. Lab 31 maps Q, K, V as {d, seq, heads}: a box that runs
// past one head's last row reads zeros, not the next head's first rows.
__device__ inline void tma_load_3d(void* dst, const void* tensor_map, int c0, int c1, int c2, std::uint64_t* bar) {
#ifdef CUDALABS_SM90A
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];\n" ::
          "r"(ptx::smem_address(dst)),
      "l"(tensor_map), "r"(c0), "r"(c1), "r"(c2), "r"(ptx::smem_address(bar))
      : "memory");
#else
  (void)dst, (void)tensor_map, (void)c0, (void)c1, (void)c2, (void)bar;
#endif
}

// setmaxnreg.{dec,inc}.sync.aligned.u32: a warpgroup gives registers back to
// the SM's pool or takes them from it, so that producer warps (which only
// issue TMA) run on few and consumer warps (which hold the accumulators) on
// many. Counts are multiples of 8 in [24, 256].
template <int Registers>
__device__ inline void setmaxnreg_dec() {
  static_assert(Registers % 8 == 0 && Registers >= 24 && Registers <= 256, "setmaxnreg: a multiple of 8 in [24, 256]");
#ifdef CUDALABS_SM90A
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(Registers));
#endif
}
template <int Registers>
__device__ inline void setmaxnreg_inc() {
  static_assert(Registers % 8 == 0 && Registers >= 24 && Registers <= 256, "setmaxnreg: a multiple of 8 in [24, 256]");
#ifdef CUDALABS_SM90A
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(Registers));
#endif
}

// The warpgroup (128 threads) this thread belongs to, broadcast from lane 0 so
// that the compiler knows it is the same in every lane (CUTLASS's
// canonical_warp_group_idx): a wgmma behind a branch on threadIdx.x / 128
// alone is taken for divergent code, and ptxas then serialises every wgmma of
// the kernel (info C7520 "wgmma.mma_async instructions are serialized").
__device__ inline int warpgroup_index() {
  return __shfl_sync(0xffffffffu, static_cast<int>(threadIdx.x) / 128, 0);
}

// bar.sync / bar.arrive with an id (1-15; 0 is __syncthreads') and a thread
// count (a multiple of 32): a barrier between some warps of the block only.
// bar.arrive does not wait: one warpgroup signals, another (bar.sync) waits —
// how warp-specialised kernels hand a resource (the tensor cores, lab 31's
// ping-pong) from one warpgroup to the other.
__device__ inline void named_barrier_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
__device__ inline void named_barrier_arrive(int id, int threads) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

// wgmma.fence.sync.aligned: orders this warpgroup's earlier register accesses
// to the accumulators before the wgmma that follow.
__device__ inline void wgmma_fence() {
#ifdef CUDALABS_SM90A
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#endif
}
// wgmma.commit_group.sync.aligned: the wgmma issued so far form one group.
__device__ inline void wgmma_commit_group() {
#ifdef CUDALABS_SM90A
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
#endif
}
// wgmma.wait_group.sync.aligned: waits until at most `Pending` groups are in
// flight; then their accumulators may be read and their shared memory reused.
template <int Pending>
__device__ inline void wgmma_wait_group() {
#ifdef CUDALABS_SM90A
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(Pending) : "memory");
#endif
}
// Keeps the compiler from moving accesses to an accumulator register across
// the asynchronous wgmma that read and write it (CUTLASS's
// warpgroup_fence_operand).
// The same for a register-A operand (wgmma_rs): the instruction reads it after
// it was issued, so its registers must not be reused until the wait — without
// the fence after the wait, the compiler sees the operand dead at the issue.
__device__ inline void fence_operand(float& reg) { asm volatile("" : "+f"(reg)::"memory"); }
__device__ inline void fence_operand(std::uint32_t& reg) { asm volatile("" : "+r"(reg)::"memory"); }
template <typename R, int N>
__device__ inline void fence_operands(R (&regs)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) fence_operand(regs[i]);
}
template <typename R, int M, int N>
__device__ inline void fence_operands(R (&regs)[M][N]) {
#pragma unroll
  for (int i = 0; i < M; ++i) fence_operands(regs[i]);
}

// The 64-bit shared-memory matrix descriptor of wgmma (PTX ISA, "Matrix
// Descriptor Format") for a tile with the 128-byte swizzle, starting at `tile`
// (16-byte granularity): bits 0-13 start address / 16; 16-29 the leading byte
// offset (LBO) / 16; 32-45 the stride byte offset (SBO) / 16; 62-63 the
// swizzle mode (1 = 128 bytes).
__device__ inline std::uint64_t smem_descriptor_sw128(const void* tile, std::uint32_t leading_bytes,
                                                      std::uint32_t stride_bytes) {
  const std::uint64_t address = ptx::smem_address(tile);
  return ((address & 0x3FFFF) >> 4) | (std::uint64_t{(leading_bytes >> 4) & 0x3FFF} << 16) |
         (std::uint64_t{(stride_bytes >> 4) & 0x3FFF} << 32) | (std::uint64_t{1} << 62);
}
// K-major (k contiguous: A, and B = Wᵀ or Kᵀ stored as rows of k): LBO unused
// by swizzled K-major layouts (1); SBO 1024 bytes from one 8-row atom to the
// next. Moving 16 elements (32 bytes) along k inside the 128-byte row is
// adding 2 to the start address.
__device__ inline std::uint64_t smem_descriptor_128b(const void* tile) { return smem_descriptor_sw128(tile, 16, 1024); }
// MN-major B (n contiguous: V of attention, [key][dim], read as B[k = key][n =
// dim]; the wgmma is issued with imm-trans-b = 1): rows of 64 n-elements (128
// bytes) per k, 8 k-rows per 1024-byte atom (SBO), and the next 64 columns of
// n `slab_bytes` further (LBO: the tile is stored as slabs of 64 columns).
// Moving 16 k-rows is adding 16·128 = 2048 bytes to `tile`.
__device__ inline std::uint64_t smem_descriptor_128b_mn_major(const void* tile, std::uint32_t slab_bytes) {
  return smem_descriptor_sw128(tile, slab_bytes, 1024);
}

// wgmma.mma_async.sync.aligned.m64nNk16.f32.{f16,bf16}.{f16,bf16}: the same
// instruction for every N (a multiple of 8 up to 256) but for its operand
// list, one register per accumulator element (N/2 per thread). The lists for
// N = 16, 32, 64, 128, 256 are spelled out once below (inline PTX takes no loops), and
// the two forms built from them:
//   wgmma_ss<N, T>(d, a_desc, b_desc, accumulate): d[64×N] (+)= A[64×16] ·
//     B[16×N], A and B in shared memory (descriptors), both K-major;
//   wgmma_rs<N, T>(d, a, b_desc, accumulate): the same with A in 4 registers
//     per thread (the m64n16 A fragment, laid out as the accumulator: a
//     product's output is the next one's A without a shuffle) and B MN-major
//     (imm-trans-b = 1, smem_descriptor_128b_mn_major).
// Layout of d: warp w of the warpgroup holds rows 16w .. 16w+15; d[4j .. 4j+3]
// is the m16n8 fragment of columns 8j .. 8j+7 (c0,c1 at row g, columns 2t,
// 2t+1; c2,c3 at row g+8). `accumulate` false: d = A·B. Asynchronous: issue
// after wgmma_fence, then commit and wait.
#define CUDALABS_WGMMA_REGS_8 "%0, %1, %2, %3, %4, %5, %6, %7"
#define CUDALABS_WGMMA_REGS_16 CUDALABS_WGMMA_REGS_8 ", %8, %9, %10, %11, %12, %13, %14, %15"
#define CUDALABS_WGMMA_REGS_32 CUDALABS_WGMMA_REGS_16 ", " \
    "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
#define CUDALABS_WGMMA_REGS_64 CUDALABS_WGMMA_REGS_32 ", " \
    "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, " \
    "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
#define CUDALABS_WGMMA_REGS_128 CUDALABS_WGMMA_REGS_64 ", " \
    "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, " \
    "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, " \
    "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, " \
    "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
#define CUDALABS_WGMMA_D_8 \
    "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7])
#define CUDALABS_WGMMA_D_16 CUDALABS_WGMMA_D_8, \
    "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
#define CUDALABS_WGMMA_D_32 CUDALABS_WGMMA_D_16, \
    "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), \
    "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
#define CUDALABS_WGMMA_D_64 CUDALABS_WGMMA_D_32, \
    "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), \
    "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), \
    "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), \
    "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
#define CUDALABS_WGMMA_D_128 CUDALABS_WGMMA_D_64, \
    "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), \
    "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), \
    "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), \
    "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), \
    "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), \
    "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), \
    "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), \
    "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
// ACC: N/2, the number of accumulators; A0.. the operand numbers after them.
#define CUDALABS_WGMMA_SS(TYPE, N, ACC, A0, A1, A2)                                                          \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" #A2 ", 0;\n"                                             \
               "wgmma.mma_async.sync.aligned.m64n" #N "k16.f32." #TYPE "." #TYPE " {" CUDALABS_WGMMA_REGS_##ACC \
               "}, %" #A0 ", %" #A1 ", p, 1, 1, 0, 0;\n}\n"                                                  \
               : CUDALABS_WGMMA_D_##ACC                                                                      \
               : "l"(a_desc), "l"(b_desc), "r"(accumulate ? 1 : 0))
// FP8 (lab 33): m64nNk32, no transpose immediates (both operands K-major only).
#define CUDALABS_WGMMA_SS_E4M3(N, ACC, A0, A1, A2)                                                         \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" #A2 ", 0;\n"                                             \
               "wgmma.mma_async.sync.aligned.m64n" #N "k32.f32.e4m3.e4m3 {" CUDALABS_WGMMA_REGS_##ACC            \
               "}, %" #A0 ", %" #A1 ", p, 1, 1;\n}\n"                                                        \
               : CUDALABS_WGMMA_D_##ACC                                                                      \
               : "l"(a_desc), "l"(b_desc), "r"(accumulate ? 1 : 0))
#define CUDALABS_WGMMA_RS(TYPE, N, ACC, A0, A1, A2, A3, A4, A5)                                              \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" #A5 ", 0;\n"                                             \
               "wgmma.mma_async.sync.aligned.m64n" #N "k16.f32." #TYPE "." #TYPE " {" CUDALABS_WGMMA_REGS_##ACC \
               "}, {%" #A0 ", %" #A1 ", %" #A2 ", %" #A3 "}, %" #A4 ", p, 1, 1, 1;\n}\n"                     \
               : CUDALABS_WGMMA_D_##ACC                                                                      \
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b_desc), "r"(accumulate ? 1 : 0))

//
// T = __nv_fp8x2_e4m3, a pair of FP8 e4m3 values along k (lab 33): the same
// 32 bytes of k per instruction as 16 FP16/BF16 elements, so an FP8 row of
// 128 bytes is 64 pairs and every tile, box, swizzle and descriptor step
// above is unchanged; the instruction is m64nNk32.f32.e4m3.e4m3 (FP8 takes
// no transpose immediates: both operands K-major, as here).
template <int N, typename T>
__device__ inline void wgmma_ss(float (&d)[N / 2], std::uint64_t a_desc, std::uint64_t b_desc, bool accumulate) {
  static_assert(std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16> || std::is_same_v<T, __nv_fp8x2_e4m3>,
                "FP16, BF16 or pairs of FP8 e4m3 inputs");
  static_assert(N == 16 || N == 32 || N == 64 || N == 128 || N == 256,
                "wgmma_ss: N = 16, 32, 64, 128 or 256 (add the operand list for others)");
#ifdef CUDALABS_SM90A
  constexpr bool fp16 = std::is_same_v<T, __half>;
  if constexpr (std::is_same_v<T, __nv_fp8x2_e4m3>) {
    if constexpr (N == 16) CUDALABS_WGMMA_SS_E4M3(16, 8, 8, 9, 10);
    else if constexpr (N == 32) CUDALABS_WGMMA_SS_E4M3(32, 16, 16, 17, 18);
    else if constexpr (N == 64) CUDALABS_WGMMA_SS_E4M3(64, 32, 32, 33, 34);
    else if constexpr (N == 128) CUDALABS_WGMMA_SS_E4M3(128, 64, 64, 65, 66);
    else CUDALABS_WGMMA_SS_E4M3(256, 128, 128, 129, 130);
  } else if constexpr (N == 16) {
    if constexpr (fp16) CUDALABS_WGMMA_SS(f16, 16, 8, 8, 9, 10); else CUDALABS_WGMMA_SS(bf16, 16, 8, 8, 9, 10);
  } else if constexpr (N == 32) {
    if constexpr (fp16) CUDALABS_WGMMA_SS(f16, 32, 16, 16, 17, 18); else CUDALABS_WGMMA_SS(bf16, 32, 16, 16, 17, 18);
  } else if constexpr (N == 64) {
    if constexpr (fp16) CUDALABS_WGMMA_SS(f16, 64, 32, 32, 33, 34); else CUDALABS_WGMMA_SS(bf16, 64, 32, 32, 33, 34);
  } else if constexpr (N == 128) {
    if constexpr (fp16) CUDALABS_WGMMA_SS(f16, 128, 64, 64, 65, 66); else CUDALABS_WGMMA_SS(bf16, 128, 64, 64, 65, 66);
  } else {
    if constexpr (fp16) CUDALABS_WGMMA_SS(f16, 256, 128, 128, 129, 130);
    else CUDALABS_WGMMA_SS(bf16, 256, 128, 128, 129, 130);
  }
#else
  (void)d, (void)a_desc, (void)b_desc, (void)accumulate;
#endif
}

template <int N, typename T>
__device__ inline void wgmma_rs(float (&d)[N / 2], const std::uint32_t (&a)[4], std::uint64_t b_desc, bool accumulate) {
  static_assert(std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>, "FP16 or BF16 inputs");
  static_assert(N == 64 || N == 128 || N == 256, "wgmma_rs: N = 64, 128 or 256 (add the operand list for others)");
#ifdef CUDALABS_SM90A
  constexpr bool fp16 = std::is_same_v<T, __half>;
  if constexpr (N == 64) {
    if constexpr (fp16) CUDALABS_WGMMA_RS(f16, 64, 32, 32, 33, 34, 35, 36, 37);
    else CUDALABS_WGMMA_RS(bf16, 64, 32, 32, 33, 34, 35, 36, 37);
  } else if constexpr (N == 128) {
    if constexpr (fp16) CUDALABS_WGMMA_RS(f16, 128, 64, 64, 65, 66, 67, 68, 69);
    else CUDALABS_WGMMA_RS(bf16, 128, 64, 64, 65, 66, 67, 68, 69);
  } else {
    if constexpr (fp16) CUDALABS_WGMMA_RS(f16, 256, 128, 128, 129, 130, 131, 132, 133);
    else CUDALABS_WGMMA_RS(bf16, 256, 128, 128, 129, 130, 131, 132, 133);
  }
#else
  (void)d, (void)a, (void)b_desc, (void)accumulate;
#endif
}
#undef CUDALABS_WGMMA_SS
#undef CUDALABS_WGMMA_SS_E4M3
#undef CUDALABS_WGMMA_RS
#undef CUDALABS_WGMMA_REGS_8
#undef CUDALABS_WGMMA_REGS_16
#undef CUDALABS_WGMMA_REGS_32
#undef CUDALABS_WGMMA_REGS_64
#undef CUDALABS_WGMMA_REGS_128
#undef CUDALABS_WGMMA_D_8
#undef CUDALABS_WGMMA_D_16
#undef CUDALABS_WGMMA_D_32
#undef CUDALABS_WGMMA_D_64
#undef CUDALABS_WGMMA_D_128


// ---- host: TMA tensor maps ----------------------------------------------------------------

// cuTensorMapEncodeTiled, the driver's TMA encoder (the runtime has no wrapper
// for it), looked up once through the runtime's entry point, so a program links
// libcudart only. Defined in the course library (common/src/tensor_map.cpp),
// not here: a kernel file that included the lookup would import
// cudaGetDriverEntryPoint, which hands out any driver function by name.
PFN_cuTensorMapEncodeTiled_v12000 tensor_map_encoder();

// The tensor map of a Rank-dimensional FP16/BF16 tensor (or of pairs of FP8
// e4m3 values, moved as 16-bit words: TMA copies bytes) at `base`, read in
// boxes that land in shared memory with the 128-byte swizzle (the layout the
// descriptors above name), zeros where a box leaves the tensor. Innermost
// dimension first: dims[0] contiguous; strides[i] (elements) steps dimension
// i + 1; box[0] = 64 elements = 128 bytes, the swizzle's span. TMA wants the
// base and every stride in bytes a multiple of 16: otherwise a CudaError that
// says so (lab 30 pads such matrices first).
template <std::size_t Rank, typename T>
CUtensorMap tensor_map_128b(const T* base, const std::array<std::int64_t, Rank>& dims,
                            const std::array<std::int64_t, Rank - 1>& strides, const std::array<int, Rank>& box) {
  static_assert(std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16> || std::is_same_v<T, __nv_fp8x2_e4m3>,
                "FP16, BF16 or FP8 e4m3 pair tensors");
  static_assert(Rank >= 2 && Rank <= 5, "TMA tensor maps have 2 to 5 dimensions (here)");
  cuuint64_t dims_[Rank], strides_[Rank - 1];
  cuuint32_t box_[Rank], unit[Rank];
  for (std::size_t i = 0; i < Rank; ++i) {
    dims_[i] = static_cast<cuuint64_t>(dims[i]);
    box_[i] = static_cast<cuuint32_t>(box[i]);
    unit[i] = 1;
    if (i + 1 < Rank) strides_[i] = static_cast<cuuint64_t>(strides[i]) * sizeof(T);
  }
  CUtensorMap map;
  const CUresult r = tensor_map_encoder()(
      &map,
      std::is_same_v<T, __half>            ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16
      : std::is_same_v<T, __nv_bfloat16>   ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
                                           : CU_TENSOR_MAP_DATA_TYPE_UINT16,
      static_cast<cuuint32_t>(Rank), const_cast<T*>(base), dims_, strides_, box_, unit, CU_TENSOR_MAP_INTERLEAVE_NONE,
      CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) {
    std::string shape;  // "[d_{Rank-1}]...[d_0]", outermost first
    for (std::size_t i = Rank; i-- > 0;) shape.append("[").append(std::to_string(dims[i])).append("]");
    throw CudaError("cuTensorMapEncodeTiled failed (CUresult " + std::to_string(static_cast<int>(r)) + ") for a " +
                    shape + " tensor: TMA needs a 16-byte-aligned base, strides that are multiples of 16 bytes, "
                    "and a box of at most 256 per dimension, 128 bytes innermost");
  }
  return map;
}

// The tensor map of `count` FP32 values at `base`, read in boxes of `box`
// values that land in shared memory as they are (no swizzle), zeros past the
// end. TMA wants the base 16-byte aligned (any cudaMalloc'd pointer) and
// box · 4 bytes a multiple of 16, at most 256 values: otherwise a CudaError
// that says so. A box must start on a 16-byte boundary too (a multiple of 4
// values): a load from anywhere else stops the kernel with an illegal
// instruction (measured on an H200). The driver reads the strides argument
// even for one dimension, where it has no entries: a null pointer there is
// CUDA_ERROR_INVALID_VALUE, so an unused array goes in its place.
inline CUtensorMap tensor_map_floats(const float* base, std::int64_t count, int box) {
  const cuuint64_t dims[1] = {static_cast<cuuint64_t>(count)}, no_strides[1] = {0};
  const cuuint32_t box_[1] = {static_cast<cuuint32_t>(box)}, unit[1] = {1};
  CUtensorMap map;
  const CUresult r =
      tensor_map_encoder()(&map, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 1, const_cast<float*>(base), dims, no_strides, box_,
                           unit, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
                           CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    throw CudaError("cuTensorMapEncodeTiled failed (CUresult " + std::to_string(static_cast<int>(r)) + ") for " +
                    std::to_string(count) + " floats in boxes of " + std::to_string(box) +
                    ": TMA needs a 16-byte-aligned base, 1 to 2^32 values, and a box of 4 to 256 values, "
                    "a multiple of 4");
  return map;
}

// ---- host: can the sm_90a code run here? -------------------------------------------------

// The probe is compiled into each translation unit that includes this header
// (internal linkage: a TU built for sm_90a asks about its own image, never
// another TU's): 1 when the code the GPU runs is the sm_90a image.
namespace {
[[maybe_unused]] __global__ void sm90a_probe_kernel(int* compiled_for_sm90a) {
#ifdef CUDALABS_SM90A
  *compiled_for_sm90a = 1;
#else
  *compiled_for_sm90a = 0;
#endif
}

// Why this translation unit's sm_90a kernels cannot run on the current
// device, "" when they can: the GPU is not a Hopper (compute capability 9.0),
// or the program holds no sm_90a code for it (built without 9.0 among the
// architectures). Host only; runs a one-thread kernel and waits for it.
[[maybe_unused]] std::string sm90a_unavailable() {
  const DeviceInfo& dev = current_device();
  if (dev.cc_major != 9 || dev.cc_minor != 0)
    return "needs a Hopper GPU (compute capability 9.0: wgmma and TMA exist only in sm_90a code); this is " +
           dev.name + ", compute capability " + dev.cc();
  DeviceBuffer<int> flag(1, "sm_90a probe flag");
  sm90a_probe_kernel<<<1, 1>>>(flag.data());
  CUDALABS_CHECK_LAUNCH("sm90a_probe_kernel");
  CUDALABS_CHECK(cudaDeviceSynchronize());
  if (flag.download().at(0) != 1)
    return "this program holds no sm_90a code for the GPU to run (built without 9.0 among the architectures: "
           "reconfigure with -Dgpu_arch=9.0 or with 9.0 in the list)";
  return "";
}
}  // namespace

}  // namespace cudalabs::hopper
