#!/usr/bin/env python3
"""CPU tests of the import audit (tools/grader/audit.py, tools/allowed_imports.toml); no GPU needed.

Compiles small CUDA "kernel files" with nvcc (host code and sm_90 device code,
one nvcc call per file, in parallel) and a fake course (its library and main
object, with g++) into fake builds in a temporary folder, then checks that:
  - a clean kernel file with a launcher (<<<>>>, cudaLaunchKernel, cudaMemsetAsync,
    cudaFuncGetAttributes, the occupancy API, the course's check macros and
    resources_of, a std::string message, a static std::string, a __device__
    function: nvcc's exit(1) stub) is accepted;
  - a kernel file that does each forbidden thing in a function of its own is
    rejected once per thing, each message naming that function, the symbol and
    the family's rule from the allow-list: fopen, std::ofstream, atexit, exit,
    getenv, dlsym, signal, socket, pthread_create, std::thread, system, mmap,
    mprotect, usleep, syscall(), an inline-assembly syscall, cudaDeviceReset,
    cudaSetDevice, a driver API call, a cuRAND host call, a harness internal
    (a cudalabs:: function not among the public helpers), another lab's code, and a
    symbol on no list, an attribute set on the stream the launcher is given, a graph host node made by the generic cudaGraphAddNode and a
    user object's destructor (cudaUserObjectCreate), a locale made by name (std::locale(""):
    the environment's LANG) and the course's event timer (cudalabs::Event::ms_since:
    cudaEventElapsedTime's "not ready"); and CUB's device-wide reduction
    (instantiated in the kernel file), while CUB's block-level reduction is accepted;
    memory both the host and a kernel see: cudaHostAlloc, cudaMallocManaged,
    cudaHostRegister, and a __managed__ variable (nvcc's registration of it);
  - a lab folder with no object of the kernel files (and no device code) is not
    accepted: the audit accepts only what it has read;
  - a system call with prefixes (data16 cs syscall) and one in machine code kept as
    a const array in an executable section are found; a section both writable and
    executable and an executable stack are rejected, and the clean file has neither;
  - a kernel file that redefines a course symbol (cudalabs::check_close, with the
    real signature), a libc function (write; read as a weak alias, memcpy under a
    .symver version), the CUDA runtime's timer (cudaEventElapsedTime, weak) or,
    weakly, what the course takes from a library is rejected by the redefinition rule;
  - the assembler's record of what it read: a clean kernel file reads nothing;
    .incbin pasted together by an assembler macro and .include joined from string
    pieces by a macro are rejected, and so is an object without a record;
  - [labs.LAB] additions and course_archives of an allow-list work, a misspelt key
    is an error, and the command line's exit codes are 0 / 1 / 2;
  - a lab whose student file is device code only (lab 19) is judged by its PTX:
    device printf is accepted, a call to the device heap (malloc) is rejected;
  - given a course build folder (argument 1), every lab of it is accepted; without
    one (or when it has no labs) that test is skipped.
Run: PYTHONPATH=tools python3 tests/grading/test_audit.py [BUILD]   (meson test sets PYTHONPATH)
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unittest
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

try:
    from grader import audit, sources
except ImportError:
    print("test_audit: cannot import grader.audit: run with PYTHONPATH=tools (meson test sets it)", file=sys.stderr)
    sys.exit(1)

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
AUDIT = ROOT / "tools" / "grader" / "audit.py"
LAB = "99_audit"  # a lab no course has: no [labs.*] addition applies; its namespace is lab99
COURSE_BUILD = Path(sys.argv.pop(1)) if len(sys.argv) > 1 and not sys.argv[1].startswith("-") else None

# A kernel file as a student writes one: everything here is allowed.
CLEAN = r"""
#define _GLIBCXX_ASSERTIONS 1  // as some distributions' compilers do by default: indexing checks
#include <cuda_runtime.h>
#include <cmath>
#include <stdexcept>
#include <span>
#include <string>
#include <cudalabs/device.hpp>
#include <cudalabs/error.hpp>
#include <cudalabs/math.hpp>

__device__ float twice(float x) { return 2.0f * x; }  // external linkage: nvcc's exit(1) host stub
__global__ void scale_kernel(float* x, float a, long n) {
  long i = blockIdx.x * static_cast<long>(blockDim.x) + threadIdx.x;
  if (i < n) x[i] = twice(x[i]) * a;
}

