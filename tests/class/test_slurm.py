#!/usr/bin/env python3
"""make grade-class SLURM=1 through a real Slurm: a one-node cluster started here
(munged, slurmctld, slurmd from Debian's packages, installed by
tools/ensure_deps.sh slurm; its own slurm.conf, ports, key and spool in a
temporary folder), no GPU (no gres: NOGPU=1). A synthetic class of
--students submissions (tests/class/make_submissions.py, Gradescope's export
layout) goes through one job array; each task builds its submission through the
shared build cache and runs tools/grade.py --build-only. Then the same class is
graded without Slurm (run_local, warm cache) and both class tables must agree.

Checks, per student against what the generator gave them: a compile error is
flagged "compile error" with zero points, every lab that compiles is "not run: no
GPU", a lab not submitted is empty, an extra file is named as ignored in the
student's results.json; report.html and similarity.csv exist and the renamed
copies are flagged as similar. Prints the wall time of each step.

Needs root (it starts munged and slurmd as root); exits 77 with the reason where
Slurm cannot be installed or started. Every daemon it started is stopped at the
end, also on failure.

usage: test_slurm.py [--students 200] [--keep DIR]
"""
import argparse
import csv
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SKIP = 77


def skip(why):
    print(f"SKIP: {why}")
    sys.exit(SKIP)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Cluster:
    """A one-node Slurm cluster in `tmp`; stops its daemons on exit, whatever happened."""

    def __init__(self, tmp):
        self.tmp, self.procs = tmp, []
        self.conf = tmp / "slurm.conf"
        self.env = dict(os.environ, SLURM_CONF=str(self.conf))

    def start(self, what, cmd):
        log = open(self.tmp / f"{what}.log", "w")
        self.procs.append((what, subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=self.env,
                                                  start_new_session=True)))

    def __enter__(self):
        t = self.tmp
        for d in ("munge", "state", "spool"):
            (t / d).mkdir()
            os.chmod(t / d, 0o700)
        key = t / "munge" / "munge.key"
        key.write_bytes(os.urandom(1024))
        os.chmod(key, 0o400)
        sock = t / "munge" / "munge.sock"
        # --force: munged as root, in a folder it would otherwise call insecure.
        self.start("munged", ["munged", "--foreground", "--force", f"--socket={sock}", f"--key-file={key}",
                              f"--pid-file={t}/munge/munged.pid", f"--log-file={t}/munge/munged.log",
                              f"--seed-file={t}/munge/seed"])
        host = socket.gethostname().split(".")[0]
        cpus = os.cpu_count() or 1
        self.conf.write_text(f"""# a one-node cluster for tests/class/test_slurm.py
ClusterName=cudalabs-test
SlurmctldHost={host}(127.0.0.1)
SlurmctldPort={free_port()}
SlurmdPort={free_port()}
AuthType=auth/munge
AuthInfo=socket={sock}
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation={t}/state
SlurmdSpoolDir={t}/spool
SlurmctldPidFile={t}/slurmctld.pid
SlurmdPidFile={t}/slurmd.pid
SlurmctldLogFile={t}/slurmctld.daemon.log
SlurmdLogFile={t}/slurmd.daemon.log
ProctrackType=proctrack/pgid
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SwitchType=switch/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
# A job array of short tasks: start the next task as soon as one ends (the default
# waits up to 3 s between batch jobs), about 1 s a task instead of 3.
SchedulerParameters=batch_sched_delay=0,sched_min_interval=0,default_queue_depth=1000
ReturnToService=2
MaxArraySize=10001
MaxJobCount=20000
MinJobAge=600
SlurmdTimeout=120
NodeName={host} NodeAddr=127.0.0.1 CPUs={cpus} RealMemory=1000 State=UNKNOWN
PartitionName=test Nodes={host} Default=YES MaxTime=INFINITE State=UP
""")
        for _ in range(50):  # munged's socket first: the Slurm daemons authenticate through it
            if sock.exists():
                break
            time.sleep(0.1)
        self.start("slurmctld", ["slurmctld", "-D", "-i", "-f", str(self.conf)])
        self.start("slurmd", ["slurmd", "-D", "-f", str(self.conf), "-N", host])
        for _ in range(60):
            r = subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True, text=True, env=self.env)
            if r.stdout.strip() in ("idle", "mixed", "allocated"):
                return self
            time.sleep(0.5)
        logs = "\n".join(f"--- {p.name}:\n" + p.read_text()[-1500:] for p in sorted(t.glob("*.log")))
        self.__exit__(None, None, None)
        skip(f"the one-node Slurm cluster did not come up (sinfo: {r.stdout.strip() or r.stderr.strip()})\n{logs}")

    def __exit__(self, *exc):
        # Jobs first (scancel), so no slurmstepd outlives slurmd; then the daemons.
        subprocess.run(["scancel", "--full", "--quiet", "--user", "root"], env=self.env, capture_output=True, timeout=30)
        for what, p in reversed(self.procs):
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
                try:
                    p.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    os.killpg(p.pid, signal.SIGKILL)
                    p.wait()
        self.procs = []


