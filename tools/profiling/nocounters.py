"""The diagnosis without performance counters: what limits a kernel, from
its measured time against the lab's ceilings (the roofline), the compiled
kernel (binary.py, occupancy.py) and the experiments (experiments.py). Each
finding says how sure it is:

  measured  the number was timed, or read from the binary or the GPU's
            occupancy API: it is a fact about this kernel on this GPU
  likely    an inference from those facts (the instruction mix of the hot
            loop, how the time responds to a change): usually right, and
            what Nsight Compute's counters would confirm or refute

The main limiter is one of Nsight Compute's four (tools/profile.py):
memory-bound, compute-bound, shared-memory-bound, latency-bound; launch-bound
is the latency-bound kind that the size ladder measures. CPU only: every
input is a record, a Kernel or an experiment result."""
from dataclasses import dataclass, field

from . import binary, occupancy as occ_mod
from .experiments import LAUNCH_RATIO

BUSY = 60.0             # % of a ceiling: the kernel is bound by it (Nsight Compute's threshold in profile.py)
NEAR_PEAK = 75.0        # % of the FP32 peak from which compute-bound is 'measured': the peak is one FFMA per
                        # scheduler per clock, the whole issue rate, so FP32 then fills three quarters of the issue
                        # slots and no other unit can be busier; below it the shared-memory pipe may be, unseen
TENSOR_BUSY = 50.0      # % of the tensor-core peak from which a tensor-core kernel is taken as compute-bound. Nsight
                        # Compute's line is BUSY on the tensor pipe's active cycles, which the FLOP count can only
                        # understate (a pipe cycle is counted active at less than the full rate): a kernel somewhat
                        # below BUSY in FLOPs may be at it in pipe cycles. Below half the peak the tensor cores idle
                        # more cycles than they work: however busiest, they are not busy, and the warps wait
LAUNCH_MS = 0.05        # a launch-bound kernel takes less than this
SHARED_PIPE_VS_FP32 = 1.25  # shared-pipe cycles at full width per FP32-issue cycle in the hot loop from which shared
                        # is the limit. The estimate counts every shared load at its full width (an LDS.128 4
                        # cycles); a register tile's fragment loads are read by several threads of a warp at one
                        # address (a tile's row or column value, the same for the threads of that row or column),
                        # and those share the cycle: Nsight Compute counted 3.0 wavefronts per shared instruction in
                        # register-tiled loops whose full-width estimate is 3.4-3.7, so the estimate runs up to a
                        # quarter (3.7 / 3.0 = 1.23) above the pipe's cycles there, and only a shared side more than
                        # that above the FP32 side is above it in the hardware too
HMMA_FLOPS = {          # FLOPs of one warp's HMMA under the record's tensor peak, which says its shape: with 16-bit
    "fp16_tensor": 4096,  # inputs HMMA.16816 (mma.sync m16n8k16, and each half of a 16x16x16 wmma), 2 x 16 x 8 x 16;
    "bf16_tensor": 4096,  # with TF32 inputs HMMA.1688 (m16n8k8), 2 x 16 x 8 x 8, at half the 16-bit rate: the same
    "tf32_tensor": 2048,  # cycles of the tensor pipe. Other instructions (IMMA, HGMMA) are not counted here
}
TENSOR_PER_SM = {"9.0": {"fp16_tensor": 4096, "bf16_tensor": 4096, "tf32_tensor": 2048}}  # dense tensor FLOPs per SM
                        # per clock: the H200's records that carry their SM count give 1070.5 TFLOP/s (16-bit) and
                        # 535.3 (TF32) on 132 SMs at 1980 MHz, 4096 and 2048 an SM a clock
HMMA_CLOCKS = {9: 1.5}  # clocks of an SM's tensor pipe that one HMMA.16816 holds, by compute capability major, where
                        # the record's 16-bit tensor peak gives it one. On sm_90 that peak is wgmma's (HGMMA);
                        # mma.sync and wmma compile to Ampere's HMMA, which issues at two thirds of it. Measured, not
                        # fitted: lab 30's probe of mma.sync alone (FP16 from registers, no loads; results/h100/notes/
                        # 30_tensor_core_gemm.md) reached at best 654.9 TFLOP/s, 0.61 of the 1070.5 peak, and the SASS
                        # stall counts space one scheduler's HMMAs 6 clocks apart (1.5 an SM, 4 schedulers); Nsight
                        # Compute's tensor-pipe cycles over the shared wavefronts of lab 30's two mma.sync GEMMs (one
                        # ldmatrix wavefront per HMMA) give 1.50 and 1.43-1.57. On sm_80 the HMMA is the peak's own
                        # instruction (absent: 1)
SHARED_PER_MATH = 0.5   # shared-memory instructions per FP32 math instruction in the hot loop: shared-bound
SHARED_PER_MMA = 2.0    # ... per tensor-core instruction
SHARED_PER_GLOBAL = 4.0  # memory-side kernels: shared instructions per global access
BARRIERS_PER_GLOBAL = 4.0
MATH_SHARE = 0.4        # FP32 math share of the hot loop's instructions: an issue-bound FMA loop
L2_SENSITIVE = 1.3      # cold (L2 flushed) over warm time: paced by where the data lives
OCCUPANCY_LOW = 0.5
DRAM_LATENCY_US = 0.6   # a global load's round trip to DRAM under load on H100/H200-class GPUs, of the order of
IN_FLIGHT_SLACK = 2.5   # the loads in flight allow this many times the achieved bandwidth: not short of loads
ISSUE_PER_CLOCK = 4     # warp instructions an SM issues per clock (4 schedulers): the instruction-issue ceiling
ARITHMETIC_WARPS = 4    # warps per scheduler that hide the arithmetic pipes' dependent-issue latency (about 4
                        # cycles for FMA and ALU on Volta to Hopper): each with one instruction ready, issue never idles