namespace lab99 {
const std::string& name() { static const std::string n = "scale, a kernel file of the audit's test"; return n; }

// A checked index (GCC 13's libstdc++ reports a bad one through std::__glibcxx_assert_fail).
float first_of(std::span<const float> s) { return s[0]; }

void scale(float* x, float a, long n, cudaStream_t stream) {
  if (n < 0) throw std::runtime_error(name() + ": negative size " + std::to_string(n));
  CUDALABS_CHECK(cudaMemsetAsync(x, 0, 0, stream));
  cudaFuncAttributes attr{};
  CUDALABS_CHECK(cudaFuncGetAttributes(&attr, scale_kernel));
  int per_sm = 0;
  CUDALABS_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, scale_kernel, 256, 0));
  if (n == 0) return;
  const unsigned blocks = static_cast<unsigned>(cudalabs::ceil_div<long>(n, 256));
  scale_kernel<<<blocks, 256, 0, stream>>>(x, std::sqrt(a) * std::exp(a), n);
  CUDALABS_CHECK_LAUNCH("scale_kernel");
  void* args[] = {&x, &a, &n};
  CUDALABS_CHECK(cudaLaunchKernel(reinterpret_cast<const void*>(&scale_kernel), dim3(1), dim3(256), args, 0, stream));
}
cudalabs::KernelResources scale_resources() { return cudalabs::resources_of(scale_kernel, 256); }
}  // namespace lab99
"""

# Each forbidden thing in a function of its own: the messages name the function.
# (function, the allow-list's reject family, the symbol the message names)
EXPECTED = [
    ("uses_fopen()", "file_io", "fopen"),
    ("uses_ofstream()", "file_io", "std::basic_filebuf<char>::open("),
    ("uses_atexit()", "process_exit", "atexit"),
    ("uses_exit()", "process_exit", "exit"),
    ("uses_getenv()", "environment", "getenv"),
    ("uses_dlsym()", "dynamic_loading", "dlsym"),
    ("uses_signal()", "signals", "signal"),
    ("uses_socket()", "network", "socket"),
    ("uses_pthread()", "threads", "pthread_create"),
    ("uses_std_thread()", "threads", "std::thread::_M_start_thread("),
    ("uses_system()", "processes", "system"),
    ("uses_mmap()", "memory_mapping", "mmap"),
    ("uses_mprotect()", "memory_mapping", "mprotect"),
    ("uses_usleep()", "sleeping", "usleep"),
    ("uses_stream_query()", "progress_queries", "cudaStreamQuery"),
    ("uses_event_query(CUevent_st*)", "progress_queries", "cudaEventQuery"),
    ("uses_syscall()", "raw_system_calls", "syscall"),
    ("uses_device_reset()", "cuda_global_state", "cudaDeviceReset"),
    ("uses_set_device()", "cuda_global_state", "cudaSetDevice"),
    ("uses_driver_api()", "cuda_driver_api", "cuCtxDestroy_v2"),
    ("uses_curand()", "libraries", "curandCreateGenerator"),
    ("uses_harness_internal()", "harness_internals", "cudalabs::write_record(char const*)"),
    ("uses_other_lab()", "other_labs", "lab07::reduce("),
    ("uses_unlisted()", None, "getpid"),
    ("uses_stream_attribute(CUstream_st*)", "cuda_global_state", "cudaStreamSetAttribute"),
    ("uses_graph_host_node()", "threads", "cudaGraphAddNode"),
    ("uses_user_object()", "threads", "cudaUserObjectCreate"),
    ("uses_named_locale[abi:cxx11]()", "environment", "std::locale::locale(char const*)"),
    ("uses_event_timer()", "progress_queries", "cudalabs::Event::ms_since("),
    ("uses_pool_reuse(CUstream_st*, CUstream_st*)", "progress_queries", "cudaMallocAsync"),
    ("uses_clock_gettime()", "reading_the_clock", "clock_gettime"),
    ("uses_steady_clock()", "reading_the_clock", "std::chrono::_V2::steady_clock::now()"),
    ("uses_gettimeofday()", "reading_the_clock", "gettimeofday"),
    ("uses_mapped_flag()", "host_visible_memory", "cudaHostAlloc"),
    ("uses_managed_counter()", "host_visible_memory", "cudaMallocManaged"),
    ("uses_registered_stack(CUstream_st*)", "host_visible_memory", "cudaHostRegister"),
]
BAD = r"""
#include <cuda_runtime.h>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <sys/time.h>
#include <x86intrin.h>
#include <cstdlib>
#include <fstream>
#include <locale>
#include <string>
#include <thread>
#include <cudalabs/memory.hpp>
#include <dlfcn.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace cudalabs { void write_record(const char* json); }  // not a public helper
namespace lab07 { void reduce(const float* in, float* out, long n, cudaStream_t stream); }
extern "C" int cuCtxDestroy_v2(void* context);
extern "C" int curandCreateGenerator(void** generator, int type);

