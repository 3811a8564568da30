#!/usr/bin/env python3
"""CPU tests of the roofline's three ceilings (tools/make_plots.py, plots/roofline.gp).

Each ceiling is a measurement from results/, labelled with its source and value:
the memory roof is the device-to-device copy (records whose ceiling is
d2d_copy_gbps, their median), the FP32 ceiling lab 18's cuBLAS SGEMM at its
largest size, the tensor-core ceiling lab 30's cuBLAS FP16 GEMM at its largest
size. These tests find those records on their own, straight from the records
file, and check that each label names that source and quotes that record's
number, on the H100 records and on made-up ones where a faster cuBLAS record
of another lab or input type could be taken by mistake. Then the committed
docs/plots/roofline.svg must carry today's labels, and README.md, the course
guide and methodology.md today's numbers. No gnuplot needed."""
import html
import re
import statistics
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
import make_plots  # tools/make_plots.py (PYTHONPATH: tests/meson.build)
from grader.records import read_records

H100 = ROOT / "results" / "h100" / "records.jsonl"
FP32_LAB, TENSOR_LAB = "18_matmul_cublas_gap", "30_tensor_core_gemm"


def latest(records):
    """Timed, correct records, the last of each lab, variant, size and flags (a lab run
    twice into the file counts once); sweep points are not a problem of their own."""
    def key(r):
        flags = tuple(sorted((k, v) for k, v in r.get("flags", {}).items() if k != "sweep"))
        return r["lab"], r["variant"], tuple(sorted(r.get("size", {}).items())), flags
    return list({key(r): r for r in records if r.get("timed") and r.get("passed")}.values())


def cublas_at_largest(records, lab, dtype=None):
    """The lab's `cublas` record at its largest size (m·n·k), of that input type."""
    mine = [r for r in latest(records) if r["lab"] == lab and r["variant"] == "cublas" and r.get("gflops")
            and (dtype is None or r.get("flags", {}).get("dtype", "fp16") == dtype)]
    if not mine:
        return None
    return max(mine, key=lambda r: r["size"]["m"] * r["size"]["n"] * r["size"]["k"])


def copy_median(records):
    values = [r["ceiling_value"] for r in latest(records) if r.get("ceiling") == "d2d_copy_gbps" and r.get("ceiling_value")]
    return statistics.median(values), len(values)


def number(text, unit):
    """The number before `unit` in a label: '... 52075.8 GFLOP/s' -> 52075.8."""
    found = re.findall(r"([0-9][0-9.]*) " + re.escape(unit), text)
    assert len(found) == 1, f"expected one number in {unit} in {text!r}"
    return float(found[0])


def gemm(lab, variant, size, gflops, dtype=None, timestamp="2026-11-23T00:00:00Z"):
    m = n = k = size
    r = {"lab": lab, "variant": variant, "size": {"k": k, "m": m, "n": n}, "timed": True, "passed": True,
         "gpu": "G", "gflops": gflops, "flops": 2 * m * n * k, "bytes": 4 * (m * k + n * k + m * n),
         "ceiling": "cublas", "baseline": "cublas", "timestamp": timestamp}
    if dtype:
        r["flags"] = {"dtype": dtype}
    return r


def copy_run(lab, gbps):
    return {"lab": lab, "variant": "float4", "size": {"n": 1 << 28}, "timed": True, "passed": True, "gpu": "G",
            "gflops": 240.0, "flops": 1 << 28, "bytes": 12 << 28, "gbps": 2900.0,
            "ceiling": "d2d_copy_gbps", "ceiling_value": gbps}


class Sources:
    """Checks of roofline_ceilings() and roofline() against the records found here."""

    def check(self, records):
        d = make_plots.Records(records)
        ceilings = make_plots.roofline_ceilings(d)
        fp32 = cublas_at_largest(records, FP32_LAB)
        tensor = cublas_at_largest(records, TENSOR_LAB, "fp16")
        bw, n = copy_median(records)

        c = ceilings["memory"]
        self.assertIn("d2d_copy_gbps", c["source"])
        self.assertIn(f"median of {n} records", c["source"])
        self.assertIn("copy", c["head"])
        self.assertAlmostEqual(number(c["head"], "GB/s"), bw, delta=1e-9 * bw)
        self.assertEqual(c["value"], bw)

        c = ceilings["fp32"]
        self.assertIn("FP32", c["head"])
        self.assertIn("cuBLAS SGEMM, lab 18 cublas at", c["source"])
        self.assertEqual(number(c["head"], "GFLOP/s"), fp32["gflops"])
        self.assertEqual(c["value"], fp32["gflops"])

        c = ceilings["tensor"]
        self.assertIn("tensor cores", c["head"])
        self.assertNotIn("FP32", c["head"])
        self.assertIn("cuBLAS FP16 GEMM, lab 30 cublas at", c["source"])
        self.assertEqual(number(c["head"], "GFLOP/s"), tensor["gflops"])
        self.assertEqual(c["value"], tensor["gflops"])

        # What the gnuplot script is given: the same three, drawn apart.
        with tempfile.TemporaryDirectory(prefix="cudalabs-roofline-test-") as tmp:
            v = make_plots.roofline(d, Path(tmp))
            titles = [(Path(tmp) / f"s{i}.csv").read_text().splitlines()[0] for i in range(1, int(v["nseries"]) + 1)]
        self.assertEqual((v["bw_gbps"], v["fp32_gflops"], v["tensor_gflops"]), (bw, fp32["gflops"], tensor["gflops"]))
        self.assertEqual((v["fp32_head"], v["fp32_source"]), (ceilings["fp32"]["head"], ceilings["fp32"]["source"]))
        self.assertEqual((v["tensor_head"], v["tensor_source"]), (ceilings["tensor"]["head"], ceilings["tensor"]["source"]))
        self.assertIn(ceilings["memory"]["head"], v["bw_label"])
        self.assertIn(ceilings["memory"]["source"], v["bw_label"])
        # Lab 30's kernels run on tensor cores: a star under the tensor-core ceiling, not an FP32 point.
        lab30 = [t for t in titles if t.startswith("x,30 ")]
        self.assertTrue(lab30 and all(t.endswith("(tensor cores)") for t in lab30), titles)
        return ceilings


