"""The runs of one lab: the correctness runs (--quick, the named runs, the
sanitizer size, the drawn runs; each --check-only), the compute-sanitizer runs
and the benchmark run, each with the lab's timeout. A submission's runs are
sandboxed and judged by the course's own build of the lab (judged_run); the
course's own tree is run as it is. What a run shows wrong becomes a problem of
the lab's LabResult (tools/grader/result.py)."""
from __future__ import annotations

import io
import os
import shutil
import stat
import time
from concurrent.futures import ThreadPoolExecutor

from . import benchlock, draws, judge, sandbox
from .config import ROOT, SANITIZERS, edge_runs
from .process import run, run_untrusted, tail, write_log
from .records import read_new_records
from .result import LabResult
from .scoring import size_text
from .submission import file_kind, shown


class NoGpu(Exception):
    """No usable GPU (or no sanitizer when one was asked for): exit 77."""


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
    sandbox.remove_tree(here)
    here.mkdir(parents=True)
    graded_json = here / "records.jsonl"
    if untrusted is None:
        r = run(what, [str(prog)] + extra + ["--seed", str(seed), "--json", str(graded_json)], timeout, log)
        return Judged(r, read_new_records(graded_json, 0)[0])
    evidence = here / "evidence"
    cmd = [str(prog)] + extra + ["--seed", str(seed), "--json", str(graded_json), "--evidence", str(evidence)]
    r = run_untrusted(what, cmd, timeout, log, untrusted, writable=[here])
    removed = as_the_harness_writes(here, graded_json, evidence)
    if removed:
        more = f"; and {len(removed) - 5} more" if len(removed) > 5 else ""
        note = f"[removed before judging, not as the harness writes them: {'; '.join(removed[:5])}{more}]\n"
        r.output += "\n" + note
        write_log(log, note + "\n")
    graded = read_new_records(graded_json, 0)[0]
    if r.timed_out:
        sandbox.remove_tree(evidence)
        return Judged(r, graded)
    evidence.mkdir(exist_ok=True)  # a program that wrote nothing is judged on nothing

    def finish():
        judged_json = here / "judge.jsonl"
        judge_log = io.StringIO()
        j = run(what + " (judged)", [str(judge_prog)] + extra + ["--seed", str(seed), "--json", str(judged_json),
                                                                  "--judge", str(evidence)], timeout, judge_log)
        sandbox.remove_tree(evidence)
        write_log(log, judge_log.getvalue())
        return verdict(r, graded, j, read_new_records(judged_json, 0)[0])

    return Judged(r, graded, finish)


# A graded run's records file: a lab's records of all its runs are at most ~180 KB
# (results/h100/records.jsonl: torch_attention's 176 KB, lab 31's 152 KB).
MAX_RECORDS_BYTES = 16 << 20


def as_the_harness_writes(here, records, evidence):
    """Leaves in a finished graded run's folder only what the harness writes there: the
    records, a regular file of at most MAX_RECORDS_BYTES, and the evidence folder of
    regular files (common/src/evidence.cpp). The grader reads the records and the judge
    the evidence with their own rights, outside the sandbox, following links: a link
    planted there (by code that reached a system call the audit does not see) would
    have them read any file they may (another student's records, with its times; a
    secret whose first line a judge's message quotes), and a named pipe would block
    them for ever. Nothing of the run is alive now (the sandbox killed its processes).
    Everything else is removed too: nothing else of it is read, and a class's runs
    cannot pile it up on the disk. Returns what was removed for its kind, and why."""
    removed = []

    def drop(path, why):
        sandbox.remove_tree(path)
        removed.append(f"{shown(os.path.relpath(path, here))} ({why})")

    for entry in here.iterdir():
        if entry.name not in (records.name, evidence.name):
            sandbox.remove_tree(entry)
    try:
        st = os.lstat(records)
        if not stat.S_ISREG(st.st_mode):
            drop(records, file_kind(st.st_mode))
        elif st.st_size > MAX_RECORDS_BYTES:
            drop(records, f"{st.st_size} bytes, over the records' limit of {MAX_RECORDS_BYTES} bytes")
    except FileNotFoundError:
        pass
    try:
        st = os.lstat(evidence)
    except FileNotFoundError:
        return removed
    if not stat.S_ISDIR(st.st_mode):
        drop(evidence, file_kind(st.st_mode))
        return removed
    with os.scandir(evidence) as entries:
        for e in entries:
            kind = e.stat(follow_symlinks=False).st_mode
            if not stat.S_ISREG(kind):
                drop(e.path, file_kind(kind))
    return removed


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
            scratch = out / "runs" / lab / f"sanitize{index}"
            r = run_untrusted(what, cmd, timeout, log, untrusted, writable=[scratch])
            sandbox.remove_tree(scratch)  # it writes no record: nothing there is read
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
    prog_of(lab): the program to run; trust_of(lab): its Untrusted, or None.
    Returns a callable that waits for them all and puts their verdicts into results
    (call it where nothing else writes to them)."""
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
    def collect():
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

    return collect


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
        # The inputs the timed runs must be right on (benchmark_args): where a check of
        # its own runs (the flash labs' V of one sign) could be told apart from the
        # timed runs by the inputs, the timed runs take those inputs too, and the
        # judge checks what they left.
        extra += cfg.get("benchmark_args", [])
        run_ = judged_run("benchmark" + (" (again: the GPU throttled)" if attempt == 2 else ""), prog, extra,
                          seed, timeout, log, out, lab, f"bench{attempt}", untrusted, judge_prog)
        throttled = [x for x in run_.graded if x.get("throttled")]
        if attempt == 1 and throttled and run_.run.rc == 0:
            result.notes.append(f"benchmark run again: {len(throttled)} measurement(s) throttled "
                                f"({throttled[0].get('throttle_why', '')})")
            sandbox.remove_tree(out / "runs" / lab / "bench1" / "evidence")  # timed again: not judged
            continue
        return run_
    return run_


def benchmark_lab(result, prog, seed, args, out, untrusted=None, judge_prog=None):
    """The benchmark run of one checked lab, alone on the GPU; run again once when
    a record says the GPU throttled (thermal or hardware slowdown). A submission's
    is sandboxed and judged: the judge checks the outputs of its timed runs
    (those checked right after they ran, and the one the timing left).
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

