#!/usr/bin/env python3
"""The grading suite: runs every lab on this machine's GPU and scores it.

For each lab: correctness runs (--quick, every named run of the lab's
[labs.NAME.runs] in tools/grading.toml, the drawn runs; each with --check-only, so
every variant is checked on a poisoned output three times: first run, a
repeated run, and fresh input values), with a seed chosen here, fresh each run
unless --seed is given; compute-sanitizer memcheck, racecheck, synccheck and
initcheck at the --quick sizes and at the lab's sanitize_args (a medium, odd
size), unless --no-sanitize; these run in parallel (--parallel), after the
benchmark runs at the lab's default sizes, one lab at a time, alone on the GPU
(a benchmark whose record says the GPU throttled is run once more), and, on a
GPU of 40 GiB or more, beside a submission's judges of those benchmarks. A lab scores
its correctness points only when all of that passed (a lab with
exercise_variants: a share per exercise variant that passed, when every other
variant passed and nothing zeroed the whole lab), and its performance
points by tools/grading.toml; a result the harness marks implausible (faster
than the hardware can be) earns no performance points.

Prints one table (lab, variant, PASS/FAIL, time, % of ceiling, vs the library
baseline) and writes under one folder (default BUILD/grade/<UTC time>/):
records.jsonl, records.csv, junit.xml, results.json (Gradescope), summary.txt
and logs/LAB.txt.

--submission DIR grades a student's copy of one or more lab folders
(DIR/04_reduction/...): of each, only the lab's student_files (tools/grading.toml)
are used — every other file is ignored and named — compiled in the lab's kernel
translation unit of a build of the course tree made apart (-Dsubmission), so the
host program, sizes, tolerances, inputs, references, checks and baselines are
always the course's. The student's object is audited: defining a symbol the
course's code defines or uses (a redefinition) rejects the lab.

Exit codes: 0 every graded lab correct, 1 a lab wrong (or not built), 2 bad
usage, 77 no GPU (one line says so). With --expect-zero-correctness (the tests
of tests/broken/): 0 when every graded lab lost what is broken (zero, or in a lab
with exercise_variants, the broken variant's share); with
--expect-zero-performance: 0 when every graded lab scored zero for performance.
With --build-only (no GPU needed): 0 when every lab built, 1 when one did not;
the GPU steps are reported "not run: no GPU".

This file is the command line and the order of the steps; each step lives in
tools/grader/: config.py (the labs, tools/grading.toml), submission.py (a
submission's files, checked and built), runs.py (a lab's correctness, sanitizer
and benchmark runs, judged; process.py runs one program), result.py and
scoring.py (what a lab earns), reports.py (the tables and the files written),
records.py (reading records files).
"""
import argparse
import datetime
import json
import os
import random
import re
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from grader import sandbox
from grader.config import NOT_RUN, ROOT, SANITIZERS, GradeError, lab_names, load_config, select
from grader.process import Untrusted, gpu_memory_gib, sanitizer_found, why_no_gpu
from grader.reports import first_line, write_reports
from grader.result import LabResult, finish_lab
from grader.runs import NoGpu, benchmark_lab, check_lab, sanitize_labs
from grader.submission import build_submission, prebuilt_submission, submitted_labs


