#!/usr/bin/env python3
"""CPU tests of tools/profile.py and tools/tune.py: the profile diagnosis on
synthetic metric dicts, the ncu CSV reader, the whole `make profile` path with a
stand-in ncu and lab, and the sweep summaries and heat map of tune.py. No GPU,
no Nsight Compute."""
import json
import os
import shutil
import stat
import sys
import tempfile
import textwrap
import unittest
from pathlib import Path

# tools/ on PYTHONPATH (tests/meson.build): ahead of the standard library, so
# `profile` is tools/profile.py, not the standard library's profiler.
import profile as prof
import tune

try:  # tools/make_plots.py needs tools/grader/config.py's TOML reader: Python 3.11, or 3.10 with tomli
    import make_plots
except SystemExit:
    make_plots = None

assert hasattr(prof, "diagnose"), "tools/profile.py must shadow the standard library's profile module here"

STALL = prof.STALL_METRIC.format


def metrics(**named):
    """A metric dict from short names: sm=, dram=, l1=, ..., stall_<reason>=."""
    names = {
        "sm": "sm__throughput.avg.pct_of_peak_sustained_elapsed",
        "mem": "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
        "dram": "dram__throughput.avg.pct_of_peak_sustained_elapsed",
        "l2": "lts__throughput.avg.pct_of_peak_sustained_elapsed",
        "l1": "l1tex__throughput.avg.pct_of_peak_sustained_active",
        "fma": "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active",
        "achieved": "sm__warps_active.avg.pct_of_peak_sustained_active",
        "theoretical": "sm__maximum_warps_per_active_cycle_pct",
        "registers": "launch__registers_per_thread",
        "limit_registers": "launch__occupancy_limit_registers",
        "limit_warps": "launch__occupancy_limit_warps",
        "shared_ld": "smsp__sass_inst_executed_op_shared_ld.sum",
        "shared_waves_ld": "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
        "conflicts_ld": "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
        "use_ld": "smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.pct",
        "use_st": "smsp__sass_average_data_bytes_per_sector_mem_global_op_st.pct",
        "sectors_st": "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
        "requests_st": "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
        "l2_sectors": "memory_l2_theoretical_sectors_global",
        "l2_ideal": "memory_l2_theoretical_sectors_global_ideal",
        "local_ld": "smsp__sass_inst_executed_op_local_ld.sum",
        "local_st": "smsp__sass_inst_executed_op_local_st.sum",
    }
    out = {}
    for k, v in named.items():
        out[STALL(k[len("stall_"):]) if k.startswith("stall_") else names[k]] = v
    return out


def kinds(m):
    return prof.kinds(prof.diagnose(m))


def texts(m):
    return "\n".join(f.text for f in prof.diagnose(m))


# Lab 02's float4 at 2^26: DRAM near its peak, the warps waiting on loads.
VECTOR_ADD = metrics(sm=38, mem=91, dram=91, l2=45, l1=30, achieved=88, theoretical=100,
                     stall_long_scoreboard=24.0, stall_lg_throttle=1.5, stall_wait=0.8,
                     use_ld=100, use_st=100, limit_warps=8, limit_registers=10)
VECTOR_ADD["gpu__time_duration.sum"] = 240000.0  # ns: a report always has the kernel's duration
VECTOR_ADD[prof.SM_CLOCK] = 1.98e9                 # Hz: the SMs' clock while it ran
# Lab 05's tiled16: shared memory busy, DRAM idle, the warps on the MIO queue.
TILED_MATMUL = metrics(sm=72, mem=88, dram=9, l2=20, l1=88, fma=35, achieved=92, theoretical=100,
                       shared_ld=4.0e8, shared_waves_ld=4.1e8, conflicts_ld=1.0e6,
                       stall_mio_throttle=6.2, stall_short_scoreboard=3.9, stall_long_scoreboard=1.2,
                       use_ld=100, use_st=100)
# Lab 21's naive transpose: stores scattered, one float per 32-byte sector.
NAIVE_TRANSPOSE = metrics(sm=30, mem=74, dram=74, l2=70, l1=50, achieved=80, theoretical=100,
                          stall_long_scoreboard=30, stall_lg_throttle=9,
                          use_ld=100, use_st=12.5, sectors_st=6.7e7, requests_st=2.1e6)


