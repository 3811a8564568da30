#!/usr/bin/env python3
"""The grading suite: runs every lab on this machine's GPU and scores it.

For each lab: correctness runs (--quick, every named run of the lab's
[labs.NAME.runs] in tools/grading.toml, the drawn runs; each with --check-only, so
every variant is checked on a poisoned output three times: first run, a
repeated run, and fresh input values), with a seed chosen here, fresh each run
unless --seed is given; compute-sanitizer memcheck, racecheck, synccheck and
initcheck at the --quick sizes and at the lab's sanitize_args (a medium, odd
size), unless --no-sanitize; these run in parallel (--parallel). Then the
benchmark run at the lab's default sizes, one lab at a time, alone on the GPU;
a benchmark whose record says the GPU throttled is run once more. A lab scores
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
"""
import argparse
import datetime
import hashlib
import io
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from grader import audit, judge, sandbox, sources  # noqa: E402  (tools/grader/)
from grader import benchlock, draws  # noqa: E402

# The grader's modules (tools/grader/); the names other tools and tests use from here.
from grader.config import METRICS, NOT_RUN, ROOT, SANITIZERS, GradeError, edge_runs, lab_names, load_config  # noqa: E402,F401
from grader.scoring import baseline_variants, judge_performance, size_product, size_text  # noqa: E402,F401
from grader.reports import write_reports  # noqa: E402


class NoGpu(Exception):
    """No usable GPU (or no sanitizer when one was asked for): exit 77."""



# ---- running programs -----------------------------------------------------------

@dataclass
class Run:
    what: str
    cmd: list
    rc: int = 0
    output: str = ""
    seconds: float = 0.0
    timeout: float = None
    timed_out: bool = False


@dataclass
class Untrusted:
    """How a submission's code is run: in the sandbox (tools/grader/sandbox.py)
    unless --no-sandbox, reading the course tree and its own build, writing only
    its run's folder. None for the course's own tree (trusted: no sandbox)."""
    sandboxed: bool
    readable: list

    def warn(self):
        if not self.sandboxed:
            print("grade: WARNING: --no-sandbox: the submission's code runs with the grader's rights "
                  "(it can read and write anything this user can)", file=sys.stderr, flush=True)


def run_untrusted(what, cmd, timeout, log, untrusted, writable, limits=None):
    """Runs a submission's command in the sandbox (or, --no-sandbox, directly with
    the same limits): a Run as run() gives, with the sandbox's reason when it
    killed it (time, memory, processes)."""
    untrusted.warn()
    limits = limits or sandbox.Limits()
    limits.wall_s = timeout
    for folder in writable:
        Path(folder).mkdir(parents=True, exist_ok=True)
    res = sandbox.run(cmd, writable=writable, readable=untrusted.readable + sandbox.python_paths(), gpu=True,
                      limits=limits, enabled=untrusted.sandboxed)
    output = res.output + (f"\n[sandbox: {res.killed_why}]" if res.killed_why else "")
    r = Run(what, cmd, res.rc, output, res.seconds, timeout, res.timed_out)
    write_log(log, f"$ {' '.join(map(str, cmd))}\n{'(sandboxed) ' if untrusted.sandboxed else '(NOT sandboxed) '}"
                   f"{r.output}\n[exit {r.rc}, {r.seconds:.1f} s]\n\n")
    return r


def run(what, cmd, timeout, log):
    """Runs cmd, output and errors together. Past `timeout` seconds the whole
    process group is killed (compute-sanitizer runs the lab as its child)."""
    start = time.monotonic()
    try:
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             errors="replace", start_new_session=True)
    except OSError as e:
        r = Run(what, cmd, 126, f"cannot run {cmd[0]}: {e}")
    else:
        try:
            out, _ = p.communicate(timeout=timeout)
            r = Run(what, cmd, p.returncode, out)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            out, _ = p.communicate()
            r = Run(what, cmd, -signal.SIGKILL, out, timed_out=True)
    r.timeout = timeout
    r.seconds = time.monotonic() - start
    write_log(log, f"$ {' '.join(map(str, cmd))}\n{r.output}\n[exit {r.rc}, {r.seconds:.1f} s]\n\n")
    return r