PROPORTIONAL = 0.8      # time ~ work^e at the large end of the size ladder with e at least this: the GPU is full
WARPS_PER_SM = 64       # sm_90 (occupancy.SM90)
FP32_LANES = {7: 64, 8: 128, 9: 128, 10: 128, 12: 128}  # FP32 lanes per SM by compute capability major; 8.0: 64
LIMITERS = ("memory-bound", "compute-bound", "shared-memory-bound", "latency-bound")


@dataclass
class Finding:
    kind: str
    text: str
    confidence: str                      # measured | likely
    evidence: list = field(default_factory=list)
    tags: list = field(default_factory=list)

    def to_json(self):
        return {"kind": self.kind, "text": self.text, "confidence": self.confidence, "evidence": self.evidence,
                "tags": self.tags}


@dataclass
class Diagnosis:
    limiter: str                # one of LIMITERS, or "unknown"
    confidence: str
    findings: list

    def kinds(self):
        return {f.kind for f in self.findings} | {t for f in self.findings for t in f.tags}

    def to_json(self):
        return {"limiter": self.limiter, "confidence": self.confidence,
                "findings": [f.to_json() for f in self.findings]}


def pct(a, b):
    return 100.0 * a / b if a is not None and b else None


def roofline(record, bandwidth):
    """(text, on the memory side?, % of bandwidth, % of peak)."""
    gbps, gflops = record.get("gbps") or 0, record.get("gflops") or 0
    peak, kind = record.get("peak_gflops") or 0, record.get("peak") or "fp32"
    bw, bw_source = bandwidth
    intensity = (record.get("flops") or 0) / record["bytes"] if record.get("bytes") else None
    pbw, ppeak = pct(gbps, bw), pct(gflops, peak)
    parts = [f"{record['median_ms'] * 1e3:.4g} us"]
    if bw:
        parts.append(f"{gbps:.0f} GB/s = {pbw:.0f}% of the copy bandwidth {bw:.0f} GB/s ({bw_source})")
    if peak and gflops:
        parts.append(f"{gflops:.0f} GFLOP/s = {ppeak:.1f}% of the {kind} peak {peak:.0f}")
    memory_side = None          # unknown without a bandwidth, a peak and the FLOPs
    if intensity is not None and bw and peak:
        ridge = peak / bw
        memory_side = intensity < ridge
        attainable = min(peak, intensity * bw)
        reached = pct(gflops, attainable) if intensity > 0 else pbw
        parts.append(f"{intensity:.3g} FLOP/byte against a ridge at {ridge:.3g}: on the "
                     f"{'memory' if memory_side else 'compute'} side of the roofline, at {reached:.0f}% of what "
                     f"its intensity allows")
    elif bw and not gflops:
        memory_side = True      # no FLOPs to count: a data-movement kernel
    return "; ".join(parts), memory_side, pbw, ppeak


def diagnose(record, bandwidth=(None, ""), scaling=None, l2=None, sweep=None, kernel=None):
    """record: the lab's JSON record at the diagnosed size; bandwidth: (GB/s,
    source) from experiments.copy_bandwidth; scaling, l2, sweep: experiments'
    results or None; kernel: binary.Kernel (the instantiation that ran) or None."""
    found = []
    text, memory_side, pbw, ppeak = roofline(record, bandwidth)
    found.append(Finding("roofline", "roofline: " + text + ".", "measured", ["the lab's timed record"]))
    hot = kernel.hot if kernel else None
    tensor = bool(hot and hot.tensor_ops) or str(record.get("peak", "")).endswith("_tensor")
    res = record.get("resources") or {}

    # Facts that hold whatever the limiter.
    if scaling and len(scaling.points) >= 2:
        found.append(Finding("scaling", "size ladder: " + scaling.text() + ".", "measured",
                             ["the lab at its size divided by 4, 16, ... along every size flag"]))
    if l2:
        found.append(Finding("l2-test", "L2 against DRAM: " + l2.text() + ".", "measured",
                             ["the lab at an L2-sized rung, warm and with --flush-l2"]))
    if sweep:
        helps = sweep.occupancy_helps()
        verdict = ("" if helps is None else " More resident warps made it faster: latency is hidden by warps here."
                   if helps else " Occupancy barely mattered: the kernel is not short of warps.")
        found.append(Finding("sweep", "launch shapes: " + sweep.text() + "." + verdict, "measured",
                             ["the lab's --sweep"]))
    occupancy_low = _occupancy(found, res, kernel)
    if kernel and kernel.spills:
        found.append(Finding("local-memory",
                             f"local memory: {kernel.resources.get('local', 0)} bytes per thread of local memory and "
                             f"{kernel.whole.n('LDL', 'STL')} local load/store instructions in the binary: register "
                             "spills or an array indexed at run time. Local memory is DRAM behind L1: fewer live "
                             "values, compile-time indices, or __launch_bounds__ with a realistic block size.",
                             "measured", ["cuobjdump -res-usage, -sass"]))
    if hot:
        found.append(Finding("instruction-mix", "instruction mix of " + hot.summary() + ".", "measured",
                             ["cuobjdump -sass"]))
    issue = issue_share(record, hot)
    if issue:
        found.append(Finding("issue", f"instruction issue: the hot code fills about {issue[0]:.0f}% of the SMs' "
                             f"issue slots ({ISSUE_PER_CLOCK} warp instructions per SM per clock; {issue[1]}).",
                             "likely", ["the lab's timed record", "cuobjdump -sass"]))

    grid = partial_grid(record, kernel)
    if grid:
        found.append(Finding("partial-grid", f"grid: the launch fills only part of the GPU: {grid.text()}.",
                             "measured", ["gpu_work.launches in the lab's record (the trace)",
                                          "resources in the lab's record"]))
    limiter, confidence, why, advice, tags = _limiter(record, scaling, l2, hot, memory_side, pbw, ppeak, tensor,
                                                      occupancy_low, grid)
    found.insert(0, Finding(limiter, f"{limiter}{'' if not tags else ' (' + ', '.join(tags) + ')'} [{confidence}]: "
                            f"{why} {advice}", confidence, ["roofline", "scaling", "instruction mix"], tags))
    if hot and memory_side and limiter in ("memory-bound", "latency-bound") and (pbw or 0) < BUSY:
        share = hot.wide_load_share
        if share is not None and share < 0.5 and sum(hot.global_load_bytes.values()):
            found.append(Finding("narrow-loads",
                                 f"narrow loads: {100 * (1 - share):.0f}% of the hot loop's global loads move at most "
                                 "4 bytes per thread (LDG.E, not LDG.E.128). Below the bandwidth ceiling, wider loads "
                                 "(float4) or more independent loads per thread put more bytes in flight.",
                                 "likely", ["cuobjdump -sass"]))
    return Diagnosis(limiter, confidence, found)