def check(rows, expected, out, failures):
    """Each student's row against what the generator gave them."""
    by_name = {r["student"]: r for r in rows}
    if sorted(by_name) != sorted(expected):
        failures.append(f"students: {len(by_name)} rows for {len(expected)} submissions")
    for name, given in expected.items():
        r = by_name.get(name)
        if not r:
            continue
        if r["status"] != "graded":
            failures.append(f"{name}: {r['status']}")
        for lab in ("01_vector_add", "04_reduction"):
            kind, points, flags = given.get(lab), r[lab], r[f"{lab} flags"]
            want = "" if kind is None else "compile error" if kind == "compile_error" else "not run: no GPU"
            if flags != want or points != ("" if kind is None else "0"):
                failures.append(f"{name} {lab} ({kind}): points {points!r}, flags {flags!r}; expected {want!r}")
        if given.get("01_vector_add") == "extra_file":
            res = json.loads((out / "students" / r["id"] / "grade" / "results.json").read_text())
            said = " ".join(t["output"] for t in res["tests"]) + res["output"]
            if "ignored" not in said or "notes.txt" not in said:
                # build-only lists the built lab's tests as not run: the ignored files are in summary.txt
                summary = (out / "students" / r["id"] / "grade" / "summary.txt").read_text()
                if "notes.txt" not in summary:
                    failures.append(f"{name}: the extra file notes.txt is not named as ignored")


