#include <cuda.h>
#include <cuda_runtime.h>
#include <cudaTypedefs.h>
#include <cstdio>
int main() {
  void* fn; cudaDriverEntryPointQueryResult q;
  cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &q);
  auto enc = (PFN_cuTensorMapEncodeTiled_v12000)fn;
  float* p; cudaMalloc(&p, 1 << 22);
  CUtensorMap m; cuuint32_t box[2] = {128, 1}, unit[2] = {1, 1};
  cuuint64_t dims[2] = {524288, 1}, st[1] = {524288 * 4};
  for (int rank = 1; rank <= 2; ++rank)
    for (int nulls = 0; nulls < 2; ++nulls) {
      CUresult r = enc(&m, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, rank, p, dims, nulls ? nullptr : st, box, unit,
                       CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_NONE,
                       CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
      printf("rank %d strides %s: %d\n", rank, nulls ? "null" : "array", (int)r);
    }
  cuuint64_t d1[1] = {1}; cuuint32_t b1[1] = {128};
  printf("rank 1, 1 float, box 128: %d\n", (int)enc(&m, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 1, p, d1, st, b1, unit,
      CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
  b1[0] = 16;
  printf("rank 1, 524288 floats, box 16: %d\n", (int)enc(&m, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 1, p, dims, st, b1, unit,
      CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
}