def _occupancy(found, res, kernel):
    """The occupancy finding; True when it is low."""
    truth = res.get("occupancy")
    block = res.get("block_threads")
    offline = None
    if kernel and block and kernel.resources.get("registers"):
        shared = max(kernel.resources.get("shared", 0) - 1024, 0) + (res.get("dynamic_smem") or 0)
        offline = occ_mod.occupancy(kernel.resources["registers"], block, shared)
    if truth is None and offline is None:
        return False
    value = truth if truth is not None else offline.fraction
    text = f"occupancy: {100 * value:.0f}% of the SM's warp slots"
    if truth is not None:
        text += f" (the GPU's occupancy API: {res.get('blocks_per_sm')} blocks of {block} threads per SM)"
    if offline:
        text += f"; from the binary's {kernel.resources['registers']} registers per thread: " + offline.text()
        lift = occ_mod.lift(offline, kernel.resources["registers"], block)
        if lift and value < OCCUPANCY_LOW:
            text += f"; {lift}"
    low = value < OCCUPANCY_LOW
    if low:
        text += (". Low occupancy matters when warps wait on latency; a kernel that keeps a unit busy "
                 "with few warps (register tiling, tensor cores) does not need more.")
    found.append(Finding("low-occupancy" if low else "occupancy", text + ("" if low else "."), "measured",
                         ["resources in the lab's record", "cuobjdump -res-usage"]))
    return low