void uses_fopen() { std::FILE* f = std::fopen("/tmp/records.jsonl", "a"); std::fputs("{}", f); }
void uses_ofstream() { std::ofstream out("/tmp/records.jsonl"); out << "{}"; }
void uses_atexit() { std::atexit([] { std::puts("late"); }); }
void uses_exit() { std::exit(0); }
const char* uses_getenv() { return std::getenv("GRADER"); }
void* uses_dlsym() { return dlsym(RTLD_DEFAULT, "system"); }
void uses_signal() { std::signal(SIGALRM, SIG_IGN); }
int uses_socket() { return socket(AF_INET, SOCK_STREAM, 0); }
void uses_pthread() { pthread_t t; pthread_create(&t, nullptr, [](void*) -> void* { return nullptr; }, nullptr); }
void uses_std_thread() { std::thread([] {}).detach(); }
int uses_system() { return std::system("true"); }
void* uses_mmap() { return mmap(nullptr, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0); }
int uses_mprotect() { return mprotect(reinterpret_cast<void*>(&uses_mprotect), 4096, PROT_READ | PROT_EXEC); }
void uses_usleep() { usleep(1000); }
// A traced run holds the legacy stream busy while the launcher runs; a timed run does not.
bool uses_stream_query() { return cudaStreamQuery(cudaStreamLegacy) == cudaErrorNotReady; }
bool uses_event_query(cudaEvent_t e) { return cudaEventQuery(e) == cudaSuccess; }
long uses_syscall() { return syscall(SYS_getpid); }
long uses_asm_syscall() { long r; asm volatile("syscall" : "=a"(r) : "a"(39L) : "rcx", "r11", "memory"); return r; }
void uses_device_reset() { cudaDeviceReset(); }
// A block freed on a held stream comes back at once on another only if the free has run.
bool uses_pool_reuse(cudaStream_t held, cudaStream_t side) {
  void* p = nullptr;
  void* q = nullptr;
  cudaMallocAsync(&p, 1 << 20, held);
  cudaFreeAsync(p, held);
  cudaMallocAsync(&q, 1 << 20, side);
  return p != q;
}
// A checked run is traced, so each call is slower: a launcher timing its own calls tells them apart.
long uses_clock_gettime() { timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_nsec; }
long uses_steady_clock() { return std::chrono::steady_clock::now().time_since_epoch().count(); }
long uses_gettimeofday() { timeval t; gettimeofday(&t, nullptr); return t.tv_usec; }
// Memory both sides see: a kernel spinning on a word the host sets, or counting while the host looks.
int* uses_mapped_flag() { void* p = nullptr; cudaHostAlloc(&p, 4, cudaHostAllocMapped); return static_cast<int*>(p); }
int* uses_managed_counter() { void* p = nullptr; cudaMallocManaged(&p, 4); return static_cast<int*>(p); }
void uses_registered_stack(cudaStream_t s) {
  int word = 0;
  cudaHostRegister(&word, sizeof word, cudaHostRegisterMapped);
  cudaMemsetAsync(&word, 1, sizeof word, s);
}
unsigned long long uses_rdtsc() { return __rdtsc(); }
unsigned long long uses_asm_rdtscp() { unsigned lo, hi, aux; asm volatile("rdtscp" : "=a"(lo), "=d"(hi), "=c"(aux)); return (static_cast<unsigned long long>(hi) << 32) | lo; }
void uses_set_device() { cudaSetDevice(1); }
int uses_driver_api() { return cuCtxDestroy_v2(nullptr); }
int uses_curand() { void* g = nullptr; return curandCreateGenerator(&g, 100); }
void uses_harness_internal() { cudalabs::write_record("{\"passed\": true}"); }
void uses_other_lab() { lab07::reduce(nullptr, nullptr, 0, nullptr); }
int uses_unlisted() { return getpid(); }
// An access policy window left on the stream the harness hands over (and times the baseline on).
void uses_stream_attribute(cudaStream_t s) {
  cudaStreamAttrValue v{};
  v.accessPolicyWindow.num_bytes = 1 << 20;
  v.accessPolicyWindow.missProp = cudaAccessPropertyStreaming;
  cudaStreamSetAttribute(s, cudaStreamAttributeAccessPolicyWindow, &v);
}
// A host node through the generic node call, and a user object's destructor: host
// code the driver runs on its own thread, as cudaLaunchHostFunc's.
void uses_graph_host_node() {
  cudaGraph_t g;
  cudaGraphCreate(&g, 0);
  cudaGraphNodeParams p{};
  p.type = cudaGraphNodeTypeHost;
  p.host.fn = [](void*) {};
  cudaGraphNode_t node;
  cudaGraphAddNode(&node, g, nullptr, nullptr, 0, &p);
}
void uses_user_object() { cudaUserObject_t o; cudaUserObjectCreate(&o, nullptr, [](void*) {}, 1, cudaUserObjectNoDestructorSync); }
// The environment through a locale made by name: "" takes LC_ALL, LC_* and LANG.
std::string uses_named_locale() { return std::locale("").name(); }
// The course's timer, which asks cudaEventElapsedTime: its throw says stream 0 is held.
bool uses_event_timer() {
  cudalabs::Event start, stop;
  start.record(cudaStreamLegacy);
  stop.record(cudaStreamLegacy);
  try {
    stop.ms_since(start);
    return false;
  } catch (const cudalabs::CudaError&) {
    return true;
  }
}
"""

# System calls the disassembly must still find: prefixed (the CPU ignores data16
# and cs on it), and machine code kept as a const array in an executable section
# (objdump -d prints a data object's bytes there as data; they run as code).
HIDDEN = r"""
__global__ void k(float* x) { x[0] = 1; }
long prefixed_syscall(long n) {
  long r;
  asm volatile(".byte 0x66, 0x2e, 0x0f, 0x05" : "=a"(r) : "a"(n) : "rcx", "r11", "memory");
  return r;
}
__attribute__((section(".text.hidden_code"), used))
const unsigned char hidden_code[] = {0xb8, 0x27, 0, 0, 0, 0x0f, 0x05, 0xc3};  // mov $39,%eax; syscall; ret
long calls_hidden_code() { return reinterpret_cast<long (*)()>(reinterpret_cast<const void*>(hidden_code))(); }
"""

# Memory both writable and executable: code can be written there at run time.
WRITABLE = r"""
__global__ void k(float* x) { x[0] = 1; }
asm(".section .note.GNU-stack,\"x\",@progbits\n.previous");
asm(".section .scratch_code,\"awx\",@progbits\n.zero 64\n.previous");
"""

# CUB's device-wide algorithms are a library call (CUB is header-only: the kernel
# file instantiates them); its block-level primitives are device code and fine.
# A __managed__ variable: no call in the source, nvcc's start-up code registers it.
MANAGED = r"""
__managed__ unsigned long long ticks;  // a kernel counts into it while the host looks
__global__ void count_kernel() { while (true) atomicAdd(&ticks, 1ull); }
"""

CUB = r"""
#include <cub/block/block_reduce.cuh>
#include <cub/device/device_reduce.cuh>

template <int Block> __global__ void block_sums(const float* in, float* out) {
  using Reduce = cub::BlockReduce<float, Block>;
  __shared__ typename Reduce::TempStorage scratch;
  float sum = Reduce(scratch).Sum(in[blockIdx.x * Block + threadIdx.x]);
  if (threadIdx.x == 0) out[blockIdx.x] = sum;
}
namespace lab99 {
void block_level(const float* in, float* out, int blocks, cudaStream_t s) {
  block_sums<128><<<blocks, 128, 0, s>>>(in, out);
}
void device_wide(const float* in, float* out, int n, void* scratch, size_t bytes, cudaStream_t s) {
  cub::DeviceReduce::Sum(scratch, bytes, in, out, n, s);
}
}  // namespace lab99
"""

# Definitions that would replace the course's or a library's code at link time.
REDEFINE = r"""
#include <unistd.h>
#include <cudalabs/checker.hpp>