LOG_LOCK = threading.Lock()


def write_log(log, text):
    """One run's whole entry at once: a judge finishing in the background writes
    to the same lab log as the graded run beside it."""
    with LOG_LOCK:
        log.write(text)
        log.flush()


def why_no_gpu():
    """None when nvidia-smi lists a GPU, else the reason in a few words."""
    smi = shutil.which("nvidia-smi")
    if not smi:
        return "no NVIDIA GPU here (nvidia-smi not found)"
    try:
        p = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return "no usable NVIDIA GPU (nvidia-smi -L did not answer)"
    if p.returncode != 0 or "GPU" not in p.stdout:
        said = (p.stdout + p.stderr).strip().splitlines()
        return f"no usable NVIDIA GPU (nvidia-smi -L: {said[0] if said else 'exit ' + str(p.returncode)})"
    return None


def sanitizer_found():
    return shutil.which("compute-sanitizer") or Path("/usr/local/cuda/bin/compute-sanitizer").is_file()


def tail(text, lines=15):
    return "\n".join(text.rstrip().splitlines()[-lines:])


# ---- grading one lab --------------------------------------------------------------

@dataclass
class LabResult:
    lab: str
    cfg: dict
    status: str = "graded"          # graded | not built | does not build | skipped
    note: str = ""                  # why not graded, or the build error
    records: list = field(default_factory=list)
    correct: bool = False
    problems: list = field(default_factory=list)  # why correctness failed
    sanitizer: str = ""             # "" (not run), "clean", or the failure
    perf: dict = field(default_factory=dict)      # what the performance test judged
    notes: list = field(default_factory=list)     # said in the reports, not scored (a re-run, ignored files)
    seconds: float = 0.0
    variant_problems: list = field(default_factory=list)  # the problems that are a variant's wrong result (exit 1)

    @property
    def graded(self):
        return self.status in ("graded", "does not build")  # "not graded here", "skipped", "not built": no score

    @property
    def lab_wide(self):
        """Problems no variant's record explains (a crash, a hang, the sanitizer, a
        rejected or unbuilt submission): they zero the whole lab."""
        return [p for p in self.problems if p not in self.variant_problems]

    def variants_passed(self):
        """{variant: whether every record of it passed}; a record of a variant derived
        from an exercise (lab 08's sweep rows pinned_streams_s2_c4 run pinned_streams's
        code) counts as that exercise's."""
        exercises = self.cfg.get("exercise_variants") or []
        passed = {}
        for r in self.records:
            v = exercise_of(r["variant"], exercises) or r["variant"]
            passed[v] = passed.get(v, True) and bool(r.get("passed"))
        return passed

    def exercise_shares(self):
        """{exercise variant: points} for a lab with exercise_variants that is not all
        correct: its correctness points split evenly among its exercise variants, a
        share for each one right at every size. Zero for all when anything else is
        wrong: a variant the course gives (the student may have broken what it uses),
        a lab-wide problem. Empty for a lab without exercise_variants (all or nothing)."""
        exercises = self.cfg.get("exercise_variants") or []
        if not exercises:
            return {}
        passed = self.variants_passed()
        given_ok = all(ok for v, ok in passed.items() if v not in exercises)
        share = self.cfg["correctness"] / len(exercises)
        earns = self.graded and self.status == "graded" and not self.lab_wide and given_ok
        return {v: round(share, 2) if earns and passed.get(v, False) else 0 for v in exercises}

    @property
    def correctness_score(self):
        if not self.graded:
            return 0
        if self.correct:
            return self.cfg["correctness"]
        return round(sum(self.exercise_shares().values()), 2)

    @property
    def performance_score(self):
        return self.perf.get("score", 0) if self.graded and self.correct else 0

    @property
    def max_score(self):
        return self.cfg["correctness"] + self.cfg["performance"]


