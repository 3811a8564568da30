"""The compiled kernel, read from the lab's executable with cuobjdump: its
resources (registers, shared, local memory and stack per thread) and its SASS
instruction mix, counted over the innermost loops (where a kernel spends its
time) or, for a kernel without loops, over all of it. Needs no GPU.

  cuobjdump -res-usage PROGRAM   ->  Function NAME:  REG:20 STACK:0 SHARED:5248 LOCAL:0 ...
  cuobjdump -sass PROGRAM        ->  /*03d0*/  @!P0 LDS R10, [R18] ;  ...

On sm_90 cuobjdump's SHARED includes the 1 KB that the hardware reserves per
block; the lab's record (resources.static_smem) does not.
"""
import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path


class ToolMissing(Exception):
    """cuobjdump is not installed where it is looked for."""


def find_tool(name, given=None):
    """cuobjdump or nvdisasm: the path given, $CUOBJDUMP / $NVDISASM, PATH, next
    to nvcc, /usr/local/cuda/bin, or the nvidia-cuda-cuobjdump Python wheel."""
    candidates = [given, os.environ.get(name.upper()), shutil.which(name), "/usr/local/cuda/bin/" + name]
    nvcc = shutil.which("nvcc")
    if nvcc:
        candidates.append(str(Path(nvcc).parent / name))
    try:
        import nvidia  # the pip wheels nvidia-cuda-cuobjdump / -nvdisasm put it under nvidia/cu*/bin
        for base in getattr(nvidia, "__path__", []):
            candidates += [str(p) for p in sorted(Path(base).glob(f"cu*/bin/{name}"))]
    except ImportError:
        pass
    for c in candidates:
        if c and Path(c).is_file() and os.access(c, os.X_OK):
            return c
    raise ToolMissing(f"{name} not found: it comes with the CUDA Toolkit (/usr/local/cuda/bin/{name}), or "
                      f"`pip install nvidia-cuda-{name}`; or name it with ${name.upper()}=...")


def run_tool(tool, *args):
    p = subprocess.run([tool, *map(str, args)], capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"{Path(tool).name} {' '.join(map(str, args))} failed (exit {p.returncode}): "
                           f"{(p.stderr or p.stdout).strip()[-500:]}")
    return p.stdout


# ---- resource usage -------------------------------------------------------------------

RES_LINE = re.compile(r"REG:(\d+)\s+STACK:(\d+)\s+SHARED:(\d+)\s+LOCAL:(\d+)")
ARCH_LINE = re.compile(r"^\s*arch\s*=\s*(sm_\d+a?)", re.M)


def function_lines(text, header):
    """(arch, function name, line) for every line under a function header
    (the regex HEADER, its group 1 the name), in cuobjdump's listing."""
    arch, name = None, None
    for line in text.splitlines():
        m = ARCH_LINE.match(line)
        if m:
            arch, name = m.group(1), None
            continue
        m = header.match(line)
        if m:
            name = m.group(1)
            yield arch, name, None
        elif name:
            yield arch, name, line


def parse_resource_usage(text):
    """{(arch, mangled name): {registers, stack, shared, local}} from `cuobjdump -res-usage`."""
    out = {}
    for arch, name, line in function_lines(text, re.compile(r"\s*Function\s+(\S+?):?\s*$")):
        m = RES_LINE.search(line or "")
        if m and (arch, name) not in out:
            out[(arch, name)] = dict(zip(("registers", "stack", "shared", "local"), map(int, m.groups())))
    return out


# ---- SASS -----------------------------------------------------------------------------

INSTRUCTION = re.compile(r"^\s*/\*([0-9a-f]{4,})\*/\s+(@!?U?P[T0-9]+\s+)?([A-Z][A-Z0-9_.]*)([^;]*);")


@dataclass
class Instruction:
    address: int
    opcode: str      # with its modifiers: LDG.E.128.CONSTANT
    operands: str

    @property
    def base(self):
        return self.opcode.split(".")[0]


def parse_sass(text):
    """{(arch, mangled name): [Instruction]} from `cuobjdump -sass`."""
    out = {}
    for arch, name, line in function_lines(text, re.compile(r"\s*Function\s*:\s*(\S+)")):
        body = out.setdefault((arch, name), [])
        m = INSTRUCTION.match(line or "")
        if m:
            body.append(Instruction(int(m.group(1), 16), m.group(3), m.group(4).strip()))
    return out


def branch_target(ins):
    """The target address of a BRA, or None (an indirect or uniform-register branch)."""
    if ins.base != "BRA":
        return None
    m = re.search(r"0x([0-9a-f]+)\s*$", ins.operands)
    return int(m.group(1), 16) if m else None


