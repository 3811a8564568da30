"""The GPU host's side of the bridge: the forced command of the autograder's key.

    command="python3 /srv/cudalabs/tools/gradescope/bridge.py serve --config /etc/cudalabs-bridge.toml",restrict ssh-ed25519 ...

sshd runs it for every connection with that key, whatever the client asked for;
the client's words arrive in SSH_ORIGINAL_COMMAND and must be exactly
`grade ASSIGNMENT STUDENT` (validated, never given to a shell), the submission a
.tar.gz on standard input (archive.py: checked as hostile). Then:

  1. the student's gradings today (UTC) are counted against max_per_day
     ([bridge] of tools/grading.toml); one more is admitted or refused;
  2. one queue: a flock per GPU (STATE/locks/gpuN.lock), so no two gradings
     share a GPU, and one per student (STATE/students/ID.lock), so a student's
     second request waits for the first; up to queue_wait_s for both;
  3. tools/grade.py --submission grades it in its sandbox on that GPU
     (CUDA_VISIBLE_DEVICES), with the assignment's seed from this host's config
     (seed = "fresh": a new one for each grading, kept in its run folder);
     or, with [slurm] enabled, as one job (sbatch --wait --gres=gpu:1);
     without a GPU (and no Slurm), --build-only;
  4. one line of STATE/usage.log: time, student, assignment, seconds, verdict;
  5. results.json (Gradescope's format) on standard output, the seed taken out.

Exit codes: 0 graded; 2 refused (the command, the student id, the assignment,
the archive, the daily limit); 3 not graded (busy past queue_wait_s, the grader
failed). Every answer, a refusal too, is one results.json on standard output.
"""
import datetime
import fcntl
import json
import os
import random
import re
import shlex
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

import archive
import results
from grader.config import ROOT, GradeError, lab_names, load_config, select, tomllib
from grader.process import why_no_gpu

STUDENT = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@-]{0,127}")
ASSIGNMENT = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
USAGE = "this key only sends a submission: ssh HOST grade ASSIGNMENT STUDENT < submission.tar.gz"
# [bridge] of tools/grading.toml: the course's policy, the same on every host.
POLICY = {"max_per_day": 20, "max_archive_kib": 1024, "max_unpacked_kib": 4096, "max_files": 64}


class Refused(Exception):
    """The request is refused (exit 2); the message says why and what to do."""


class NotGraded(Exception):
    """The request was fine but could not be graded now (exit 3)."""


class ConfigError(Exception):
    """The host's configuration is wrong: the instructor's to fix (exit 2)."""


@dataclass
class HostConfig:
    path: Path
    state: Path
    build: Path
    grading: Path
    assignments: dict               # name -> {"labs": [...], "seed": int}
    gpus: list = field(default_factory=list)   # [] = none: build-only, unless Slurm
    queue_wait_s: float = 3600
    grade_timeout_s: float = 7200
    sanitize: bool = True
    build_only: bool = False
    arch: str = ""
    slurm: dict = field(default_factory=dict)  # enabled, partition, account, time, gres


def read_toml(path, what):
    try:
        with open(path, "rb") as f:
            return tomllib.load(f)
    except OSError as e:
        raise ConfigError(f"{what} {path}: {e.strerror}") from None
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{what} {path}: {e}") from None


def policy(grading_toml):
    """[bridge] of tools/grading.toml, checked, over POLICY's defaults."""
    table = read_toml(grading_toml, "the grading config").get("bridge", {})
    for key, value in table.items():
        if key not in POLICY:
            raise ConfigError(f"{grading_toml}: [bridge] {key}: unknown key; the keys are {', '.join(POLICY)}")
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ConfigError(f"{grading_toml}: [bridge] {key} = {value!r}: must be a whole number >= 0")
    return {**POLICY, **table}


# seed = "fresh": each grading draws its own seed, kept in the host's run folder (request.json),
# never in the answer. A submission can print the arguments its runs were given and fail on
# purpose (a failed run's last lines reach results.json): with one seed for the assignment, the
# runs it reads that way are the runs of every later grading, its own resubmission included;
# with a fresh seed they are that grading's only.
FRESH = "fresh"