def _limiter(record, scaling, l2, hot, memory_side, pbw, ppeak, tensor, occupancy_low, grid=None):
    """(limiter, confidence, why, what to do, tags). memory_side is None where the roofline has no bandwidth:
    the rules of the instruction mix still apply, those that need the memory side of the roofline do not."""
    ms = record["median_ms"]
    issue = issue_share(record, hot) if not tensor else None
    if scaling and scaling.launch_bound and scaling.kernel_ms < LAUNCH_MS:
        big = scaling.points[0]
        how = "back to back" if scaling.back_to_back else "timed"
        op_ms = big.no_gap_ms if scaling.back_to_back else big.ms
        kernel = (f"its first of {big.launches} launches takes about {scaling.kernel_ms * 1e3:.3g} us (the operation "
                  f"{how}, {op_ms * 1e3:.3g} us, less {scaling.launch_ms * 1e3:.3g} us for each other launch)"
                  if big.launches > 1 else f"it takes {scaling.kernel_ms * 1e3:.3g} us ({how})")
        return ("latency-bound", "measured",
                f"launch-bound: at {scaling.work_ratio:.0f}x the work of the smallest size {kernel}, one launch of "
                f"the smallest size {scaling.launch_ms * 1e3:.3g} us: less than {LAUNCH_RATIO:g}x; the launch and "
                "the ramp-up of the grid, not the work, set the time.",
                "Give the GPU more work per launch: fuse kernels, batch, or use CUDA graphs to cut launch cost.",
                ["launch-bound"])
    if pbw is not None and pbw >= BUSY and (ppeak is None or pbw >= ppeak):
        # 'measured' says DRAM is the busiest unit, and the timing shows that only against the FP32 peak. Where
        # the instruction-issue estimate reaches the bandwidth share, two units are at the line and the evidence
        # does not say which is the busier (the estimate is an estimate, and Nsight Compute, which measures both,
        # names the busier): this rule does not decide, the rules below do, with 'likely' (the issue rule among
        # them names the instruction issue where it is the busier).
        if not (issue and issue[0] >= pbw):
            return ("memory-bound", "measured",
                    f"it moves {pbw:.0f}% of the copy bandwidth.",
                    "Only moving fewer bytes makes it faster (fusing kernels, smaller types, reuse through shared "
                    "memory); more arithmetic per byte is free.", [])
    if ppeak is not None and ppeak >= NEAR_PEAK:
        return ("compute-bound", "measured", f"it runs at {ppeak:.0f}% of the {record.get('peak', 'fp32')} peak.",
                "Fewer or cheaper instructions per result, or a faster unit (tensor cores); the memory system has "
                "room to spare.", [])
    if grid and grid.idle_gpu:
        return ("latency-bound", "likely",
                f"the launch fills only part of the GPU: {grid.text()}; with fewer than {BUSY:.0f}% of the SMs "
                f"working, no unit of the SMs can be {BUSY:.0f}% busy averaged over the GPU, whatever the SMs with a "
                "block do, and the bandwidth is below the line too: the idle SMs wait for nothing.",
                "More, smaller blocks (smaller output tiles per block); split the contraction across blocks and "
                "add the parts (split-K, as lab 14's split_k does); or a persistent grid of one wave that loops "
                "over the tiles.", ["partial-grid"])
    # The tensor cores against the ceiling of the instruction the kernel runs: an mma.sync kernel on sm_90 cannot
    # pass two thirds of the wgmma peak (HMMA_CLOCKS), so its share of that peak understates how busy they are.
    share = tensor_share(record, hot, ppeak) if tensor else None
    hmma = f" ({ppeak:.0f}% of the {record.get('peak')} peak, which is wgmma's; mma.sync's HMMA reaches {100 / hmma_clocks(record, hot):.0f}% of it)" \
        if share is not None and hmma_clocks(record, hot) != 1.0 else ""
    if tensor and (share or 0) >= TENSOR_BUSY:
        return ("compute-bound", "likely",
                f"a tensor-core kernel at {share:.0f}% of its instruction's tensor peak{hmma}: the MMA units are the busiest unit"
                f"{'' if share >= BUSY else f', and the tensor pipe runs busier than the FLOPs show (Nsight Compute calls a unit the bound from {BUSY:.0f}% of its cycles)'}.",
                "Keep the tensor cores fed: deeper pipelines (more stages), larger tiles, wgmma over mma.sync.", [])
    mma = hot.tensor_ops if hot else 0
    math_ops = hot.fp32_ops if hot else 0
    shared = hot.shared_ops if hot else 0
    global_ops = (hot.n("LDG", "STG") if hot else 0)
    atomics = hot.n("ATOMG", "RED", "REDG", "ATOM") if hot else 0
    barriers = hot.n("BAR") if hot else 0
    if atomics and not hot.n("ATOMS"):
        # Below the bandwidth ceiling (at it, the rule above says memory-bound): atomics on few addresses are
        # serialised by L2's atomic units, which shows as no unit busy, each warp waiting for its update's round
        # trip. That is latency, not a busy memory system.
        return ("latency-bound", "likely",
                f"{atomics} global atomic{'s' if atomics > 1 else ''} in the hot loop and {pbw or 0:.0f}% of the "
                "copy bandwidth: no unit is busy; L2's atomic units serialise updates of the same address and the "
                "warps wait for them.",
                "Privatise: a histogram per block (or warp) in shared memory, merged once per block.",
                ["atomics"])
    matched = match_bound(record, hot, pbw) if not tensor else None
    if matched:
        return matched
    if tensor and mma and shared / mma >= SHARED_PER_MMA:
        return ("shared-memory-bound", "likely",
                f"{shared} shared-memory instructions for {mma} tensor-core instructions in the hot loop.",
                "Fewer, wider shared loads (ldmatrix), or operands straight from shared memory (wgmma).", [])
    fed = shared_vs_tensor(record, hot) if tensor else None
    if fed and fed[0] >= fed[1]:
        pipe_cycles, mma_cycles = fed
        return ("shared-memory-bound", "likely",
                f"the hot loop's shared loads and stores, and the global loads staged through registers, take "
                f"about {pipe_cycles:.0f} cycles of L1's data pipe (128 bytes a cycle, the one shared memory "
                f"uses) per warp, its {hot.n('HMMA')} MMAs about {mma_cycles:.0f} cycles "
                f"of the tensor cores at their rate for that instruction ({HMMA_FLOPS[record['peak']]} FLOPs each, "
                f"{hmma_clocks(record, hot):g} clock{'' if hmma_clocks(record, hot) == 1 else 's'} of the pipe at the "
                f"record's peak), at {ppeak or 0:.0f}% of the tensor peak: the shared-memory pipe that feeds the MMAs (an ldmatrix.x4 moves 512 bytes, "
                "4 cycles of it) is as busy as the tensor cores or busier.",
                "Reuse each loaded fragment over more MMAs (larger warp tiles), or let the tensor cores read "
                "their operands from shared memory themselves (wgmma on sm_90); no bank conflicts (swizzled "
                "tiles).", [])
    # The shared-memory pipe against the FP32 pipe, from the widths of the shared accesses: an SM
    # moves 128 shared bytes a cycle and issues 4 warp-wide FP32 instructions a cycle (4 schedulers),
    # so an LDS.128 costs the shared pipe as much as 16 FFMAs cost the FMA units. Bank conflicts only
    # add to the shared side: when it is already as long as the FP32 side, the FMA units cannot be
    # what sets the pace.
    pipe = hot.shared_pipe_cycles if hot else None
    if not memory_side and math_ops and pipe is not None and pipe >= SHARED_PIPE_VS_FP32 * math_ops / 4:
        return ("shared-memory-bound", "likely",
                f"the hot loop's shared loads and stores take about {pipe:.0f} cycles of the SM's shared-memory "
                f"bandwidth (128 bytes a cycle) per warp at their full width (bank conflicts take more, threads of "
                f"a warp reading the same address fewer), its {math_ops} FP32 instructions {math_ops / 4:.0f} "
                f"cycles of FP32 issue (4 warp instructions a cycle), at {ppeak or 0:.0f}% of the FP32 peak: "
                f"{pipe / (math_ops / 4):.2f} times as many, more than the {SHARED_PIPE_VS_FP32:.2f} by which "
                "shared reads at one address shared by a warp make the full width overstate the pipe: the "
                "shared-memory pipe is busier than the FMA units.",
                "Reuse each shared value over more FMAs: larger register tiles per thread (more outputs per loaded "
                "value), operands kept in registers across the k-step; no bank conflicts.", [])
    if not memory_side and math_ops and shared / math_ops >= SHARED_PER_MATH:
        return ("shared-memory-bound", "likely",
                f"{shared} shared-memory instructions for {math_ops} FP32 math instructions in the hot loop "
                f"({shared / math_ops:.2f} per FMA), with {ppeak or 0:.0f}% of the FP32 peak: the shared-memory "
                "pipe, not the FMA units, sets the pace.",
                "Keep reused values in registers (several outputs per thread), use wider shared loads (LDS.128).", [])
    if ppeak is not None and ppeak >= BUSY and not tensor:
        return ("compute-bound", "likely",
                f"it runs at {ppeak:.0f}% of the {record.get('peak', 'fp32')} peak: the FP32 units are the busiest "
                f"unit the timing measures, but below {NEAR_PEAK:.0f}% of the peak the instruction issue or the "
                "shared-memory pipe (whose bank conflicts and wide loads the instruction count does not show) may "
                "be as busy.",
                "Fewer instructions per FMA: larger register tiles, vector shared loads, conflict-free shared "
                "accesses.", [])
    if hot and not memory_side and hot.instructions and math_ops / hot.instructions >= MATH_SHARE:
        return ("compute-bound", "likely",
                f"the hot loop is {100 * math_ops / hot.instructions:.0f}% FP32 math ({math_ops} of "
                f"{hot.instructions} instructions) at {ppeak or 0:.0f}% of the FP32 peak: instruction issue is "
                "the limit.",
                "Fewer instructions per FMA: larger register tiles, vector shared loads, less index arithmetic.", [])
    arithmetic = arithmetic_bound(record, scaling, hot)
    if arithmetic:
        return arithmetic
    # The count ratios below say where the warps wait, not that a unit is busy. Where the issue estimate puts
    # the instruction issue at the line and the shared loads and stores, at their full width, take fewer cycles
    # of the shared pipe (128 bytes an SM a clock) than the hot code takes of issue (4 instructions an SM a
    # clock; every shared instruction among them), the issue is the busier unit, whatever the ratios say.
    issued = issue_bound(issue, pbw)
    pipe_or_count = pipe if pipe is not None else shared      # old evidence without widths: one cycle each
    if issued and memory_side and shared and pipe_or_count < (hot.instructions - hot.n("NOP")) / ISSUE_PER_CLOCK:
        return issued
    # Shared memory before barriers: a barrier is where warps wait for the others' shared-memory work, so a
    # kernel with several shared accesses per global one spends its barrier time waiting on the shared pipe.
    if memory_side and global_ops and shared / global_ops >= SHARED_PER_GLOBAL:
        return ("shared-memory-bound", "likely",
                f"{shared} shared-memory instructions for {global_ops} global accesses in the hot code"
                f"{f' (and {barriers} barriers)' if barriers else ''}, at {pbw or 0:.0f}% of the copy bandwidth: "
                "the shared-memory pipe, not DRAM, sets the pace; the barriers are where warps wait for it.",
                "Keep values in registers (warp shuffles); wider shared accesses; no bank conflicts.", [])
    if memory_side and global_ops and barriers / global_ops >= BARRIERS_PER_GLOBAL:
        return ("latency-bound", "likely",
                f"{barriers} barriers for {global_ops} global accesses in the hot code, at {pbw or 0:.0f}% of the "
                "copy bandwidth: warps wait at __syncthreads while the tree narrows.",
                "Fewer barriers: warp shuffles for the last 32 values, more elements per thread before the tree.",
                ["barriers"])
    if issued:
        return issued
    if memory_side and l2 and l2.ratio and l2.ratio >= L2_SENSITIVE:
        return ("memory-bound", "likely",
                f"{pbw or 0:.0f}% of the copy bandwidth, yet {l2.ratio:.2f}x faster when its data is in L2: "
                "the memory system sets the pace, with more traffic than the useful bytes (sectors fetched but "
                "not used: an uncoalesced pattern) or too few bytes in flight.",
                "Consecutive threads on consecutive addresses (a shared-memory tile for a transpose), 16-byte "
                "accesses.", [])
    flight = in_flight(record, hot)
    if memory_side and pbw and flight and flight[0] >= IN_FLIGHT_SLACK * pbw:
        allowed, text = flight
        return ("memory-bound", "likely",
                f"{pbw:.0f}% of the copy bandwidth, while {text} allow about {allowed:.0f}% of it (Little's law): "
                "the warps are not short of loads in flight, so the memory system moves more than the useful bytes "
                "(sectors fetched but not used: an uncoalesced pattern) or serialises them (L2, atomics).",
                "Consecutive threads on consecutive addresses (a shared-memory tile for a transpose), 16-byte "
                "accesses.", ["in-flight"])
    why = f"no ceiling is near: {pbw or 0:.0f}% of the copy bandwidth, {ppeak or 0:.0f}% of the peak"
    if l2 and l2.ratio:
        why += f", {l2.ratio:.2f}x between L2 and DRAM"
    if occupancy_low:
        why += ", with low occupancy"
    tags = ["low-occupancy"] if occupancy_low else []
    if tensor and ppeak is not None:
        # The busiest unit is not a busy one: below TENSOR_BUSY the tensor cores wait more than they work.
        return ("latency-bound", "likely",
                why + f": the tensor cores are the busiest unit, yet at {share:.0f}% of their peak{hmma} they idle more "
                f"cycles than they work, far from the {BUSY:.0f}% at which a unit is the bound; the warps wait "
                "(barriers, the pipeline's waits for loaded tiles, the softmax between the MMAs).",
                "More MMAs in flight: deeper pipelines (more stages), warpgroups that overlap one tile's softmax "
                "with another's MMAs (ping-pong), fewer barriers per tile.", tags + ["idle-tensor"])
    return ("latency-bound", "likely", why + ": the warps spend their time waiting.",
            "More independent work in flight: more warps, more independent loads or FMAs per thread, shorter "
            "dependency chains.", tags)


