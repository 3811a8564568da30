// Probe for session 10: which of cuBLASLt's algorithms for an FP16-in,
// FP32-out C = A·Bᵀ run on mma.sync (sm80-style kernels, compiled for sm_90)
// and which on wgmma, and how fast each family is on the H100 at n³, in one
// process. Every algorithm id the library lists for these types, with every
// tile and stage count it accepts for the shape, runs once (its kernel's name
// caught by a CUPTI launch callback) and is timed; the 60 fastest are timed
// again (median of 9), and so is the heuristic's first pick (what cuBLAS runs
// by default: on the H100 an sm90 "nvjet" wgmma kernel, which no algorithm id
// reaches), so that the ratio is of one process. C is checked against the
// heuristic pick's. Arguments: n, then fp16 or bf16.
#include <cublasLt.h>
#include <cuda_fp16.h>
#include <cupti.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#define CK(x) do { auto e_ = (x); if (e_ != 0) { std::printf("error %d at %s:%d: %s\n", int(e_), __FILE__, __LINE__, #x); std::exit(1); } } while (0)

static std::string last_kernel;
static void CUPTIAPI on_api(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void* data) {
  const auto* info = static_cast<const CUpti_CallbackData*>(data);
  if (info->callbackSite == CUPTI_API_ENTER && info->symbolName) last_kernel = info->symbolName;
}

#include <cuda_bf16.h>
__global__ void fill(__half* p, size_t n, unsigned seed, bool bf16) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    unsigned x = unsigned(i) * 2654435761u ^ seed; x ^= x >> 13; x *= 0x5bd1e995u; x ^= x >> 15;
    const float v = float(x % 2001) / 1000.f - 1.f;
    if (bf16) reinterpret_cast<__nv_bfloat16*>(p)[i] = __float2bfloat16(v); else p[i] = __float2half(v);
  }
}

