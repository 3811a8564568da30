#!/usr/bin/env python3
"""CPU tests of tools/torch_attention.py (no PyTorch, no GPU needed): its records
have the fields and types of a lab's record (results/h100/records.jsonl), its
FLOP count is the labs', its timer stops where the labs' does, it exits 77
without PyTorch, and tools/make_plots.py draws the attention plot with and
without its records."""
import json
import math
import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
import torch_attention as ta  # tools/torch_attention.py (PYTHONPATH: tests/meson.build)

try:  # make_plots needs tools/grader/config.py's TOML reader (Python 3.11, or tomli)
    import make_plots
except SystemExit:
    make_plots = None

# A lab record as common/src/report.cpp writes it (lab 17, fp16, from the H100 run).
LAB_RECORD = {
    "lab": "17_multi_head_attention", "variant": "fp16_batched_grid", "gpu": "NVIDIA H100 80GB HBM3", "cc": "9.0",
    "size": {"batch": 4, "dim": 128, "heads": 16, "seq": 4096}, "bytes": 335544320, "flops": 549755813888,
    "timed": True, "runs": 10, "median_ms": 1.93, "min_ms": 1.92, "mean_ms": 1.93, "stddev_ms": 0.004,
    "ci95_ms": 0.003, "stop": "precision", "gbps": 173.8, "gflops": 284000.0, "ceiling": "unfused_per_head",
    "ceiling_value": 21325.3, "pct_of_ceiling": 1331.0, "suspect": False, "implausible": False,
    "baseline": "", "baseline_ms": 0, "vs_baseline": 0, "max_abs_err": 1e-4, "rel_err": 1e-4,
    "tolerance": 0.0009765625, "tolerance_rel": 0.0009765625, "passed": True, "extra": {}, "seed": 42,
    "git": "1cffd8c", "git_dirty": False, "toolkit": "13.0", "driver": "13.0", "timestamp": "2026-11-23T02:16:03Z",
}
DEVICE = {"name": "NVIDIA H100 80GB HBM3", "cc": "9.0", "toolkit": "13.0", "driver": "13.0"}
GIT = {"revision": "abc1234", "dirty": False}


def record(shape_key="17", shape=(4, 16, 4096, 128), dtype="fp16", backend="cudnn", causal=False, median=1.0,
           passed=True):
    check = {"passed": passed, "max_abs_err": 2e-4, "rel_err": 1e-4, "tolerance": ta.tolerance(dtype),
             "heads_checked": 2}
    if not passed:
        check["failure"] = "1 of 2 checked elements outside ..."
    stats = ta.summarize([median] * 10)
    return ta.make_record(shape_key=shape_key, shape=shape, dtype=dtype, backend=backend, causal=causal,
                          stats=stats, stop="precision", check=check, device=DEVICE, seed=42, git=GIT,
                          torch_version="2.11.0", timestamp="2026-11-23T00:00:00Z")


class RecordFormat(unittest.TestCase):
    def test_every_field_of_a_lab_record_with_its_type(self):
        r = record()
        for key, value in LAB_RECORD.items():
            self.assertIn(key, r, f"the record lacks the lab records' field {key!r}")
            want = (int, float) if isinstance(value, (int, float)) and not isinstance(value, bool) else type(value)
            self.assertIsInstance(r[key], want, f"{key}: {r[key]!r} is not of the lab records' type")
        self.assertEqual(r["lab"], "torch_attention")
        self.assertEqual(r["variant"], "torch_cudnn_fp16")
        self.assertEqual(r["torch_version"], "2.11.0")
        self.assertEqual(r["shape_of_lab"], "17_multi_head_attention")
        self.assertEqual(r["size"], {"batch": 4, "heads": 16, "seq": 4096, "dim": 128})
        json.loads(json.dumps(r))  # one JSON line

    def test_size_names_are_the_labs(self):
        self.assertEqual(record("16", (1, 1, 512, 64))["size"], {"seq": 512, "dim": 64})
        self.assertEqual(set(record("31", (4, 16, 1024, 64))["size"]), {"batch", "heads", "seq", "dim"})

    def test_flops_as_the_labs_count_them(self):
        # lab 17's H100 record above: 4·4096²·128·64 heads
        self.assertEqual(record()["flops"], LAB_RECORD["flops"])
        causal = record(causal=True)
        self.assertEqual(causal["flops"], 4 * (4096 * 4097 / 2) * 128 * 64)
        self.assertEqual(causal["variant"], "torch_cudnn_fp16_causal")
        self.assertEqual(causal["extra"]["causal"], 1)
        r = record(median=2.0)
        self.assertAlmostEqual(r["gflops"], LAB_RECORD["flops"] / 2e-3 / 1e9)
        self.assertAlmostEqual(r["gbps"], 4 * 2 * 4 * 16 * 4096 * 128 / 2e-3 / 1e9)
        self.assertEqual(record(dtype="fp32")["bytes"], 2 * record(dtype="fp16")["bytes"])

    def test_tolerances_are_the_labs(self):
        self.assertEqual(ta.tolerance("fp16"), {"abs": 2 / 2048, "rel": 2 / 2048})
        self.assertEqual(ta.tolerance("bf16"), {"abs": 2 / 256, "rel": 2 / 256})
        self.assertEqual(ta.tolerance("fp32"), {"abs": 5e-6, "rel": 1e-5})

    def test_a_failed_check_says_so(self):
        r = record(passed=False)
        self.assertFalse(r["passed"])
        self.assertIn("failure", r)
        self.assertNotIn("failure", record())