def read_new_records(path, start):
    """Records appended to `path` past byte `start`, and the new end."""
    if not path.exists():
        return [], start
    with open(path) as f:
        f.seek(start)
        text = f.read()
        end = f.tell()
    records = []
    for line in text.splitlines():
        if line.strip():
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError:
                pass  # a program killed mid-line; its exit code already says so
    return records, end


def problem_of(r, records):
    """Why a run is not a pass (first line: the reason; then output); None if it passed."""
    if r.timed_out:
        return f"{r.what}: did not finish in {r.timeout:g} s (a hang, or far too slow)"
    failed = [x for x in records if not x.get("passed", False)]
    if r.rc == 0 and not failed:
        return None
    if failed:
        x = failed[0]
        return f"{r.what}: {x.get('variant')} wrong at {size_text(x)}: {x.get('failure', 'failed its check')}"
    if r.rc < 0:
        return f"{r.what}: killed by signal {-r.rc} (a crash)\n{tail(r.output, 5)}"
    kinds = {1: "a wrong result", 2: "rejected its arguments", 3: "a CUDA error"}
    return f"{r.what}: exit {r.rc} ({kinds.get(r.rc, 'failure')})\n{tail(r.output, 8)}"


def exercise_of(variant, exercises):
    """The exercise a record's variant belongs to, or None: the exercise itself, or
    one whose name it extends with "_..." or "[...]" (lab 08's sweep rows
    pinned_streams_s2_c4, lab 28's sweep points name[block=256]); the longest wins,
    so lab 18's warp_tiling_bk16 stays its own."""
    if variant in exercises:
        return variant
    derived = [e for e in exercises if variant.startswith(e + "_") or variant.startswith(e + "[")]
    return max(derived, key=len) if derived else None


def blames_variants(r, records):
    """Whether a failed run is explained by its variants' records: it finished,
    exit 1 (a wrong result), and some record failed; a stub's "not implemented
    yet" is one. Anything else (a crash, a hang, exit 3) zeroes the whole lab."""
    return not r.timed_out and r.rc == 1 and any(not x.get("passed", False) for x in records)


def correctness_runs(lab, cfg, seed=0):
    """(label, args) of every correctness run: --quick, the lab's named runs
    ([labs.NAME.runs]), the lab's sanitizer size, and the runs drawn from its declared space
    of sizes and parameters (tools/grader/draws.py: new ones for every seed)."""
    runs = [("--quick", ["--quick"])]
    runs += edge_runs(cfg)
    if cfg["sanitize_args"]:
        # The sanitizer's verdict is compute-sanitizer's; the outputs at its size are judged here.
        runs.append((" ".join(cfg["sanitize_args"]), list(cfg["sanitize_args"])))
    if cfg.get("draw"):
        runs += draws.drawn_runs(lab, cfg["draw"], seed)
    return runs


def sanitizer_runs(cfg):
    """(tool, args) of every sanitizer run: each tool at --quick and at the lab's medium size."""
    sizes = [["--quick"]] + ([cfg["sanitize_args"]] if cfg["sanitize_args"] else [])
    return [(tool, a) for tool in SANITIZERS for a in sizes]


class Judged:
    """A run whose verdict may still be coming: `run` and `graded` (the graded
    program's own records) at once, `result()` the (Run, records) to score. The
    course's judge of a submission's run goes on in the background while the
    grader starts the next graded run: the judge reads only the evidence folder
    the finished run left, and what it writes goes to its own log until then."""

    def __init__(self, run, graded, finish=None):
        self.run, self.graded, self._finish, self._done = run, graded, finish, None

    def start(self, pool):
        if self._finish and pool is not None:
            self._done = pool.submit(self._finish)
        return self

    def result(self):
        if self._done is not None:
            return self._done.result()
        return self._finish() if self._finish else (self.run, self.graded)