def loops(instructions):
    """(first, last) address of each loop: a branch back to a lower address. The
    `BRA self` that pads the end of every kernel is not a loop."""
    found = set()
    for ins in instructions:
        t = branch_target(ins)
        if t is not None and t < ins.address:
            found.add((t, ins.address))
    return sorted(found)


SPIN_LOOP = 8  # instructions
WAITS = ("SYNCS", "NANOSLEEP", "YIELD")  # an mbarrier try-wait, a back-off


def innermost(spans):
    return [s for s in spans if not any(o != s and s[0] <= o[0] and o[1] <= s[1] for o in spans)]


def hot_region(instructions):
    """The instructions of the innermost loops, or all of them for a kernel without loops."""
    # A collective's convergence loop is no loop of the kernel's: the loop around it, if any, is the innermost,
    # and without one the whole kernel is the pass.
    spans = innermost([s for s in loops(instructions)
                       if not mix([i for i in instructions if s[0] <= i.address <= s[1]], "").collective_only])
    # A loop of a few instructions is a wait (an mbarrier try-wait, a spin on a
    # flag), not work: counted only when the kernel has no other loop.
    def waits(span):
        body = [i for i in instructions if span[0] <= i.address <= span[1]]
        return len(body) < SPIN_LOOP and (len(body) <= 3 or any(i.base in WAITS for i in body))
    work = [s for s in spans if not waits(s)]
    spans = work or spans
    if not spans:
        return list(instructions), "the whole kernel (no loop)"
    inside = [i for i in instructions if any(a <= i.address <= b for a, b in spans)]
    where = ", ".join(f"0x{a:04x}-0x{b:04x}" for a, b in spans)
    return inside, f"{len(spans)} innermost loop{'s' if len(spans) > 1 else ''} ({where})"


def access_bytes(opcode):
    """Bytes per thread of a load or store: .128 16, .64 8, .U8/.S8 1, .U16/.S16 2, else 4."""
    parts = opcode.split(".")
    for width, b in (("128", 16), ("64", 8), ("U16", 2), ("S16", 2), ("U8", 1), ("S8", 1)):
        if width in parts:
            return b
    return 4


GLOBAL_LOADS = ("LDG",)
GLOBAL_STORES = ("STG",)
SHARED = ("LDS", "STS", "LDSM", "STSM")          # LDSM: ldmatrix
ASYNC_COPIES = ("LDGSTS", "UTMALDG", "UBLKCP")   # cp.async, TMA: global -> shared without registers
ATOMICS_GLOBAL = ("ATOMG", "RED", "REDG", "ATOM")
ATOMICS_SHARED = ("ATOMS",)
LOCAL = ("LDL", "STL")
FP32 = {"FFMA": 2, "FADD": 1, "FMUL": 1, "FMNMX": 1}
TENSOR = ("HMMA", "HGMMA", "IMMA", "IGMMA", "DMMA", "BMMA")
BARRIERS = ("BAR", "SYNCS")
SHUFFLES = ("SHFL",)
GENERIC = ("LD", "ST")                           # generic-address loads and stores (global, shared or local)
# What a warp can wait on besides the arithmetic pipes: every memory access, barrier and shuffle (MIO).
WAITS_BEYOND_ARITHMETIC = (GLOBAL_LOADS + GLOBAL_STORES + SHARED + ASYNC_COPIES + ATOMICS_GLOBAL + ATOMICS_SHARED +
                           LOCAL + BARRIERS + SHUFFLES + GENERIC)


