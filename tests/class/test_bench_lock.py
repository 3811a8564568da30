#!/usr/bin/env python3
"""CPU tests of the host-wide benchmark lock of a class graded on several GPUs
(tools/grader/benchlock.py) and of grade_class's GPU lanes and Slurm throttle:
shared takers run together, an exclusive one waits for them and keeps later
shared takers out until it is done (also across processes), grade.py is started
with the lock's variables only when it grades on a GPU, and --max-gpus caps the
lanes here and the array tasks under Slurm.
Run: python3 tests/class/test_bench_lock.py
"""
import os
import subprocess
import sys
import tempfile
import threading
import time
import unittest
from pathlib import Path
from types import SimpleNamespace
from unittest import mock

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
import grade_class  # tools/ (PYTHONPATH: tests/class/meson.build)
from grader import benchlock
from grader.config import GradeError, load_config

LABS, CONFIG = grade_class.load_course()
SETTLE = 0.4  # seconds a waiting taker is given to (wrongly) get the lock


class Taker(threading.Thread):
    """Takes the lock (shared or exclusive) in a thread of its own, holds it until
    released, and notes when it got it in `log`."""

    def __init__(self, path, exclusive, name, log):
        super().__init__(daemon=True)
        self.lock, self.name_, self.log = benchlock.BenchLock(path, exclusive), name, log
        self.got, self.release = threading.Event(), threading.Event()

    def run(self):
        with self.lock:
            self.log.append(self.name_)
            self.got.set()
            self.release.wait(30)