@unittest.skipUnless(H100.is_file(), "no results/h100/records.jsonl")
class H100Records(Sources, unittest.TestCase):
    def setUp(self):
        self.records = read_records(H100)

    def test_each_ceiling_comes_from_its_record(self):
        ceilings = self.check(self.records)
        # The tensor-core rate is not the FP32 one: more than ten times it on an H100.
        self.assertGreater(ceilings["tensor"]["value"], 10 * ceilings["fp32"]["value"])

    def test_committed_plot_carries_these_labels(self):
        svg = ROOT / "docs" / "plots" / "roofline.svg"
        if not svg.is_file():
            self.skipTest("no docs/plots/roofline.svg")
        texts = {html.unescape(t) for t in re.findall(r"<text>([^<]*)</text>", svg.read_text(encoding="utf-8"))}
        ceilings = make_plots.roofline_ceilings(make_plots.Records(self.records))
        wanted = [ceilings["memory"]["head"] + " (" + ceilings["memory"]["source"] + ")"] + \
            [ceilings[k][part] for k in ("fp32", "tensor") for part in ("head", "source")]
        missing = [w for w in wanted if w not in texts]
        self.assertEqual(missing, [], "docs/plots/roofline.svg was not drawn from today's records: run `make plots`")
        self.assertFalse([t for t in texts if "FP32 ceiling" in t and "lab 30" in t])


    def test_docs_quote_these_ceilings(self):
        """README.md, the course guide and methodology.md describe the roofline with the
        ceilings' numbers: the ones the plot is drawn with today."""
        ceilings = make_plots.roofline_ceilings(make_plots.Records(self.records))
        for doc in ("README.md", "docs/course-guide.md", "docs/methodology.md"):
            text = (ROOT / doc).read_text(encoding="utf-8")
            for key, unit in (("memory", "GB/s"), ("fp32", "GFLOP/s"), ("tensor", "GFLOP/s")):
                quoted = make_plots.number_text(ceilings[key]["value"])
                self.assertIn(quoted, text, f"{doc} does not quote the {key} ceiling, {quoted} {unit}")
            # The tensor-core rate is never called the FP32 ceiling.
            for line in text.splitlines():
                if make_plots.number_text(ceilings["tensor"]["value"]) in line:
                    self.assertNotRegex(line, r"FP32 ceiling[^.;]*" + make_plots.number_text(ceilings["tensor"]["value"]))


class MadeUpRecords(Sources, unittest.TestCase):
    """Faster cuBLAS records that are not the ceilings: another lab's SGEMM, lab 18 at a
    smaller size, lab 30's BF16 and TF32 runs (more of them than FP16: the lab's main run
    is BF16), and a lab 18 run that an older one of the same size is replaced by."""
    RECORDS = [
        copy_run("02_timed_vector_add", 2900.0), copy_run("07_reduction_v3", 2950.0), copy_run("12_softmax", 2910.0),
        gemm("05_matmul", "cublas", 4096, 60000.0),
        gemm("05_matmul", "tiled16", 4096, 8000.0),
        gemm(FP32_LAB, "cublas", 2048, 55000.0),
        gemm(FP32_LAB, "cublas", 8192, 49000.0),
        gemm(FP32_LAB, "cublas", 8192, 51000.5, timestamp="2026-11-24T00:00:00Z"),
        gemm(FP32_LAB, "unguarded_loop", 8192, 46000.0),
        gemm(TENSOR_LAB, "cublas", 8192, 700000.25, dtype="fp16"),
        gemm(TENSOR_LAB, "wgmma_tma", 8192, 690000.0, dtype="fp16"),
        gemm(TENSOR_LAB, "cublas", 8192, 800000.0, dtype="bf16"),
        gemm(TENSOR_LAB, "wgmma_tma", 8192, 760000.0, dtype="bf16"),
        gemm(TENSOR_LAB, "mma_ldmatrix", 8192, 400000.0, dtype="bf16"),
        gemm(TENSOR_LAB, "cublas", 16384, 410000.0, dtype="tf32"),
    ]

    def test_each_ceiling_comes_from_its_record(self):
        ceilings = self.check(self.RECORDS)
        self.assertEqual((ceilings["fp32"]["value"], ceilings["tensor"]["value"]), (51000.5, 700000.25))
        self.assertIn("at 8192³", ceilings["fp32"]["source"])
        self.assertIn("at 8192³", ceilings["tensor"]["source"])

    def test_no_lab_18_or_30_no_flop_ceiling(self):
        records = [r for r in self.RECORDS if r["lab"] not in (FP32_LAB, TENSOR_LAB)]
        d = make_plots.Records(records)
        ceilings = make_plots.roofline_ceilings(d)
        self.assertIsNone(ceilings["fp32"])
        self.assertIsNone(ceilings["tensor"])
        with tempfile.TemporaryDirectory(prefix="cudalabs-roofline-test-") as tmp:
            v = make_plots.roofline(d, Path(tmp))
        self.assertEqual((v["fp32_gflops"], v["fp32_head"], v["tensor_gflops"], v["tensor_head"]), (0, "", 0, ""))
        self.assertEqual(v["bw_gbps"], 2910.0)


if __name__ == "__main__":
    unittest.main(verbosity=2)