def load_host_config(path):
    raw = read_toml(path, "the host's bridge config")
    known = {"state", "build", "grading", "gpus", "queue_wait_s", "grade_timeout_s", "sanitize", "build_only", "arch",
             "slurm", "assignments"}
    for key in raw:
        if key not in known:
            raise ConfigError(f"{path}: {key}: unknown key; the keys are {', '.join(sorted(known))}")
    if "state" not in raw:
        raise ConfigError(f"{path}: no state = \"/var/lib/cudalabs-bridge\" (the folder of the queue's locks, "
                          f"the usage log and the daily counts)")
    # The labs' settings as tools/grade.py reads them (student_files); `grading` names where
    # [bridge] is read, the course's tools/grading.toml unless the host says otherwise.
    config = load_config(ROOT / "tools" / "grading.toml", lab_names(ROOT))
    assignments = {}
    for name, table in (raw.get("assignments") or {}).items():
        where = f"{path}: [assignments.{name}]"
        if not ASSIGNMENT.fullmatch(name):
            raise ConfigError(f"{where}: a name of letters, digits, '.', '_', '-'")
        if set(table) - {"labs", "seed"}:
            raise ConfigError(f"{where}: unknown key {sorted(set(table) - {'labs', 'seed'})[0]}; the keys are labs, seed")
        seed = table.get("seed")
        if seed != FRESH and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
            raise ConfigError(f"{where}: seed = {seed!r}: \"{FRESH}\" (a new seed for each grading) or one whole "
                              f"number >= 0 for every student of the assignment (set it here, never on the "
                              f"student's side)")
        labs = table.get("labs")
        if not (isinstance(labs, list) and labs and all(isinstance(x, str) for x in labs)):
            raise ConfigError(f"{where}: labs = {labs!r}: a list of labs, e.g. [\"02\", \"04_reduction\"]")
        try:
            labs = select(lab_names(ROOT), ",".join(labs))
        except GradeError as e:
            raise ConfigError(f"{where}: {e}") from None
        assignments[name] = {"labs": labs, "seed": seed}
    if not assignments:
        raise ConfigError(f"{path}: no [assignments.NAME] table (labs = [\"02\"], seed = 1234): nothing can be graded")
    gpus = raw.get("gpus", "auto")
    if gpus == "auto":
        gpus = [] if why_no_gpu() else list(range(count_gpus()))
    elif not (isinstance(gpus, list) and all(isinstance(g, int) and not isinstance(g, bool) and g >= 0 for g in gpus)):
        raise ConfigError(f"{path}: gpus = {gpus!r}: \"auto\" or a list of GPU numbers, e.g. [0, 1]")
    slurm = raw.get("slurm") or {}
    if set(slurm) - {"enabled", "partition", "account", "time", "gres"}:
        raise ConfigError(f"{path}: [slurm]: the keys are enabled, partition, account, time, gres")
    build_only = raw.get("build_only", "auto")
    if build_only == "auto":
        build_only = not gpus and not slurm.get("enabled")
    elif not isinstance(build_only, bool):
        raise ConfigError(f"{path}: build_only = {build_only!r}: \"auto\", true or false")
    for key in ("queue_wait_s", "grade_timeout_s"):
        if key in raw and (isinstance(raw[key], bool) or not isinstance(raw[key], (int, float)) or raw[key] <= 0):
            raise ConfigError(f"{path}: {key} = {raw[key]!r}: seconds, > 0")
    return HostConfig(path=Path(path), state=Path(raw["state"]), build=Path(raw.get("build") or ROOT / "build"),
                      grading=Path(raw.get("grading") or ROOT / "tools" / "grading.toml"), assignments=assignments,
                      gpus=gpus, queue_wait_s=raw.get("queue_wait_s", 3600),
                      grade_timeout_s=raw.get("grade_timeout_s", 7200), sanitize=bool(raw.get("sanitize", True)),
                      build_only=build_only, arch=str(raw.get("arch", "")), slurm=slurm), config


def count_gpus():
    r = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True)
    return max(1, sum(1 for line in r.stdout.splitlines() if line.startswith("GPU ")))


