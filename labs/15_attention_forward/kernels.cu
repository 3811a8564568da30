// Lab 15's kernel translation unit: the student's kernel file behind the fixed
// interface of kernels.hpp. Angle brackets: the file is found through the include
// path, which puts a graded submission's folder first (labs/meson.build).
#include "kernels.hpp"

#include <attention_forward.cuh>

namespace lab15 {

void attention_forward_unfused(const float* q, const float* k, const float* v, float* scores, float* weights,
                               float* out, int seq, int dim, cudaStream_t stream) {
  ::attention_forward_unfused(q, k, v, scores, weights, out, seq, dim, stream);
}
void unfused_scores(const float* q, const float* k, float* scores, int seq, int dim, cudaStream_t stream) {
  ::unfused_scores(q, k, scores, seq, dim, stream);
}
void unfused_softmax(const float* scores, float* weights, int seq, cudaStream_t stream) {
  ::unfused_softmax(scores, weights, seq, stream);
}
void unfused_output(const float* weights, const float* v, float* out, int seq, int dim, cudaStream_t stream) {
  ::unfused_output(weights, v, out, seq, dim, stream);
}

cudalabs::KernelResources unfused_scores_resources() { return ::unfused_scores_resources(); }
cudalabs::KernelResources unfused_softmax_resources(int seq) { return ::unfused_softmax_resources(seq); }
cudalabs::KernelResources unfused_output_resources() { return ::unfused_output_resources(); }
int unfused_output_slices(int seq, int dim) { return ::unfused_output_slices(seq, dim); }

}  // namespace lab15