class Diagnosis(unittest.TestCase):
    def test_dram_bound_vector_add(self):
        k = kinds(VECTOR_ADD)
        self.assertIn("memory-bound", k)
        self.assertIn("stall-long-scoreboard", k)
        self.assertNotIn("compute-bound", k)
        self.assertNotIn("latency-bound", k)
        self.assertNotIn("uncoalesced", k)
        self.assertNotIn("shared-memory-bound", k)
        self.assertIn("DRAM runs at 91%", texts(VECTOR_ADD))

    def test_shared_memory_bound_matmul(self):
        k = kinds(TILED_MATMUL)
        self.assertIn("shared-memory-bound", k)
        self.assertNotIn("memory-bound", k)  # DRAM is idle
        self.assertNotIn("compute-bound", k)  # the SM's busy unit is the shared-memory pipe
        self.assertNotIn("bank-conflicts", k)  # 0.2% extra wavefronts: below the threshold
        self.assertIn("stall-mio-throttle", k)
        self.assertIn("mio throttle", texts(TILED_MATMUL))

    def test_uncoalesced_naive_transpose(self):
        k = kinds(NAIVE_TRANSPOSE)
        self.assertIn("uncoalesced", k)
        self.assertIn("memory-bound", k)
        t = texts(NAIVE_TRANSPOSE)
        self.assertIn("uncoalesced global stores: each 32-byte sector carries 4.0 useful bytes (12%)", t)
        self.assertIn("31.9 sectors per request", t)
        self.assertNotIn("uncoalesced global loads", t)

    def test_uncoalesced_from_source_counters_alone(self):
        k = prof.diagnose(metrics(dram=50, sm=20, l2_sectors=8e6, l2_ideal=1e6))
        self.assertTrue(any(f.kind == "uncoalesced" and "8.0x" in f.text for f in k))

    def test_compute_bound(self):
        m = metrics(sm=88, fma=86, dram=12, l1=20, achieved=40, theoretical=50, stall_math_pipe_throttle=3.0)
        k = kinds(m)
        self.assertIn("compute-bound", k)
        self.assertNotIn("memory-bound", k)
        self.assertIn("FMA pipe 86% busy", texts(m))

    def test_latency_bound(self):
        m = metrics(sm=22, mem=25, dram=18, l1=25, achieved=20, theoretical=25, limit_registers=2, registers=128,
                    stall_long_scoreboard=40)
        k = kinds(m)
        self.assertIn("latency-bound", k)
        self.assertIn("low-occupancy", k)
        self.assertIn("registers limit it to 2 blocks per SM, 128 registers per thread", texts(m))

    def test_occupancy_gap(self):
        m = metrics(sm=30, dram=65, achieved=30, theoretical=100)
        self.assertIn("occupancy-gap", kinds(m))
        self.assertIn("achieved occupancy 30% of the theoretical 100%", texts(m))

    def test_occupancy_named_when_fine(self):
        self.assertIn("occupancy: achieved 88% of a theoretical 100%", texts(VECTOR_ADD))

    def test_bank_conflicts(self):
        # The shared_tile transpose: each column read replayed 32 times.
        m = metrics(dram=60, sm=30, shared_ld=2.1e6, shared_waves_ld=6.7e7, conflicts_ld=6.5e7)
        k = kinds(m)
        self.assertIn("bank-conflicts", k)
        self.assertIn("31.9 wavefronts per shared load instruction", texts(m))

    def test_local_memory(self):
        m = metrics(sm=50, dram=20, local_ld=1.0e6, local_st=5.0e5)
        self.assertIn("local-memory", kinds(m))
        self.assertIn("1000000 local load and 500000 local store", texts(m))

    def test_top_three_stalls_largest_first(self):
        m = metrics(dram=80, stall_wait=1.0, stall_barrier=5.0, stall_long_scoreboard=9.0, stall_not_selected=50.0,
                    stall_selected=1.0, stall_branch_resolving=0.5)
        stalls = next(f for f in prof.diagnose(m) if f.kind == "stalls")
        self.assertEqual(stalls.tags, ["stall-long-scoreboard", "stall-barrier", "stall-wait"])  # not_selected: no stall
        self.assertTrue(stalls.text.startswith("top stall reasons: long scoreboard 9.0 cycles"))

    def test_no_metrics(self):
        self.assertEqual(kinds({}), {"no-data"})