@dataclass
class Mix:
    """What a region of SASS does, counted per warp-level instruction."""
    where: str
    instructions: int = 0
    counts: dict = field(default_factory=dict)   # base opcode -> count
    global_load_bytes: dict = field(default_factory=dict)  # bytes per thread -> count of LDG
    global_store_bytes: dict = field(default_factory=dict)
    shared_bytes: dict = field(default_factory=dict)  # bytes per thread -> count of LDS/STS/LDSM/STSM

    def n(self, *bases):
        return sum(self.counts.get(b, 0) for b in bases)

    @property
    def shared_ops(self):
        return self.n(*SHARED) + self.n(*ATOMICS_SHARED)

    @property
    def fp32_ops(self):
        return self.n(*FP32)

    @property
    def tensor_ops(self):
        return self.n(*TENSOR)

    @property
    def math_ops(self):
        return self.fp32_ops + self.tensor_ops

    @property
    def arithmetic_only(self):
        """No memory access, barrier or shuffle: the region's warps wait only on the arithmetic pipes
        (and the constant cache)."""
        return self.instructions > 0 and self.n(*WAITS_BEYOND_ARITHMETIC) == 0

    @property
    def wide_load_share(self):
        """Share of global loads that move 16 bytes per thread (LDG.E.128)."""
        total = sum(self.global_load_bytes.values())
        return self.global_load_bytes.get(16, 0) / total if total else None

    @property
    def shared_pipe_cycles(self):
        """Cycles of one SM's shared-memory bandwidth (128 bytes a cycle) that one pass of
        the region's shared loads and stores takes per warp: bytes per thread x 32 / 128,
        every access at its full width. An estimate, not a bound: bank conflicts replay
        accesses (more cycles), threads of a warp that read the same address share them
        (fewer: a register-tiled loop's broadcast fragment loads take about 3 of an
        LDS.128's 4 in Nsight Compute's wavefronts); None when the widths were not
        recorded (evidence written before they were)."""
        if not self.shared_bytes:
            return None
        return sum(b * 32 / 128 * c for b, c in self.shared_bytes.items())

    @property
    def collective_only(self):
        """A warp collective's convergence loop, not a pass over data: ENDCOLLECTIVE (the compiler's loop around a
        shuffle or vote for a warp that may arrive diverged, run once by a converged warp) with no global load,
        no shared access and no async copy. Lab 07's warp_shuffle, a kernel without a data loop, has one such
        loop of 44 instructions around its 5 shuffles; taken as the pass over the 4 bytes it stores, it put the
        issue at 70% where Nsight Compute counted about half of that."""
        return bool(self.n("ENDCOLLECTIVE")) and not (self.n(*GLOBAL_LOADS) or self.n(*SHARED) or
                                                       self.n(*ATOMICS_SHARED) or self.n(*ASYNC_COPIES))

    @property
    def global_load_bytes_per_thread(self):
        """Bytes one thread's pass of the region loads from global memory (LDG widths)."""
        return sum(b * n for b, n in self.global_load_bytes.items())

    @property
    def global_bytes_per_thread(self):
        """Bytes one thread's pass of the region loads from and stores to global memory (LDG and STG widths)."""
        return self.global_load_bytes_per_thread + sum(b * n for b, n in self.global_store_bytes.items())

    @property
    def global_load_pipe_cycles(self):
        """Cycles of the same 128-bytes-a-cycle data pipe that one pass of the region's global loads takes per
        warp, at full width: a load's bytes come back to the registers through L1's data pipe, the one shared
        memory uses (Nsight Compute's l1tex__data_pipe_lsu_wavefronts counts both). cp.async and TMA copies are
        not counted: the evidence does not keep their widths."""
        return sum(b * 32 / 128 * c for b, c in self.global_load_bytes.items())

    def summary(self):
        parts = []
        loads = ", ".join(f"{c}x {b * 8}-bit" for b, c in sorted(self.global_load_bytes.items(), reverse=True))
        stores = ", ".join(f"{c}x {b * 8}-bit" for b, c in sorted(self.global_store_bytes.items(), reverse=True))
        if loads:
            parts.append(f"global loads {loads}")
        if stores:
            parts.append(f"global stores {stores}")
        for label, bases in (("async copies to shared (cp.async/TMA)", ASYNC_COPIES), ("shared loads/stores", SHARED),
                             ("shared atomics", ATOMICS_SHARED), ("global atomics", ATOMICS_GLOBAL),
                             ("FP32 FMA/ADD/MUL", tuple(FP32)), ("tensor-core MMA", TENSOR),
                             ("barriers", BARRIERS), ("shuffles", SHUFFLES), ("local loads/stores", LOCAL)):
            if self.n(*bases):
                parts.append(f"{label} {self.n(*bases)}")
        return f"{self.where}: {self.instructions} instructions; " + "; ".join(parts)


def mix(instructions, where):
    m = Mix(where=where, instructions=len(instructions))
    for ins in instructions:
        b = ins.base
        m.counts[b] = m.counts.get(b, 0) + 1
        if b in GLOBAL_LOADS:
            w = access_bytes(ins.opcode)
            m.global_load_bytes[w] = m.global_load_bytes.get(w, 0) + 1
        elif b in GLOBAL_STORES:
            w = access_bytes(ins.opcode)
            m.global_store_bytes[w] = m.global_store_bytes.get(w, 0) + 1
        elif b in SHARED:
            w = shared_access_bytes(ins.opcode)
            m.shared_bytes[w] = m.shared_bytes.get(w, 0) + 1
    return m


