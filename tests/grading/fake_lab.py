#!/usr/bin/env python3
"""Stands in for a lab program in the grader's CPU tests (no GPU needed).

usage: fake_lab.py LAB [lab flags...]
Writes the records of LAB from $FAKE_LAB_RECORDS to --json, as the real
program would: with --check-only untimed, otherwise timed. $FAKE_LAB_MODE
("LAB=MODE,LAB=MODE") makes a lab misbehave:
  nogpu    exit 77 with the message of a machine without a GPU
  recheck  wrong on the repeated run (a kernel only right the first time)
  crash    exit 3 with a CUDA error
  hang     never finish
  stub:V+W the variants V and W are starter-kit stubs ("not implemented yet", exit 1);
           with --variant, only the variants named are run (and the baselines)
  wrong:V  the variant V gives a wrong result
  judged:V as a submission's graded run (--evidence DIR) the program says every
           variant passed, but its output of V is wrong: the judge (--judge DIR)
           fails V
  says77   as a graded run (--evidence), "no usable GPU" (exit 77) while the
           course's build (the judge) runs
  litter   as a graded run, leaves files beside its records: a file, and a
           folder holding one it made unreadable
  plant    as a graded run, leaves its records as a link to $FAKE_LAB_RECORDS (every
           record passing) and, in its evidence, a link to it and a named pipe
  fifo     as a graded run, leaves its records as a named pipe
As a judge (--judge DIR) it fails every record when DIR holds anything but
regular files: what it would read there is not the graded program's output.
"""
import json
import os
import sys
import time


def main():
    lab, args = sys.argv[1], sys.argv[2:]
    modes = dict(item.split("=") for item in os.environ.get("FAKE_LAB_MODE", "").split(",") if item)
    mode = modes.get(lab, "ok")
    check_only = "--check-only" in args
    json_path = args[args.index("--json") + 1] if "--json" in args else None
    seed = int(args[args.index("--seed") + 1]) if "--seed" in args else 42

    graded, judging = "--evidence" in args, "--judge" in args
    if graded:
        os.makedirs(args[args.index("--evidence") + 1], exist_ok=True)
    if mode == "nogpu" or (mode == "says77" and graded):
        print(f"{lab}: skipped: no CUDA device: CUDA driver version is insufficient", file=sys.stderr)
        return 77
    if mode == "crash":
        print(f"{lab}: CUDA error: an illegal memory access was encountered (cudaErrorIllegalAddress)", file=sys.stderr)
        return 3
    if mode == "hang":
        time.sleep(3600)
    if mode == "litter" and graded and json_path:
        here = os.path.dirname(os.path.abspath(json_path))
        with open(os.path.join(here, "junk"), "wb") as f:
            f.write(bytes(65536))
        os.makedirs(os.path.join(here, "pile", "hidden"), exist_ok=True)
        with open(os.path.join(here, "pile", "hidden", "more"), "wb") as f:
            f.write(bytes(65536))
        os.chmod(os.path.join(here, "pile", "hidden"), 0)

    if mode in ("plant", "fifo") and graded and json_path:
        evidence = args[args.index("--evidence") + 1]
        if mode == "plant":
            os.symlink(os.environ["FAKE_LAB_RECORDS"], json_path)
            os.symlink(os.environ["FAKE_LAB_RECORDS"], os.path.join(evidence, "first.0.bin"))
            os.mkfifo(os.path.join(evidence, "repeat.0.bin"))
        else:
            os.mkfifo(json_path)
        return 0
    not_plain = []
    if judging:
        with os.scandir(args[args.index("--judge") + 1]) as entries:
            not_plain = [e.name for e in entries if not e.is_file(follow_symlinks=False)]

    with open(os.environ["FAKE_LAB_RECORDS"]) as f:
        records = [r for r in map(json.loads, f) if r["lab"] == lab]
    named = [args[i + 1] for i, a in enumerate(args) if a == "--variant"]
    if named:
        records = [r for r in records if r["variant"] in named or r["variant"] in ("cub", "cublas_sgemm")]
    kind, _, which = mode.partition(":")
    for r in records:
        r["seed"] = seed
        if kind == "stub" and r["variant"] in which.split("+"):
            r.update(passed=False, timed=False, failure=f"not implemented yet: {r['variant']} is a starter-kit stub "
                                                        "(write the kernel and its launcher)")
        if (kind == "wrong" or (kind == "judged" and judging)) and r["variant"] == which:
            r.update(passed=False, failure="first run: 12 of 1000 elements wrong; first at [7]: got 3, expected 2")
        if judging:
            r.update(judge=True, timed=False, median_ms=0)
            if not_plain:
                r.update(passed=False, failure=f"the judge read what is not a regular file: {', '.join(not_plain)}")
        if check_only:
            r.update(timed=False, runs=0, median_ms=0, gbps=0, gflops=0, pct_of_ceiling=0, vs_baseline=0,
                     baseline="", baseline_ms=0)
            if mode == "recheck" and r["variant"] != "cub":
                r.update(passed=False, failure="repeated run: 7 of 1000 elements wrong; first at [3]: got 2.5, expected 1.25")
        # As common/src/report.cpp writes them: the timing's check only where it was made.
        r["library_baseline"] = r["variant"] in ("cub", "cublas_sgemm")
        r["checks"] = {"first": r["passed"], "after_timing": None if check_only or not r["passed"] else True}
        print(f"  {r['variant']:<20} {'PASS' if r['passed'] else 'FAIL'}")
    if json_path:
        with open(json_path, "a") as f:
            for r in records:
                f.write(json.dumps(r) + "\n")
    return 0 if all(r["passed"] for r in records) else 1


if __name__ == "__main__":
    sys.exit(main())