def judged_run(what, prog, extra, seed, timeout, log, out, lab, index, untrusted, judge_prog):
    """One run of a lab, as a Judged. The course's own tree: the program's
    records. A submission: its program in the sandbox leaves evidence, the
    course's build of the lab judges it (tools/grader/judge.py), and the records
    are the judge's verdicts with the graded program's times."""
    here = out / "runs" / lab / str(index)
    shutil.rmtree(here, ignore_errors=True)
    here.mkdir(parents=True)
    graded_json = here / "records.jsonl"
    if untrusted is None:
        r = run(what, [str(prog)] + extra + ["--seed", str(seed), "--json", str(graded_json)], timeout, log)
        return Judged(r, read_new_records(graded_json, 0)[0])
    evidence = here / "evidence"
    cmd = [str(prog)] + extra + ["--seed", str(seed), "--json", str(graded_json), "--evidence", str(evidence)]
    r = run_untrusted(what, cmd, timeout, log, untrusted, writable=[here])
    graded = read_new_records(graded_json, 0)[0]
    if r.timed_out:
        shutil.rmtree(evidence, ignore_errors=True)
        return Judged(r, graded)
    evidence.mkdir(exist_ok=True)  # a program that wrote nothing is judged on nothing

    def finish():
        judged_json = here / "judge.jsonl"
        judge_log = io.StringIO()
        j = run(what + " (judged)", [str(judge_prog)] + extra + ["--seed", str(seed), "--json", str(judged_json),
                                                                  "--judge", str(evidence)], timeout, judge_log)
        shutil.rmtree(evidence, ignore_errors=True)
        write_log(log, judge_log.getvalue())
        return verdict(r, graded, j, read_new_records(judged_json, 0)[0])

    return Judged(r, graded, finish)


def verdict(r, graded, j, judged):
    """(Run, records) of a graded run `r` judged by the course's run `j`."""
    if r.rc == 77:
        # "This machine cannot run the lab" skips it, unscored: only the course's
        # own build may say so (a kernel file can throw the harness's NoDeviceError).
        if j.rc != 77:
            r.rc = 3
            r.output += ("\n[the graded program said this machine cannot run the lab (exit 77), "
                         f"but the course's own build of it ran here (exit {j.rc})]")
        return r, graded
    if j.rc not in (0, 1) or not judged:
        # The judge is the course's own build: it cannot fail but by a broken
        # course build or machine. Nothing is judged: the run fails.
        r.rc = r.rc if r.rc not in (0, 1) else 3
        r.output += f"\n[the judge could not judge this run: exit {j.rc}]\n{tail(j.output, 8)}"
        return r, [dict(x, passed=False, failure="not judged: the course's judge failed") for x in graded]
    records = judge.merge(graded, judged)
    if r.rc in (0, 1):
        # The graded program's exit code says nothing by itself: the verdict is the judge's.
        r.rc = 0 if all(x.get("passed") for x in records) else 1
    return r, records


def check_lab(lab, prog, cfg, seed, args, out, first=False, untrusted=None, judge_prog=None):
    """The correctness runs of one lab; safe to run beside other labs'.
    Raises NoGpu when the first lab's first run finds no device (exit 77, no records).
    With `untrusted` (a submission), every run is sandboxed and judged (judged_run);
    each judge runs beside the next graded run (none of them is timed)."""
    result = LabResult(lab, cfg)
    start = time.monotonic()
    timeout = cfg["timeout_s"] or None
    with open(out / "logs" / f"{lab}.txt", "w") as log, ThreadPoolExecutor(max_workers=1) as judges:
        pending = []
        for index, (label, extra) in enumerate(correctness_runs(lab, cfg, seed)):
            run_ = judged_run(f"check {label}", prog, extra + ["--check-only"], seed, timeout, log, out, lab,
                              f"check{index}", untrusted, judge_prog)
            if run_.run.rc == 77:
                # Skipped only if the course's own build says so too: wait for its judge.
                pending.append(run_)
                break
            pending.append(run_.start(judges))
        for run_ in pending:
            r, new = run_.result()
            result.records += new
            if r.rc == 77:
                said = tail(r.output, 1).removeprefix(f"{lab}: ").removeprefix("skipped: ")
                if first and not result.records:
                    raise NoGpu(f"{lab}: {said or 'found no usable GPU'}")
                result.status, result.note = "skipped", tail(r.output, 1)
                break
            p = problem_of(r, new)
            if p:
                result.problems.append(p)
                if blames_variants(r, new):
                    result.variant_problems.append(p)
    result.seconds = time.monotonic() - start
    return result