RAW_CSV = textwrap.dedent('''\
    "ID","Kernel Name","Block Size","Grid Size","gpu__time_duration.sum","dram__throughput.avg.pct_of_peak_sustained_elapsed","l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"
    "","","","","usecond","%","sector"
    "0","transpose_naive_kernel","(32, 32, 1)","(256, 256, 1)","1,234.50","74.10","67,108,864"
    "1","transpose_naive_kernel","(32, 32, 1)","(256, 256, 1)","1,230.00","74.00","67,108,864"
    ''')


class ReportCsv(unittest.TestCase):
    def test_raw_page_with_units(self):
        k = prof.parse_raw_csv("==PROF== a line before the table\n" + RAW_CSV)
        self.assertEqual(len(k), 2)
        self.assertEqual(k[0]["Kernel Name"], "transpose_naive_kernel")
        self.assertEqual(k[0]["Grid Size"], "(256, 256, 1)")
        self.assertAlmostEqual(k[0]["gpu__time_duration.sum"], 1234500.0)  # microseconds -> ns
        self.assertEqual(k[0]["l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"], 67108864.0)
        self.assertAlmostEqual(k[0]["dram__throughput.avg.pct_of_peak_sustained_elapsed"], 74.1)

    def test_raw_page_without_units(self):
        text = '"ID","Kernel Name","dram__throughput.avg.pct_of_peak_sustained_elapsed"\n"0","k","91.5"\n'
        k = prof.parse_raw_csv(text)
        self.assertEqual(k, [{"ID": 0.0, "Kernel Name": "k", "dram__throughput.avg.pct_of_peak_sustained_elapsed": 91.5}])

    def test_nothing(self):
        self.assertEqual(prof.parse_raw_csv(""), [])


def executable(path, text):
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return path