def parse_command(line):
    """(assignment, student) from SSH_ORIGINAL_COMMAND; Refused for anything else."""
    words = (line or "").split()
    if len(words) != 3 or words[0] != "grade":
        raise Refused(f"{USAGE} (it asked for: {line!r:.80})" if line else USAGE)
    if not ASSIGNMENT.fullmatch(words[1]):
        raise Refused(f"assignment {words[1]!r:.80}: letters, digits, '.', '_', '-' only")
    if not STUDENT.fullmatch(words[2]):
        raise Refused(f"student id {words[2]!r:.80}: letters, digits and . _ - @ only, at most 128 "
                      f"(the autograder takes it from Gradescope's submission_metadata.json)")
    return words[1], words[2]


def utc_now():
    return datetime.datetime.now(datetime.timezone.utc)


def admit(state, student, assignment, max_per_day, record=True):
    """Counts the student's gradings today (UTC) in STATE/daily/DATE.tsv and, with
    `record`, adds this one, under a lock; Refused past max_per_day (0: no limit)."""
    now = utc_now()
    daily = state / "daily" / f"{now:%Y-%m-%d}.tsv"
    daily.parent.mkdir(parents=True, exist_ok=True)
    with open(daily, "a+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        f.seek(0)
        today = sum(1 for line in f if line.split("\t")[1:2] == [student])
        if max_per_day and today >= max_per_day:
            raise Refused(f"{student} has had {today} gradings today (UTC), the limit per day (max_per_day in "
                          f"[bridge] of tools/grading.toml); the next one is possible after 00:00 UTC")
        if record:
            f.write(f"{now:%Y-%m-%dT%H:%M:%SZ}\t{student}\t{assignment}\n")


class Slot:
    """An exclusive flock on one of `names`' lock files in `locks`, held until
    released; polled once a second until `deadline` (time.monotonic()), then NotGraded."""

    def __init__(self, locks, names, deadline, say, waiting, busy):
        locks.mkdir(parents=True, exist_ok=True)
        told = False
        while True:
            for name in names:
                f = open(locks / f"{name}.lock", "a")
                try:
                    fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    self.name, self.file = name, f
                    return
                except BlockingIOError:
                    f.close()
            if time.monotonic() >= deadline:
                raise NotGraded(busy)
            if not told:
                say(waiting)
                told = True
            time.sleep(1)

    def release(self):
        self.file.close()


def student_slot(host, student, deadline, say):
    """The student's own lock (STATE/students/ID.lock), held from before the GPU's
    queue to the end of the grading: one grading or wait per student at a time. The
    GPU queue is polled, not first come first served, so a student with ten requests
    waiting had ten draws at each free GPU to another's one, and with two GPUs free
    could hold both; a request is counted only when it starts, so waiting ones cost
    nothing against the daily limit."""
    return Slot(host.state / "students", [student], deadline, say,
                f"waiting for the grading of your previous submission to finish (up to {host.queue_wait_s:g} s)",
                f"a previous submission of {student} was still being graded or waiting after "
                f"{host.queue_wait_s:g} s (queue_wait_s): one grading per student at a time; submit again later")


def gpu_slot(host, deadline, say):
    """One GPU's lock (STATE/locks/gpuN.lock): no two gradings share a GPU."""
    return Slot(host.state / "locks", [f"gpu{g}" for g in host.gpus] or ["cpu"], deadline, say,
                f"waiting for a free GPU (every one is grading; up to {host.queue_wait_s:g} s)",
                f"the GPU host is busy: no GPU came free in {host.queue_wait_s:g} s (queue_wait_s); "
                f"submit again later")


def grade_command(host, labs, seed, submission, out):
    cmd = [sys.executable, str(ROOT / "tools" / "grade.py"), "--submission", str(submission), "--labs", ",".join(labs),
           "--seed", str(seed), "--out", str(out), "--build", str(host.build)]
    cmd += [] if host.sanitize else ["--no-sanitize"]
    cmd += ["--build-only"] if host.build_only else []
    cmd += ["--arch", host.arch] if host.arch else []
    return cmd


def run_local(host, cmd, slot):
    env = dict(os.environ, PATH=os.environ.get("PATH", "/usr/bin:/bin") + ":/usr/local/cuda/bin")
    if slot.name.startswith("gpu"):
        env["CUDA_VISIBLE_DEVICES"] = slot.name[3:]
    try:
        return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=host.grade_timeout_s,
                              start_new_session=True)
    except subprocess.TimeoutExpired:
        raise NotGraded(f"the grading did not finish in {host.grade_timeout_s:g} s (grade_timeout_s)") from None