def throttle(cluster, work, failures, students=4):
    """MAX_GPUS=1 (Slurm's --array=0-N%1) on a small class, warm cache: the tasks run
    one after another (the node has CPUs for more), by their own start and end times."""
    subprocess.run([sys.executable, str(ROOT / "tests" / "class" / "make_submissions.py"), str(work / "few"),
                    "--students", str(students)], check=True, capture_output=True)
    cmd = ["make", "--no-print-directory", "-C", str(ROOT), "grade-class", f"SUBMISSIONS={work / 'few'}", "SLURM=1",
           "NOGPU=1", "ARCH=9.0", "SEED=7", f"OUT={work / 'few-out'}", "TIME=00:30:00", "LABS=01", "CPUS_PER_TASK=1",
           f"CACHE={work / 'cache'}", "MAX_GPUS=1"]
    r = subprocess.run(cmd, env=cluster.env, text=True, capture_output=True, timeout=300)
    script = (work / "few-out" / "slurm" / "job.sh").read_text() if (work / "few-out" / "slurm" / "job.sh").is_file() else ""
    if f"--array=0-{students - 1}%1" not in script:
        failures.append(f"MAX_GPUS=1: the job script has no --array=0-{students - 1}%1:\n{script}{r.stdout[-800:]}")
        return
    spans = sorted((st["started"], st["ended"]) for st in (json.loads(p.read_text())
                   for p in (work / "few-out" / "students").glob("*/status.json")))
    if len(spans) != students:
        failures.append(f"MAX_GPUS=1: {len(spans)} of {students} tasks left a status.json")
    overlaps = [(a, b) for a, b in zip(spans, spans[1:]) if b[0] < a[1]]
    if overlaps:
        failures.append(f"MAX_GPUS=1: tasks ran at the same time: {overlaps[:2]}")
    print(f"ok: MAX_GPUS=1: {len(spans)} array tasks, one at a time")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--students", type=int, default=200)
    p.add_argument("--keep", type=Path, help="work in this folder and keep it")
    p.add_argument("--limit", type=float, default=840, help="seconds make grade-class SLURM=1 may take (default 840)")
    args = p.parse_args()
    # meson test's timeout sends SIGTERM: leave through the with-block, which stops the daemons.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("terminated"))
    if os.geteuid() != 0:
        skip("needs root to start munged and slurmd (CI runs as root)")
    r = subprocess.run(["sh", str(ROOT / "tools" / "ensure_deps.sh"), "slurm"], capture_output=True, text=True)
    if r.returncode != 0 or not shutil.which("slurmctld"):
        skip(f"Slurm cannot be installed here: {(r.stdout + r.stderr).strip()}")
    tmp_obj = None if args.keep else tempfile.TemporaryDirectory(prefix="cudalabs-slurm-")
    work = args.keep or Path(tmp_obj.name)
    if args.keep:
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
    (work / "cluster").mkdir()
    subprocess.run([sys.executable, str(ROOT / "tests" / "class" / "make_submissions.py"), str(work / "subs"),
                    "--students", str(args.students)], check=True)
    expected = json.loads((work / "expected.json").read_text())
    failures = []
    with Cluster(work / "cluster") as cluster:
        start = time.monotonic()
        # The cache in the work folder: a cold start, as CI's first run has it.
        cmd = ["make", "--no-print-directory", "-C", str(ROOT), "grade-class", f"SUBMISSIONS={work / 'subs'}", "SLURM=1",
               "NOGPU=1", "ARCH=9.0", "SEED=7", f"OUT={work / 'out'}", "TIME=00:30:00", "LABS=01,04", "CPUS_PER_TASK=1", f"CACHE={work / 'cache'}"]
        make = subprocess.Popen(cmd, env=cluster.env, text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                start_new_session=True)
        try:
            output, _ = make.communicate(timeout=args.limit)
        finally:  # a timeout or SIGTERM: sbatch --wait would wait for a controller that is gone
            if make.poll() is None:
                os.killpg(make.pid, signal.SIGKILL)
                make.wait()
        slurm_s = time.monotonic() - start
        print(output[-4000:])
        print(f"time: {args.students} submissions through Slurm (cold build cache): {slurm_s:.0f} s")
        if make.returncode != 0:
            failures.append(f"make grade-class SLURM=1 exited {make.returncode}")
        throttle(cluster, work, failures)
    out = work / "out"
    if not (out / "class.csv").is_file():
        print("FAIL: no class.csv")
        return 1
    with open(out / "class.csv") as f:
        rows = list(csv.DictReader(f))
    check(rows, expected, out, failures)
    script = (out / "slurm" / "job.sh").read_text()
    if f"--array=0-{args.students - 1}" not in script or "--gres" in script or "--time=00:30:00" not in script:
        failures.append(f"the job script is not one array of {args.students} tasks without --gres:\n{script}")
    if not (out / "report.html").is_file() or "<table id=\"class\">" not in (out / "report.html").read_text():
        failures.append("report.html has no class table")
    with open(out / "similarity.csv") as f:
        flagged = [p for p in csv.DictReader(f) if p["flagged"] == "True"]
    # The same wrong edit, submitted by several students, is flagged; the course's own
    # code (unchanged or renamed: the same tokens) is the starter's, never flagged.
    ids = {r["id"]: r["student"] for r in rows}
    kinds = [(expected[ids[p["student_a"]]].get(p["lab"]), expected[ids[p["student_b"]]].get(p["lab"])) for p in flagged]
    if args.students >= 20 and ("wrong", "wrong") not in kinds:
        failures.append("no pair of students with the same wrong kernel was flagged as similar")
    starter_like = [k for k in kinds if {"course", "renamed", "extra_file"} & set(k)]
    if starter_like:
        failures.append(f"flagged as similar: pairs whose files are the course's own code: {starter_like[:3]}")

    # The same class without Slurm, on the warm cache: the same table.
    start = time.monotonic()
    r = subprocess.run([sys.executable, str(ROOT / "tools" / "grade_class.py"), str(work / "subs"), "--no-gpu",
                        "--arch", "9.0", "--seed", "7", "--labs", "01,04", "--out", str(work / "local"),
                        "--cache", str(work / "cache")], text=True, capture_output=True)
    print(r.stdout[-1500:] + r.stderr[-1500:])
    print(f"time: the same class without Slurm, warm cache: {time.monotonic() - start:.0f} s")
    with open(work / "local" / "class.csv") as f:
        local = list(csv.DictReader(f))
    if local != rows:
        failures.append("the local run's class.csv differs from the Slurm run's")
    for fail in failures[:30]:
        print("FAIL:", fail)
    if not failures:
        print(f"ok: {len(rows)} submissions gathered from the Slurm job array; flags and points as expected")
    if tmp_obj:
        tmp_obj.cleanup()
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
