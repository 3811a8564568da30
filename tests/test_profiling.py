#!/usr/bin/env python3
"""CPU tests of the counter-free diagnosis (tools/profiling/): the SASS and
resource-usage readers on canned cuobjdump text and, where the labs are built
and cuobjdump is installed, on real binaries; the sm_90 occupancy arithmetic
against every configuration the GPU's occupancy API recorded in
results/h100/records.jsonl; the experiments' arithmetic and the diagnosis on
recorded timings; the counter-free path end to end with a stand-in lab; the
comparison with Nsight Compute's diagnosis. No GPU."""
import json
import math
import os
import shutil
import sys
import tempfile
import textwrap
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
import profile as prof  # tools/profile.py (PYTHONPATH: tests/meson.build)
from grader.records import read_records
from profiling import binary, compare, experiments as ex, nocounters as nc, occupancy, run

from test_tuning_tools import executable  # tests/, this script's folder: a stand-in program from a script

RECORDS = ROOT / "results" / "h100" / "records.jsonl"
H200_PROFILING = ROOT / "results" / "h200x2" / "profiling"

# cuobjdump -sass of one kernel, cut down: a loop of 2 shared loads and 2 FFMAs
# from 0x0040 to 0x0090, a spin-wait loop of 2 instructions, the padding BRA.
SASS = textwrap.dedent("""\
    Fatbin elf code:
    ================
    arch = sm_90
    \t\tFunction : _Z6kernelPKfPf
            /*0000*/                   LDC R1, c[0x0][0x28] ;
            /*0010*/                   LDG.E.128 R4, desc[UR4][R2.64] ;
            /*0020*/                   LDG.E R8, desc[UR4][R2.64] ;
            /*0030*/                   STS [R0], R4 ;
            /*0040*/                   LDS R10, [R0] ;
            /*0050*/                   LDS.128 R12, [R0+0x10] ;
            /*0060*/                   FFMA R9, R10, R12, R9 ;
            /*0070*/                   FFMA R9, R10, R13, R9 ;
            /*0080*/                   BAR.SYNC.DEFER_BLOCKING 0x0 ;
            /*0090*/              @!P0 BRA 0x40 ;
            /*00a0*/                   SYNCS.PHASECHK.TRANS64.TRYWAIT P1, [UR4], R2 ;
            /*00b0*/              @!P1 BRA 0xa0 ;
            /*00c0*/                   STG.E desc[UR4][R2.64], R9 ;
            /*00d0*/                   EXIT ;
            /*00e0*/                   BRA 0xe0;
    """)
RES = textwrap.dedent("""\
    arch = sm_90
    Resource usage:
     Function _Z6kernelPKfPf:
      REG:40 STACK:0 SHARED:2048 LOCAL:8 CONSTANT[0]:560 TEXTURE:0 SURFACE:0 SAMPLER:0
    """)


def records():
    return read_records(RECORDS)


def largest(lab, variant):
    rs = [r for r in records() if r["lab"] == lab and r["variant"] == variant]
    return max(rs, key=lambda r: r["bytes"])


class Binary(unittest.TestCase):
    def test_resources(self):
        res = binary.parse_resource_usage(RES)
        self.assertEqual(res[("sm_90", "_Z6kernelPKfPf")],
                         {"registers": 40, "stack": 0, "shared": 2048, "local": 8})

    def test_loops_hot_region_and_mix(self):
        ins = binary.parse_sass(SASS)[("sm_90", "_Z6kernelPKfPf")]
        self.assertEqual(len(ins), 15)
        self.assertEqual(binary.loops(ins), [(0x40, 0x90), (0xa0, 0xb0)])  # BRA 0xe0 to itself is no loop
        hot, where = binary.hot_region(ins)
        self.assertIn("0x0040-0x0090", where)        # the 2-instruction spin-wait is left out
        m = binary.mix(hot, where)
        self.assertEqual((m.shared_ops, m.fp32_ops, m.n("BAR"), m.instructions), (2, 2, 1, 6))
        self.assertEqual(m.shared_bytes, {4: 1, 16: 1})   # LDS and LDS.128
        self.assertEqual(m.shared_pipe_cycles, 1 + 4)      # 128 and 512 bytes a warp, 128 bytes a cycle
        whole = binary.mix(ins, "all")
        self.assertEqual(whole.global_load_bytes, {16: 1, 4: 1})
        self.assertEqual(whole.wide_load_share, 0.5)
        self.assertEqual(whole.global_store_bytes, {4: 1})

    def test_a_collectives_convergence_loop_is_not_the_pass(self):
        # Lab 07's warp_shuffle in miniature: two loads, then the compiler's loop around a shuffle for a warp
        # that may arrive diverged (WARPSYNC, SHFL, ENDCOLLECTIVE, a branch back), then the store. The kernel has
        # no data loop: the whole kernel is the pass, not the convergence loop.
        sass = textwrap.dedent("""\
            arch = sm_90
            \t\tFunction : _Z7reducePKfPf
                    /*0000*/                   LDG.E.64 R2, desc[UR4][R4.64] ;
                    /*0010*/                   FADD R6, R2, R3 ;
                    /*0020*/                   WARPSYNC R7 ;
                    /*0030*/                   SHFL.DOWN PT, R8, R6, 0x10, 0x1f ;
                    /*0040*/                   FADD R6, R6, R8 ;
                    /*0050*/                   ENDCOLLECTIVE ;
                    /*0060*/              @!P0 BRA 0x20 ;
                    /*0070*/                   STG.E desc[UR4][R4.64], R6 ;
                    /*0080*/                   EXIT ;
                    /*0090*/                   BRA 0x90;
            """)
        ins = binary.parse_sass(sass)[("sm_90", "_Z7reducePKfPf")]
        self.assertEqual(binary.loops(ins), [(0x20, 0x60)])
        hot, where = binary.hot_region(ins)
        self.assertEqual(where, "the whole kernel (no loop)")
        self.assertTrue(binary.mix(ins[2:7], "loop").collective_only)
        self.assertFalse(binary.mix(ins, "all").collective_only)       # it loads: a pass over data
        # A data loop with a shuffle in it stays the hot loop.
        data = sass.replace("/*0020*/                   WARPSYNC R7", "/*0020*/                   LDG.E R9, desc[UR4][R4.64]")
        data = data.replace("@!P0 BRA 0x20", "@!P0 BRA 0x00")
        hot, where = binary.hot_region(binary.parse_sass(data)[("sm_90", "_Z7reducePKfPf")])
        self.assertIn("0x0000-0x0060", where)
        # Evidence whose hot loop is such a loop (read before hot_region knew them) gives no issue estimate.
        r = h200_record(median_ms=0.126112, bytes=268435456, gbps=2128.55, gflops=532.0, peak="fp32",
                        peak_gflops=66908.0)
        loop = hot_kernel({"WARPSYNC": 5, "SHFL": 5, "ENDCOLLECTIVE": 5, "FADD": 5, "STG": 1, "IMAD": 8}).hot
        loop.global_store_bytes = {4: 1}
        self.assertIsNone(nc.issue_share(r, loop))
        loop.counts["ENDCOLLECTIVE"] = 0
        self.assertIsNotNone(nc.issue_share(r, loop))

    def test_analyse_and_spills(self):
        k = binary.analyse(RES, SASS, "kernel")[0]
        self.assertTrue(k.spills)                    # LOCAL:8
        again = binary.kernel_from_json(json.loads(json.dumps(k.to_json())))
        self.assertEqual((again.hot.fp32_ops, again.hot.shared_bytes), (2, k.hot.shared_bytes))
        # Evidence written before the shared widths were recorded reads as "not known".
        old = k.to_json()
        del old["hot"]["shared_bytes"]
        self.assertIsNone(binary.kernel_from_json(old).hot.shared_pipe_cycles)
        self.assertEqual(binary.analyse(RES, SASS, "no_such_kernel"), [])

    def test_arch_specific_sass_wins(self):
        both = SASS + SASS.replace("arch = sm_90", "arch = sm_90a").replace("FFMA", "HMMA.16816.F32")
        self.assertEqual(binary.analyse(RES, both, "kernel")[0].arch, "sm_90a")
        self.assertEqual(binary.analyse(RES, both, "kernel", arch="sm_80"), [])

    def test_access_width(self):
        for opcode, b in (("LDG.E.128.CONSTANT", 16), ("LDG.E.64", 8), ("LDG.E.U8", 1), ("LDG.E", 4),
                          ("STG.E.U16", 2)):
            self.assertEqual(binary.access_bytes(opcode), b, opcode)
        for opcode, b in (("LDS.128", 16), ("LDS.U.64", 8), ("STS", 4), ("LDSM.16.M88.4", 16), ("LDSM.16.MT88.2", 8),
                          ("LDSM.16.M88", 4)):
            self.assertEqual(binary.shared_access_bytes(opcode), b, opcode)

    def test_missing_tool_names_the_fix(self):
        with self.assertRaises(binary.ToolMissing) as e:
            binary.find_tool("cuobjdump-not-installed")
        self.assertIn("pip install", str(e.exception))

    def test_real_binaries(self):
        """Lab 05's tiled16 (20 shared loads, 16 FMAs per tile step) and lab 21's
        two tile instantiations, told apart by the record's shared memory."""
        build_dir = Path(os.environ.get("CUDALABS_BUILD") or ROOT / "build")
        program05 = build_dir / "labs" / "05_matmul" / "05_matmul"
        program21 = build_dir / "labs" / "21_transpose" / "21_transpose"
        try:
            binary.find_tool("cuobjdump")
        except binary.ToolMissing:
            self.skipTest("no cuobjdump here")
        if not (program05.is_file() and program21.is_file()):
            self.skipTest(f"labs 05 and 21 are not built in {build_dir}")
        k = binary.read_binary(program05, "tiled_matmul_kernel")[0]
        self.assertEqual(k.hot.fp32_ops, 16)
        self.assertGreaterEqual(k.hot.n("LDS"), 16)
        self.assertEqual(k.hot.n("BAR"), 2)
        tiles = binary.read_binary(program21, "transpose_tiled_kernel")
        padded = binary.matching(tiles, {"resources": {"registers": 20, "static_smem": 4224}})
        plain = binary.matching(tiles, {"resources": {"registers": 20, "static_smem": 4096}})
        self.assertIn("<1>", padded.demangled)
        self.assertIn("<0>", plain.demangled)