class ProfileCommand(unittest.TestCase):
    """The whole `make profile` path with a stand-in ncu and lab program."""

    def setUp(self):
        self.dir = Path(tempfile.mkdtemp(prefix="cudalabs-profile-test-"))
        self.csv = self.dir / "canned.csv"
        self.csv.write_text('"ID","Kernel Name",' + ",".join(f'"{k}"' for k in VECTOR_ADD) + "\n" +
                            '"","",' + ",".join('"%"' for _ in VECTOR_ADD) + "\n" +
                            '"0","vector_add_float4_kernel",' + ",".join(f'"{v}"' for v in VECTOR_ADD.values()) + "\n")
        # ncu: writes the report it is asked to export and records its arguments;
        # with --import prints the canned CSV.
        self.ncu = executable(self.dir / "ncu", textwrap.dedent(f'''\
            #!{sys.executable}
            import sys, pathlib
            args = sys.argv[1:]
            if "--import" in args:
                print(pathlib.Path({str(self.csv)!r}).read_text(), end="")
                sys.exit(0)
            pathlib.Path({str(self.dir / "ncu-args")!r}).write_text("\\n".join(args))
            base = args[args.index("--export") + 1]
            pathlib.Path(base + ".ncu-rep").write_text("report")
            '''))
        self.lab = executable(self.dir / "lab", "#!/bin/sh\nexit ${FAKE_LAB_EXIT:-0}\n")

    def tearDown(self):
        shutil.rmtree(self.dir)

    def profile(self, *extra, lab_exit=0):
        argv = ["profile.py", "02", "float4", "--program", str(self.lab), "--ncu", str(self.ncu),
                "--out", str(self.dir / "out")] + list(extra)
        old_argv, old_env = sys.argv, os.environ.get("FAKE_LAB_EXIT")
        sys.argv = argv
        os.environ["FAKE_LAB_EXIT"] = str(lab_exit)
        try:
            return prof.main()
        finally:
            sys.argv = old_argv
            if old_env is None:
                os.environ.pop("FAKE_LAB_EXIT", None)
            else:
                os.environ["FAKE_LAB_EXIT"] = old_env

    def test_diagnosis_and_expectations(self):
        self.assertEqual(self.profile("--expect", "memory-bound"), 0)
        args = (self.dir / "ncu-args").read_text().split("\n")
        self.assertIn("regex:float4", args)
        for section in prof.SECTIONS:
            self.assertIn(section, args)
        self.assertEqual(args[args.index("--launch-count") + 1], "1")
        # The kernel at the clocks the lab's timing ran at, not locked to base (profile.CLOCK_CONTROL),
        # and the report says which clock that was.
        self.assertEqual(args[args.index("--clock-control") + 1], "none")
        self.assertIn(prof.SM_CLOCK, args[args.index("--metrics") + 1].split(","))
        self.assertIn("--check-only", args)
        self.assertEqual(args[args.index("--size") + 1], "2^26")  # the lab's profiling size
        out = self.dir / "out"
        self.assertTrue((out / "02_timed_vector_add-float4.ncu-rep").is_file())
        self.assertIn("memory-bound", (out / "02_timed_vector_add-float4.txt").read_text())
        self.assertIn("240.0 us under the profiler, SMs at 1980 MHz", (out / "02_timed_vector_add-float4.txt").read_text())
        self.assertTrue((out / "02_timed_vector_add-float4.csv").is_file())
        self.assertEqual(self.profile("--expect", "uncoalesced"), 1)

    def test_own_size_and_kernel(self):
        self.assertEqual(self.profile("--args", "--size 1000", "--kernel", "vector_add_float4_kernel"), 0)
        args = (self.dir / "ncu-args").read_text().split("\n")
        self.assertIn("regex:vector_add_float4_kernel", args)
        self.assertEqual(args[args.index("--size") + 1], "1000")
        self.assertEqual(args.count("--size"), 1)

    def test_no_gpu_is_a_skip(self):
        self.assertEqual(self.profile(lab_exit=77), 77)

    def test_lab_failure(self):
        self.assertEqual(self.profile(lab_exit=2), 2)
        self.assertEqual(self.profile(lab_exit=1), 3)

    def test_no_ncu_is_a_skip(self):
        argv, sys.argv = sys.argv, ["profile.py", "02", "float4", "--ncu", str(self.dir / "missing"), "--counters", "1"]
        path = os.environ.get("PATH", "")
        os.environ["PATH"] = str(self.dir / "empty")
        try:
            if Path("/usr/local/cuda/bin/ncu").is_file() or list(Path("/opt/nvidia").glob("nsight-compute/*/ncu")):
                self.skipTest("this machine has ncu")
            self.assertEqual(prof.main(), 77)
        finally:
            sys.argv = argv
            os.environ["PATH"] = path


def sweep_record(variant, block, bps, gbps, n=1 << 26, items=1):
    return {"lab": "28_tuning", "variant": f"{variant}[block={block},blocks_per_sm={bps},items={items}]",
            "gpu": "Test GPU", "size": {"n": n}, "timed": True, "passed": True, "bytes": 12.0 * n, "flops": 2.0 * n,
            "median_ms": 12.0 * n / gbps / 1e6, "gbps": gbps, "gflops": 2.0 * n / (12.0 * n / gbps),
            "extra": {"block": block, "blocks_per_sm": bps, "items": items, "theoretical_occupancy": 0.5}}


class Records:
    """What tune.tuning_heatmap reads of make_plots.Records: the records, in .all."""

    def __init__(self, records):
        self.all = records