def match_bound(record, hot, pbw):
    """compute-bound (likely, match) for a hot loop that runs __match_any_sync (SASS MATCH) below the bandwidth
    line, or None. A MATCH takes one issue slot and then holds a unit of the SM longer the more values its lanes
    hold: lab 24's warp_aggregated histogram runs the same instructions in 2.081 ms on 2^28 uniform
    bytes (32 lanes over 256 bins, nearly all different) and in 0.254 ms on one bin (8.2x; the lab's H100 table),
    and Nsight Compute found the SM's ADU pipe (which handles divergent branches) 94% busy on the
    uniform input while the issue was at 8%: the match and the divergent branches around each leader's update,
    both costs that depend on the data (on one bin there is one group and no divergence). Neither the issue
    estimate nor the shared-memory counts price them, so where a MATCH is in the hot loop and the bandwidth is
    below the line, that unit is taken as the busiest. The text gives the SM clocks per MATCH that the timing
    implies (an instruction's issue alone takes a quarter of one: 4 schedulers)."""
    if not (hot and hot.n("MATCH")) or (pbw or 0) >= BUSY:
        return None
    mhz = ((record.get("clocks") or {}).get("before") or {}).get("sm_mhz")
    sms = sm_count(record)
    per_thread = hot.global_bytes_per_thread
    clocks = ""
    if mhz and sms and per_thread and record.get("bytes"):
        matches_per_sm = record["bytes"] / (32 * per_thread) * hot.n("MATCH") / sms
        clocks = (f"; the timing comes to {record['median_ms'] * 1e3 * mhz / matches_per_sm:.0f} SM clocks per MATCH "
                  f"({record['median_ms'] * 1e3:.4g} us at {mhz} MHz on {sms} SMs)")
    return ("compute-bound", "likely",
            f"{hot.n('MATCH')} MATCH (__match_any_sync) in the hot loop at {pbw or 0:.0f}% of the copy bandwidth"
            f"{clocks}: a match holds a unit of the SM for as long as the warp's lanes hold different values (lab "
            "24's warp_aggregated: 8.2x slower on uniform bytes than on one bin), a cost no count of instructions "
            "shows; that unit, not the memory system, sets the pace.",
            "Match only where lanes are likely to agree: test first whether the warp holds one value (__all_sync "
            "of a shuffle of lane 0's) and skip the match otherwise, or aggregate runs within each thread's own "
            "samples.", ["match"])