struct Try { int id; unsigned tile, stages; int swizzle; float ms; std::string kernel; cublasLtMatmulAlgo_t algo; };

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 8192;
  const bool bf16 = argc > 2 && std::string(argv[2]) == "bf16";
  const cudaDataType_t in = bf16 ? CUDA_R_16BF : CUDA_R_16F;
  const char* dt = bf16 ? "bf16" : "fp16";
  // "n dtype id tile stages": run only that configuration, 5 times, no CUPTI (for Nsight Compute).
  const bool single = argc > 5;
  if (!single) {
    CUpti_SubscriberHandle sub;
    CK(cuptiSubscribe(&sub, on_api, nullptr));
    CK(cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_DRIVER_API));
    CK(cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_RUNTIME_API));
  }

  const size_t e = size_t(n) * n;
  __half *A, *B; float *C, *R; void* ws; const size_t ws_bytes = size_t(32) << 20;
  CK(cudaMalloc(&A, e * 2)); CK(cudaMalloc(&B, e * 2)); CK(cudaMalloc(&C, e * 4)); CK(cudaMalloc(&R, e * 4));
  CK(cudaMalloc(&ws, ws_bytes));
  fill<<<1024, 256>>>(A, e, 1u, bf16); fill<<<1024, 256>>>(B, e, 2u, bf16);
  cublasLtHandle_t lt; CK(cublasLtCreate(&lt));
  cublasLtMatmulDesc_t op; CK(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const cublasOperation_t t = CUBLAS_OP_T;
  CK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof t));
  // C = A·Bᵀ row-major is, column-major, Cᵀ (n×m) = B (used transposed: k×n) · Aᵀ (k×m).
  cublasLtMatrixLayout_t la, lb, lc;
  CK(cublasLtMatrixLayoutCreate(&la, in, n, n, n));
  CK(cublasLtMatrixLayoutCreate(&lb, in, n, n, n));
  CK(cublasLtMatrixLayoutCreate(&lc, CUDA_R_32F, n, n, n));
  const float one = 1, zero = 0;
  auto run = [&](const cublasLtMatmulAlgo_t& algo, float* out) {
    return cublasLtMatmul(lt, op, &one, B, la, A, lb, &zero, out, lc, out, lc, &algo, ws, ws_bytes, nullptr);
  };
  cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
  auto time_once = [&](const cublasLtMatmulAlgo_t& algo) {
    cudaEventRecord(e0); run(algo, C); cudaEventRecord(e1); cudaEventSynchronize(e1);
    float ms; cudaEventElapsedTime(&ms, e0, e1); return ms;
  };

  if (single) {
    cublasLtMatmulAlgo_t a;
    CK(cublasLtMatmulAlgoInit(lt, CUBLAS_COMPUTE_32F, CUDA_R_32F, in, in, CUDA_R_32F, CUDA_R_32F, std::atoi(argv[3]), &a));
    unsigned tile = std::atoi(argv[4]), st = std::atoi(argv[5]);
    CK(cublasLtMatmulAlgoConfigSetAttribute(&a, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof tile));
    CK(cublasLtMatmulAlgoConfigSetAttribute(&a, CUBLASLT_ALGO_CONFIG_STAGES_ID, &st, sizeof st));
    for (int r = 0; r < 5; ++r) std::printf("%s n %d id %s tile %u stages %u: %.4f ms\n", dt, n, argv[3], tile, st, time_once(a));
    return 0;
  }
  // The heuristic's first pick: the reference C and the default.
  cublasLtMatmulPreference_t pref; CK(cublasLtMatmulPreferenceCreate(&pref));
  CK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_bytes, sizeof ws_bytes));
  cublasLtMatmulHeuristicResult_t h[1]; int got = 0;
  CK(cublasLtMatmulAlgoGetHeuristic(lt, op, la, lb, lc, lc, pref, 1, h, &got));
  CK(run(h[0].algo, R)); CK(cudaDeviceSynchronize());
  const std::string pick_kernel = last_kernel;
  auto median9 = [&](const cublasLtMatmulAlgo_t& algo) {
    std::vector<float> ms;
    for (int r = 0; r < 2; ++r) time_once(algo);
    for (int r = 0; r < 9; ++r) ms.push_back(time_once(algo));
    std::sort(ms.begin(), ms.end());
    return ms[4];
  };

  std::vector<int> ids(512); int nids = 0;
  CK(cublasLtMatmulAlgoGetIds(lt, CUBLAS_COMPUTE_32F, CUDA_R_32F, in, in, CUDA_R_32F, CUDA_R_32F, 512,
                              ids.data(), &nids));
  std::vector<Try> tries;
  for (int ii = 0; ii < nids; ++ii) {
    cublasLtMatmulAlgo_t algo;
    if (cublasLtMatmulAlgoInit(lt, CUBLAS_COMPUTE_32F, CUDA_R_32F, in, in, CUDA_R_32F, CUDA_R_32F,
                               ids[ii], &algo) != CUBLAS_STATUS_SUCCESS) continue;
    size_t w = 0;
    std::vector<unsigned> tiles(128), stages(128);
    cublasLtMatmulAlgoCapGetAttribute(&algo, CUBLASLT_ALGO_CAP_TILE_IDS, tiles.data(), tiles.size() * 4, &w);
    tiles.resize(w / 4); if (tiles.empty()) tiles.push_back(CUBLASLT_MATMUL_TILE_UNDEFINED);
    cublasLtMatmulAlgoCapGetAttribute(&algo, CUBLASLT_ALGO_CAP_STAGES_IDS, stages.data(), stages.size() * 4, &w);
    stages.resize(w / 4); if (stages.empty()) stages.push_back(CUBLASLT_MATMUL_STAGES_UNDEFINED);
    int swz_cap = 0; cublasLtMatmulAlgoCapGetAttribute(&algo, CUBLASLT_ALGO_CAP_CTA_SWIZZLING_SUPPORT, &swz_cap, sizeof swz_cap, &w);
    for (unsigned tile : tiles) for (unsigned st : stages) for (int swz = 0; swz <= (swz_cap ? 1 : 0); ++swz) {
      cublasLtMatmulAlgo_t a = algo;
      cublasLtMatmulAlgoConfigSetAttribute(&a, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof tile);
      cublasLtMatmulAlgoConfigSetAttribute(&a, CUBLASLT_ALGO_CONFIG_STAGES_ID, &st, sizeof st);
      uint32_t s = swz; cublasLtMatmulAlgoConfigSetAttribute(&a, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, &s, sizeof s);
      cublasLtMatmulHeuristicResult_t check{};
      if (cublasLtMatmulAlgoCheck(lt, op, la, lb, lc, lc, &a, &check) != CUBLAS_STATUS_SUCCESS) continue;
      if (check.workspaceSize > ws_bytes) continue;
      last_kernel.clear();
      if (run(a, C) != CUBLAS_STATUS_SUCCESS || cudaDeviceSynchronize() != cudaSuccess) { cudaGetLastError(); continue; }
      const std::string name = last_kernel;
      tries.push_back({ids[ii], tile, st, swz, time_once(a), name, a});
    }
  }
  std::printf("%s n %d: %zu configurations ran (%d algorithm ids)\n", dt, n, tries.size(), nids);
  std::sort(tries.begin(), tries.end(), [](const Try& x, const Try& y) { return x.ms < y.ms; });
  const double flop = 2.0 * n * double(n) * n;
  std::vector<float> ref(e), out(e);
  CK(cudaMemcpy(ref.data(), R, e * 4, cudaMemcpyDeviceToHost));
  // Timed again: the 60 fastest, and the fastest whose kernel is not a wgmma one (name without "sm90"/"gmma").
  std::vector<Try> top(tries.begin(), tries.begin() + std::min<size_t>(12, tries.size()));
  int extra = 0;
  for (const Try& x : tries)
    if (x.kernel.find("sm90") == std::string::npos && x.kernel.find("gmma") == std::string::npos && extra < 10) {
      top.push_back(x); ++extra;
    }
  const float pick_ms = median9(h[0].algo);
  std::printf("%s n %d heuristic pick: %.4f ms %6.1f TFLOP/s  %s\n", dt, n, pick_ms, flop / pick_ms / 1e9, pick_kernel.c_str());
  for (Try& x : top) {
    x.ms = median9(x.algo);
    cudaMemcpy(out.data(), C, e * 4, cudaMemcpyDeviceToHost);
    double md = 0; for (size_t i = 0; i < e; i += 7) md = std::max(md, double(std::fabs(out[i] - ref[i])));
    std::printf("%s n %d: id %3d tile %3u stages %3u swz %d  %.4f ms %6.1f TFLOP/s %.3fx pick maxdiff %.1e  %s\n", dt, n,
                x.id, x.tile, x.stages, x.swizzle, x.ms, flop / x.ms / 1e9, pick_ms / x.ms, md, x.kernel.c_str());
  }
  const float again_ms = median9(h[0].algo);
  std::printf("%s n %d heuristic pick again: %.4f ms %6.1f TFLOP/s\n", dt, n, again_ms, flop / again_ms / 1e9);
  // Every distinct kernel name with its best single-run time.
  std::printf("%s n %d: kernels (best single run):\n", dt, n);
  std::vector<std::string> seen;
  for (const Try& x : tries) {
    if (std::find(seen.begin(), seen.end(), x.kernel) != seen.end()) continue;
    seen.push_back(x.kernel);
    std::printf("  %.4f ms %6.1f TFLOP/s  %s\n", x.ms, flop / x.ms / 1e9, x.kernel.c_str());
  }
  return 0;
}