def sanitize_one(lab, prog, cfg, seed, tool, extra, out, index, untrusted=None):
    """One compute-sanitizer run; its own log file, so runs of one lab can go in
    parallel. Returns (seconds, report or None). The verdict is compute-sanitizer's
    exit code (--error-exitcode), never the lab program's word: a submission's
    program runs as its child, in the sandbox."""
    timeout = cfg["timeout_s"] or None
    cmd = ["sh", str(ROOT / "tests" / "sanitize.sh"), tool, str(prog)] + extra + ["--seed", str(seed)]
    with open(out / "logs" / f"{lab}.sanitize-{index}-{tool}.txt", "w") as log:
        what = f"compute-sanitizer {tool} {' '.join(extra)}"
        if untrusted is None:
            r = run(what, cmd, timeout, log)
        else:
            r = run_untrusted(what, cmd, timeout, log, untrusted, writable=[out / "runs" / lab / f"sanitize{index}"])
    if r.timed_out:
        return r.seconds, f"compute-sanitizer {tool} ({' '.join(extra)}): did not finish in {timeout:g} s"
    if r.rc not in (0, 77):
        errors = [line for line in r.output.splitlines() if line.startswith("=========")]
        return r.seconds, (f"compute-sanitizer {tool} ({' '.join(extra)}) found errors:\n" +
                           "\n".join(errors[:12] or [tail(r.output, 8)]))
    return r.seconds, None


def sanitize_labs(results, prog_of, seed, args, out, pool, trust_of=lambda lab: None):
    """Every sanitizer run of every lab that passed its correctness runs, each run a
    task of its own: the longest single run, not a lab's sum, bounds the time.
    prog_of(lab): the program to run; trust_of(lab): its Untrusted, or None."""
    jobs, tasks = {}, []
    for res in results:
        only = []
        if res.problems:
            # A lab with exercise variants still earns the shares of those it got
            # right: the sanitizer judges those (and the baselines, which always run).
            right = [v for v in res.exercise_shares() if res.variants_passed().get(v)]
            only = [a for v in right for a in ("--variant", v)]
        if res.status != "graded" or (res.problems and not only):
            continue
        prog = prog_of(res.lab)
        for index, (tool, extra) in enumerate(sanitizer_runs(res.cfg)):
            tasks.append((res.lab, index, prog, res.cfg, tool, extra + only))
    # Longest first: racecheck runs take 5-20x the others (47 s for 09's on the
    # H100, where memcheck takes 3 s); queued last, they would run alone at the end.
    tasks.sort(key=lambda t: t[4] != "racecheck")
    for lab, index, prog, cfg, tool, extra in tasks:
        jobs[(lab, index)] = pool.submit(sanitize_one, lab, prog, cfg, seed, tool, extra, out, index, trust_of(lab))
    by_lab = {res.lab: res for res in results}
    reports = {}
    for (lab, index), future in sorted(jobs.items()):
        seconds, report = future.result()
        by_lab[lab].seconds += seconds
        reports.setdefault(lab, [])
        if report:
            reports[lab].append(report)
    for lab, found in reports.items():
        by_lab[lab].sanitizer = "\n".join(found) or "clean"
        by_lab[lab].problems += found