namespace cudalabs {
CheckResult check_close(std::span<const float>, std::span<const float>, Tolerance) {  // the real signature
  CheckResult r;
  r.passed = true;
  return r;
}
__attribute__((weak)) void flush_records() {}  // the course calls it, defined nowhere in the course's objects
}  // namespace cudalabs
extern "C" ssize_t write(int, const void*, size_t n) { return static_cast<ssize_t>(n); }  // libc's
namespace lab99 { void scale() {} }  // the lab's interface: its to define
// libc's read as a weak alias of a function of the student's own
extern "C" ssize_t own_read(int, void*, size_t n) { return static_cast<ssize_t>(n); }
extern "C" ssize_t read(int, void*, size_t) __attribute__((weak, alias("own_read")));
// libc's memcpy under a symbol version (.symver)
extern "C" void* own_memcpy(void* d, const void*, size_t) { return d; }
__asm__(".symver own_memcpy,memcpy@GLIBC_2.2.5");
// the CUDA runtime's timer, weak, so that the harness's calls would reach it
extern "C" __attribute__((weak)) cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t, cudaEvent_t) {
  *ms = 1e-3f;
  return cudaSuccess;
}
"""

# The fake course: its library defines check_close; its main object calls it, the
# lab's interface and flush_records (which it takes from "a library").
COURSE_LIB = r"""
#include <cudalabs/checker.hpp>
namespace cudalabs {
CheckResult check_close(std::span<const float>, std::span<const float>, Tolerance) { return {}; }
}
"""
COURSE_MAIN = r"""
#include <cudalabs/checker.hpp>
namespace cudalabs { void flush_records(); }
namespace lab99 { void scale(); }
int main() {
  lab99::scale();
  float a[1] = {0};
  cudalabs::flush_records();
  return cudalabs::check_close(a, a, {}).passed ? 0 : 1;
}
"""


# What the assembler reads (tools/grader/sources.py, assembler_reads): .include and
# .incbin spelt so that no check of the source text sees them.
ASSEMBLED = {
    "asm_clean": CLEAN,
    # An assembler macro pastes the directive's name together.
    "asm_macro": r"""__global__ void k(float* x) { x[0] = 1; }
asm(".macro paste what\n .inc\\what \"/etc/hostname\"\n.endm\n.section .rodata\npaste bin\n.text\n");
""",
    # The preprocessor joins the pieces: ".inc" "lude".
    "asm_include": r"""#define PIECES(a, b) a b
__global__ void k(float* x) { x[0] = 1; }
asm(PIECES(".inc", "lude \"/dev/null\""));
""",
}


def cuda_root():
    nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    return Path(os.path.realpath(nvcc)).parent.parent if Path(nvcc).exists() else None


TMP = None  # the module's temporary folder: sources, objects and fake builds
OBJECTS = {}


def compile_all():
    """Every object of the tests, one compiler call each, in parallel."""
    cuda = cuda_root()
    if cuda is None or not shutil.which("g++"):
        raise unittest.SkipTest("no nvcc or g++: the audit's tests compile kernel files")
    inc = ["-I", str(ROOT / "common" / "include"), "-I", str(cuda / "include")]
    nvcc = [str(cuda / "bin" / "nvcc"), "-c", "-x", "cu", "-std=c++20", "-O3", "-arch=sm_90",
            "--expt-relaxed-constexpr", "-Xcompiler=-fPIC"] + inc
    gxx = ["g++", "-c", "-x", "c++", "-std=c++20", "-O2"] + inc
    # The CUB case without NVTX (CCCL_DISABLE_NVTX): CUB's device-wide headers bring NVTX's
    # loader (dlopen, getenv: rejected too), but this case is about the library itself.
    jobs = {"cub": (nvcc + ["-DCCCL_DISABLE_NVTX"], CUB), "clean": (nvcc, CLEAN), "bad": (nvcc, BAD),
            "redefine": (nvcc, REDEFINE), "hidden": (nvcc, HIDDEN), "writable": (nvcc, WRITABLE), "managed": (nvcc, MANAGED), "course_lib": (gxx, COURSE_LIB), "course_main": (gxx, COURSE_MAIN)}
    # Assembled as the grader's build of a submission assembles (sources.ASSEMBLER_ENV).
    jobs.update({name: (nvcc, text) for name, text in ASSEMBLED.items()})

    def build(name):
        cmd, text = jobs[name]
        src, obj = TMP / f"{name}.src", TMP / f"{name}.o"
        src.write_text(text)
        env = dict(os.environ, **sources.ASSEMBLER_ENV) if name in ASSEMBLED else None
        p = subprocess.run(cmd + [str(src), "-o", str(obj)], capture_output=True, text=True, env=env)
        if p.returncode != 0:
            raise RuntimeError(f"compiling {name} failed:\n{p.stderr[-3000:]}")
        return name, obj

    start = time.monotonic()
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        OBJECTS.update(pool.map(build, jobs))
    print(f"test_audit: compiled {len(jobs)} files in {time.monotonic() - start:.1f} s", file=sys.stderr)


def fake_build(name, student_objects):
    """A build folder as the course's meson makes it: labs/LAB/libLAB_kernels.a (the
    student's), labs/LAB/LAB.p/main.cu.o and common/libcudalabs.a (the course's)."""
    root = TMP / name
    lab = root / "labs" / LAB
    (lab / f"{LAB}.p").mkdir(parents=True)
    (root / "common").mkdir()
    shutil.copy(OBJECTS["course_main"], lab / f"{LAB}.p" / "main.cu.o")
    subprocess.run(["ar", "rcs", str(root / "common" / "libcudalabs.a"), str(OBJECTS["course_lib"])], check=True)
    subprocess.run(["ar", "rcs", str(lab / f"lib{LAB}_kernels.a")] + [str(OBJECTS[o]) for o in student_objects],
                   check=True)
    return root


def setUpModule():
    global TMP
    TMP = Path(tempfile.mkdtemp(prefix="cudalabs-audit-test-"))
    compile_all()
    for name in ("clean", "bad", "redefine", "cub", "hidden", "writable", "managed"):
        fake_build(name, [name])


def tearDownModule():
    if TMP:
        shutil.rmtree(TMP, ignore_errors=True)


def allow_list_with(extra):
    """The course's allow-list with `extra` TOML appended, in the temporary folder."""
    path = TMP / f"allow-{abs(hash(extra))}.toml"
    path.write_text(audit.DEFAULT_ALLOW_FILE.read_text() + "\n" + extra)
    return path


