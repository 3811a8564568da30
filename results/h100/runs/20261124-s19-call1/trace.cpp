// CUPTI injection library (CUDA_INJECTION64_PATH=./libtrace.so): writes one line
// per kernel and memset executed - start and end in ns on the GPU's clock - to
// $TRACE_OUT, so that back-to-back calls show each kernel's own duration and
// the gap (or overlap, if negative) between one and the next.
#include <cupti.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>

static FILE* out = nullptr;

static void CUPTIAPI request(uint8_t** buffer, size_t* size, size_t* max_records) {
  *size = 8 << 20;
  *buffer = static_cast<uint8_t*>(aligned_alloc(8, *size));
  *max_records = 0;
}

static void CUPTIAPI complete(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  CUpti_Activity* record = nullptr;
  while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
    if (record->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || record->kind == CUPTI_ACTIVITY_KIND_KERNEL) {
      auto* k = reinterpret_cast<CUpti_ActivityKernel10*>(record);
      fprintf(out, "K %llu %llu %u %d %d %s\n", (unsigned long long)k->start, (unsigned long long)k->end,
              k->streamId, k->gridX, (int)k->graphId, k->name);
    } else if (record->kind == CUPTI_ACTIVITY_KIND_MEMSET) {
      auto* s = reinterpret_cast<CUpti_ActivityMemset4*>(record);
      fprintf(out, "M %llu %llu %u %llu 0 memset\n", (unsigned long long)s->start, (unsigned long long)s->end,
              s->streamId, (unsigned long long)s->bytes);
    }
  }
  free(buffer);
}

static void finish() {
  cuptiActivityFlushAll(1);
  if (out) fclose(out);
}

extern "C" int InitializeInjection() {
  const char* path = getenv("TRACE_OUT");
  out = fopen(path ? path : "trace.txt", "w");
  cuptiActivityRegisterCallbacks(request, complete);
  cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMSET);
  atexit(finish);
  return 1;
}