class Tune(unittest.TestCase):
    def test_no_build_folder_is_bad_usage(self):
        # A --build that names no configured folder: the fix said, exit 2 (bad usage), before meson runs.
        with self.assertRaises(SystemExit) as e:
            tune.build(Path(tempfile.gettempdir()) / "cudalabs-no-such-build", "02_timed_vector_add")
        self.assertEqual(e.exception.code, 2)

    def test_build_hides_tools_from_meson(self):
        # meson imports the standard library's profile module: with tools/ on PYTHONPATH it would get
        # tools/profile.py. A stand-in meson on PATH writes down the PYTHONPATH it was given.
        d = Path(tempfile.mkdtemp(prefix="cudalabs-tune-build-test-"))
        try:
            executable(d / "meson", f"#!{sys.executable}\nimport os, pathlib\n"
                                    f"pathlib.Path({str(d / 'seen')!r}).write_text(os.environ.get('PYTHONPATH', 'unset'))\n")
            (d / "build").mkdir()
            (d / "build" / "build.ninja").write_text("")
            old = {k: os.environ.get(k) for k in ("PATH", "PYTHONPATH")}
            os.environ["PATH"], os.environ["PYTHONPATH"] = f"{d}{os.pathsep}{old['PATH']}", "tools"
            try:
                program = tune.build(d / "build", "02_timed_vector_add")
            finally:
                for k, v in old.items():
                    os.environ.pop(k) if v is None else os.environ.__setitem__(k, v)
            self.assertEqual((d / "seen").read_text(), "unset")
            self.assertEqual(program, d / "build" / "labs" / "02_timed_vector_add" / "02_timed_vector_add")
        finally:
            shutil.rmtree(d)

    def test_find_lab(self):
        self.assertEqual(tune.find_lab("2"), "02_timed_vector_add")
        self.assertEqual(tune.find_lab("02"), "02_timed_vector_add")
        self.assertEqual(tune.find_lab("timed_vector_add"), "02_timed_vector_add")
        self.assertEqual(tune.find_lab("21_transpose"), "21_transpose")
        with self.assertRaises(SystemExit):
            tune.find_lab("99")

    def test_best_point(self):
        records = [sweep_record("saxpy_grid_stride", b, s, 1000 + b + s) for b in (64, 128) for s in (0, 1)]
        records.append(dict(sweep_record("saxpy_grid_stride", 256, 0, 9999), passed=False))  # wrong: never best
        records.append({"lab": "28_tuning", "variant": "saxpy_one_per_thread", "timed": True, "passed": True,
                        "median_ms": 0.001, "size": {"n": 1 << 26}})  # not a sweep point
        lines = tune.best_points(records)
        self.assertEqual(len(lines), 1)
        self.assertIn("saxpy_grid_stride at n=67108864: saxpy_grid_stride[block=128,blocks_per_sm=1,items=1]", lines[0])
        self.assertIn("(4 points)", lines[0])

    def test_heatmap_csv(self):
        records = [sweep_record("saxpy_grid_stride", b, s, 100 * b + s) for b in (64, 128, 256) for s in (0, 1, 2)]
        records.append(sweep_record("saxpy_grid_stride", 64, 0, 1.0, n=1 << 20))  # a smaller size: not drawn
        # Another items value (a separate items sweep at one launch shape): not in the
        # map, which holds the items value most points have, even where it is faster.
        records.append(sweep_record("saxpy_grid_stride", 64, 0, 7000.0, items=4))
        with tempfile.TemporaryDirectory() as tmp:
            variables = tune.tuning_heatmap(Records(records), Path(tmp))
            rows = (Path(tmp) / "heatmap.csv").read_text().split()
        self.assertEqual(len(rows), 9)
        self.assertEqual(rows[0], "0,0,6400,64,0")
        self.assertIn("2,2,25602,256,2", rows)
        self.assertEqual(variables["nx"], 3)
        self.assertEqual(variables["ytics_list"], '"max" 0, "1" 1, "2" 2')
        self.assertEqual(variables["unit"], "GB/s")
        with self.assertRaises(tune.NoSweep):
            tune.tuning_heatmap(Records(records), Path("/nonexistent"), variant="horner_grid_stride")

    def test_heatmap_renders(self):
        if not shutil.which("gnuplot") or make_plots is None:
            self.skipTest("no gnuplot, or no TOML reader for tools/make_plots.py")
        records = [sweep_record("saxpy_grid_stride", b, s, 100 * b + s) for b in (64, 128) for s in (0, 1)]
        with tempfile.TemporaryDirectory() as tmp:
            written = tune.draw_heatmaps(records, Path(tmp))
            self.assertEqual(len(written), 1)
            self.assertGreater(written[0].stat().st_size, 1000)
            self.assertTrue((Path(tmp) / "28_tuning_saxpy_grid_stride_heatmap.svg").is_file())
            json.loads(json.dumps(records))  # the records themselves stay plain JSON


if __name__ == "__main__":
    unittest.main(verbosity=2)