def run_cli(*args, cwd=ROOT, module=False):
    cmd = [sys.executable] + (["-m", "grader.audit"] if module else [str(AUDIT)]) + list(args)
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd)
    return p.returncode, p.stdout + p.stderr


class Accepts(unittest.TestCase):
    def test_clean_kernel_file(self):
        report = audit.audit(TMP / "clean", LAB)
        self.assertEqual(report.problems, [])
        families = set(report.imports.values())
        # What the launcher needs, each allowed by its family (not by accident). The runtime's
        # C++ template cudaOccupancyMaxActiveBlocksPerMultiprocessor calls the ...WithFlags function.
        for sym, family in [("cudaMemsetAsync", "cuda_memory"), ("cudaFuncGetAttributes", "cuda_launch"),
                            ("cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags", "cuda_occupancy"),
                            ("cudaLaunchKernel", "cuda_launch"), ("__cudaPushCallConfiguration", "cuda_glue"),
                            ("__cxa_atexit", "cxx_runtime"), ("exit", "nvcc's own call"), ("atexit", "nvcc's own call")]:
            self.assertEqual(report.imports.get(sym), family, f"{sym}: {report.imports.get(sym)}")
        self.assertIn("course_helpers", families)
        self.assertTrue(any(s.startswith("cudalabs::check_launch(") for s in report.imports), report.imports)

    def test_standard_library_index_checks(self):
        """GCC 13's libstdc++ with _GLIBCXX_ASSERTIONS (Ubuntu's default) reports a bad std::span
        or std::vector index through an exported function; GCC 12 inlines the report. Either way
        a kernel file that indexes a span is accepted, and the exported report is C++'s own."""
        allow = audit.AllowList(audit.DEFAULT_ALLOW_FILE, LAB)
        family, allowed = allow.judge("_ZSt21__glibcxx_assert_failPKciS0_S0_",
                                      "std::__glibcxx_assert_fail(char const*, int, char const*, char const*)")
        self.assertEqual((family.name, allowed), ("cxx_runtime", True))

    def test_student_archives_are_the_lab_static_libraries(self):
        self.assertEqual([p.name for p in audit.student_archives(TMP / "clean", LAB)], [f"lib{LAB}_kernels.a"])
        self.assertEqual(audit.student_archives(TMP / "clean", "42_no_such_lab"), [])


class NvccStubs(unittest.TestCase):
    """nvcc's host body of a __device__ function (`{ volatile int ___ = 1; ::exit(___); }`) as
    compilers emit it, told apart from functions that do anything else before exit."""
    STUBS = {
        "GCC 12 -O2": ["sub $0x18,%rsp", "movl $0x1,0xc(%rsp)", "mov 0xc(%rsp),%edi", "call 4a15 <f+0x15>",
                       "data16 cs nopw 0x0(%rax,%rax,1)"],
        "GCC 12 -O0, parameters spilled": ["push %rbp", "mov %rsp,%rbp", "sub $0x20,%rsp", "movq %xmm0,-0x18(%rbp)",
                                           "mov %rdi,-0x20(%rbp)", "movl $0x1,-0x4(%rbp)", "mov -0x4(%rbp),%eax",
                                           "mov %eax,%edi", "call 4aa4 <g>"],
        "CET, a struct through a register, an aligning push, a trap": [
            "endbr64", "push %rbx", "movq %xmm0,%rax", "mov %rax,-0x18(%rsp)", "movl $0x1,-0x4(%rsp)",
            "mov -0x4(%rsp),%edi", "call 4a16 <exit>", "ud2"],
        "Ubuntu GCC 13.3 -O2, a push and pop of %rax": [
            "endbr64", "push %rax", "pop %rax", "sub $0x18,%rsp", "movl $0x1,0xc(%rsp)", "mov 0xc(%rsp),%edi",
            "call 48db <f+0x1b>", "nopl 0x0(%rax,%rax,1)"],
    }
    NOT_STUBS = {
        "exit(0)": ["mov $0x0,%edi", "call 4a16 <exit>"],
        "a status read through a pointer": ["movl $0x1,-0x4(%rbp)", "mov -0x4(%rbp),%rax", "mov 0x8(%rax),%edi",
                                            "call 4a16 <exit>"],
        "another call first": ["movl $0x1,-0x4(%rbp)", "mov -0x4(%rbp),%edi", "call 4a10 <fopen>", "call 4a16 <exit>"],
        "the 1 overwritten": ["movl $0x1,-0x4(%rbp)", "mov -0x4(%rbp),%edi", "mov %rsi,%rdi", "call 4a16 <exit>"],
        "a status popped from the stack": ["push %rsi", "pop %rdi", "call 4a16 <exit>"],
        "the 1 popped over": ["movl $0x1,0xc(%rsp)", "mov 0xc(%rsp),%edi", "pop %rdi", "call 4a16 <exit>"],
        "arithmetic": ["movl $0x1,-0x4(%rbp)", "mov -0x4(%rbp),%edi", "add %esi,%edi", "call 4a16 <exit>"],
    }

    def test_stub_forms(self):
        for name, body in self.STUBS.items():
            with self.subTest(name):
                self.assertTrue(audit.nvcc_stub(body))
        for name, body in self.NOT_STUBS.items():
            with self.subTest(name):
                self.assertFalse(audit.nvcc_stub(body))


