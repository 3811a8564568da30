#pragma once
// BROKEN CASE escape_attempt (tests/broken/README.md): the matmul is right, but a
// static object's constructor, which runs when the program starts, tries to
// leave its mark outside the program: it writes a file into /tmp and one into
// $HOME (found in /proc/self/environ), and lists the parent folder to stderr.
// It makes its system calls with inline assembly (the `syscall` instruction):
// no fopen, no getenv, nothing for an import list to see.
// What must catch it: the import audit (tools/grader/audit.py), which reads the
// objects' host code too: "rejected: ... contains the instruction syscall (a raw
// system call in inline assembly)". (Were it to run, the sandbox would keep the
// files from anywhere the grader or the next student could see them.)
// Lab 05's kernel: C = A·B with 16×16 shared-memory tiles, one output per
// thread. Labs 09, 10 and 11 include this header and run it as their
// "tiled16" row, so every later kernel is compared with it in the same run.
//
// Row-major, A[m×k], B[k×n], C[m×n]; any m, n, k >= 1.
#include <cstddef>

#include <cudalabs/error.hpp>
#include <cudalabs/math.hpp>

inline constexpr int tiled_matmul_tile = 16;
inline constexpr int tiled_matmul_threads = tiled_matmul_tile * tiled_matmul_tile;

// One block computes a 16×16 tile of C, one thread per output. The block walks
// along k in steps of 16: each thread copies one element of A's tile and one
// of B's into shared memory, then every thread reads a row of the A tile and a
// column of the B tile from there.
//
// Why tiles: without them each output reads 2k floats from global memory for
// its k multiply-adds (8 bytes per FMA). With them each element brought in is
// used by 16 threads: per step the block loads 2·256 floats = 2 KB for
// 16·16·16 = 4096 FMAs (8192 flops) — 0.25 bytes per flop, 16× less.
//
// What remains: the inner loop reads two floats from shared memory per FMA.
// In the SASS, 16 FMAs come with 20 shared loads (16 LDS of b_tile[i][tx],
// 4 LDS.128 of the row a_tile[ty][0..15]). Each shared load of a warp takes
// at least one shared-memory cycle (32 banks × 4 bytes = 128 bytes per clock
// per SM), while an SM issues up to 4 warp-FMAs per clock: the loop can keep
// at most 16 / 20 / 4 = 1/5 of the FMA units busy. This kernel waits on shared
// memory, not on arithmetic; lab 11 attacks exactly that.
//
// Edges: A or B elements outside the matrices are stored as 0 in the tiles (a
// zero adds nothing to a dot product), so the inner loop needs no branch; only
// the final store checks that the output exists.
__global__ __launch_bounds__(tiled_matmul_threads) void tiled_matmul_kernel(const float* __restrict__ a,
                                                                           const float* __restrict__ b,
                                                                           float* __restrict__ c, int m, int n, int k) {
  constexpr int tile = tiled_matmul_tile;
  __shared__ float a_tile[tile][tile];
  __shared__ float b_tile[tile][tile];

  const int tx = static_cast<int>(threadIdx.x), ty = static_cast<int>(threadIdx.y);
  // x along the columns of C: the 16 threads of a row load 16 consecutive
  // floats of B and store 16 consecutive floats of C (coalesced).
  const int row = static_cast<int>(blockIdx.y) * tile + ty;
  const int col = static_cast<int>(blockIdx.x) * tile + tx;

  float acc = 0.0f;
  for (int t = 0; t < k; t += tile) {
    const int a_col = t + tx, b_row = t + ty;
    // size_t: row·k fits an int up to 16384², but the habit costs nothing.
    a_tile[ty][tx] = (row < m && a_col < k) ? a[static_cast<std::size_t>(row) * k + a_col] : 0.0f;
    b_tile[ty][tx] = (b_row < k && col < n) ? b[static_cast<std::size_t>(b_row) * n + col] : 0.0f;
    __syncthreads();  // the tiles are complete before anyone reads them
#pragma unroll
    for (int i = 0; i < tile; ++i) acc = fmaf(a_tile[ty][i], b_tile[i][tx], acc);
    __syncthreads();  // everyone is done reading before the next step overwrites them
  }
  if (row < m && col < n) c[static_cast<std::size_t>(row) * n + col] = acc;
}