class Lock(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.path = Path(self.tmp.name) / "bench.lock"
        self.log, self.takers = [], []

    def tearDown(self):
        for t in self.takers:
            t.release.set()
            t.join(5)
        self.tmp.cleanup()

    def take(self, exclusive, name):
        t = Taker(self.path, exclusive, name, self.log)
        self.takers.append(t)
        t.start()
        return t

    def test_shared_takers_run_together(self):
        a, b = self.take(False, "a"), self.take(False, "b")
        self.assertTrue(a.got.wait(5) and b.got.wait(5), "two lanes' benchmarks must run at once")

    def test_exclusive_waits_for_every_shared_holder(self):
        a, b = self.take(False, "a"), self.take(False, "b")
        self.assertTrue(a.got.wait(5) and b.got.wait(5))
        x = self.take(True, "x")
        self.assertFalse(x.got.wait(SETTLE), "a host-link benchmark started while others ran")
        a.release.set()
        self.assertFalse(x.got.wait(SETTLE), "a host-link benchmark started while one other still ran")
        b.release.set()
        self.assertTrue(x.got.wait(5), "the host-link benchmark never started once the host was free")

    def test_a_waiting_exclusive_taker_keeps_later_shared_ones_out(self):
        a = self.take(False, "a")
        self.assertTrue(a.got.wait(5))
        x = self.take(True, "x")
        time.sleep(SETTLE)  # x waits at the lock, holding the gate
        c = self.take(False, "c")
        self.assertFalse(c.got.wait(SETTLE), "a shared taker went ahead of a waiting exclusive one")
        a.release.set()
        self.assertTrue(x.got.wait(5))
        self.assertFalse(c.got.wait(SETTLE), "a shared taker ran beside an exclusive holder")
        x.release.set()
        self.assertTrue(c.got.wait(5))
        self.assertEqual(self.log, ["a", "x", "c"])

    def test_the_lock_holds_between_processes(self):
        holder = subprocess.Popen(
            # The child inherits PYTHONPATH (tools/), as this test has it.
            [sys.executable, "-c", "import sys, time; from grader import benchlock\n"
             "with benchlock.BenchLock(sys.argv[1], True):\n print('held', flush=True); time.sleep(30)",
             str(self.path)], stdout=subprocess.PIPE, text=True)
        try:
            self.assertEqual(holder.stdout.readline().strip(), "held")
            a = self.take(False, "a")
            self.assertFalse(a.got.wait(SETTLE), "a lane's benchmark ran beside another process's exclusive one")
            holder.kill()  # a grader that dies: the kernel releases its lock
            holder.wait()
            self.assertTrue(a.got.wait(5), "the lock of a process that died was not released")
        finally:
            holder.kill()
            holder.wait()

    def test_held_follows_the_environment(self):
        with mock.patch.dict(os.environ, {}, clear=False):
            os.environ.pop(benchlock.ENV_LOCK, None)
            with benchlock.held("08_streams") as lock:
                self.assertIsNone(lock, "grade.py alone (no variable) takes no lock")
        env = benchlock.environment(self.path, ["03_pcie_truth", "08_streams"])
        with mock.patch.dict(os.environ, env):
            with benchlock.held("08_streams") as lock:
                self.assertTrue(lock.exclusive)
            with benchlock.held("04_reduction") as lock:
                self.assertFalse(lock.exclusive)
                self.assertTrue(self.path.is_file())


class Config(unittest.TestCase):
    def test_the_courses_host_link_labs(self):
        config = load_config(ROOT / "tools" / "grading.toml", LABS)
        listed = benchlock.host_link_labs(config)
        self.assertIn("08_streams", listed, "lab 08's pinned streams time the host's links")
        self.assertNotIn("04_reduction", listed)

    def test_host_link_must_be_true_or_false(self):
        with tempfile.TemporaryDirectory() as tmp:
            bad = Path(tmp) / "grading.toml"
            bad.write_text('[labs.08_streams]\nhost_link = "yes"\n')
            with self.assertRaisesRegex(GradeError, "host_link.*true or false"):
                load_config(bad, LABS)
            bad.write_text('host_link_labs = ["08_streams"]\n')
            with self.assertRaisesRegex(GradeError, "unknown section"):
                load_config(bad, LABS)


class Lanes(unittest.TestCase):
    plan = {"no_gpu": False, "bench_lock": "/tmp/x.lock", "host_link_labs": ["03_pcie_truth", "08_streams"],
            "seed": 7, "grade_args": ["--parallel", "4"], "out": "/tmp/out"}

    def test_grade_py_on_a_gpu_takes_the_lock(self):
        cmd = grade_class.grade_command(self.plan, Path("/h"), ["08_streams"], gpu="2")
        self.assertEqual(cmd[0], "env")
        self.assertIn("CUDA_VISIBLE_DEVICES=2", cmd)
        self.assertIn(f"{benchlock.ENV_LOCK}=/tmp/x.lock", cmd)
        self.assertIn(f"{benchlock.ENV_EXCLUSIVE}=03_pcie_truth,08_streams", cmd)
        self.assertEqual(cmd[cmd.index("--labs") + 1], "08_streams")

    def test_build_only_takes_no_lock(self):
        cmd = grade_class.grade_command({**self.plan, "no_gpu": True}, Path("/h"), ["01_vector_add"])
        self.assertFalse(any(benchlock.ENV_LOCK in c for c in cmd))
        self.assertIn("--build-only", cmd)

    def test_max_gpus_caps_the_lanes(self):
        self.assertEqual(grade_class.lanes(["0", "1", "2", "3"], None), ["0", "1", "2", "3"])
        self.assertEqual(grade_class.lanes(["0", "1", "2", "3"], 2), ["0", "1"])
        self.assertEqual(grade_class.lanes(["0"], 4), ["0"])

    def test_max_gpus_throttles_the_slurm_array(self):
        args = SimpleNamespace(cpus_per_task=2, partition=None, account=None, time=None, sbatch_arg=[], max_gpus=3)
        plan = {"out": "/tmp/out", "no_gpu": False}
        self.assertIn("#SBATCH --array=0-9%3\n", grade_class.sbatch_script(plan, args, 10))
        args.max_gpus = None
        self.assertIn("#SBATCH --array=0-9\n", grade_class.sbatch_script(plan, args, 10))

    def test_max_gpus_below_one_is_bad_usage(self):
        r = subprocess.run([sys.executable, str(ROOT / "tools" / "grade_class.py"), "subs", "--max-gpus", "0"],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 2)
        self.assertIn("--max-gpus 0: at least 1", r.stderr)


if __name__ == "__main__":
    unittest.main()