def run_slurm(host, cmd, run_dir):
    """One job, sbatch --wait: the run folder must be on a file system the nodes share."""
    s = host.slurm
    script = run_dir / "job.sh"
    script.write_text("#!/bin/sh\n# One grading of the GPU host's bridge (tools/gradescope/host.py).\n"
                      f"export PATH=\"$PATH:/usr/local/cuda/bin\"\nexec {shlex.join(cmd)}\n")
    sbatch = ["sbatch", "--wait", "--parsable", "--job-name=cudalabs-bridge", f"--output={run_dir / 'slurm.out'}",
              f"--time={s.get('time', '02:00:00')}"]
    sbatch += [] if host.build_only else [f"--gres={s.get('gres', 'gpu:1')}"]
    sbatch += [f"--partition={s['partition']}"] if s.get("partition") else []
    sbatch += [f"--account={s['account']}"] if s.get("account") else []
    try:
        r = subprocess.run(sbatch + [str(script)], capture_output=True, text=True, timeout=host.grade_timeout_s)
    except FileNotFoundError:
        raise NotGraded("[slurm] enabled, but sbatch is not on this host's PATH") from None
    except subprocess.TimeoutExpired:
        raise NotGraded(f"the Slurm job did not finish in {host.grade_timeout_s:g} s (grade_timeout_s)") from None
    out = run_dir / "slurm.out"
    r.stdout += out.read_text(errors="replace") if out.is_file() else ""
    return r


def without_seed(value, seed):
    """The results with the grading's seed taken out: a student who knew it could
    print the runs drawn from it (tools/grader/draws.py --seed) and special-case them."""
    if isinstance(value, str):
        return re.sub(rf"(?<!\d){seed}(?!\d)", "(the grading's seed, kept on the GPU host)", value)
    if isinstance(value, list):
        return [without_seed(v, seed) for v in value]
    if isinstance(value, dict):
        return {k: without_seed(v, seed) for k, v in value.items()}
    return value


def verdict(answer):
    max_score = sum(t["max_score"] for t in answer["tests"])
    return f"{answer['score']:g}/{max_score:g}"


