#!/usr/bin/env bash
# GPU-machine checks of the grader's reading of a submission and of the assembler's
# record (tools/grader/submission.py, tools/grader/sources.py, tools/grader/asm/as),
# in the real sandbox with the real toolchain. Run from the repository root after
# `meson setup build -Dgpu_arch=9.0 && ninja -C build`. Results under $OUT/.
set -u
OUT=${OUT:-/tmp/devcheck-out}
mkdir -p "$OUT"
export PYTHONPATH=$PWD/tools
T=$(mktemp -d /tmp/devcheck.XXXXXX)
chmod 755 "$T"   # the sandbox runs as nobody when the grader is root

# 1. The course's own kernel files of the labs with unusual builds (19: device code
#    only; 20: a course archive; 30, 33: a Hopper library; 31: a custom nvcc command;
#    32: NCCL and a course archive), graded as a submission, build only: every lab
#    must build and none may be rejected (each object has its assembler record, and
#    the record names nothing but its input).
python3 - "$T/sub" <<'PY'
import shutil, sys, tomllib
from pathlib import Path
dest = Path(sys.argv[1])
labs = tomllib.load(open("tools/grading.toml", "rb"))["labs"]
for lab in ["01_vector_add", "19_driver_api", "20_nvrtc_jit", "30_tensor_core_gemm", "31_flash_attention_hopper",
            "32_multi_gpu", "33_fp8_gemm"]:
    for f in labs[lab]["student_files"]:
        (dest / lab / f).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(Path("labs") / lab / f, dest / lab / f)
PY
start=$(date +%s)
timeout 420 python3 tools/grade.py --submission "$T/sub" --labs 01,19,20,30,31,32,33 --build-only --arch 9.0 \
  --work "$T/work" --out "$T/out1" > "$OUT/course-files-as-submission.txt" 2>&1
echo "rc=$? seconds=$(( $(date +%s) - start ))" >> "$OUT/course-files-as-submission.txt"
find "$T/work/build/labs" -name '*.asd' | sort | while read -r f; do echo "== $f"; cat "$f"; done \
  > "$OUT/assembler-records.txt" 2>&1

# 2. Lab 01 of the same files graded in full (the runs in the sandbox, the judge):
#    the full score, as before.
timeout 300 python3 tools/grade.py --submission "$T/sub" --labs 01 --arch 9.0 --no-sanitize \
  --work "$T/work" --out "$T/out2" > "$OUT/lab01-graded.txt" 2>&1
echo "rc=$?" >> "$OUT/lab01-graded.txt"

# 3. The two attack cases (rejected before they run) and the CPU suites touched:
#    the import audit against this build's labs (every lab accepted), the grader's
#    self-tests.
timeout 600 meson test -C build --no-rebuild "grader rejects broken linked_kernel_file" \
  "grader rejects broken assembler_include" "import audit" "grader (CPU self-tests)" \
  > "$OUT/meson-tests.txt" 2>&1
echo "rc=$?" >> "$OUT/meson-tests.txt"
cp build/meson-logs/testlog.txt "$OUT/testlog.txt" 2>/dev/null
tail -n 5 "$OUT"/*.txt