def benchmark_runs(result, prog, seed, out, untrusted, judge_prog, log, timeout):
    """The benchmark run of one lab, and once more when a record says the GPU
    throttled (the graded program's word decides only that). Returns its Judged."""
    cfg, lab = result.cfg, result.lab
    for attempt in (1, 2):
        # --largest: only the size the grader judges (the largest point) is
        # timed; the smaller ones are checked by --quick and the edge runs.
        extra = ["--largest"]
        # A lab judged on one named variant times only it (and the library
        # baseline, which always runs): 08_streams' 18 sweep variants are
        # lessons, not candidates.
        if cfg.get("variant", "best") != "best":
            extra += ["--variant", cfg["variant"]]
        run_ = judged_run("benchmark" + (" (again: the GPU throttled)" if attempt == 2 else ""), prog, extra,
                          seed, timeout, log, out, lab, f"bench{attempt}", untrusted, judge_prog)
        throttled = [x for x in run_.graded if x.get("throttled")]
        if attempt == 1 and throttled and run_.run.rc == 0:
            result.notes.append(f"benchmark run again: {len(throttled)} measurement(s) throttled "
                                f"({throttled[0].get('throttle_why', '')})")
            shutil.rmtree(out / "runs" / lab / "bench1" / "evidence", ignore_errors=True)  # timed again: not judged
            continue
        return run_
    return run_


def benchmark_lab(result, prog, seed, args, out, untrusted=None, judge_prog=None):
    """The benchmark run of one checked lab, alone on the GPU; run again once when
    a record says the GPU throttled (thermal or hardware slowdown). A submission's
    is sandboxed and judged: the judge checks the output its timed runs left.
    Returns a callable that scores it: a submission's judge (which runs the
    course's kernels, so never beside a benchmark) waits until every lab's
    benchmark has run, and the judges then run side by side."""
    lab = result.lab
    timeout = result.cfg["timeout_s"] or None
    start = time.monotonic()
    log = open(out / "logs" / f"{lab}.txt", "a")
    # On a machine of several GPUs graded at once (tools/grade_class.py), the
    # host-wide benchmark lock: shared, exclusive for a lab that times the host's links.
    with benchlock.held(lab, log):
        run_ = benchmark_runs(result, prog, seed, out, untrusted, judge_prog, log, timeout)
    result.seconds += time.monotonic() - start

    def score():
        judged_start = time.monotonic()
        r, new = run_.result()
        log.close()
        result.records += new
        result.seconds += time.monotonic() - judged_start
        if r.rc == 77:
            # The lab cannot time what is judged on this machine (32_multi_gpu on
            # one GPU): its correctness stands, it earns no performance points.
            said = [line for line in r.output.splitlines() if "skipped:" in line] or [tail(r.output, 1)]
            result.notes.append("benchmark not run here: " + said[0].strip().removeprefix(f"{lab}: "))
            return
        p = problem_of(r, new)
        if p:
            result.problems.append(p)
        elif not any(x.get("timed") for x in new):
            result.problems.append("benchmark: no timed results were recorded")
        if any(x.get("throttled") for x in new):
            result.notes.append("throttled in the benchmark (twice): its performance is judged as measured")

    return score


def finish_lab(result, args):
    if not result.records and not result.problems and result.status == "graded":
        result.problems.append("the program recorded no results")
    if result.status == "graded" and not result.problems and result.records and \
            all(r.get("library_baseline") for r in result.records):
        # Only the vendor library ran (32_multi_gpu on one GPU): nothing of the
        # lab's own kernels was checked, so nothing is scored, either way.
        result.status = "not graded here"
        result.note = ("none of the lab's own variants ran on this machine (only its library baseline did); "
                       + next((n for n in result.notes if "not run here" in n), "grade it where it can run"))
    result.correct = result.status == "graded" and not result.problems
    result.perf = judge_performance(result.records, result.cfg) if result.correct and not args.correctness_only else {}


# ---- submissions -------------------------------------------------------------------------

def submitted_labs(submission, labs):
    if not submission.is_dir():
        raise GradeError(f"--submission {submission}: no such folder")
    folders = [submission] if submission.name in labs else sorted(d for d in submission.iterdir() if d.is_dir())
    unknown = [d.name for d in folders if d.name not in labs]
    if unknown or not folders:
        raise GradeError(f"--submission {submission}: {'folder ' + unknown[0] + ' is not a lab' if unknown else 'holds no lab folder'}. "
                         f"Put each lab in a folder named as in the course, e.g. {submission}/{labs[0]}/ (labs: {', '.join(labs)})")
    return folders