def log_usage(state, student, assignment, seconds, what):
    """One line per grading: when (UTC), who, which assignment, seconds on the GPU, verdict."""
    state.mkdir(parents=True, exist_ok=True)
    with open(state / "usage.log", "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        f.write(f"{utc_now():%Y-%m-%dT%H:%M:%SZ}\t{student}\t{assignment}\t{seconds:.1f}\t{what}\n")


def run_grading(host, rules, student, assignment, labs, cmd, run_dir, deadline, say):
    """Counts the grading against the daily limit and runs it, through Slurm or on a
    free GPU (waiting until `deadline`): (grade.py's process, where, seconds)."""
    if host.slurm.get("enabled"):
        admit(host.state, student, assignment, rules["max_per_day"])
        say(f"grading {', '.join(labs)} for {student} through Slurm (sbatch --wait)")
        start = time.monotonic()
        return run_slurm(host, cmd, run_dir), "Slurm", time.monotonic() - start
    slot = gpu_slot(host, deadline, say)
    try:
        admit(host.state, student, assignment, rules["max_per_day"])
        start = time.monotonic()  # GPU time: from the lock on
        say(f"grading {', '.join(labs)} for {student} on {slot.name}" + (" (build-only: no GPU here)" if host.build_only else ""))
        r = run_local(host, cmd, slot)
    finally:
        slot.release()
    return r, slot.name, time.monotonic() - start


def grade_request(host, config, command_line, stdin, say, seeds=None):
    """Everything after the config: returns results.json of the grading. A fresh seed
    drawn for it is added to `seeds` (those the answer must not say)."""
    # The state folder is the grading account's alone: usage.log and daily/ name every
    # student with each verdict (8/10), and were made 0644 in a folder made 0755 (sudo
    # mkdir), so every account of the host read them, a GitHub Classroom runner's
    # account too, which runs whatever a student's workflow says.
    host.state.mkdir(parents=True, exist_ok=True)
    os.chmod(host.state, 0o700)
    assignment, student = parse_command(command_line)
    if assignment not in host.assignments:
        raise Refused(f"no assignment {assignment!r} on this GPU host (its assignments: "
                      f"{', '.join(sorted(host.assignments))}); the autograder's ASSIGNMENT must match the host's config")
    labs, seed = host.assignments[assignment]["labs"], host.assignments[assignment]["seed"]
    if seed == FRESH:
        seed = random.SystemRandom().randrange(1, 2**31)
        if seeds is not None:
            seeds.append(seed)
    rules = policy(host.grading)
    try:
        data = archive.read_limited(stdin, rules["max_archive_kib"] * 1024)
        allowed = {lab: config[lab]["student_files"] for lab in labs}
        files = archive.members(data, allowed, rules["max_files"], rules["max_unpacked_kib"] * 1024)
    except archive.ArchiveError as e:
        raise Refused(f"the submission archive is refused: {e}") from None
    # Refused at once past the limit; counted when the grading starts (a grading that
    # found every GPU busy, past queue_wait_s, does not count).
    admit(host.state, student, assignment, rules["max_per_day"], record=False)
    runs = host.state / "runs"
    runs.mkdir(parents=True, exist_ok=True)
    run_dir = Path(tempfile.mkdtemp(prefix=f"{utc_now():%Y%m%dT%H%M%SZ}-{assignment}-", dir=runs))
    submission = run_dir / "submission"
    archive.unpack(data, submission, allowed, rules["max_files"], rules["max_unpacked_kib"] * 1024)
    for lab in labs:  # a lab sent without its files: grade.py says which are missing
        (submission / lab).mkdir(parents=True, exist_ok=True)
    (run_dir / "request.json").write_text(json.dumps({"student": student, "assignment": assignment, "seed": seed,
                                                       "files": sorted(files)}) + "\n")
    cmd = grade_command(host, labs, seed, submission, run_dir / "grade")
    deadline = time.monotonic() + host.queue_wait_s
    mine = student_slot(host, student, deadline, say)
    try:
        r, where, seconds = run_grading(host, rules, student, assignment, labs, cmd, run_dir, deadline, say)
    finally:
        mine.release()
    (run_dir / "grade.txt").write_text(r.stdout + r.stderr)
    path = run_dir / "grade" / "results.json"
    if r.returncode not in (0, 1) or not path.is_file():
        log_usage(host.state, student, assignment, seconds, f"error: grade.py exit {r.returncode}")
        said = (r.stdout + r.stderr).strip().splitlines()[-5:]
        raise NotGraded(f"the grader failed on the GPU host (exit {r.returncode}): " + " | ".join(said)
                        + f" (the host keeps the run in {run_dir})")
    answer = results.normalised(without_seed(json.loads(path.read_text()), seed))
    answer.setdefault("extra_data", {})["bridge"] = {
        "graded": True, "student": student, "assignment": assignment, "on": where, "seconds": round(seconds, 1),
        "build_only": host.build_only}
    log_usage(host.state, student, assignment, seconds, verdict(answer) + (" build-only" if host.build_only else ""))
    return answer


def serve(config_path, command_line, stdin, stdout, stderr):
    """The forced command: one request in, one results.json out. Returns the exit code."""
    def say(text):
        print(f"cudalabs GPU host: {text}", file=stderr, flush=True)

    seeds = []
    try:
        host, config = load_host_config(config_path)
        seeds = sorted({a["seed"] for a in host.assignments.values() if a["seed"] != FRESH})
        answer, status = grade_request(host, config, command_line, stdin, say, seeds), 0
    except (Refused, ConfigError, GradeError) as e:
        answer, status = results.message(f"GPU host: refused: {e}"), 2
    except NotGraded as e:
        answer, status = results.message(f"GPU host: not graded: {e}"), 3
    except Exception as e:  # a bug of the bridge: still one answer the autograder can show
        traceback.print_exc(file=stderr)
        answer, status = results.message(f"GPU host: not graded: the bridge failed ({type(e).__name__}: {e}); "
                                         f"tell your instructor"), 3
    # Every answer without the host's seeds, a refusal and a failure too: a failed
    # grading's message quotes grade.py's last five lines, and its header, which
    # says the seed, is printed after the first lab's line: a grader stopped soon
    # after (a time limit, the sandbox) quoted it.
    for seed in seeds:
        answer = without_seed(answer, seed)
    stdout.write(json.dumps(answer) + "\n")
    stdout.flush()
    return status