def issue_bound(issue, pbw):
    """compute-bound (likely, issue) where the issue estimate is at the line and above the bandwidth share, or None."""
    if not (issue and issue[0] >= BUSY and issue[0] >= (pbw or 0)):
        return None
    return ("compute-bound", "likely",
            f"the hot code fills about {issue[0]:.0f}% of the SMs' instruction issue ({ISSUE_PER_CLOCK} warp "
            f"instructions per SM per clock), more than the {pbw or 0:.0f}% of the copy bandwidth its bytes "
            "take: instruction issue (index arithmetic, address calculation, loop control), not the memory "
            "system, sets the pace; the warps are not short of loads, they are busy issuing.",
            "Fewer instructions per element: more elements per thread (loop unrolling amortises the index "
            "arithmetic), wider accesses (one LDG.128 for four LDG), simpler indexing.", ["issue"])


def hmma_clocks(record, hot):
    """Clocks of the tensor pipe per HMMA at the record's tensor peak: HMMA_CLOCKS for a hot loop whose tensor-core
    instructions are all HMMA on a GPU where the peak belongs to another instruction (sm_90: HGMMA), else 1."""
    cc = str(record.get("cc") or "")
    if not (hot and hot.n("HMMA") and hot.n("HMMA") == hot.tensor_ops and cc[:1].isdigit()):
        return 1.0
    return HMMA_CLOCKS.get(int(cc.split(".")[0]), 1.0)


def tensor_share(record, hot, ppeak):
    """% of the ceiling of the kernel's own tensor-core instruction: the share of the record's tensor peak times
    hmma_clocks (an mma.sync kernel at 41% of an H200's wgmma peak is at 61% of what mma.sync can do)."""
    return None if ppeak is None else ppeak * hmma_clocks(record, hot)


def shared_vs_tensor(record, hot):
    """(shared-pipe cycles, tensor-core cycles) that one pass of the hot loop takes per warp, or None: the
    shared loads and stores at their full width (128 bytes a cycle: an LDSM.x4 512 bytes, 4 cycles) against the
    HMMAs at the record's tensor peak per SM and clock (on the H200 4096 FP16 FLOPs, one HMMA.16816 a cycle; 2048
    TF32 FLOPs, one HMMA.1688).
    Full width is right for the operands of an MMA: a fragment is spread over the warp's 32 lanes with no
    element held twice, so its load reads 32 different addresses, none shared. None where the record's peak is
    not one of HMMA_FLOPS's, the loop has no HMMA, or the widths, the clock or the SM count are not known."""
    mhz = ((record.get("clocks") or {}).get("before") or {}).get("sm_mhz")
    sms, peak = sm_count(record), record.get("peak_gflops")
    mma = hot.n("HMMA") if hot else 0
    pipe = hot.shared_pipe_cycles if hot else None
    if record.get("peak") not in HMMA_FLOPS or not (mma and pipe and mhz and sms and peak):
        return None
    # Global loads staged through registers (LDG, then STS) cross L1's data pipe twice: coming back from L2 (the
    # LDG, counted here) and stored (the STS, counted with the shared accesses). Lab 30's mma_ldmatrix does so; Nsight Compute found that pipe at 70.6% of its peak there
    # and its shared wavefronts alone at 53.5%: the loads are a quarter of what the pipe carries, which the
    # shared accesses alone leave out. cp.async writes shared memory without the round trip.
    pipe += hot.global_load_pipe_cycles
    per_clock = peak * 1e3 / (sms * mhz)            # FLOPs an SM's tensor cores do a clock at the peak
    return pipe, HMMA_FLOPS[record["peak"]] * mma / per_clock * hmma_clocks(record, hot)