class Occupancy(unittest.TestCase):
    def test_every_recorded_configuration(self):
        """The arithmetic gives the blocks per SM that cudaOccupancyMaxActive-
        BlocksPerMultiprocessor gave on the H100 for every recorded kernel."""
        seen = set()
        for r in records():
            res = r.get("resources") or {}
            if not res.get("registers") or not res.get("block_threads"):
                continue
            key = (res["registers"], res["block_threads"], res["static_smem"] + res["dynamic_smem"])
            if key in seen:
                continue
            seen.add(key)
            self.assertEqual(occupancy.occupancy(*key).blocks_per_sm, res["blocks_per_sm"], (r["lab"], r["variant"], key))
        self.assertGreater(len(seen), 30)

    def test_limiter_and_lift(self):
        o = occupancy.occupancy(168, 384, 197696)
        self.assertEqual((o.blocks_per_sm, o.limiter), (1, "registers"))
        o = occupancy.occupancy(74, 256, 0)
        self.assertEqual(o.blocks_per_sm, 3)
        self.assertIn("__launch_bounds__(256, 4)", occupancy.lift(o, 74, 256))
        full = occupancy.occupancy(32, 1024, 0)
        self.assertEqual((full.fraction, occupancy.lift(full, 32, 1024)), (1.0, None))
        self.assertEqual(occupancy.occupancy(300, 128, 0).blocks_per_sm, 0)


