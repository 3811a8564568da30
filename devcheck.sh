#!/usr/bin/env bash
# Lab 33's cublaslt_fp8_block on one H200 (after meson setup build -Dgpu_arch=9.0 && ninja -C build):
#   1. layout probe: cuBLASLt's VEC128_32F / BLK128x128_32F on a 200x384x640 product with power-of-two
#      scales distinct per block, under the layout the lab uses and four wrong ones; the relative L2
#      error of each against a double-precision reference says which layout cuBLASLt reads ($OUT/probe.txt);
#   2. the lab at --quick (odd sizes), --check-only, with block_scaled and cublaslt_fp8;
#   3. the same three timed at 8192^3 and 4096x7168x16384 (records in $OUT/timed.jsonl);
#   4. compute-sanitizer memcheck at 131x257x144;
#   5. the grader's edge shapes (tools/grading.toml), --check-only: m = 1, k = 16, partial scale blocks.
# One line per run with its exit code in $OUT/summary.txt; each run's output in its own file.
set -u
OUT="${OUT:-/tmp}"
summary="$OUT/summary.txt"
: > "$summary"
run() {
  local label="$1" limit="$2"; shift 2
  local t0=$SECONDS
  timeout "$limit" "$@" > "$OUT/$label.txt" 2>&1
  echo "rc=$? $label ($((SECONDS - t0)) s): $*" >> "$summary"
}