def arithmetic_bound(record, scaling, hot):
    """compute-bound (likely) for a hot loop that waits on nothing but the arithmetic pipes, or None. Its warps
    have no memory access, barrier or shuffle to wait for, only the few cycles between dependent arithmetic
    instructions, which ARITHMETIC_WARPS warps per scheduler cover; and where the time grows in proportion to the
    work (the size ladder), the GPU is full. What is left is the instruction issue or one arithmetic pipe,
    however small a share of the FP32 peak the lab's FLOP count shows: the FLOPs a lab counts leave out what the
    hot loop executes around them (math-library code, integer work), so neither that share nor the issue
    estimate made from it shows how busy the SM is."""
    if not (hot and hot.arithmetic_only and scaling):
        return None
    growth = scaling.flops_exponent if scaling.flops_exponent is not None else scaling.bytes_exponent
    res = record.get("resources") or {}
    occupancy = res.get("occupancy")
    if growth is None or growth < PROPORTIONAL or not occupancy:
        return None
    warps = occupancy * WARPS_PER_SM / ISSUE_PER_CLOCK
    if warps < ARITHMETIC_WARPS:
        return None
    mix = ", ".join(f"{n} {label}" for n, label in ((hot.fp32_ops, "FP32 FMA/ADD/MUL"), (hot.n("IMAD"), "integer multiply-add"),
                                                    (hot.n("MUFU"), "MUFU (transcendental)")) if n)
    return ("compute-bound", "likely",
            f"the hot loop ({hot.instructions} instructions{': ' + mix if mix else ''}) has no memory access, "
            f"barrier or shuffle: its warps wait only on the arithmetic pipes' few cycles of latency, which "
            f"{warps:.0f} warps per scheduler ({100 * occupancy:.0f}% occupancy) cover; its time grows as "
            f"work^{growth:.2f} at the large end of the size ladder: the GPU is full and the instructions take the "
            "time. The instruction issue or one arithmetic pipe sets the pace (per SM and clock on sm_90: 128 FP32 "
            "lanes, 64 for integer multiply-add, 16 for MUFU); the share of the FP32 peak that the lab's FLOP count shows "
            f"({(record.get('gflops') or 0) / (record.get('peak_gflops') or 1) * 100:.1f}%) leaves out the "
            "instructions around those FLOPs and understates it.",
            "Fewer instructions per result: cheaper math where the accuracy allows (__expf, __logf, __sincosf, or "
            "--use_fast_math), less integer work per result, loop-invariant work hoisted out of the loop. More "
            "occupancy helps little: the warps are not waiting.",
            ["arithmetic"])