def shared_access_bytes(opcode):
    """Bytes per thread of a shared load or store: LDS/STS by their width (.128 16 ...),
    ldmatrix/stmatrix (LDSM.16.M88.4) 4 bytes per 8x8 matrix: .4 16, .2 8, else 4."""
    parts = opcode.split(".")
    if parts[0] in ("LDSM", "STSM"):
        return {"4": 16, "2": 8}.get(parts[-1], 4)
    return access_bytes(opcode)


# ---- one kernel -------------------------------------------------------------------------

@dataclass
class Kernel:
    name: str            # mangled
    demangled: str
    arch: str
    resources: dict      # registers, stack, shared (with the 1 KB reserved on sm_90), local
    hot: Mix
    whole: Mix

    @property
    def spills(self):
        return self.resources.get("local", 0) > 0 or self.whole.n(*LOCAL) > 0

    def to_json(self):
        return {"name": self.name, "demangled": self.demangled, "arch": self.arch, "resources": self.resources,
                "hot": {"where": self.hot.where, "instructions": self.hot.instructions, "counts": self.hot.counts,
                        "global_load_bytes": self.hot.global_load_bytes,
                        "global_store_bytes": self.hot.global_store_bytes,
                        "shared_bytes": self.hot.shared_bytes},
                "whole_instructions": self.whole.instructions, "local_ops": self.whole.n(*LOCAL)}


def mix_from_json(d):
    return Mix(where=d["where"], instructions=d["instructions"], counts=d["counts"],
               global_load_bytes={int(k): v for k, v in d["global_load_bytes"].items()},
               global_store_bytes={int(k): v for k, v in d["global_store_bytes"].items()},
               shared_bytes={int(k): v for k, v in d.get("shared_bytes", {}).items()})


def kernel_from_json(d):
    whole = Mix(where="the whole kernel", instructions=d["whole_instructions"], counts={"LDL": d["local_ops"]})
    return Kernel(d["name"], d["demangled"], d["arch"], d["resources"], mix_from_json(d["hot"]), whole)


def demangle(names):
    tool = shutil.which("c++filt") or shutil.which("cu++filt")
    if not tool or not names:
        return {n: n for n in names}
    p = subprocess.run([tool], input="\n".join(names), capture_output=True, text=True)
    lines = p.stdout.splitlines()
    return dict(zip(names, lines)) if p.returncode == 0 and len(lines) == len(names) else {n: n for n in names}


def arch_rank(arch):
    """sm_90a above sm_90 (a 9.0 GPU runs the arch-specific SASS where both exist)."""
    return (int(re.sub(r"\D", "", arch or "0")), (arch or "").endswith("a"))


def analyse(resource_text, sass_text, pattern, arch=None):
    """Every kernel whose mangled or demangled name matches the regex PATTERN,
    each in the SASS the GPU runs: ARCH if given (sm_90, or sm_90a where the
    binary has it), else the newest the binary holds for that kernel."""
    res = parse_resource_usage(resource_text)
    sass = parse_sass(sass_text)
    best = {}
    for a, n in sass:
        if arch and a not in (arch, arch + "a"):
            continue
        if n not in best or arch_rank(a) > arch_rank(best[n]):
            best[n] = a
    human = demangle(list(best))
    rx = re.compile(pattern)
    kernels = []
    for n, a in best.items():
        if not (rx.search(n) or rx.search(human[n])):
            continue
        instructions = sass[(a, n)]
        hot, where = hot_region(instructions)
        kernels.append(Kernel(n, human[n], a, res.get((a, n), {}), mix(hot, where),
                              mix(instructions, "the whole kernel")))
    return kernels


def read_binary(program, pattern, arch=None, cuobjdump=None):
    tool = find_tool("cuobjdump", cuobjdump)
    return analyse(run_tool(tool, "-res-usage", program), run_tool(tool, "-sass", program), pattern, arch)


def matching(kernels, record):
    """The instantiation the lab ran: the one whose registers and static shared
    memory match the lab's record (cudaFuncGetAttributes on the GPU), else the first."""
    if not kernels:
        return None
    r = (record or {}).get("resources") or {}
    for k in kernels:
        if r and k.resources.get("registers") == r.get("registers") and \
                k.resources.get("shared", 0) - RESERVED_SHARED_SM90 == r.get("static_smem"):
            return k
    for k in kernels:
        if r and k.resources.get("registers") == r.get("registers"):
            return k
    return kernels[0]


RESERVED_SHARED_SM90 = 1024