def take_student_files(folder, cfg, dest):
    """Copies the lab's student files from the submitted folder into dest/LAB/.
    Returns (error or None, the files that were ignored)."""
    wanted = cfg["student_files"]
    given = sorted(str(f.relative_to(folder)) for f in folder.rglob("*")
                   if f.is_file() and "__pycache__" not in f.parts and not f.name.startswith("."))
    ignored = [f for f in given if f not in wanted]
    if not wanted:
        # A lab with no student files (none today: each lab has some) would have
        # nothing of the student's built into it, so the course's own build of it
        # is checked, as when the course tree is graded. A "does not build" here
        # zeroed such labs in every submission (a starter kit graded on the H100,
        # git 20c1eb4).
        return None, ignored
    missing = [f for f in wanted if f not in given]
    if missing:
        return (f"the submission lacks {', '.join(missing)} (the lab's kernel files are {', '.join(wanted)}; "
                f"submit all of them, edited or not)"), ignored
    target = dest / folder.name
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    for f in wanted:
        shutil.copyfile(folder / f, target / f)
    return None, ignored


def build_submission(folders, config, work, arch, jobs, log, untrusted):
    """Builds the submitted labs in a build of the course tree made apart, with
    -Dsubmission pointing at the student files, in the sandbox (the compiler runs
    the student's preprocessor directives and templates). Returns ({lab: build
    error or None}, {lab: ignored files}, {lab: why the include check or the
    import audit rejected it, or None})."""
    student, build = work / "student", work / "build"
    errors, ignored, rejected = {}, {}, {}
    for folder in folders:
        errors[folder.name], ignored[folder.name] = take_student_files(folder, config[folder.name], student)
        if not errors[folder.name] and config[folder.name]["student_files"]:
            rejected[folder.name] = joined(sources.problems(student / folder.name, config[folder.name]["student_files"]))
    building = [f for f in folders if not errors[f.name] and not rejected.get(f.name)]

    def sandboxed(what, cmd, timeout):
        return run_untrusted(what, cmd, timeout, log, untrusted, writable=[work], limits=sandbox.Limits.for_build())

    setup = ["meson", "setup"] + (["--reconfigure"] if (build / "build.ninja").exists() else [])
    r = sandboxed("meson setup", setup + [str(build), str(ROOT), f"-Dgpu_arch={arch}",
                                          f"-Dsubmission={student.resolve()}"], 900)
    if r.rc != 0:
        return {f.name: "meson setup failed:\n" + tail(r.output, 25) for f in folders}, ignored, rejected
    ninja = ["ninja", "-C", str(build)] + (["-j", str(jobs)] if jobs else [])
    targets = [f"labs/{f.name}/{f.name}" for f in building]
    if len(targets) > 1:
        # Every lab in one ninja run first, -k 0 (go on past a lab that fails): one
        # lab at a time leaves most cores idle (a lab is 2-3 compile units); on the
        # H100's 16 cores a whole starter tree did not finish building in 230 s.
        # The per-lab runs below then only confirm, or give each lab its own error.
        sandboxed("build all labs", ninja + ["-k", "0"] + targets, 3600)
    for folder in building:
        r = sandboxed(f"build {folder.name}", ninja + [f"labs/{folder.name}/{folder.name}"], 1800)
        errors[folder.name] = None if r.rc == 0 else tail(r.output, 25)
        if not errors[folder.name]:
            rejected[folder.name] = audit_text(build, folder.name)
    return errors, ignored, rejected


def joined(found):
    """A rejection's one report line: its first three problems, and how many more; None for none."""
    if not found:
        return None
    return "; ".join(found[:3]) + (f" (and {len(found) - 3} more)" if len(found) > 3 else "")


