#!/usr/bin/env python3
"""Checks that a program uses the CUDA driver API alone: its dynamic section
names libcuda.so.1 and no libcudart, and it holds no cudart symbol, linked
statically or left undefined (cudaLaunchKernel, cudaMalloc, ...,
__cudaRegisterFatBinary: what nvcc's host stubs call). CPU only; reads the
file with readelf and nm (binutils).

usage: check_linkage.py PROGRAM
"""
import re
import subprocess
import sys

CUDART_SYMBOL = re.compile(r"^(cuda[A-Z]\w*|__cuda\w+)$")


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"FAIL: {' '.join(cmd)} exited {p.returncode}: {p.stderr.strip()}")
    return p.stdout


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    program = sys.argv[1]
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", run(["readelf", "--dynamic", "--wide", program]))
    print("NEEDED:", ", ".join(needed))
    problems = []
    if "libcuda.so.1" not in needed:
        problems.append("libcuda.so.1 is not in NEEDED: the program does not link the driver")
    problems += [f"{lib} is in NEEDED: the program links the runtime" for lib in needed if lib.startswith("libcudart")]
    # Every symbol, defined (a static cudart) or undefined (a call into one),
    # in the symbol table and the dynamic symbol table.
    names = set()
    for args in (["nm", "--no-demangle", program], ["nm", "--no-demangle", "--dynamic", program]):
        for line in run(args).splitlines():
            parts = line.split()
            if parts:
                names.add(parts[-1].split("@")[0])
    cudart = sorted(n for n in names if CUDART_SYMBOL.match(n))
    if cudart:
        problems.append(f"{len(cudart)} cudart symbol(s) in the program: " + ", ".join(cudart[:12]))
    driver = sorted(n for n in names if re.match(r"^cu[A-Z]\w*$", n))
    print(f"driver API symbols: {len(driver)} ({', '.join(driver[:6])}, ...)")
    if not driver:
        problems.append("no driver API symbol (cuInit, cuLaunchKernel, ...): is this the right program?")
    for p in problems:
        print("FAIL:", p)
    if not problems:
        print("ok: links libcuda.so.1, no cudart library and no cudart symbol")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