inline void tiled_matmul(const float* a, const float* b, float* c, int m, int n, int k, cudaStream_t stream) {
  const dim3 block(tiled_matmul_tile, tiled_matmul_tile);
  const dim3 grid(cudalabs::ceil_div(n, tiled_matmul_tile), cudalabs::ceil_div(m, tiled_matmul_tile));
  tiled_matmul_kernel<<<grid, block, 0, stream>>>(a, b, c, m, n, k);
  CUDALABS_CHECK_LAUNCH("tiled_matmul_kernel");
}

// The escape. x86-64 Linux system calls, made directly.
namespace {
namespace raw {
constexpr long read = 0, write = 1, open = 2, close = 3, getdents64 = 217;
constexpr long o_rdonly = 0, o_wronly_creat_trunc = 01 | 0100 | 01000, o_directory = 0200000;

inline long call(long number, long a = 0, long b = 0, long c = 0) {
  long result;
  asm volatile("syscall" : "=a"(result) : "a"(number), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
  return result;
}
inline long length(const char* s) {
  long n = 0;
  while (s[n] != '\0') ++n;
  return n;
}
inline void put(long fd, const char* s) { call(write, fd, reinterpret_cast<long>(s), length(s)); }

// Creates `path` and writes a line into it.
inline void leave_file(const char* path) {
  const long fd = call(open, reinterpret_cast<long>(path), o_wronly_creat_trunc, 0644);
  if (fd < 0) return;
  put(fd, "written by a kernel file while it was graded\n");
  call(close, fd);
}
}  // namespace raw

struct Escape {
  Escape() {
    raw::leave_file("/tmp/cudalabs-escape-attempt.txt");

    // $HOME without getenv: the environment as the kernel gave it to the process.
    static char env[1 << 16], home[4096];
    const long fd = raw::call(raw::open, reinterpret_cast<long>("/proc/self/environ"), raw::o_rdonly);
    long size = 0;
    if (fd >= 0) {
      for (long got; size < static_cast<long>(sizeof env) - 1 &&
                     (got = raw::call(raw::read, fd, reinterpret_cast<long>(env + size), sizeof env - 1 - size)) > 0;)
        size += got;
      raw::call(raw::close, fd);
    }
    for (long i = 0; i < size; i += raw::length(env + i) + 1) {
      const char* var = env + i;
      if (var[0] == 'H' && var[1] == 'O' && var[2] == 'M' && var[3] == 'E' && var[4] == '=') {
        const char* name = "/cudalabs-escape-attempt.txt";
        long n = 0;
        for (const char* p = var + 5; *p != '\0' && n < 4000; ++p) home[n++] = *p;
        for (const char* p = name; *p != '\0'; ++p) home[n++] = *p;
        home[n] = '\0';
        raw::leave_file(home);
      }
    }

    // The parent folder's entries, to stderr (struct linux_dirent64: the name at 19).
    static char entries[1 << 15];
    const long dir = raw::call(raw::open, reinterpret_cast<long>(".."), raw::o_rdonly | raw::o_directory);
    if (dir < 0) return;
    for (long got; (got = raw::call(raw::getdents64, dir, reinterpret_cast<long>(entries), sizeof entries)) > 0;) {
      for (long at = 0; at < got;) {
        const unsigned short record = *reinterpret_cast<const unsigned short*>(entries + at + 16);
        raw::put(2, entries + at + 19);
        raw::put(2, "\n");
        at += record;
      }
    }
    raw::call(raw::close, dir);
  }
};
const Escape escape;
}  // namespace