class Timer(unittest.TestCase):
    def test_student_t(self):
        self.assertEqual(ta.t975(1), 12.706)
        self.assertEqual(ta.t975(30), 2.042)
        self.assertTrue(2.0 < ta.t975(50) < 2.021)
        self.assertAlmostEqual(ta.t975(10 ** 9), 1.96, places=3)

    def test_stop_rules(self):
        self.assertIsNone(ta.stop_reason([1.0] * 9))            # fewer than 10 runs: never precise enough
        self.assertEqual(ta.stop_reason([1.0] * 10), "precision")
        noisy = [1.0, 3.0] * 5
        self.assertIsNone(ta.stop_reason(noisy))                 # ±40%: keep going
        self.assertEqual(ta.stop_reason([1.0, 3.0] * 500), "max_runs")
        self.assertEqual(ta.stop_reason([900.0, 1500.0, 100.0]), "time_budget")
        s = ta.summarize([1.0, 2.0, 3.0, 4.0])
        self.assertEqual(s["median_ms"], 2.5)
        self.assertAlmostEqual(s["ci95_ms"], 3.182 * math.sqrt(5 / 3) / 2)


class Program(unittest.TestCase):
    def test_without_torch_exits_77_with_one_line(self):
        try:
            import torch  # noqa: F401
            self.skipTest("PyTorch is installed here")
        except ImportError:
            pass
        p = subprocess.run([sys.executable, str(ROOT / "tools" / "torch_attention.py")], capture_output=True, text=True)
        self.assertEqual(p.returncode, 77, p.stdout + p.stderr)
        self.assertEqual(len(p.stdout.strip().splitlines()), 1)
        self.assertIn("PyTorch is not installed", p.stdout)

    def test_bad_labs_exit_2(self):
        p = subprocess.run([sys.executable, str(ROOT / "tools" / "torch_attention.py"), "--labs", "18"],
                           capture_output=True, text=True)
        self.assertEqual(p.returncode, 2)
        self.assertIn("choose from 16, 17, 31", p.stderr)

    def test_shapes_parsed_and_bad_ones_named(self):
        self.assertEqual(ta.parse_shape("4,16,16384,128", "17"), (4, 16, 16384, 128))
        self.assertEqual(ta.parse_shape("1, 1, 4096, 128", "16"), (1, 1, 4096, 128))
        for text, lab, why in (("4,16,16384", "17", "four positive integers"), ("4,16,0,64", "17", "positive"),
                               ("4,16,x,64", "31", "positive"), ("2,1,4096,64", "16", "one head")):
            with self.assertRaises(ValueError) as e:
                ta.parse_shape(text, lab)
            self.assertIn(why, str(e.exception))
            self.assertIn(text, str(e.exception))

    def test_bad_shape_exits_2_with_the_fix(self):
        for args, why in ((["--labs", "16,17", "--shape", "1,1,64,64"], "exactly one lab"),
                          (["--labs", "16", "--shape", "4,16,64,64"], "one head")):
            p = subprocess.run([sys.executable, str(ROOT / "tools" / "torch_attention.py"), *args],
                               capture_output=True, text=True)
            self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
            self.assertIn(why, p.stderr)


@unittest.skipIf(make_plots is None or not shutil.which("gnuplot"), "needs gnuplot and tools/make_plots.py")
class AttentionPlot(unittest.TestCase):
    def lab16(self, seq, variant, ms):
        r = dict(LAB_RECORD, lab="16_flash_attention", variant=variant, size={"seq": seq, "dim": 64},
                 median_ms=ms, ceiling="unfused_lab15")
        return r

    def draw(self, records):
        with tempfile.TemporaryDirectory() as tmp:
            tmp = Path(tmp)
            d = make_plots.Records(records)
            variables = make_plots.attention_time(d, tmp)
            titles = [(tmp / f"s{i}.csv").read_text().splitlines()[0] for i in range(1, variables["nseries"] + 1)]
            drawn, failed = make_plots.draw_all(records, tmp / "none.csv", tmp, ["attention_time"])
            self.assertEqual((drawn, failed), (1, 0))
            return titles, variables

    def test_with_and_without_torch_records(self):
        labs = [self.lab16(n, v, ms * n / 512) for n in (512, 1024)
                for v, ms in (("unfused_lab15", 1.0), ("flash_fp16", 0.1))]
        titles, variables = self.draw(labs)
        self.assertFalse(any("PyTorch" in t for t in titles))
        torch_recs = [record("16", (1, 1, n, 64), dtype, backend, median=0.05)
                      for n in (512, 1024) for dtype, backend in (("fp16", "cudnn"), ("fp16", "flash"),
                                                                  ("fp32", "efficient"), ("fp16", "math"))]
        titles, variables = self.draw(labs + torch_recs)
        self.assertEqual(sum("PyTorch" in t for t in titles), 3, titles)  # cudnn, flash fp16; efficient fp32
        self.assertIn("PyTorch 2.11.0", variables["labs"])


if __name__ == "__main__":
    unittest.main()