class Experiments(unittest.TestCase):
    def test_sizes(self):
        self.assertEqual([ex.parse_count(t) for t in ("1000", "2^26", "64k", "1M")], [1000, 1 << 26, 65536, 1 << 20])
        with self.assertRaises(ValueError):
            ex.parse_count("lots")
        args, n = ex.ladder_args(["--size", "2^26"])
        self.assertEqual(n, 7)
        self.assertEqual(args[1].split(",")[:3], ["67108864", "16777216", "4194304"])
        args, n = ex.ladder_args(["--nx", "8192", "--ny", "8192", "--nz", "1", "--steps", "10"])
        self.assertEqual(args, ["--nx", "8192,2048,512,128,32", "--ny", "8192,2048,512,128,32", "--nz", "1,1,1,1,1",
                                "--steps", "10"])
        self.assertEqual(ex.ladder_args(["--problem", "bytes"]), (["--problem", "bytes"], 1))
        self.assertEqual(ex.args_for_size(["--nx", "8192", "--ny", "8192", "--nz", "1"], {"nx": 512, "ny": 512, "nz": 1}),
                         ["--nx", "512", "--ny", "512", "--nz", "1"])
        self.assertEqual(ex.args_for_size(["--size", "4096"], {"m": 256, "n": 256, "k": 256}), ["--size", "256"])

    def test_the_ladder_keeps_the_multiples_a_lab_declares(self):
        # Lab 33 refuses a k that is not a multiple of 16, as its draw table in tools/grading.toml says: the
        # sixth held-out set's decode shape (--k 14336) fell to 56 on the ladder's fifth rung, and the lab exited 2.
        multiples = prof.multiples_of("33_fp8_gemm")
        self.assertEqual(multiples["--k"], 16)
        args, n = ex.ladder_args(["--m", "16", "--n", "4096", "--k", "14336"], multiples=multiples)
        self.assertEqual(n, 5)
        self.assertEqual(args[5], "14336,3584,896,224,64")
        self.assertEqual(args[1], "16,16,16,16,16")
        self.assertEqual(ex.size_multiples({"bytes": {"range": "4..2^24", "multiple_of": 4}, "m": "1..2048"}),
                         {"--bytes": 4, "--size": 4, "-n": 4})
        self.assertEqual(prof.multiples_of("05_matmul"), {})

    def ladder(self, times_us, bytes_per_rung=4):
        n = 1 << 26
        return [{"variant": "v", "size": {"n": n >> (2 * i)}, "bytes": bytes_per_rung * (n >> (2 * i)),
                 "flops": n >> (2 * i), "median_ms": t / 1e3} for i, t in enumerate(times_us)]

    def test_scaling_with_bytes(self):
        s = ex.scaling(ex.points(self.ladder([100.0, 25.2, 6.5, 2.0])))
        self.assertAlmostEqual(s.bytes_exponent, 1.0, delta=0.02)
        self.assertFalse(s.launch_bound)

    def test_launch_bound(self):
        s = ex.scaling(ex.points(self.ladder([4.1, 3.9, 3.8, 3.8])))
        self.assertTrue(s.launch_bound)
        self.assertEqual(s.work_ratio, 64)

    def test_launch_bound_holds_for_the_profiled_kernel(self):
        # Lab 06's two_loads at 2^22, as the sixth held-out set recorded it: the operation is 3 launches (2 below
        # 2^19), timed 22.6 us at the size and 16.0 us at 2^10, 1.41x for 4096x the work, which the operation's
        # times called launch-bound. Back to back it takes 14.39 us against 3.37 us for 2 launches at 2^10: less
        # 2 x 1.69 us for the later passes, the first launch takes 11.0 us (Nsight Compute: 12.3 us, L1/shared
        # at 75%), 6.5x one launch of the smallest size: not launch-bound.
        def rung(n, ms_us, no_gap_us, launches):
            return {"variant": "two_loads", "size": {"n": n}, "bytes": 4 * n, "flops": n, "median_ms": ms_us / 1e3,
                    "no_gap_ms": no_gap_us / 1e3, "extra": {"launches": launches},
                    "gpu_work": {"kernels": launches, "launches": [{"kernel": "k", "blocks": n // 512}]}}
        recs = [rung(1 << 22, 22.592, 14.389, 3), rung(1 << 20, 22.528, 7.752, 3), rung(1 << 18, 16.608, 3.955, 2),
                rung(1 << 10, 16.048, 3.374, 2)]
        s = ex.scaling(ex.points(recs))
        self.assertFalse(s.launch_bound)
        self.assertAlmostEqual(s.kernel_ms * 1e3, 14.389 - 3.374 / 2 * 2, places=3)
        # Lab 07's tree at 2^14 (2 launches, 1 at 2^8 and below): 3.52 us back to back, less 1.62 us for the
        # second launch, against 1.62 us for one launch of the smallest: launch-bound, as before.
        tiny = [rung(1 << 14, 16.432, 3.518, 2), rung(1 << 10, 17.056, 3.497, 2), rung(1 << 4, 9.92, 1.619, 1)]
        s = ex.scaling(ex.points(tiny))
        self.assertTrue(s.launch_bound)
        # Without back-to-back times the timed ones are used, the same arithmetic.
        for r in recs:
            del r["no_gap_ms"]
        s = ex.scaling(ex.points(recs))
        self.assertFalse(s.back_to_back)
        self.assertAlmostEqual(s.kernel_ms * 1e3, 22.592 - 16.048 / 2 * 2, places=3)

    def test_l2_rung_and_test(self):
        pts = ex.points(self.ladder([400.0, 100.0, 26.0, 8.5]))  # 268, 67, 16.8, 4.2 MB
        rung = ex.l2_rung(pts, 50 * 2 ** 20)
        self.assertEqual(rung.bytes, 4 * (1 << 22))
        self.assertAlmostEqual(ex.L2Test(rung.size, rung.bytes, 26e-3, 36.4e-3).ratio, 1.4)

    def test_sweep(self):
        recs = [{"variant": f"v[block={b}]", "median_ms": ms, "resources": {"occupancy": o}}
                for b, ms, o in ((64, 2.0, 0.5), (256, 1.0, 1.0), (1024, 1.05, 1.0))]
        s = ex.sweep_of(recs)
        self.assertTrue(s.occupancy_helps())
        self.assertAlmostEqual(s.spread(), 2.0)
        self.assertIsNone(ex.sweep_of(recs[:1]))

    def test_copy_bandwidth(self):
        r = largest("02_timed_vector_add", "float4")
        self.assertEqual(ex.copy_bandwidth(r)[0], r["ceiling_value"])
        horner = largest("28_tuning", "horner_grid_stride")
        bw, source = ex.copy_bandwidth(horner, [RECORDS])
        self.assertGreater(bw, 1000)
        self.assertIn("recorded", source)
        self.assertIsNone(ex.copy_bandwidth(horner, [])[0])


def hot_kernel(counts, loads=None):
    m = binary.Mix("1 innermost loop", sum(counts.values()), counts, loads or {}, {})
    return binary.Kernel("_Z1k", "k", "sm_90", {"registers": 31, "shared": 3072, "local": 0}, m,
                         binary.Mix("whole", 100, {}))


def h200_record(**fields):
    """A lab's record as the H200 wrote it (sm_90, 132 SMs timed at 1980 MHz) with FIELDS."""
    return {"cc": "9.0", "sms": 132, "clocks": {"before": {"sm_mhz": 1980}}, **fields}


class Diagnosis(unittest.TestCase):
    """The counter-free diagnosis on timings recorded on the H100."""

    def bw(self, r):
        return ex.copy_bandwidth(r, [RECORDS])

    def test_vector_add_is_memory_bound_measured(self):
        r = largest("02_timed_vector_add", "float4")
        d = nc.diagnose(r, self.bw(r))
        self.assertEqual((d.limiter, d.confidence), ("memory-bound", "measured"))

    def test_horner_is_compute_bound_measured(self):
        r = largest("28_tuning", "horner_grid_stride")
        d = nc.diagnose(r, self.bw(r))
        self.assertEqual((d.limiter, d.confidence), ("compute-bound", "measured"))

    def test_tiled_matmul_is_shared_memory_bound_likely(self):
        r = largest("05_matmul", "tiled16")
        d = nc.diagnose(r, self.bw(r), kernel=hot_kernel({"LDS": 22, "FFMA": 16, "BAR": 2, "LDG": 2}))
        self.assertEqual((d.limiter, d.confidence), ("shared-memory-bound", "likely"))
        self.assertIn("1.38 per FMA", d.findings[0].text)

    def test_register_tiled_matmul_is_compute_bound_likely(self):
        r = largest("18_matmul_cublas_gap", "thread_tile_8x8")
        d = nc.diagnose(r, self.bw(r), kernel=hot_kernel({"LDS": 40, "FFMA": 512, "BAR": 2, "IMAD": 62}))
        self.assertEqual((d.limiter, d.confidence), ("compute-bound", "likely"))
        self.assertIn("low-occupancy", d.kinds())  # 2 blocks of 256 threads at 128 registers

    def test_atomics(self):
        # Far below the copy bandwidth, atomics on 256 bins are serialised in L2 with no unit busy: latency.
        r = largest("24_histogram", "global_atomics")
        d = nc.diagnose(r, self.bw(r), kernel=hot_kernel({"LDG": 1, "REDG": 1, "IMAD": 10}))
        self.assertEqual((d.limiter, d.confidence), ("latency-bound", "likely"))
        self.assertIn("atomics", d.kinds())
        # At the copy bandwidth the bytes decide, atomics or not.
        fast = dict(r, gbps=0.9 * r["ceiling_value"])
        self.assertEqual(nc.diagnose(fast, self.bw(fast), kernel=hot_kernel({"LDG": 1, "REDG": 1})).limiter,
                         "memory-bound")

    def test_instruction_issue(self):
        # A stencil whose hot loop issues 317 instructions per 8 bytes of loads: at 20% of the copy bandwidth
        # the loads in flight would allow far more (Little's law), but the issue slots are full.
        r = {"median_ms": 13.51, "bytes": 10.74e9, "flops": 10.74e9, "gbps": 795.0, "gflops": 795.0,
             "peak": "fp32", "peak_gflops": 66908.2, "ceiling": "d2d_copy_gbps", "ceiling_value": 4070.0,
             "cc": "9.0", "clocks": {"before": {"sm_mhz": 1980}},
             "resources": {"block_threads": 1024, "blocks_per_sm": 2, "occupancy": 1.0}}
        counts = {"LDG": 2, "LDS": 2, "IMAD": 120, "IADD3": 100, "ISETP": 60, "BRA": 33}
        k = hot_kernel(counts, {4: 2})
        share = nc.issue_share(r, k.hot)[0]
        self.assertAlmostEqual(share, 100 * 795e9 / (32 * 8) * 317 / (132 * 4 * 1980e6), places=6)
        d = nc.diagnose(r, self.bw(r), kernel=k)
        self.assertEqual((d.limiter, d.confidence), ("compute-bound", "likely"))
        self.assertIn("issue", d.kinds())
        # Five times fewer instructions: issue at 19%, and the in-flight rule speaks again.
        light = hot_kernel({"LDG": 2, "LDS": 2, "IMAD": 30, "ISETP": 20, "BRA": 9}, {4: 2})
        d = nc.diagnose(r, self.bw(r), kernel=light)
        self.assertEqual(d.limiter, "memory-bound")
        self.assertIn("in-flight", d.kinds())
        # The FLOPs give the passes where the hot code moves no global bytes; padding NOPs are not issued work.
        math = hot_kernel({"FFMA": 8, "FADD": 4, "IMAD": 20, "NOP": 12})
        self.assertAlmostEqual(nc.issue_share(r, math.hot)[0],
                               100 * 795e9 / (32 * 20) * 32 / (132 * 4 * 1980e6), places=6)
        self.assertIsNone(nc.issue_share(dict(r, clocks={}), k.hot))  # no clock: no estimate

    def test_memory_bound_is_measured_only_where_dram_is_the_busiest_unit(self):
        # A 2D stencil at 66% of the copy bandwidth (lab 22's tiled_2d as recorded on the H200): above the line,
        # but its hot loop issues 229 instructions per 20 bytes of loads, about 93% of the SMs' issue slots.
        r = {"median_ms": 1.968, "bytes": 5.37e9, "flops": 4.03e9, "gbps": 2729.0, "gflops": 2046.0,
             "peak": "fp32", "peak_gflops": 66908.2, "ceiling": "d2d_copy_gbps", "ceiling_value": 4138.0,
             "cc": "9.0", "sms": 132, "clocks": {"before": {"sm_mhz": 1980}},
             "resources": {"block_threads": 256, "blocks_per_sm": 8, "occupancy": 1.0}}
        busy = hot_kernel({"LDG": 5, "LDS": 4, "STS": 1, "IMAD": 80, "IADD3": 70, "ISETP": 40, "BRA": 29}, {4: 5})
        self.assertGreater(nc.issue_share(r, busy.hot)[0], 66)
        d = nc.diagnose(r, (4138.0, "measured"), kernel=busy)
        # Two units at the line, one of them by an estimate: not 'measured'; the busier one named, 'likely'.
        self.assertEqual((d.limiter, d.confidence), ("compute-bound", "likely"))
        self.assertIn("issue", d.kinds())
        # The same bandwidth with a light loop (issue well below it): DRAM is the busiest unit, measured.
        light = hot_kernel({"LDG": 5, "LDS": 4, "STS": 1, "IMAD": 30, "ISETP": 10, "BRA": 5}, {4: 5})
        self.assertLess(nc.issue_share(r, light.hot)[0], 66)
        self.assertEqual(nc.diagnose(r, (4138.0, "measured"), kernel=light).confidence, "measured")
        # No instruction mix to estimate the issue from: the bandwidth alone, as before.
        self.assertEqual(nc.diagnose(r, (4138.0, "measured")).confidence, "measured")

    def test_a_tensor_core_kernels_flops_are_not_fp32_passes(self):
        # A tensor-core kernel's record counts the MMAs' FLOPs; over the FP32 FLOPs of a pass they would give an
        # issue share of thousands of percent. Only the bytes give the passes then.
        r = {"median_ms": 0.789, "bytes": 4.03e8, "flops": 1.1e12, "gbps": 510.0, "gflops": 1393930.0,
             "peak": "fp8_tensor", "peak_gflops": 2141060.0, "cc": "9.0", "sms": 132,
             "clocks": {"before": {"sm_mhz": 1980}}}
        mma = hot_kernel({"HGMMA": 4, "FFMA": 32, "LDG": 16, "BAR": 4, "IMAD": 100}, {16: 16})
        share, how = nc.issue_share(r, mma.hot)
        self.assertAlmostEqual(share, 100 * 510e9 / (32 * 256) * 156 / (132 * 4 * 1980e6), places=6)
        self.assertNotIn("GFLOP/s", how)
        self.assertIsNone(nc.issue_share(r, hot_kernel({"HGMMA": 4, "FFMA": 32, "BAR": 4}).hot))
        # An FP32 record with the same loop shape still counts its FLOPs.
        fp32 = dict(r, peak="fp32", peak_gflops=66908.2, gflops=20000.0, gbps=1.0)
        self.assertIn("GFLOP/s", nc.issue_share(fp32, hot_kernel({"FFMA": 32, "LDG": 1, "IMAD": 10}, {4: 1}).hot)[1])

    def test_recorded_h200_evidence(self):
        # What the counter-free path measured on the H200 (results/h200x2/profiling/), diagnosed again.
        def again(key):
            return run.diagnose_evidence(json.loads((H200_PROFILING / f"{key}.evidence.json").read_text()), [RECORDS])
        tiled = again("22-tiled_3d")
        self.assertEqual((tiled.limiter, tiled.confidence), ("compute-bound", "likely"))
        self.assertIn("issue", tiled.kinds())
        self.assertEqual(again("24-global_atomics").limiter, "latency-bound")
        self.assertEqual(again("02-float4").limiter, "memory-bound")
        for key in ("27-pi_fused", "27-option_fused"):   # held out: Nsight Compute says compute-bound
            d = run.diagnose_evidence(json.loads((H200_PROFILING / "held-out" / f"{key}.evidence.json").read_text()),
                                      [RECORDS])
            self.assertEqual((d.limiter, d.confidence), ("compute-bound", "likely"))
            self.assertIn("arithmetic", d.kinds())

    def test_a_loop_of_arithmetic_only_is_compute_bound(self):
        # A hot loop without memory access, barrier or shuffle (a random-number generator, math-library code)
        # waits only on the arithmetic pipes' few cycles, which 4 or more warps per scheduler cover; where the
        # time grows with the work the GPU is full: the issue or a pipe sets the pace, however few of its
        # instructions are the FLOPs the lab counts (here 2.5% of the FP32 peak).
        r = {"median_ms": 0.483, "bytes": 0, "flops": 8.05e8, "gbps": 0, "gflops": 1668.0, "peak": "fp32",
             "peak_gflops": 66908.2, "cc": "9.0", "clocks": {"before": {"sm_mhz": 1980}},
             "resources": {"block_threads": 256, "blocks_per_sm": 8, "occupancy": 1.0}}
        small = dict(r, median_ms=0.1285, flops=r["flops"] / 4, size={"n": 1})
        scaling = ex.scaling(ex.points([dict(r, size={"n": 4}), small]))
        self.assertGreater(scaling.flops_exponent, nc.PROPORTIONAL)
        rng = {"IMAD": 28, "LOP3": 21, "VIADD": 7, "FFMA": 6, "FMUL": 2, "I2FP": 4, "ISETP": 5, "BRA": 2}
        d = nc.diagnose(r, (4100.0, "measured"), scaling, kernel=hot_kernel(rng))
        self.assertEqual((d.limiter, d.confidence), ("compute-bound", "likely"))
        self.assertIn("arithmetic", d.kinds())
        self.assertIn("16 warps per scheduler", d.findings[0].text)
        # What keeps it from the rule: a load in the loop (the warps may wait on memory), too few warps to hide
        # the pipes' latency (2 per scheduler), a time that does not grow with the work (the GPU is not full),
        # no size ladder at all.
        def limiter(rec=r, counts=rng, s=scaling):
            return nc.diagnose(rec, (4100.0, "measured"), s, kernel=hot_kernel(counts)).limiter
        self.assertEqual(limiter(counts={**rng, "LDG": 1}), "latency-bound")
        self.assertEqual(limiter(counts={**rng, "SHFL": 1}), "latency-bound")
        self.assertEqual(limiter(rec=dict(r, resources={**r["resources"], "occupancy": 0.125})), "latency-bound")
        flat = ex.scaling(ex.points([dict(r, size={"n": 4}), dict(small, median_ms=0.4)]))
        self.assertEqual(limiter(s=flat), "latency-bound")
        self.assertEqual(limiter(s=None), "latency-bound")

    def test_no_bandwidth_no_memory_side(self):
        # A tensor-core GEMM whose lab measures no copy bandwidth: the roofline side is unknown, so a small
        # rung's L2 sensitivity does not make it memory-bound.
        r = {"median_ms": 1.714, "bytes": 100663296, "flops": 1.374e11, "gbps": 58.7, "gflops": 80200.0,
             "peak": "fp16_tensor", "peak_gflops": 1070530.0, "resources": {}}
        self.assertIsNone(nc.roofline(r, (None, "no copy ceiling"))[1])
        k = hot_kernel({"HMMA": 16, "LDS": 12, "LDG": 36, "BAR": 2, "IMAD": 40})
        l2 = ex.L2Test({"size": 1024}, 8388608, 0.0455, 0.0681)
        d = nc.diagnose(r, (None, "no copy ceiling"), l2=l2, kernel=k)
        self.assertNotEqual(d.limiter, "memory-bound")
        self.assertTrue(nc.roofline(dict(r, flops=0, gflops=0), (4000.0, "measured"))[1])  # no FLOPs: data movement

    def test_uncoalesced_from_the_l2_test(self):
        r = dict(largest("21_transpose", "naive"), resources={})  # no occupancy: no count of the loads in flight
        k = hot_kernel({"LDG": 1, "STG": 1, "IMAD": 20}, {4: 1})
        self.assertEqual(nc.diagnose(r, self.bw(r), kernel=k).limiter, "latency-bound")
        l2 = ex.L2Test({"rows": 2048, "cols": 2048}, 33554432, 0.02, 0.04)
        d = nc.diagnose(r, self.bw(r), l2=l2, kernel=k)
        self.assertEqual((d.limiter, d.confidence), ("memory-bound", "likely"))
        self.assertIn("narrow-loads", d.kinds())

    def test_uncoalesced_from_the_loads_in_flight(self):
        # One 4-byte load per thread at full occupancy: Little's law allows several times the naive transpose's
        # bandwidth, so it is not short of loads in flight; the padded tile reaches what they allow.
        k = hot_kernel({"LDG": 1, "STG": 1, "IMAD": 20}, {4: 1})
        naive = largest("21_transpose", "naive")
        self.assertEqual(nc.sm_count(naive), 132)
        d = nc.diagnose(naive, self.bw(naive), kernel=k)
        self.assertEqual((d.limiter, d.confidence), ("memory-bound", "likely"))
        self.assertIn("in-flight", d.kinds())
        self.assertIn("Little's law", d.findings[0].text)
        padded = largest("21_transpose", "padded_tile")
        allowed = nc.in_flight(padded, k.hot)[0]
        self.assertLess(allowed, nc.IN_FLIGHT_SLACK * padded["pct_of_ceiling"])
        self.assertEqual(nc.diagnose(padded, self.bw(padded), kernel=k).limiter, "latency-bound")
        self.assertIsNone(nc.in_flight(dict(naive, clocks={}), k.hot))  # no clock: no SM count, no estimate

    def test_compute_bound_is_measured_only_near_the_peak(self):
        horner = largest("28_tuning", "horner_grid_stride")
        self.assertGreaterEqual(100 * horner["gflops"] / horner["peak_gflops"], nc.NEAR_PEAK)
        busy = dict(horner, gflops=0.62 * horner["peak_gflops"])  # above BUSY, below NEAR_PEAK
        d = nc.diagnose(busy, self.bw(busy), kernel=hot_kernel({"LDS": 37, "FFMA": 512, "BAR": 1, "IMAD": 98}))
        self.assertEqual((d.limiter, d.confidence), ("compute-bound", "likely"))
        self.assertIn("shared-memory pipe", d.findings[0].text)

    def test_shared_pipe_against_fp32_issue(self):
        # A warp-tiled SGEMM step at 62% of the FP32 peak: 512 FFMAs, 37 shared loads.
        horner = largest("28_tuning", "horner_grid_stride")
        busy = dict(horner, gflops=0.62 * horner["peak_gflops"])
        counts = {"LDS": 37, "FFMA": 512, "BAR": 1, "IMAD": 98}
        # All of them LDS.128: 37 x 4 = 148 cycles of shared bandwidth at full width against 128 of FP32 issue,
        # 1.16 times as many: within what reads of one address by several threads of a warp take off the full
        # width (lab 18's conflict_free and double_buffered, 136 against 128, which Nsight Compute calls
        # compute-bound): the FMA units.
        within = hot_kernel(counts)
        within.hot.shared_bytes = {16: 37}
        self.assertEqual(nc.diagnose(busy, self.bw(busy), kernel=within).limiter, "compute-bound")
        # Twice the loads per FMA (74 LDS.128, 296 cycles, 2.31 times the FP32 side; lab 11's register_4x4 has
        # 136 against 64): the shared pipe, however many reads share an address.
        wide = hot_kernel(dict(counts, LDS=74))
        wide.hot.shared_bytes = {16: 74}
        d = nc.diagnose(busy, self.bw(busy), kernel=wide)
        self.assertEqual((d.limiter, d.confidence), ("shared-memory-bound", "likely"))
        self.assertIn("296 cycles", d.findings[0].text)
        self.assertIn("2.31 times as many", d.findings[0].text)
        # At the margin exactly: 160 cycles (40 LDS.128) against 128 is shared-memory-bound, 159 is not.
        at = hot_kernel(dict(counts, LDS=40))
        at.hot.shared_bytes = {16: 40}
        self.assertEqual(nc.diagnose(busy, self.bw(busy), kernel=at).limiter, "shared-memory-bound")
        at.hot.shared_bytes = {16: 39, 4: 3}
        self.assertEqual(nc.diagnose(busy, self.bw(busy), kernel=at).limiter, "compute-bound")
        # The same count of 4-byte loads: 37 cycles, the FMA units are busier.
        narrow = hot_kernel(counts)
        narrow.hot.shared_bytes = {4: 37}
        self.assertEqual(nc.diagnose(busy, self.bw(busy), kernel=narrow).limiter, "compute-bound")

    def test_issue_before_the_shared_count_ratio(self):
        # A work-efficient scan's tile (lab 25's blelloch as recorded on the H200): 86 shared accesses per 5
        # global ones at 24% of the copy bandwidth, and 504 instructions a pass that fill about 72% of the issue.
        r = h200_record(median_ms=2.17184, bytes=2147483648, flops=268435456, gbps=988.785, gflops=123.598,
                        peak="fp32", peak_gflops=66908.2, ceiling="d2d_copy_gbps", ceiling_value=4053.94,
                        resources={"block_threads": 512, "blocks_per_sm": 4, "occupancy": 1.0})
        counts = {"LDS": 50, "STS": 36, "LDG": 4, "STG": 1, "BAR": 20, "FADD": 22, "IMAD": 150, "IADD3": 121,
                  "ISETP": 60, "BRA": 40}
        scan = hot_kernel(counts, {4: 4})
        scan.hot.global_store_bytes = {4: 1}
        scan.hot.shared_bytes = {4: 86}
        self.assertGreaterEqual(nc.issue_share(r, scan.hot)[0], nc.BUSY)
        d = nc.diagnose(r, self.bw(r), kernel=scan)
        self.assertEqual((d.limiter, d.confidence), ("compute-bound", "likely"))
        self.assertIn("issue", d.kinds())
        # Its shared accesses 128 bytes each (LDS.128 x 86: 344 cycles of the shared pipe against 126 of
        # issue): the shared pipe is the busier, the count ratio stands.
        scan.hot.shared_bytes = {16: 86}
        self.assertEqual(nc.diagnose(r, self.bw(r), kernel=scan).limiter, "shared-memory-bound")
        # Old evidence without the widths: each shared access one cycle, 86 against 126, the issue.
        scan.hot.shared_bytes = {}
        self.assertEqual(nc.diagnose(r, self.bw(r), kernel=scan).limiter, "compute-bound")
        # Half the instructions (issue about 36%): below the line, the count ratio decides as before.
        few = hot_kernel({"LDS": 50, "STS": 36, "LDG": 4, "STG": 1, "BAR": 20, "FADD": 22, "IMAD": 30, "BRA": 20},
                         {4: 4})
        few.hot.global_store_bytes = {4: 1}
        few.hot.shared_bytes = {4: 86}
        self.assertLess(nc.issue_share(r, few.hot)[0], nc.BUSY)
        self.assertEqual(nc.diagnose(r, self.bw(r), kernel=few).limiter, "shared-memory-bound")

    def test_shared_pipe_against_the_tensor_cores(self):
        # An mma.sync GEMM at 33% of the FP16 tensor peak (lab 30's mma_ldmatrix as recorded on the H200): 44
        # ldmatrix.x4 and STS.128 (512 bytes each, 176 cycles of L1's data pipe) and the global loads staged
        # through registers (12 LDG.128 and 96 LDG.U16, 96 cycles), for 128 HMMA.16816 (4096 FLOPs each, one
        # clock at the H200's 4096 FLOPs per SM and clock, and 1.5 for the HMMA on sm_90: 192).
        r = h200_record(median_ms=0.38912, bytes=134217728, flops=137438953472, gbps=344.926, gflops=353205.0,
                        peak="fp16_tensor", peak_gflops=1070530.0, ceiling="cublas", ceiling_value=728825.0,
                        resources={"block_threads": 256, "blocks_per_sm": 1, "occupancy": 0.125})
        gemm = hot_kernel({"LDSM": 32, "STS": 12, "HMMA": 128, "LDG": 108, "BAR": 2, "IMAD": 40}, {16: 12, 2: 96})
        gemm.hot.shared_bytes = {16: 44}
        pipe, mma = nc.shared_vs_tensor(r, gemm.hot)
        self.assertEqual(pipe, 176.0 + 96.0)
        self.assertAlmostEqual(mma, 128.0 * nc.HMMA_CLOCKS[9], places=2)
        d = nc.diagnose(r, self.bw(r), kernel=gemm)
        self.assertEqual((d.limiter, d.confidence), ("shared-memory-bound", "likely"))
        self.assertIn("272 cycles", d.findings[0].text)
        # The same loop fed by cp.async (no register staging): 176 cycles against 192, the tensor cores the
        # busier; at 33% of the wgmma peak (49% of mma.sync's) they idle.
        fed = hot_kernel({"LDSM": 32, "STS": 12, "HMMA": 128, "LDGSTS": 12, "BAR": 2, "IMAD": 40})
        fed.hot.shared_bytes = {16: 44}
        d = nc.diagnose(r, self.bw(r), kernel=fed)
        self.assertEqual(d.limiter, "latency-bound")
        self.assertIn("idle-tensor", d.kinds())
        # Under a TF32 peak an HMMA is HMMA.1688: 2048 FLOPs at the 2048 an SM does a clock, the same tensor-pipe
        # time (lab 30's tf32_mma, 128 of them per pass: 192 against its 272 cycles of L1's pipe, as Nsight Compute
        # found L1/shared at 64% over the tensor pipe at 52%). Under a peak whose HMMA shape is unknown (an FP32
        # peak), no estimate. A record without its SM count takes it from its tensor peak (4096 16-bit or 2048
        # TF32 FLOPs an SM a clock on sm_90): the same estimate.
        tf32 = dict(r, peak="tf32_tensor", peak_gflops=535265.0, gflops=166533.0)  # 31% of its peak
        self.assertEqual(nc.shared_vs_tensor(tf32, gemm.hot), nc.shared_vs_tensor(r, gemm.hot))
        self.assertEqual(nc.diagnose(tf32, self.bw(tf32), kernel=gemm).limiter, "shared-memory-bound")
        self.assertIsNone(nc.shared_vs_tensor(dict(r, peak="fp32"), gemm.hot))
        self.assertEqual(nc.sm_count({k: v for k, v in tf32.items() if k != "sms"}), 132)
        self.assertEqual(nc.sm_count({k: v for k, v in r.items() if k != "sms"}), 132)
        self.assertEqual(nc.shared_vs_tensor({k: v for k, v in r.items() if k != "sms"}, gemm.hot),
                         nc.shared_vs_tensor(r, gemm.hot))
        self.assertIsNone(nc.sm_count({k: v for k, v in r.items() if k not in ("sms", "cc")}))
        # At half of mma.sync's ceiling (a third of the wgmma peak) the compute-bound rule comes first, whatever
        # the shared side.
        busy = dict(r, gflops=0.35 * r["peak_gflops"])
        self.assertEqual(nc.diagnose(busy, self.bw(busy), kernel=gemm).limiter, "compute-bound")

    def test_an_mma_sync_kernel_is_measured_against_mma_syncs_ceiling(self):
        # Lab 30's cp_async_pipeline as recorded on the H200: 41% of the FP16 tensor peak, which is wgmma's. Its
        # HMMAs hold the tensor pipe 1.5 clocks each on sm_90: 62% of what mma.sync can do, compute-bound (Nsight
        # Compute: the tensor pipe 73% busy). A wgmma kernel at the same share stays idle-tensor, and so does an
        # HMMA kernel on a GPU whose peak is the HMMA's own (sm_80).
        r = h200_record(median_ms=0.312528, bytes=134217728, flops=137438953472, gbps=429.458, gflops=439765.0,
                        peak="fp16_tensor", peak_gflops=1070530.0, ceiling="cublas", ceiling_value=728825.0,
                        resources={"block_threads": 256, "blocks_per_sm": 1, "occupancy": 0.125})
        hmma = hot_kernel({"LDSM": 32, "HMMA": 128, "LDGSTS": 12, "BAR": 1, "IMAD": 40})
        hmma.hot.shared_bytes = {16: 32}
        self.assertAlmostEqual(nc.tensor_share(r, hmma.hot, 41.08), 41.08 * 1.5)
        d = nc.diagnose(r, self.bw(r), kernel=hmma)
        self.assertEqual(d.limiter, "compute-bound")
        self.assertIn("mma.sync's HMMA reaches 67% of it", d.findings[0].text)
        hgmma = hot_kernel({"HGMMA": 8, "BAR": 1, "IMAD": 40})
        self.assertEqual(nc.diagnose(r, self.bw(r), kernel=hgmma).limiter, "latency-bound")
        ampere = dict(r, cc="8.0")
        self.assertEqual(nc.hmma_clocks(ampere, hmma.hot), 1.0)
        self.assertEqual(nc.diagnose(ampere, self.bw(ampere), kernel=hmma).limiter, "latency-bound")

    def test_a_match_in_the_hot_loop_is_a_busy_unit(self):
        # Lab 24's warp_aggregated as recorded on the H200: 32 MATCH, 33 shared atomics and 9 shared loads and
        # stores per 3 global loads. The count ratio said shared-memory-bound; the match's unit is the busy one
        # (Nsight Compute: the ADU pipe 94%), and the timing comes to 69 SM clocks per MATCH.
        r = h200_record(median_ms=0.538688, bytes=67109888, flops=0, gbps=124.58, gflops=0, peak="fp32",
                        peak_gflops=66908.0, ceiling="d2d_copy_gbps", ceiling_value=4200.0,
                        resources={"block_threads": 256, "blocks_per_sm": 8, "occupancy": 1})
        counts = {"MATCH": 32, "ATOMS": 33, "LDS": 8, "STS": 1, "LDG": 3, "BRA": 69, "POPC": 32, "IMAD": 48}
        k = hot_kernel(counts, {16: 2, 1: 1})
        d = nc.diagnose(r, (4200.0, "measured"), kernel=k)
        self.assertEqual((d.limiter, d.confidence), ("compute-bound", "likely"))
        self.assertIn("match", d.kinds())
        self.assertIn("69 SM clocks per MATCH", d.findings[0].text)
        # The same loop without the match (lab 24's warp_privatized): the count ratio decides, as before.
        k = hot_kernel({op: n for op, n in counts.items() if op != "MATCH"}, {16: 2, 1: 1})
        self.assertEqual(nc.diagnose(r, (4200.0, "measured"), kernel=k).limiter, "shared-memory-bound")
        # At the bandwidth line the bandwidth decides.
        fast = dict(r, gbps=3000.0)
        self.assertEqual(nc.diagnose(fast, (4200.0, "measured"), kernel=hot_kernel(counts, {16: 2, 1: 1})).limiter,
                         "memory-bound")

    def test_shared_memory_before_barriers(self):
        # A tree reduction in shared memory: 26 shared accesses and 9 barriers per 2 global ones.
        r = largest("04_reduction", "tree")
        tree = hot_kernel({"LDS": 17, "STS": 9, "BAR": 9, "FADD": 8, "LDG": 1, "STG": 1, "ISETP": 10}, {4: 1})
        d = nc.diagnose(r, self.bw(r), kernel=tree)
        self.assertEqual((d.limiter, d.confidence), ("shared-memory-bound", "likely"))
        self.assertIn("9 barriers", d.findings[0].text)
        # Barriers with little shared traffic stay a barrier finding.
        few = hot_kernel({"LDS": 2, "STS": 1, "BAR": 9, "FADD": 8, "LDG": 1, "STG": 1, "ISETP": 10}, {4: 1})
        d = nc.diagnose(r, self.bw(r), kernel=few)
        self.assertEqual(d.limiter, "latency-bound")
        self.assertIn("barriers", d.kinds())

    def test_launch_bound_is_measured(self):
        n = 1 << 14
        recs = [{"variant": "float4", "size": {"n": n >> (2 * i)}, "bytes": 12 * (n >> (2 * i)), "flops": n >> (2 * i),
                 "median_ms": 0.0041, "gbps": 40, "gflops": 4, "peak": "fp32", "peak_gflops": 66908.2,
                 "ceiling": "d2d_copy_gbps", "ceiling_value": 2900} for i in range(4)]
        d = run.diagnose_evidence({"records": recs})
        self.assertEqual((d.limiter, d.confidence), ("latency-bound", "measured"))
        self.assertIn("launch-bound", d.kinds())

    def test_spills_are_named(self):
        r = largest("05_matmul", "tiled16")
        k = binary.analyse(RES, SASS, "kernel")[0]
        self.assertIn("local-memory", nc.diagnose(r, self.bw(r), kernel=k).kinds())


    def test_a_grid_that_fills_part_of_the_gpu(self):
        # Lab 14's register_tiled at --seq 4096 as recorded on the H200 (no launches then), with the launch the
        # trace now records: a 4096 x 64 output in 128 x 64 tiles is 32 blocks of 128 threads for 132 SMs that
        # fit 4 each.
        ev = json.loads((H200_PROFILING.parent.parent / "h200" / "profiling" / "held-out-2" /
                         "14-register_tiled.evidence.json").read_text())
        self.assertNotIn("launches", ev["records"][0]["gpu_work"])   # recorded before the trace kept launches
        # Without launches the rules of the instruction mix decide: a register-tiled loop whose shared side
        # (280 cycles at full width) is within the broadcast margin of its FP32 side (256).
        self.assertEqual(run.diagnose_evidence(ev, [RECORDS]).limiter, "compute-bound")
        name = ev["kernel"]["name"]

        def with_launches(launches, **more):
            e = json.loads(json.dumps(ev))
            for r in e["records"]:
                r["gpu_work"]["launches"] = launches
                r.update(more)
            return run.diagnose_evidence(e, [RECORDS])

        d = with_launches([{"kernel": name, "blocks": 32, "block_threads": 128}])
        self.assertEqual((d.limiter, d.confidence), ("latency-bound", "likely"))
        self.assertIn("partial-grid", d.kinds())
        self.assertIn("32 blocks of 128 threads for 132 SMs that fit 4 blocks each (528 in one full wave): 32 SMs "
                      "with work (24%), 2% of the GPU's warp slots filled", d.findings[0].text)
        self.assertIn("split-K", d.findings[0].text)
        # The record's own SM count wins over the one made from the FP32 peak. On 40 SMs, 32 blocks are less
        # than a wave (160) but give 80% of the SMs work: said, and the other rules decide.
        d = with_launches([{"kernel": name, "blocks": 32, "block_threads": 128}], sms=40)
        grid = next(f for f in d.findings if f.kind == "partial-grid")
        self.assertIn("for 40 SMs", grid.text)
        self.assertEqual(grid.confidence, "measured")
        self.assertEqual(d.limiter, "compute-bound")
        # Matched by the binary's name: another kernel's larger launch does not hide it.
        d = with_launches([{"kernel": "_Z6reducev", "blocks": 100000, "block_threads": 256},
                           {"kernel": name, "blocks": 32, "block_threads": 128}])
        self.assertEqual(d.limiter, "latency-bound")
        # Unmatched: the largest launch stands for the kernel.
        d = with_launches([{"kernel": "_Z5otherv", "blocks": 32, "block_threads": 128},
                           {"kernel": "_Z5tinyv", "blocks": 1, "block_threads": 32}])
        self.assertIn("the run's largest launch has 32 blocks", d.findings[0].text)
        # Most SMs with work (100 of 132, 76%) but less than a wave: said, and the other rules decide.
        d = with_launches([{"kernel": name, "blocks": 100, "block_threads": 128}])
        self.assertEqual(d.limiter, "compute-bound")
        self.assertIn("partial-grid", {f.kind for f in d.findings})
        # One full wave or more: nothing is said.
        for blocks in (528, 5000):
            d = with_launches([{"kernel": name, "blocks": blocks, "block_threads": 128}])
            self.assertEqual(d.limiter, "compute-bound")
            self.assertNotIn("partial-grid", d.kinds() | {f.kind for f in d.findings})

    def test_the_grid_is_the_largest_launch_of_the_kernels_function(self):
        # Lab 25's hillis_steele at 2^22 (the sixth held-out set): scan_tiles_kernel<HillisSteeleTile, false>
        # over 8192 tiles, then <..., true> over their sums in 16 blocks. The binary's match was the second, and
        # its 16 blocks made the grid rule say latency-bound; Nsight Compute profiled the first (8192 blocks,
        # L1/shared at 76%).
        self.assertEqual(nc.function_name("_Z17scan_tiles_kernelI16HillisSteeleTileLb1EfEvPKT1_PS1_lS4_"),
                         "scan_tiles_kernel")
        self.assertEqual(nc.function_name("_ZN43_GLOBAL__N__3b7137e9_10_kernels_cu_9f54474d21softmax_online_kernelEPKfPfi"),
                         "softmax_online_kernel")
        self.assertEqual(nc.function_name("plain_kernel"), "plain_kernel")
        ev = json.loads((ROOT / "results" / "h200" / "profiling" / "held-out-6" / "table-b" /
                         "25-hillis_steele-l2.evidence.json").read_text())
        record, kernel = ev["records"][0], binary.kernel_from_json(ev["kernel"])
        self.assertEqual(nc.partial_grid(record, kernel), None)
        d = run.diagnose_evidence(ev, [RECORDS])
        self.assertEqual((d.limiter, d.confidence), ("shared-memory-bound", "likely"))

    def test_the_grid_rule_is_silent_where_the_grid_fills_the_gpu(self):
        # Every recorded kernel given the smallest launch that fills the GPU (one full wave at the blocks per SM
        # its resources allow): its diagnosis is what it was without launches.
        for ev_file in sorted(H200_PROFILING.parent.parent.glob("h200*/profiling/**/*.evidence.json")):
            ev = json.loads(ev_file.read_text())
            for r in ev["records"]:      # evidence traced with launches (held-out-3/grid/) is taken without them
                (r.get("gpu_work") or {}).pop("launches", None)
            before = run.diagnose_evidence(ev, [RECORDS])
            for r in ev["records"]:
                res, sms = r.get("resources") or {}, nc.sm_count(r) or 132
                r.setdefault("gpu_work", {})["launches"] = [
                    {"kernel": (ev.get("kernel") or {}).get("name", "_Z1k"),
                     "blocks": sms * (res.get("blocks_per_sm") or 1), "block_threads": res.get("block_threads") or 256}]
            after = run.diagnose_evidence(ev, [RECORDS])
            self.assertEqual((after.limiter, after.confidence), (before.limiter, before.confidence), ev_file)
            self.assertNotIn("partial-grid", {f.kind for f in after.findings}, ev_file)

    def test_busiest_is_not_busy(self):
        # Lab 31's pingpong_fp16 as recorded on the H200: 36% of the FP16 tensor peak, its tensor cores the busiest
        # unit and not a busy one: latency-bound, as Nsight Compute's line at BUSY (60%) says.
        ev = json.loads((H200_PROFILING.parent.parent / "h200" / "profiling" / "held-out-2" / "pinned" /
                         "31-pingpong_fp16.evidence.json").read_text())
        d = run.diagnose_evidence(ev, [RECORDS])
        self.assertEqual((d.limiter, d.confidence), ("latency-bound", "likely"))
        self.assertIn("idle-tensor", d.kinds())
        self.assertIn("at 36% of their peak they idle more cycles than they work", d.findings[0].text)

        def at(share):
            e = json.loads(json.dumps(ev))
            main = e["records"][0]
            main["gflops"] = share / 100 * main["peak_gflops"]
            return run.diagnose_evidence(e, [RECORDS])
        # Any tensor-core kernel: compute-bound from TENSOR_BUSY of the peak (the FLOPs understate the pipe's
        # cycles), and plainly so from BUSY; below, latency-bound whatever the kernel.
        self.assertEqual(at(nc.TENSOR_BUSY + 1).limiter, "compute-bound")
        self.assertIn("busier than the FLOPs show", at(nc.TENSOR_BUSY + 1).findings[0].text)
        self.assertNotIn("busier than the FLOPs show", at(nc.BUSY + 5).findings[0].text)
        self.assertEqual(at(nc.TENSOR_BUSY - 1).limiter, "latency-bound")
        # A tensor-core kernel fed by too many shared loads is still shared-memory-bound, busy or not.
        r = {"median_ms": 1.0, "bytes": 1e8, "flops": 1e11, "gbps": 100.0, "gflops": 1e5, "peak": "fp16_tensor",
             "peak_gflops": 1070530.0, "resources": {}}
        k = hot_kernel({"HMMA": 8, "LDS": 24, "BAR": 2})
        self.assertEqual(nc.diagnose(r, (4100.0, "measured"), kernel=k).limiter, "shared-memory-bound")


class CounterFreePath(unittest.TestCase):
    """run.counter_free with a stand-in lab that writes one record per size in
    its --size list (time proportional to bytes) and a stand-in cuobjdump."""

    def setUp(self):
        self.dir = Path(tempfile.mkdtemp(prefix="cudalabs-nocounters-test-"))
        self.lab = executable(self.dir / "lab", textwrap.dedent(f'''\
            #!{sys.executable}
            import json, sys
            a = sys.argv[1:]
            if "FAIL" in a: sys.exit(3)
            sizes = [int(s) if "^" not in s else 2 ** int(s[2:]) for s in a[a.index("--size") + 1].split(",")]
            # TWO_DIMS: a second size, --dim, whose default is a list of two (as lab 17's): a list of
            # --size of another length is refused, as the harness refuses lists that do not zip.
            dims = [int(a[a.index("--dim") + 1])] if "--dim" in a else [64, 128] if "TWO_DIMS" in a else [1]
            if len(sizes) > 1 and len(dims) > 1 and len(sizes) != len(dims):
                sys.exit(2)
            if "MULT8" in a and any(n % 8 for n in sizes):   # a size the lab refuses (lab 33's k: multiples of 16)
                sys.exit(2)
            points = list(zip(sizes * len(dims), dims * len(sizes)))[:max(len(sizes), len(dims))]
            cold = "--flush-l2" in a
            with open(a[a.index("--json") + 1], "a") as f:
                for n, d in points:
                    ms = 12 * n / 2.5e9 * (1.6 if cold and n * 12 < 40e6 else 1.0) + 3e-3
                    f.write(json.dumps({{"variant": a[a.index("--variant") + 1], "size": {{"n": n, "dim": d}}, "bytes": 12 * n,
                        "flops": n, "median_ms": ms, "gbps": 12 * n / ms / 1e6, "gflops": n / ms / 1e6,
                        "ceiling": "d2d_copy_gbps", "ceiling_value": 2900.0, "peak": "fp32", "peak_gflops": 66908.2,
                        "cc": "9.0", "resources": {{"registers": 40, "block_threads": 256, "blocks_per_sm": 6,
                        "occupancy": 0.75, "static_smem": 1024, "dynamic_smem": 0}}}}) + "\\n")
            '''))
        self.cuobjdump = executable(self.dir / "cuobjdump", textwrap.dedent(f'''\
            #!{sys.executable}
            import sys
            print({RES!r} if sys.argv[1] == "-res-usage" else {SASS!r})
            '''))

    def tearDown(self):
        shutil.rmtree(self.dir)

    def test_end_to_end_and_rediagnosis(self):
        log = []
        d, ev, notes = run.counter_free(self.lab, "float4", ["--size", "2^26"], "kernel",
                                        cuobjdump=str(self.cuobjdump), log=log.append)
        self.assertEqual((d.limiter, d.confidence), ("memory-bound", "measured"))  # 2.5 of 2.9 TB/s
        self.assertEqual(len(ev["records"]), 7)
        self.assertTrue(ev["l2_cold"])                       # one rung fits L2: timed again, flushed
        self.assertIn("l2-test", d.kinds())
        self.assertEqual(ev["kernel"]["resources"]["registers"], 40)
        self.assertIn("local-memory", d.kinds())             # the canned binary spills
        again = run.diagnose_evidence(json.loads(json.dumps(ev)))
        self.assertEqual(again.to_json(), d.to_json())
        self.assertIn("counter-free diagnosis", run.report("02 float4", d, notes, ev["seconds"]))

    def test_a_size_left_at_a_default_list_is_pinned(self):
        log = []
        d, ev, notes = run.counter_free(self.lab, "float4", ["--size", "2^26"], "kernel", extra=["TWO_DIMS"],
                                        cuobjdump=str(self.cuobjdump), log=log.append)
        self.assertEqual(ev["extra"], ["TWO_DIMS", "--dim", "64"])
        self.assertEqual({r["size"]["dim"] for r in ev["records"]}, {64})
        self.assertEqual(len(ev["records"]), 7)
        self.assertEqual((d.limiter, d.confidence), ("memory-bound", "measured"))
        self.assertEqual(ex.varying_sizes([{"size": {"n": 1, "dim": 3}}, {"size": {"n": 1, "dim": 4}}]), ["--dim", "3"])
        self.assertEqual(ex.varying_sizes([{"size": {"n": 1}}, {"size": {"n": 1}}]), [])

    def test_a_rung_the_lab_refuses_is_dropped(self):
        log = []
        # 4000, 1000, 250, 62: the lab refuses 250 and 62; the ladder loses rungs until it takes it.
        d, ev, notes = run.counter_free(self.lab, "float4", ["--size", "4000", "MULT8"], "kernel",
                                        cuobjdump=str(self.cuobjdump), log=log.append)
        self.assertEqual(sorted(r["size"]["n"] for r in ev["records"]), [1000, 4000])
        self.assertTrue(any("refused" in line for line in log))
        self.assertEqual(d.limiter, "latency-bound")
        # The multiple declared: every rung is one, none is lost (250 -> 248, 62 -> 64).
        d, ev, notes = run.counter_free(self.lab, "float4", ["--size", "4000", "MULT8"], "kernel",
                                        cuobjdump=str(self.cuobjdump), log=log.append, multiples={"--size": 8})
        self.assertEqual(sorted(r["size"]["n"] for r in ev["records"]), [64, 248, 1000, 4000])
        # Refused at every rung but the size as given (4008; 1002, 250, 62): that size alone, still diagnosed.
        d, ev, notes = run.counter_free(self.lab, "float4", ["--size", "4008", "MULT8"], "kernel",
                                        cuobjdump=str(self.cuobjdump), log=log.append)
        self.assertEqual([r["size"]["n"] for r in ev["records"]], [4008])
        self.assertIn(d.limiter, nc.LIMITERS)

    def test_lab_failure(self):
        with self.assertRaises(ex.LabFailed) as e:
            run.counter_free(self.lab, "float4", ["--size", "1000", "FAIL"], "kernel", cuobjdump=str(self.cuobjdump),
                             log=lambda _: None)
        self.assertEqual(e.exception.code, 3)


class Comparison(unittest.TestCase):
    def test_verdicts(self):
        self.assertEqual(compare.verdict("memory-bound", "memory-bound", "likely"), "agree")
        self.assertEqual(compare.verdict("memory-bound", "latency-bound", "likely"), "differ")
        self.assertEqual(compare.verdict("memory-bound", "compute-bound", "measured"), "contradicts")
        self.assertEqual(compare.verdict(None, "compute-bound", "measured"), "no-counters")
        self.assertEqual(nc.main_limiter_of_ncu({"occupancy", "stalls", "shared-memory-bound"}), "shared-memory-bound")

    def test_table_summary_and_recompare(self):
        out = Path(tempfile.mkdtemp(prefix="cudalabs-compare-test-"))
        try:
            rows = []
            for i, (ncu, cf, conf) in enumerate([("memory-bound", "memory-bound", "measured"),
                                                 ("latency-bound", "latency-bound", "likely"),
                                                 ("shared-memory-bound", "latency-bound", "likely"),
                                                 ("compute-bound", "compute-bound", "measured")]):
                rows.append({"key": f"k{i}", "lab": "02", "variant": "v", "args": "--size 1", "seconds": 10 + i,
                             "counter_free": {"limiter": cf, "confidence": conf, "findings": []},
                             "ncu": {"status": "ok", "limiter": ncu, "version": "2025.3.1.0"}})
            rows.append({"key": "k4", "lab": "02", "variant": "v", "args": "--size 1", "seconds": 9,
                         "counter_free": {"limiter": "memory-bound", "confidence": "measured", "findings": []},
                         "ncu": {"status": "refused", "reason": "NaN", "version": "2025.3.1.0"}})
            text = compare.write(rows, out)
            self.assertIn("same main limiter: 3 of 4 (75%", text)
            self.assertIn("NOT met", text)
            self.assertIn("'measured' confidence: 0", text)
            self.assertIn("refused or failed: k4", text)
            self.assertIn("2025.3.1.0", text)
            self.assertIn("| k2 |", (out / "comparison.md").read_text())
            # the evidence of k2 says memory-bound at the copy bandwidth: recompare rebuilds its diagnosis
            r = largest("02_timed_vector_add", "float4")
            (out / "k2.evidence.json").write_text(json.dumps({"records": [r]}))
            text = compare.recompare(out, [RECORDS])
            self.assertIn("same main limiter: 3 of 4", text)
            self.assertEqual(json.loads((out / "comparison.json").read_text())["kernels"][2]["counter_free"]["limiter"],
                             "memory-bound")
        finally:
            shutil.rmtree(out)

    def test_no_recorded_kernel_is_contradicted_with_measured_confidence(self):
        # Every comparison recorded on the H200 (the 21 fitted, and the held-out sets), diagnosed again under the
        # current rules: 'measured' must never name another limiter than Nsight Compute's. Three rows do, and are
        # named here so that any other fails this test. Two softmax kernels of the fifth held-out set that the lab
        # times at 87% and 63% of the copy bandwidth, which Nsight Compute, holding the SMs at its base clock
        # (1.35 and 1.44 GHz against the lab's 1.98), found issuing 73-75% of the cycles with DRAM at 67-74%
        # (results/h200/profiling/held-out-5/README.md; at the GPU's own clocks both agree, gpu-clocks/ there,
        # but the rows stand as recorded). And the sixth set's 07-tree-tiny: launch-bound, one 64-block launch of
        # 1.9 us back to back, where Nsight Compute, with no unit above 11% busy, names shared memory from its
        # stalls (results/h200/profiling/held-out-6/README.md).
        h200 = ROOT / "results" / "h200" / "profiling"
        folders = [H200_PROFILING, H200_PROFILING / "held-out", h200 / "held-out-2", h200 / "held-out-2" / "pinned",
                   h200 / "held-out-3" / "table-a", h200 / "held-out-3" / "table-b",
                   h200 / "held-out-4" / "table-a", h200 / "held-out-4" / "table-b",
                   h200 / "held-out-5" / "table-a", h200 / "held-out-5" / "table-b",
                   h200 / "held-out-6" / "table-a", h200 / "held-out-6" / "table-b"]
        out = Path(tempfile.mkdtemp(prefix="cudalabs-compare-test-"))
        try:
            compare.recompare(folders, [RECORDS], out)
            rows = json.loads((out / "comparison.json").read_text())["kernels"]
            self.assertEqual(len(rows), 90)
            self.assertEqual(sorted(r["key"] for r in rows if compare.row_verdict(r) == "contradicts"),
                             ["07-tree-tiny", "12-split_rows", "20-aot_generic"])
            tiled_2d = next(r for r in rows if r["key"] == "22-tiled_2d")["counter_free"]
            self.assertEqual((tiled_2d["limiter"], tiled_2d["confidence"]), ("compute-bound", "likely"))
        finally:
            shutil.rmtree(out)

    def test_recompare_merges_the_parts_of_a_table(self):
        # Two runs of parts of the table kept side by side: one table, Nsight Compute's limiter re-derived from
        # the metrics its rows kept, written where --out says.
        src = Path(tempfile.mkdtemp(prefix="cudalabs-compare-test-"))
        try:
            warp_tiling = recorded_ncu("18-warp_tiling")
            row = {"lab": "18", "variant": "v", "args": "--size 1", "seconds": 1,
                   "counter_free": {"limiter": "compute-bound", "confidence": "likely", "findings": []}}
            (src / "comparison.json").write_text(json.dumps({"kernels": [
                {**row, "key": "a", "ncu": {"status": "ok", "limiter": "shared-memory-bound", "metrics": warp_tiling}},
                {**row, "key": "b", "ncu": {"status": "ok", "limiter": "latency-bound"}}]}))
            (src / "comparison-2.json").write_text(json.dumps({"kernels": [
                {**row, "key": "c", "ncu": {"status": "ok", "limiter": "compute-bound"}},
                {**row, "key": "b", "ncu": {"status": "ok", "limiter": "compute-bound"}}]}))
            out = src / "merged"
            text = compare.recompare(src, (), out, lambda m: prof.kinds(prof.diagnose(m)))
            rows = json.loads((out / "comparison.json").read_text())["kernels"]
            self.assertEqual([r["key"] for r in rows], ["a", "b", "c"])
            self.assertEqual(rows[0]["ncu"]["limiter"], "compute-bound")   # from the kept metrics
            self.assertEqual(rows[1]["ncu"]["limiter"], "compute-bound")   # the later file's row
            self.assertIn("3 of 3", text)
            self.assertEqual(len(json.loads((src / "comparison.json").read_text())["kernels"]), 2)  # untouched
            # a second folder (a held-out batch kept apart): merged after the first, its rows' evidence from it
            held = src / "held-out"
            held.mkdir()
            (held / "comparison.json").write_text(json.dumps({"kernels": [
                {**row, "key": "d", "ncu": {"status": "ok", "limiter": "memory-bound"}}]}))
            (held / "d.evidence.json").write_text(json.dumps({"records": [largest("02_timed_vector_add", "float4")]}))
            text = compare.recompare([src, held], [RECORDS], out, lambda m: prof.kinds(prof.diagnose(m)))
            rows = json.loads((out / "comparison.json").read_text())["kernels"]
            self.assertEqual([r["key"] for r in rows], ["a", "b", "c", "d"])
            self.assertEqual(rows[3]["counter_free"]["limiter"], "memory-bound")   # from held-out/d.evidence.json
            self.assertNotIn("_folder", rows[3])
            self.assertIn("4 of 4", text)
            with self.assertRaises(ValueError) as e:
                compare.recompare([src, held])
            self.assertIn("--out", str(e.exception))
            with self.assertRaises(ValueError) as e:
                compare.recompare(out / "nothing")
            self.assertIn("--compare-table", str(e.exception))
        finally:
            shutil.rmtree(src)

    def test_tables_keep_the_metrics_the_diagnosis_reads(self):
        # Of Nsight Compute's 1100+ metrics a table keeps what rebuilds the diagnosis and explains it: every name
        # diagnose() reads, the stall reasons, the issue and pipe shares; not the L2 slices, launch details, device
        # attributes. The recorded H200 tables hold exactly what kept_metrics keeps (trimming them changes nothing).
        recorded = recorded_ncu("18-warp_tiling")
        self.assertEqual(compare.kept_metrics(recorded, prof.READS), recorded)
        dropped = {"lts__d_sectors.avg.pct_of_peak_sustained_elapsed": 3.0, "launch__grid_dim_x": 64.0,
                   "device__attribute_max_shared_memory_per_block": 49152.0, "smsp__pcsamp_sample_count": 9.0,
                   "sm__sass_inst_executed_op_ldgsts_cache_access.sum": 0.0}
        kept = {"smsp__pcsamp_warps_issue_stalled_wait": 12.0, "sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_"
                "elapsed": 40.0, "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_elapsed": 55.0,
                "sm__issue_active.avg.pct_of_peak_sustained_elapsed": 70.0, "ID": 0.0, "CC": 9.0,
                "memory_l2_theoretical_sectors_global_ideal": 4096.0}
        full = {**{k: 1.0 for k in prof.READS}, **dropped, **kept}
        self.assertEqual(set(compare.kept_metrics(full, prof.READS)), set(prof.READS) | set(kept))
        out = Path(tempfile.mkdtemp(prefix="cudalabs-compare-test-"))
        try:
            row = {"key": "k", "lab": "02", "variant": "v", "args": "--size 1", "seconds": 1,
                   "counter_free": {"limiter": "compute-bound", "confidence": "likely", "findings": []},
                   "ncu": {"status": "ok", "limiter": nc.main_limiter_of_ncu(prof.kinds(prof.diagnose(full))),
                           "metrics": dict(full)}}
            compare.write([row], out, prof.READS)   # as --compare-table writes
            written = json.loads((out / "comparison.json").read_text())["kernels"][0]["ncu"]["metrics"]
            self.assertEqual(set(written), set(prof.READS) | set(kept))
            # an untrimmed table from before: --recompare trims it and gives the same table
            (out / "comparison.json").write_text(json.dumps({"kernels": [{**row, "ncu": {**row["ncu"],
                                                                                           "metrics": full}}]}))
            before = (out / "comparison.md").read_text()
            compare.recompare(out, (), None, lambda m: prof.kinds(prof.diagnose(m)), prof.READS)
            self.assertEqual(set(json.loads((out / "comparison.json").read_text())["kernels"][0]["ncu"]["metrics"]),
                             set(prof.READS) | set(kept))
            self.assertEqual((out / "comparison.md").read_text(), before)
        finally:
            shutil.rmtree(out)

    def test_table_reader(self):
        entries = compare.load_table(ROOT / "tools" / "profiling" / "kernels.toml")
        self.assertGreaterEqual(len(entries), 16)
        self.assertEqual(len({compare.key(e) for e in entries}), len(entries))
        bad = Path(tempfile.mkdtemp()) / "bad.toml"
        bad.write_text('[[kernel]]\nlab = "02"\n')
        with self.assertRaises(ValueError) as e:
            compare.load_table(bad)
        self.assertIn("needs 'variant'", str(e.exception))
        shutil.rmtree(bad.parent)


def recorded_ncu(key):
    """Nsight Compute's metrics of one kernel of the H200 comparison in results/h200x2/profiling/."""
    for name in ("comparison.json", "comparison-2.json"):
        for r in json.loads((H200_PROFILING / name).read_text())["kernels"]:
            if r["key"] == key:
                return r["ncu"]["metrics"]
    raise KeyError(key)


class NcuReports(unittest.TestCase):
    def test_the_busiest_unit_decides(self):
        # Recorded on the H200: the warp-tiled SGEMM issues at 74% with L1/shared at 62% (short scoreboard its
        # top stall): the SM is busier, compute-bound as Nsight Compute's breakdown has it. lab 05's tile:
        # L1/shared at 94% above the SM's 74%, shared-memory-bound.
        self.assertEqual(nc.main_limiter_of_ncu(prof.kinds(prof.diagnose(recorded_ncu("18-warp_tiling")))),
                         "compute-bound")
        self.assertEqual(nc.main_limiter_of_ncu(prof.kinds(prof.diagnose(recorded_ncu("05-tiled16")))),
                         "shared-memory-bound")
        self.assertEqual(nc.main_limiter_of_ncu(prof.kinds(prof.diagnose(recorded_ncu("18-thread_tile_8x8")))),
                         "shared-memory-bound")   # SM at 59%: not busy, L1/shared at 75%

    def test_missing_or_nan_key_metrics_are_refused(self):
        good = {k: 50.0 for k in prof.KEY_METRICS}
        self.assertIsNone(prof.refusal(good))
        self.assertIn("lacks dram__throughput", prof.refusal({k: v for k, v in good.items() if "dram" not in k}))
        self.assertIn("NaN", prof.refusal({**good, "sm__throughput.avg.pct_of_peak_sustained_elapsed": math.nan}))
        self.assertEqual(prof.number("nan") is not None and math.isnan(prof.number("nan")), True)

    def test_l2_bound(self):
        m = {"sm__throughput.avg.pct_of_peak_sustained_elapsed": 30.0,
             "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed": 85.0,
             "dram__throughput.avg.pct_of_peak_sustained_elapsed": 35.0,
             "lts__throughput.avg.pct_of_peak_sustained_elapsed": 85.0}
        k = prof.kinds(prof.diagnose(m))
        self.assertIn("l2-bound", k)
        self.assertEqual(nc.main_limiter_of_ncu(k), "memory-bound")

    def test_version(self):
        d = Path(tempfile.mkdtemp())
        try:
            ncu = executable(d / "ncu", "#!/bin/sh\necho 'NVIDIA (R) Nsight Compute Command Line Profiler'\n"
                                        "echo 'Version 2025.3.1.0 (build 36398880) (public-release)'\n")
            self.assertEqual(prof.ncu_version(str(ncu)), "2025.3.1.0")
            self.assertEqual(prof.ncu_version(str(d / "missing")), "unknown")
        finally:
            shutil.rmtree(d)


if __name__ == "__main__":
    unittest.main(verbosity=1)