@dataclass
class Grid:
    """One launch against the GPU it ran on: the launch (gpu_work.launches), the SMs, the blocks per SM that the
    kernel's resources allow (the occupancy API) and the warp slots of an SM."""
    kernel: str
    blocks: int
    block_threads: int
    sms: int
    blocks_per_sm: int
    warps_per_sm: int
    matched: bool            # the launch of the binary's kernel, not the largest launch of the run

    @property
    def sms_with_work(self):
        return min(self.blocks, self.sms)

    @property
    def slots_filled(self):
        warps = self.blocks * -(-self.block_threads // 32)
        return min(1.0, warps / (self.sms * self.warps_per_sm))

    @property
    def idle_gpu(self):
        """Fewer than BUSY% of the SMs have a block: no unit of the SMs averaged over the GPU can reach BUSY, which
        is how Nsight Compute's SM throughputs (averages over all SMs, of the elapsed time) are read."""
        return 100.0 * self.sms_with_work < BUSY * self.sms

    def text(self):
        which = "the kernel's launch" if self.matched else "the run's largest launch"
        return (f"{which} has {self.blocks} blocks of {self.block_threads} threads for {self.sms} SMs that fit "
                f"{self.blocks_per_sm} blocks each ({self.sms * self.blocks_per_sm} in one full wave): "
                f"{self.sms_with_work} SMs with work ({100.0 * self.sms_with_work / self.sms:.0f}%), "
                f"{100.0 * self.slots_filled:.0f}% of the GPU's warp slots filled")


def function_name(mangled):
    """The function a mangled kernel name names, without its namespaces, template arguments and parameters:
    _Z17scan_tiles_kernelI16HillisSteeleTileLb0EfEv... -> scan_tiles_kernel, as Nsight Compute's
    --kernel-name-base function matches it. A name that is not mangled is its own."""
    if not mangled.startswith("_Z"):
        return mangled
    i, nested, last = 2, mangled[2:3] == "N", None
    i += nested
    while i < len(mangled) and mangled[i].isdigit():
        j = i
        while j < len(mangled) and mangled[j].isdigit():
            j += 1
        n = int(mangled[i:j])
        last, i = mangled[j:j + n], j + n
        if not nested:
            break
    return last or mangled


def partial_grid(record, kernel=None):
    """The launch of the diagnosed kernel when it has fewer blocks than one full wave (the SMs times the blocks per
    SM that its resources allow); None when it fills the GPU or when the record does not say (a run that was not
    traced, no resources, no SM count). The diagnosed kernel's launch is the largest launch of its function, over
    every instantiation of it (the record keeps each instantiation's largest launch, not their order): Nsight
    Compute profiles the first launch of the function, and an operation of several passes starts with the pass
    over its input, the largest (lab 25's scans: scan_tiles_kernel<..., false> over 8192 tiles, then the same
    function's <..., true> over the 8192 tile sums in 16 blocks; the binary's registers and shared memory, the same
    for both, may pick either). Failing a name, the run's largest launch."""
    launches = (record.get("gpu_work") or {}).get("launches") or []
    res = record.get("resources") or {}
    sms, per_sm = sm_count(record), res.get("blocks_per_sm")
    if not launches or not sms or not per_sm:
        return None
    named = [l for l in launches if kernel and function_name(l.get("kernel", "")) == function_name(kernel.name)]
    launch = max(named or launches, key=lambda l: (l.get("blocks") or 0))
    blocks, threads = launch.get("blocks") or 0, launch.get("block_threads") or res.get("block_threads") or 0
    if not blocks or not threads or blocks >= sms * per_sm:
        return None
    # The SM's warp slots, from the occupancy API's own fraction: blocks_per_sm blocks of block_threads fill it.
    warps, occupancy = per_sm * -(-(res.get("block_threads") or threads) // 32), res.get("occupancy")
    slots = round(warps / occupancy) if occupancy else WARPS_PER_SM
    return Grid(launch.get("kernel", "?"), blocks, threads, sms, per_sm, slots, bool(named))


def sm_count(record):
    """SMs of the GPU: the record's own count (records from this harness), else from its peak, its SM clock and
    what one SM does a clock: FP32 lanes for an FP32 peak, TENSOR_PER_SM for a tensor peak (records
    written before they carried the SM count, lab 30's wmma among them); None when unknown."""
    if record.get("sms"):
        return record["sms"]
    cc, mhz = str(record.get("cc") or ""), ((record.get("clocks") or {}).get("before") or {}).get("sm_mhz")
    if not record.get("peak_gflops") or not mhz or not cc[:1].isdigit():
        return None
    if record.get("peak") in HMMA_FLOPS:
        per_clock = TENSOR_PER_SM.get(cc, {}).get(record["peak"])
    elif record.get("peak") == "fp32":
        major = int(cc.split(".")[0])
        lanes = 64 if cc in ("7.0", "7.5", "8.0") else FP32_LANES.get(major)
        per_clock = 2 * lanes if lanes else None
    else:
        return None
    return round(record["peak_gflops"] * 1e3 / (per_clock * mhz)) if per_clock else None


def issue_share(record, hot):
    """(% of the SMs' instruction issue the hot code fills at the measured rate, how that was counted), or None.
    The passes of the hot code per second come from the record: at least its bytes per second over the bytes one
    pass loads and stores, and, where the record counts FP32 FLOPs (not a tensor-core kernel's), at least its FLOPs
    per second over the FLOPs of one pass's FP32 instructions (each counted byte or FLOP moved or done by the hot
    code); the larger of the two, times the instructions of a pass
    (padding NOPs left out), against 4 warp instructions per SM per clock. An estimate: counted bytes that the
    hot code does not move (stores after a loop) make it high."""
    mhz = ((record.get("clocks") or {}).get("before") or {}).get("sm_mhz")
    sms = sm_count(record)
    if not (hot and mhz and sms) or hot.collective_only:   # evidence read before binary.hot_region knew them
        return None
    instructions = hot.instructions - hot.n("NOP")
    per_thread = hot.global_bytes_per_thread
    flops = sum(w * hot.n(op) for op, w in binary.FP32.items())
    rates = []
    if per_thread and record.get("gbps"):
        rates.append((record["gbps"] * 1e9 / (32 * per_thread), f"{record['gbps']:.0f} GB/s over {per_thread} bytes "
                                                                  "per thread a pass"))
    # The record's FLOPs are the FP32 instructions' only where its peak is FP32: a tensor-core kernel counts the
    # MMAs' FLOPs, which over the FP32 FLOPs of a pass would give passes (and an issue share) many times too high.
    if flops and record.get("gflops") and not str(record.get("peak", "")).endswith("_tensor") and not hot.tensor_ops:
        rates.append((record["gflops"] * 1e9 / (32 * flops), f"{record['gflops']:.0f} GFLOP/s over {flops} FLOPs per "
                                                              "thread a pass"))
    if not rates or not instructions:
        return None
    warp_passes, how = max(rates)
    share = 100.0 * warp_passes * instructions / (sms * ISSUE_PER_CLOCK * mhz * 1e6)
    return share, f"{how}, {instructions} instructions a pass, {sms} SMs at {mhz} MHz"


def in_flight(record, hot):
    """(% of the copy bandwidth that the global loads in flight allow, how that was counted), or None: every
    resident thread with one iteration of the hot code's loads outstanding, delivered once per DRAM latency."""
    res = record.get("resources") or {}
    bw = record.get("ceiling_value") if record.get("ceiling") == "d2d_copy_gbps" else None
    per_thread = hot.global_load_bytes_per_thread if hot else 0
    threads = (res.get("blocks_per_sm") or 0) * (res.get("block_threads") or 0)
    sms = sm_count(record)
    if not (bw and per_thread and threads and sms):
        return None
    gbps = sms * threads * per_thread / DRAM_LATENCY_US / 1e3
    return (100.0 * gbps / bw,
            f"{threads} resident threads per SM x {sms} SMs x {per_thread} bytes of loads each per "
            f"{DRAM_LATENCY_US} us of DRAM latency")


def main_limiter_of_ncu(kinds):
    """Nsight Compute's main limiter from the kinds of its findings (profile.diagnose)."""
    for k in ("memory-bound", "shared-memory-bound", "compute-bound", "latency-bound"):
        if k in kinds:
            return k
    return "unknown"