probe_dir=$(mktemp -d)
cat > "$probe_dir/probe.cu" <<'PROBE'
#include <cublasLt.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>
#include <cmath>
#include <cstdio>
#include <vector>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { std::printf("CUDA %s: %s\n", #x, cudaGetErrorString(e)); return 1; } } while (0)
int main() {
  const int m = 200, n = 384, k = 640, kb = k / 128, nb = n / 128, l4 = (kb + 3) / 4 * 4;
  std::printf("cublasLt version %zu\n", cublasLtGetVersion());
  // A [m x k], B [n x k] row-major, values exact in e4m3; scales powers of two, distinct per block.
  std::vector<__nv_fp8_e4m3> a(m * k), b(n * k);
  std::vector<double> av(m * k), bv(n * k);
  for (int i = 0; i < m * k; ++i) { av[i] = ((i * 37 + 11) % 15 - 7) * 0.5; a[i] = __nv_fp8_e4m3(float(av[i])); }
  for (int i = 0; i < n * k; ++i) { bv[i] = ((i * 53 + 5) % 13 - 6) * 0.25; b[i] = __nv_fp8_e4m3(float(bv[i])); }
  std::vector<float> sa(m * kb), sb(nb * kb);  // ours: [row][kb], [nb][kb]
  for (int r = 0; r < m; ++r) for (int q = 0; q < kb; ++q) sa[r * kb + q] = std::ldexp(1.0f, (r * 7 + q * 3) % 9 - 4);
  for (int c = 0; c < nb; ++c) for (int q = 0; q < kb; ++q) sb[c * kb + q] = std::ldexp(1.0f, (c * 5 + q * 2) % 7 - 3);
  std::vector<double> ref(m * n);
  for (int r = 0; r < m; ++r) for (int c = 0; c < n; ++c) {
    double s = 0;
    for (int q = 0; q < kb; ++q) { double p = 0; for (int x = q * 128; x < q * 128 + 128; ++x) p += av[r * k + x] * bv[c * k + x];
      s += p * sa[r * kb + q] * sb[(c / 128) * kb + q]; }
    ref[r * n + c] = s;
  }
  struct L { const char* name; std::vector<float> v; };
  std::vector<L> la, lb;
  { std::vector<float> v(kb * m); for (int r = 0; r < m; ++r) for (int q = 0; q < kb; ++q) v[q * m + r] = sa[r * kb + q];
    la.push_back({"A [kb][m] (the lab's)", v}); }
  { la.push_back({"A [m][kb]", sa}); }
  { std::vector<float> v(nb * l4, 0.0f); for (int c = 0; c < nb; ++c) for (int q = 0; q < kb; ++q) v[c * l4 + q] = sb[c * kb + q];
    lb.push_back({"B [nb][kb padded to 4] (the lab's)", v}); }
  { lb.push_back({"B [nb][kb] unpadded", sb}); }
  { std::vector<float> v(nb * kb); for (int c = 0; c < nb; ++c) for (int q = 0; q < kb; ++q) v[q * nb + c] = sb[c * kb + q];
    lb.push_back({"B [kb][nb]", v}); }
  void *da, *db; float *dc, *dsa, *dsb; void* ws; const size_t wsb = 32u << 20;
  CK(cudaMalloc(&da, m * k)); CK(cudaMalloc(&db, n * k)); CK(cudaMalloc(&dc, sizeof(float) * m * n));
  CK(cudaMalloc(&dsa, sizeof(float) * 4096)); CK(cudaMalloc(&dsb, sizeof(float) * 4096)); CK(cudaMalloc(&ws, wsb));
  CK(cudaMemcpy(da, a.data(), m * k, cudaMemcpyHostToDevice)); CK(cudaMemcpy(db, b.data(), n * k, cudaMemcpyHostToDevice));
  cublasLtHandle_t lt; cublasLtCreate(&lt);
  for (auto& A : la) for (auto& B : lb) {
    CK(cudaMemset(dsa, 0, sizeof(float) * 4096)); CK(cudaMemset(dsb, 0, sizeof(float) * 4096));
    CK(cudaMemcpy(dsa, A.v.data(), sizeof(float) * A.v.size(), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dsb, B.v.data(), sizeof(float) * B.v.size(), cudaMemcpyHostToDevice));
    // As the lab calls it: cuBLASLt's A = our B (k x n, ld k, transposed), its B = our A (k x m, ld k).
    cublasLtMatmulDesc_t op; cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F);
    cublasOperation_t t = CUBLAS_OP_T, nn = CUBLAS_OP_N;
    cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof t);
    cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &nn, sizeof nn);
    int32_t ma = CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F, mb = CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F;
    cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, &ma, sizeof ma);
    cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, &mb, sizeof mb);
    cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &dsb, sizeof dsb);
    cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &dsa, sizeof dsa);
    cublasLtMatrixLayout_t lA, lB, lC;
    cublasLtMatrixLayoutCreate(&lA, CUDA_R_8F_E4M3, k, n, k); cublasLtMatrixLayoutCreate(&lB, CUDA_R_8F_E4M3, k, m, k);
    cublasLtMatrixLayoutCreate(&lC, CUDA_R_32F, n, m, n);
    cublasLtMatmulPreference_t pref; cublasLtMatmulPreferenceCreate(&pref);
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsb, sizeof wsb);
    cublasLtMatmulHeuristicResult_t h[8]; int got = 0;
    cublasStatus_t hs = cublasLtMatmulAlgoGetHeuristic(lt, op, lA, lB, lC, lC, pref, 8, h, &got);
    float one = 1, zero = 0; double err = -1;
    cublasStatus_t rs = CUBLAS_STATUS_NOT_SUPPORTED;
    if (hs == CUBLAS_STATUS_SUCCESS && got > 0) {
      CK(cudaMemset(dc, 0xFF, sizeof(float) * m * n));
      rs = cublasLtMatmul(lt, op, &one, db, lA, da, lB, &zero, dc, lC, dc, lC, &h[0].algo, ws, wsb, 0);
      CK(cudaDeviceSynchronize());
      std::vector<float> c(m * n); CK(cudaMemcpy(c.data(), dc, sizeof(float) * m * n, cudaMemcpyDeviceToHost));
      double e2 = 0, r2 = 0; for (int i = 0; i < m * n; ++i) { e2 += (c[i] - ref[i]) * (c[i] - ref[i]); r2 += ref[i] * ref[i]; }
      err = std::sqrt(e2 / r2);
    }
    std::printf("%-24s x %-38s heuristic %d (%d offers), run %d, relative L2 error %.3e\n", A.name, B.name, int(hs), got,
                int(rs), err);
    cublasLtMatmulPreferenceDestroy(pref); cublasLtMatrixLayoutDestroy(lA); cublasLtMatrixLayoutDestroy(lB);
    cublasLtMatrixLayoutDestroy(lC); cublasLtMatmulDescDestroy(op);
  }
  std::printf("the right layout: error below 1e-5 (exact inputs, power-of-two scales); a wrong one: 1e-1 or more\n");
  return 0;
}
PROBE
t0=$SECONDS
nvcc -std=c++17 -arch=sm_90 -o "$probe_dir/probe" "$probe_dir/probe.cu" -lcublasLt > "$OUT/probe.txt" 2>&1 &&
  timeout 60 "$probe_dir/probe" >> "$OUT/probe.txt" 2>&1
echo "rc=$? probe ($((SECONDS - t0)) s)" >> "$summary"
rm -rf "$probe_dir"

B=build/labs/33_fp8_gemm/33_fp8_gemm
V="--variant cublaslt_fp8_block,block_scaled,cublaslt_fp8"
run quick 60 $B --quick $V --check-only --json "$OUT/quick.jsonl"
run timed 150 $B --m 8192,4096 --n 8192,7168 --k 8192,16384 $V --json "$OUT/timed.jsonl"
run memcheck 60 compute-sanitizer --tool memcheck --error-exitcode 1 $B --m 131 --n 257 --k 144 $V --check-only
run edge 80 $B --m 1,7,33,129,300,1000 --n 1,9,257,130,301,3001 --k 16,144,48,272,4112,1008 $V --check-only