def audit_text(build, lab):
    """None, or why the import audit (tools/grader/audit.py, tools/allowed_imports.toml)
    rejects the lab's student objects."""
    return joined(audit.audit_lab(build, lab))


def student_files_digest(folder, files):
    """sha256 over a lab's student files, names and contents: what a prebuilt lab was built from."""
    h = hashlib.sha256()
    for name in files:
        h.update(name.encode() + b"\0" + (folder / name).read_bytes() + b"\0")
    return h.hexdigest()


def prebuilt_submission(folders, config, prebuilt):
    """build_submission's answer for labs already built elsewhere (tools/grade_class.py
    builds each distinct set of student files once, then grades every student who
    submitted it): PREBUILT/labs/LAB/ holds the program LAB, or build-error.txt, the
    symbol audit's rejected.txt if it rejected the lab, and student-files.sha256, which
    must be the digest of the student's own files (else the program is someone else's)."""
    errors, ignored, rejected = {}, {}, {}
    with tempfile.TemporaryDirectory(prefix="cudalabs-prebuilt-") as tmp:
        for folder in folders:
            lab, here = folder.name, prebuilt / "labs" / folder.name
            errors[lab], ignored[lab] = take_student_files(folder, config[lab], Path(tmp))
            if errors[lab]:
                continue
            digest = here / "student-files.sha256"
            if not digest.is_file() or digest.read_text().strip() != student_files_digest(folder, config[lab]["student_files"]):
                errors[lab] = f"{here} was not built from this submission's files (student-files.sha256 differs)"
            elif (here / "build-error.txt").is_file():
                errors[lab] = (here / "build-error.txt").read_text()
            elif (here / "rejected.txt").is_file():
                rejected[lab] = (here / "rejected.txt").read_text()
    return errors, ignored, rejected


# ---- main ----------------------------------------------------------------------------------

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


def select(labs, wanted):
    if not wanted:
        return labs
    chosen = []
    for w in wanted.split(","):
        w = w.strip()
        match = [lab for lab in labs if lab == w or lab.split("_")[0] == w.zfill(2)]
        if not match:
            raise GradeError(f"--labs {w}: no such lab (labs: {', '.join(labs)})")
        chosen += [m for m in match if m not in chosen]
    return chosen


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
            progress(first, "checked" if not results[first].problems else "WRONG")
        with ThreadPoolExecutor(max_workers=args.parallel) as pool:
            futures = {lab: pool.submit(check_lab, lab, prog_of(lab), config[lab], seed, args, out,
                                        untrusted=trust_of(lab), judge_prog=course_build / "labs" / lab / lab)
                       for lab in to_check[1:]}
            for lab, future in futures.items():
                try:
                    results[lab] = future.result()
                except NoGpu as e:  # a later lab found no device: the GPU went away
                    results[lab] = LabResult(lab, config[lab], problems=[f"no GPU: {e}"])
                progress(lab, "checked" if not results[lab].problems else "WRONG")
            if args.sanitize:
                sanitize_labs([results[lab] for lab in to_check], prog_of, seed, args, out, pool, trust_of)
                for lab in to_check:
                    if results[lab].sanitizer:
                        progress(lab, "compute-sanitizer " + ("clean" if results[lab].sanitizer == "clean" else "found errors"))
        if not args.correctness_only:
            scores = []
            for lab in to_check:
                res = results[lab]
                if res.status == "graded" and not res.problems and res.cfg["performance"] <= 0:
                    # Nothing to score: the benchmark would only re-check at one
                    # more size (03_pcie_truth: 21 s of pageable copies).
                    res.notes.append("no benchmark run: this lab has no performance points")
                elif res.status == "graded" and not res.problems:
                    scores.append(benchmark_lab(res, prog_of(lab), seed, args, out, trust_of(lab),
                                                course_build / "labs" / lab / lab))
            # Four at a time: each judge holds the lab's largest inputs on the GPU.
            with ThreadPoolExecutor(max_workers=min(4, args.parallel)) as pool:
                for done in [pool.submit(score) for score in scores]:
                    done.result()
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