class Rejects(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.problems = audit.audit_lab(TMP / "bad", LAB)
        cls.allow = audit.AllowList(audit.DEFAULT_ALLOW_FILE, LAB)

    def rule(self, family):
        if family is None:
            return audit.UNLISTED.rule
        return next(f.rule for f in self.allow.rejects if f.name == family)

    def test_each_forbidden_call_is_named_with_its_rule(self):
        for function, family, symbol in EXPECTED:
            with self.subTest(function=function):
                lines = [p for p in self.problems if f": {function} calls " in p]
                self.assertTrue(lines, f"{function}: no problem names it:\n" + "\n".join(self.problems))
                line = next((p for p in lines if f"calls {symbol}" in p), None)
                self.assertIsNotNone(line, f"{function}: no line names {symbol}:\n" + "\n".join(lines))
                self.assertIn(f"({self.rule(family)})", line)
                self.assertIn("tools/allowed_imports.toml", line)
                self.assertIn("Fix: ", line)

    def test_inline_assembly_syscall(self):
        lines = [p for p in self.problems if "uses_asm_syscall()" in p]
        self.assertEqual(len(lines), 1, "\n".join(self.problems))
        self.assertIn("contains the instruction syscall", lines[0])
        # ... and no other function has one (the launchers' code is clean).
        self.assertEqual(len([p for p in self.problems if "contains the instruction sys" in p]), 1)

    def test_inline_assembly_clock(self):
        # __rdtsc() is GCC's builtin: no import, only the instruction.
        for function, instruction in (("uses_rdtsc()", "rdtsc"), ("uses_asm_rdtscp()", "rdtscp")):
            with self.subTest(function=function):
                lines = [p for p in self.problems if f"{function} contains the instruction" in p]
                self.assertEqual(len(lines), 1, "\n".join(self.problems))
                self.assertIn(f"contains the instruction {instruction} (reading the CPU's clock", lines[0])
        self.assertEqual(len([p for p in self.problems if "contains the instruction rdtsc" in p]), 2)

    def test_prefixed_and_data_object_syscalls(self):
        problems = audit.audit_lab(TMP / "hidden", LAB)
        for function in ("prefixed_syscall(long)", "hidden_code"):
            with self.subTest(function=function):
                lines = [p for p in problems if f": {function} contains the instruction syscall" in p]
                self.assertEqual(len(lines), 1, "\n".join(problems))

    def test_writable_and_executable_memory(self):
        problems = audit.audit_lab(TMP / "writable", LAB)
        rule = f"({audit.WRITABLE_CODE.rule})"
        self.assertTrue([p for p in problems if "section .scratch_code is writable and executable " + rule in p],
                        "\n".join(problems))
        self.assertTrue([p for p in problems if "asks for an executable stack" in p and rule in p],
                        "\n".join(problems))
        # The clean kernel file has neither (nvcc's own sections, its stack note).
        self.assertFalse([p for p in audit.audit_lab(TMP / "clean", LAB) if rule in p])

    def test_a_lab_without_student_code_is_not_accepted(self):
        (TMP / "nothing" / "labs" / LAB).mkdir(parents=True, exist_ok=True)
        problems = audit.audit_lab(TMP / "nothing", LAB)
        self.assertEqual(len(problems), 1, "\n".join(problems))
        self.assertIn(f"({audit.NOTHING_FOUND.rule})", problems[0])

    def test_managed_variable(self):
        problems = audit.audit_lab(TMP / "managed", LAB)
        lines = [p for p in problems if "calls __cudaRegisterManagedVar" in p]
        self.assertEqual(len(lines), 1, "\n".join(problems))
        self.assertIn(f"({self.rule('host_visible_memory')})", lines[0])

    def test_cub_device_wide_algorithm(self):
        problems = audit.audit_lab(TMP / "cub", LAB)
        lines = [p for p in problems if "host function of cub (" in p]
        self.assertEqual(len(lines), 1, "\n".join(problems))
        self.assertRegex(lines[0], r"cub::(\w+::)*DeviceReduce::Sum<")  # cub::CUB_300001_SM_900::DeviceReduce
        self.assertIn(f"({self.rule('libraries')})", lines[0])
        # The block-level kernel (device code) is none of it.
        self.assertFalse([p for p in problems if "block_sums" in p or "block_level" in p], "\n".join(problems))

    def test_one_problem_per_line_naming_the_object(self):
        for p in self.problems:
            self.assertNotIn("\n", p)
            self.assertTrue(p.startswith(f"lib{LAB}_kernels.a(bad.o): ") or p.startswith("... and "), p)

    def test_lab_addition_allows_only_what_it_names(self):
        path = allow_list_with(f'[labs.{LAB}]\nwhy = "a test: threads by std::thread"\n'
                               'demangled = ["*std::thread::*"]\n')
        problems = audit.audit_lab(TMP / "bad", LAB, path)
        self.assertFalse([p for p in problems if "std::thread" in p], "\n".join(problems))
        self.assertTrue([p for p in problems if "uses_pthread()" in p and "(threads)" in p], "\n".join(problems))
        self.assertTrue([p for p in problems if "uses_fopen() calls fopen (file I/O)" in p], "\n".join(problems))

    def test_course_archives_are_not_audited(self):
        path = allow_list_with(f'[labs.{LAB}]\nwhy = "a test"\ncourse_archives = ["lib{LAB}_kernels.a"]\n')
        self.assertEqual(audit.student_archives(TMP / "bad", LAB, path), [])
        # None of bad's calls is judged; with no archive of the student's left, that is the one problem.
        problems = audit.audit_lab(TMP / "bad", LAB, path)
        self.assertEqual(len(problems), 1, "\n".join(problems))
        self.assertIn(f"({audit.NOTHING_FOUND.rule})", problems[0])

    def test_misspelt_key_is_an_error(self):
        path = allow_list_with('[reject.typo]\nrule = "x"\nwhy = "x"\ndemangeld = ["fopen"]\n')
        with self.assertRaisesRegex(audit.AuditError, "unknown key.*demangeld"):
            audit.audit_lab(TMP / "bad", LAB, path)


class Redefinitions(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.problems = audit.audit_lab(TMP / "redefine", LAB)

    def find(self, text):
        return [p for p in self.problems if text in p]

    def test_course_symbol(self):
        lines = self.find("defines cudalabs::check_close(std::span<float const, 18446744073709551615ul>, ")
        mangled = "_ZN8cudalabs11check_closeESt4spanIKfLm18446744073709551615EES2_NS_9ToleranceE"
        lines = [p for p in lines if f"({mangled})" in p]
        self.assertEqual(len(lines), 1, "\n".join(self.problems))
        self.assertIn("a redefinition reaching the checking code", lines[0])
        self.assertIn("define or use it", lines[0])

    def test_weak_copy_of_what_the_course_takes_from_a_library(self):
        lines = self.find("defines cudalabs::flush_records()")
        self.assertEqual(len(lines), 1, "\n".join(self.problems))
        self.assertIn("calls it from a library", lines[0])

    def test_system_library_function(self):
        lines = self.find("defines write ")
        self.assertEqual(len(lines), 1, "\n".join(self.problems))
        self.assertIn("a system library", lines[0])

    def test_weak_aliased_and_versioned_definitions_of_library_functions(self):
        for shown in ("defines read ", "defines memcpy@GLIBC_2.2.5 ", "defines cudaEventElapsedTime "):
            lines = self.find(shown)
            self.assertEqual(len(lines), 1, shown + "\n" + "\n".join(self.problems))
            self.assertIn("a system library", lines[0])

    def test_the_lab_interface_is_the_students(self):
        self.assertFalse(self.find("lab99::scale"), "\n".join(self.problems))
        self.assertEqual(len(self.problems), 6, "\n".join(self.problems))


class AssemblerReads(unittest.TestCase):
    """The grader's build assembles a submission through tools/grader/asm/as, which
    records what each object's assembly read (OBJECT.asd); sources.assembler_reads
    rejects an object that read a file, however the directive was spelt."""

    def reads(self, name):
        return sources.assembler_reads({name: OBJECTS[name]})

    def test_a_clean_kernel_file_reads_nothing(self):
        self.assertTrue(Path(str(OBJECTS["asm_clean"]) + ".asd").is_file())
        self.assertEqual(self.reads("asm_clean"), [])

    def test_incbin_pasted_by_an_assembler_macro(self):
        found = self.reads("asm_macro")
        self.assertEqual(len(found), 1, found)
        self.assertIn("asm_macro: its assembly read /etc/hostname (.include or .incbin", found[0])
        self.assertIn("Fix: ", found[0])

    def test_include_joined_by_the_preprocessor(self):
        found = self.reads("asm_include")
        self.assertEqual(len(found), 1, found)
        self.assertIn("read /dev/null", found[0])

    def test_an_object_without_a_record_is_rejected(self):
        found = self.reads("clean")  # compiled as the course's build does: no record
        self.assertEqual(len(found), 1, found)
        self.assertIn("no record of the files its assembler read", found[0])

    def test_student_objects_are_found_in_the_build(self):
        from grader.submission import audit_text, student_objects
        root = fake_build("assembled", ["asm_macro"])
        objects = student_objects(root, LAB)
        self.assertEqual(list(objects), [f"lib{LAB}_kernels.a(asm_macro.o)"])
        where = root / "labs" / LAB / f"lib{LAB}_kernels.a.p"
        where.mkdir()
        shutil.copy(OBJECTS["asm_macro"], where / "asm_macro.o")
        shutil.copy(str(OBJECTS["asm_macro"]) + ".asd", where / "asm_macro.o.asd")
        self.assertEqual(student_objects(root, LAB)[f"lib{LAB}_kernels.a(asm_macro.o)"], where / "asm_macro.o")
        self.assertIn("its assembly read /etc/hostname", audit_text(root, LAB, assembled=True))
        self.assertNotIn("its assembly read", audit_text(root, LAB) or "")


class DeviceCode(unittest.TestCase):
    """Lab 19: its student file is compiled to PTX and loaded as a module, never linked."""

    def ptx_build(self, name, body):
        lab_dir = TMP / f"device-{name}" / "labs" / "19_driver_api"
        lab_dir.mkdir(parents=True, exist_ok=True)
        source = TMP / f"device-{name}.cu"
        source.write_text(body)
        nvcc = cuda_root() / "bin" / "nvcc"
        subprocess.run([str(nvcc), "--ptx", "-arch=compute_90", "-o", str(lab_dir / "device_code.compute_90.ptx"),
                        str(source)], check=True, capture_output=True)
        return TMP / f"device-{name}"

    def test_printf_is_allowed_and_the_device_heap_is_not(self):
        kernel = "#include <cstdio>\n__global__ void k(float* x) { %s }\n"
        clean = self.ptx_build("clean", kernel % 'if (x[0] < 0) printf("negative %f\\n", x[0]); x[0] = 1;')
        self.assertEqual(audit.audit_lab(clean, "19_driver_api"), [])
        heap = self.ptx_build("heap", kernel % "float* p = (float*)malloc(16); p[0] = x[0]; x[1] = p[0]; free(p);")
        problems = audit.audit_lab(heap, "19_driver_api")
        self.assertTrue([p for p in problems if "calls malloc (a device-side call the lab does not allow)" in p],
                        "\n".join(problems))
        self.assertTrue(all(p.startswith("device_code.compute_90.ptx: ") for p in problems), "\n".join(problems))


class CommandLine(unittest.TestCase):
    def test_exit_codes(self):
        rc, out = run_cli("--build", str(TMP / "clean"))
        self.assertEqual(rc, 0, out)
        self.assertIn(f"{LAB}: ok (lib{LAB}_kernels.a: ", out)
        rc, out = run_cli("--build", str(TMP / "bad"), "--labs", "99")
        self.assertEqual(rc, 1, out)
        self.assertIn(f"{LAB}: REJECTED", out)
        self.assertIn("uses_fopen() calls fopen (file I/O)", out)
        rc, out = run_cli("--build", str(TMP / "clean"), "--labs", "42")
        self.assertEqual(rc, 2, out)
        self.assertIn("no lab '42'", out)
        rc, out = run_cli("--build", str(TMP / "nothing-here"))
        self.assertEqual(rc, 2, out)
        rc, out = run_cli("--no-such-flag")
        self.assertEqual(rc, 2, out)

    def test_runs_as_a_module_from_tools(self):
        rc, out = run_cli("--build", str(TMP / "clean"), "--families", cwd=ROOT / "tools", module=True)
        self.assertEqual(rc, 0, out)
        self.assertIn("cuda_launch (", out)


class CourseBuild(unittest.TestCase):
    def test_every_course_lab_is_accepted(self):
        if COURSE_BUILD is None or not audit.lab_dirs(COURSE_BUILD):
            self.skipTest("no course build given (argument 1), or it has no labs")
        labs = audit.lab_dirs(COURSE_BUILD)
        if not any(audit.student_archives(COURSE_BUILD, lab) for lab in labs):
            self.skipTest(f"{COURSE_BUILD} has no kernel archives yet (not built)")
        for lab in labs:
            with self.subTest(lab=lab):
                self.assertEqual(audit.audit_lab(COURSE_BUILD, lab), [])

    def test_the_course_library_comes_before_the_kernels_on_every_link_line(self):
        """The linker keeps the first of the weak copies several objects carry (an
        inline function, a template, a vtable): with every course archive (libcudalabs.a,
        libcudalabs_blas.a, a lab's own course_archives) before a lab's kernel archives,
        the harness and the library baselines run on the course's copies, never a
        kernel file's (labs/meson.build). Read from this build's own link lines."""
        ninja = COURSE_BUILD / "build.ninja" if COURSE_BUILD else None
        if ninja is None or not ninja.is_file():
            self.skipTest("no configured course build given (argument 1)")
        lines = ninja.read_text().splitlines()
        checked = 0
        for i, line in enumerate(lines):
            m = re.match(r"^build (labs/(\d\d_\w+)/\2): \w*LINKER ", line)
            if not m:
                continue
            args = lines[i + 1] if i + 1 < len(lines) else ""
            libs = re.findall(r"(?:^|[\s=])(\S+\.a)\b", args)
            students = {a.name for a in audit.student_archives(COURSE_BUILD, m.group(2))}
            kernels = [k for k, lib in enumerate(libs) if f"labs/{m.group(2)}/" in lib and Path(lib).name in students]
            if not kernels:
                continue  # lab 19: its kernels are loaded as a module, not linked
            course = [k for k, lib in enumerate(libs) if k not in kernels]
            with self.subTest(lab=m.group(2)):
                self.assertTrue(any(libs[k].endswith("common/libcudalabs.a") for k in course), f"{m.group(2)} links {libs}")
                self.assertLess(max(course), min(kernels), f"{m.group(2)} links {libs}")
            checked += 1
        self.assertGreater(checked, 20)

    def test_lab_additions_name_course_labs(self):
        """Every [labs.*] of the allow-list is a lab of the course (labs/NN_name/)."""
        with open(audit.DEFAULT_ALLOW_FILE, "rb") as f:
            labs = audit.tomllib.load(f).get("labs", {})
        for lab in labs:
            self.assertTrue((ROOT / "labs" / lab / "meson.build").is_file(), f"[labs.{lab}]: no labs/{lab}/")
            self.assertTrue(labs[lab].get("why"), f"[labs.{lab}] says not why")

    def test_no_lab_may_look_driver_functions_up_by_name(self):
        """cudaGetDriverEntryPoint hands out any driver function (cuStreamQuery,
        cuLaunchHostFunc, cuCtxDestroy): no lab's addition lets a kernel file call it. The
        Hopper labs' TMA encoder is looked up in the course library instead."""
        with open(audit.DEFAULT_ALLOW_FILE, "rb") as f:
            labs = audit.tomllib.load(f).get("labs", {})
        for lab in labs:
            allow = audit.AllowList(audit.DEFAULT_ALLOW_FILE, lab)
            for name in ("cudaGetDriverEntryPoint", "cudaGetDriverEntryPointByVersion"):
                family, allowed = allow.judge(name, name)
                self.assertFalse(allowed, f"[labs.{lab}] allows {name} ({family.name})")


if __name__ == "__main__":
    unittest.main(verbosity=2)