def parse_args(argv):
    p = argparse.ArgumentParser(
        description="Grade every lab on this machine's GPU (or a student's submission).",
        epilog="Exit codes: 0 all correct, 1 a lab wrong, 2 bad usage, 77 no GPU.")
    p.add_argument("--build", default="build", help="the course build folder (default: build)")
    p.add_argument("--submission", type=Path,
                   help="a folder of lab folders (DIR/04_reduction/...) whose kernel files are graded in the course's harness")
    p.add_argument("--sanitize", dest="sanitize", action="store_true", default=True,
                   help="run compute-sanitizer memcheck, racecheck, synccheck and initcheck (the default)")
    p.add_argument("--no-sanitize", dest="sanitize", action="store_false", help="skip the compute-sanitizer runs")
    p.add_argument("--parallel", type=int, default=min(8, max(1, (os.cpu_count() or 2) // 2)),
                   help="correctness and sanitizer runs at once (default: half the CPU cores, at most 8); "
                        "benchmarks always run one at a time")
    p.add_argument("--seed", type=int, help="input seed (default: a fresh random one, printed)")
    p.add_argument("--labs", help="only these labs, by number or name: 02,04_reduction")
    p.add_argument("--config", type=Path, default=ROOT / "tools" / "grading.toml", help="points and thresholds")
    p.add_argument("--out", type=Path, help="output folder (default: BUILD/grade/<UTC time>)")
    p.add_argument("--work", type=Path, help="with --submission: reuse this folder for the student files and their build")
    p.add_argument("--arch", default="auto", help="with --submission: gpu_arch of its build (default: auto)")
    p.add_argument("--jobs", type=int, help="with --submission: parallel compile jobs (default: ninja's)")
    p.add_argument("--build-only", action="store_true",
                   help="no GPU needed: build the labs, report compile errors per lab, and mark the GPU steps "
                        "(correctness, sanitizer, benchmark) 'not run: no GPU'; exit 1 if a lab does not build")
    p.add_argument("--prebuilt", type=Path,
                   help="with --submission: its labs are already built in DIR (tools/grade_class.py's build cache): "
                        "DIR/labs/LAB/LAB, or DIR/labs/LAB/build-error.txt; see prebuilt_submission()")
    p.add_argument("--preflight", action="store_true",
                   help="only check the GPU, the config and the submission folder, then exit (make grade runs it before building)")
    p.add_argument("--correctness-only", action="store_true", help="skip the benchmark runs (no performance points)")
    p.add_argument("--no-sandbox", dest="sandbox", action="store_false", default=True,
                   help="with --submission: run its builds and programs WITHOUT the sandbox (bubblewrap): its code "
                        "then has your rights. Warned on every run and recorded in results.json")
    p.add_argument("--expect-zero-correctness", action="store_true",
                   help="for tests/broken/: exit 0 only when every graded lab lost its correctness points, or, "
                        "where they are split among exercise_variants, the broken variant's share")
    p.add_argument("--expect-reason", metavar="REGEX",
                   help="with --expect-zero-correctness: each graded lab's first problem must also match REGEX "
                        "(a broken case is caught for the reason it should be)")
    p.add_argument("--expect-zero-performance", action="store_true",
                   help="for tests/broken/: exit 0 only when every graded lab is correct and scored zero for performance")
    args = p.parse_args(argv)
    if args.seed is not None and args.seed < 0:
        p.error("--seed must be >= 0")
    if args.parallel < 1:
        p.error("--parallel must be >= 1")
    return args


def output_folder(args):
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        return args.out
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    out = Path(args.build) / "grade" / stamp
    n = 1
    while out.exists():
        n += 1
        out = Path(args.build) / "grade" / f"{stamp}-{n}"
    out.mkdir(parents=True)
    return out


def grade(args):
    all_labs = lab_names(ROOT)
    config = load_config(args.config, all_labs)
    labs = select(all_labs, args.labs)
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1, 2**31)

    reason = why_no_gpu()
    if reason and not args.build_only:
        raise NoGpu(reason)
    if args.prebuilt and not args.submission:
        raise GradeError("--prebuilt DIR names where a submission's labs were built: give --submission too")
    if args.sanitize and not args.build_only and not sanitizer_found():
        raise NoGpu("compute-sanitizer not found (it comes with the CUDA Toolkit); cannot run --sanitize")
    if args.submission:
        folders = submitted_labs(args.submission, all_labs)
        labs = [lab for lab in labs if lab in {f.name for f in folders}]
        if not labs:
            raise GradeError(f"--labs {args.labs}: none of them is in {args.submission}")
        try:
            sandbox.Limits()  # reads CUDALABS_DISK_LIMIT_GIB: a bad value is said before anything runs
        except ValueError as e:
            raise GradeError(str(e)) from None
    if args.submission and args.sandbox:
        try:
            sandbox.check_available()
        except sandbox.SandboxUnavailable as e:
            raise GradeError(f"a submission is built and run in a sandbox, which cannot start here: {e}. "
                             f"(--no-sandbox grades without it: the submission's code then runs with your rights.)") from None
    if args.preflight:
        return 0

    out = output_folder(args)
    (out / "logs").mkdir(exist_ok=True)
    build = course_build = Path(args.build)
    build_errors, ignored, rejected = {}, {}, {}
    work_tmp = None
    # A submission's code is untrusted: sandboxed, and judged by the course's own build.
    # (A build-only grading needs no course build: none may exist yet.)
    course_dirs = [course_build.resolve()] if course_build.is_dir() else []
    untrusted = Untrusted(sandboxed=args.sandbox, readable=[ROOT, *course_dirs]) if args.submission else None
    if untrusted and not args.build_only:
        missing = [lab for lab in labs if not (course_build / "labs" / lab / lab).is_file()]
        if missing:
            raise GradeError(f"the judge of a submission is the course's own build of each lab, and {course_build} has "
                             f"no {', '.join(missing[:3])}: build the course first (make), or name its build with --build")
    if args.submission and args.prebuilt:
        build_errors, ignored, rejected = prebuilt_submission([f for f in folders if f.name in labs], config,
                                                              args.prebuilt)
        build = args.prebuilt
    elif args.submission:
        if not args.work:
            work_tmp = tempfile.TemporaryDirectory(prefix="cudalabs-grade-")
        work = args.work or Path(work_tmp.name)
        print(f"grade: building {', '.join(labs)} of {args.submission} in the course's harness ({work})", flush=True)
        with open(out / "logs" / "build.txt", "w") as log:
            build_errors, ignored, rejected = build_submission([f for f in folders if f.name in labs], config, work,
                                                               args.arch, args.jobs, log, untrusted)
        build = work / "build"
    if untrusted:
        untrusted.readable.append(build.resolve())

    header = (f"cudalabs grade: seed {seed} (repeat with --seed {seed}); "
              f"{'submission ' + str(args.submission) if args.submission else 'course build ' + str(build)}"
              f"; compute-sanitizer {'on (' + ', '.join(SANITIZERS) + ')' if args.sanitize else 'off (--no-sanitize)'}")
    if untrusted:
        header += ("; sandbox " + (sandbox.check_available() if args.sandbox else "OFF (--no-sandbox): the submission ran "
                                   "with the grader's rights") + "; verdicts by the course's judge")
    if args.build_only:
        header += f"; build-only: GPU steps {NOT_RUN}"
    results = {}

    def progress(lab, verdict):
        # The header waits for the first lab: without a GPU, one line says only that.
        if len(results) == 1:
            print(header, flush=True)
        print(f"  {lab:<28} {verdict}", flush=True)

    def checked(lab):
        # WRONG says why at once (the report's one line, cut to 160 characters): a
        # grading stopped before its summary (a time limit, a lost machine) still says it.
        if not results[lab].problems:
            return progress(lab, "checked")
        why = first_line(results[lab])
        progress(lab, f"WRONG: {why[:160]}{'...' if len(why) > 160 else ''}" if why else "WRONG")

    def graded_build(lab):
        # A lab without student files would have nothing of the submission in
        # it: the course's own build runs it, trusted and unjudged.
        return course_build if untrusted and not config[lab]["student_files"] else build

    def prog_of(lab):
        return graded_build(lab) / "labs" / lab / lab

    def trust_of(lab):
        return untrusted if graded_build(lab) is build else None

    try:
        to_check = []
        for lab in labs:
            cfg, prog = config[lab], prog_of(lab)
            if build_errors.get(lab):
                results[lab] = LabResult(lab, cfg, status="does not build", note=build_errors[lab])
            elif rejected.get(lab):
                results[lab] = LabResult(lab, cfg, problems=[f"rejected: {rejected[lab]}"])
            elif not prog.is_file():
                results[lab] = LabResult(lab, cfg, status="not built", note=f"no {prog}")
            else:
                to_check.append(lab)
        if args.build_only:
            for lab in to_check:
                extra = f"; ignored (not the lab's kernel files): {', '.join(ignored[lab])}" if ignored.get(lab) else ""
                results[lab] = LabResult(lab, config[lab], status="built", note=NOT_RUN + extra)
            to_check = []
        # The first lab alone: without a GPU it says so before anything else runs.
        if to_check:
            first = to_check[0]
            results[first] = check_lab(first, prog_of(first), config[first], seed, args, out, first=True,
                                       untrusted=trust_of(first), judge_prog=course_build / "labs" / first / first)
            checked(first)
        with ThreadPoolExecutor(max_workers=args.parallel) as pool:
            futures = {lab: pool.submit(check_lab, lab, prog_of(lab), config[lab], seed, args, out,
                                        untrusted=trust_of(lab), judge_prog=course_build / "labs" / lab / lab)
                       for lab in to_check[1:]}
            for lab, future in futures.items():
                try:
                    results[lab] = future.result()
                except NoGpu as e:  # a later lab found no device: the GPU went away
                    results[lab] = LabResult(lab, config[lab], problems=[f"no GPU: {e}"])
                checked(lab)
            # The benchmarks next, one lab at a time alone on the GPU (benchmark_lab
            # returns once its runs are done); then the compute-sanitizer runs
            # beside the benchmarks' judges (where the GPU has room for both):
            # neither times anything, and a submission's judges, which run the
            # course's kernels, would otherwise wait for the last benchmark with
            # nothing beside them. A lab the sanitizer then finds errors in loses
            # its points all the same (finish_lab: performance only for a correct lab).
            scores = []
            for lab in [] if args.correctness_only else to_check:
                res = results[lab]
                if res.status == "graded" and not res.problems and res.cfg["performance"] <= 0:
                    # Nothing to score: the benchmark would only re-check at one
                    # more size (03_pcie_truth: 21 s of pageable copies).
                    res.notes.append("no benchmark run: this lab has no performance points")
                elif res.status == "graded" and not res.problems:
                    scores.append(benchmark_lab(res, prog_of(lab), seed, args, out, trust_of(lab),
                                                course_build / "labs" / lab / lab))
            # Four judges at a time: each holds the lab's largest inputs on the GPU.
            # Beside the sanitizer runs only on a GPU with room for both (40 GiB:
            # four judges of the largest inputs, 3 GiB each for lab 02's, and
            # --parallel sanitizer runs at medium sizes); else the judges first.
            beside = bool(scores) and args.sanitize and (gpu_memory_gib() or 0) >= 40
            with ThreadPoolExecutor(max_workers=min(4, args.parallel)) as judges:
                scored = [judges.submit(score) for score in scores]
                if not beside:
                    for done in scored:
                        done.result()
                sanitized = (sanitize_labs([results[lab] for lab in to_check], prog_of, seed, args, out, pool, trust_of)
                             if args.sanitize else None)
                for done in scored:
                    done.result()
            if sanitized:
                sanitized()  # the judges are done: nothing else writes to the results now
                for lab in to_check:
                    if results[lab].sanitizer:
                        progress(lab, "compute-sanitizer " + ("clean" if results[lab].sanitizer == "clean" else "found errors"))
        for lab in labs:
            res = results[lab]
            if untrusted and not config[lab]["student_files"]:
                res.notes.append("no student files: run from the course's own build")
            if ignored.get(lab):
                res.notes.append(f"ignored (not the lab's kernel files): {', '.join(ignored[lab])}")
            finish_lab(res, args)
    finally:
        if work_tmp:
            work_tmp.cleanup()
    results = [results[lab] for lab in labs]
    with open(out / "records.jsonl", "w") as f:
        for res in results:
            for r in res.records:
                f.write(json.dumps(r) + "\n")

    gpus = sorted({r.get("gpu") for res in results for r in res.records if r.get("gpu")})
    header += f"; GPU {', '.join(gpus) or 'unknown'}"
    trust = ({"sandbox": args.sandbox, "judge": True, "import_audit": True,
              "note": "" if args.sandbox else "graded with --no-sandbox: the submission's code ran unconfined"}
             if untrusted else {"sandbox": False, "judge": False, "import_audit": False,
                                "note": "the course's own tree: trusted, not sandboxed or judged"})
    text = write_reports(results, out, header, trust)
    print("\n" + text)
    print(f"records, CSV, JUnit, Gradescope results.json and logs in {out}/")

    if args.build_only:
        return 1 if any(r.status != "built" for r in results) else 0
    graded = [r for r in results if r.graded]
    if args.expect_zero_correctness:
        return expect_zero(graded, build_errors, args.expect_reason)
    if args.expect_zero_performance:
        return expect_zero_performance(graded)
    return 0 if graded and all(r.correct for r in graded) else 1


def expect_zero(graded, build_errors, reason=None):
    """The broken-kernel tests: the grader must give what is broken zero for
    correctness: the whole lab, or, in a lab whose points are split among its
    exercise_variants, the broken variant's share (the lab then scores less than
    its full correctness points)."""
    if not graded:
        print("expect-zero-correctness: no lab was graded: this test tests nothing")
        return 1
    status = 0
    for res in graded:
        if build_errors.get(res.lab):
            print(f"expect-zero-correctness: {res.lab} does not compile, so it tests nothing:\n{build_errors[res.lab]}")
            status = 1
        elif res.correct or res.correctness_score >= res.cfg["correctness"]:
            print(f"expect-zero-correctness: FAIL: the grader accepted the broken {res.lab} ({res.correctness_score:g} points)")
            status = 1
        else:
            zero = [v for v, points in res.exercise_shares().items() if points == 0]
            scored = (f" ({res.correctness_score:g}/{res.cfg['correctness']:g}: zero for {', '.join(zero)})"
                      if res.correctness_score > 0 else "")
            why = res.problems[0] if res.problems else ""
            if reason and not any(re.search(reason, p) for p in res.problems):
                print(f"expect-zero-correctness: FAIL: {res.lab} was rejected, but not for /{reason}/: {why.splitlines()[0]}")
                status = 1
            else:
                print(f"expect-zero-correctness: ok: {res.lab} rejected{scored}: {why.splitlines()[0]}")
    return status


def expect_zero_performance(graded):
    """A broken-kernel test whose kernel is right but whose speed is impossible:
    the lab must pass correctness and score zero for performance."""
    if not graded:
        print("expect-zero-performance: no lab was graded: this test tests nothing")
        return 1
    status = 0
    for res in graded:
        if not res.correct:
            print(f"expect-zero-performance: {res.lab} failed correctness, so it tests nothing here: {res.problems[:1]}")
            status = 1
        elif res.performance_score > 0 or not res.perf.get("implausible"):
            print(f"expect-zero-performance: FAIL: {res.lab} earned {res.performance_score:g} performance points: "
                  f"{res.perf.get('text')}")
            status = 1
        else:
            print(f"expect-zero-performance: ok: {res.lab}: {res.perf['text']}")
    return status


def main(argv=None):
    args = parse_args(argv)
    try:
        return grade(args)
    except NoGpu as e:
        print(f"grade: skipped: {e}")
        return 77
    except GradeError as e:
        print(f"grade: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
