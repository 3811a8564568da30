"""The occupancy a kernel's resources allow: resident blocks per SM from its
registers per thread, shared memory per block and block size, against the
limits of compute capability 9.0 (H100, H200). On the GPU the lab's record
holds the truth (cudaOccupancyMaxActiveBlocksPerMultiprocessor, in
resources.blocks_per_sm); this is the offline arithmetic behind it, so a
student sees which resource sets the limit and what would lift it.
(CUDA C++ Programming Guide, "Compute Capabilities", table for 9.0.)"""
from dataclasses import dataclass

SM90 = {
    "warps_per_sm": 64,
    "blocks_per_sm": 32,
    "registers_per_sm": 65536,
    "register_unit": 256,          # registers are allocated per warp in units of 256 (8 per thread)
    "registers_per_thread": 255,
    "shared_per_sm": 233472,       # 228 KB
    "shared_per_block": 232448,    # 227 KB opt-in
    "shared_reserved": 1024,       # per block, by the system
    "shared_unit": 128,
}


def ceil_to(x, unit):
    return -(-x // unit) * unit


@dataclass
class Occupancy:
    blocks_per_sm: int
    warps_per_sm: int
    fraction: float          # of the SM's warp slots
    limiter: str             # registers, shared memory, threads, blocks per SM
    limits: dict             # each resource's own limit on blocks per SM

    def text(self):
        others = ", ".join(f"{k} {v}" for k, v in self.limits.items())
        return (f"{self.blocks_per_sm} block{'s' if self.blocks_per_sm != 1 else ''} x {self.warps_per_sm // max(self.blocks_per_sm, 1)} warps = "
                f"{self.warps_per_sm} of 64 warps per SM ({100 * self.fraction:.0f}%), limited by {self.limiter} "
                f"(blocks per SM allowed by each: {others})")


def occupancy(registers, block_threads, shared_bytes, limits=SM90):
    """shared_bytes: static + dynamic shared memory per block, without the 1 KB
    the system reserves (added here)."""
    if block_threads <= 0:
        raise ValueError("block_threads must be positive")
    warps = -(-block_threads // 32)
    regs_per_warp = ceil_to(max(registers, 1) * 32, limits["register_unit"])
    by = {
        # each of the SM's 4 sub-partitions holds a quarter of the registers and its own warps
        "registers": 4 * ((limits["registers_per_sm"] // 4) // regs_per_warp) // warps,
        "threads": limits["warps_per_sm"] // warps,
        "blocks per SM": limits["blocks_per_sm"],
    }
    per_block = ceil_to(shared_bytes + limits["shared_reserved"], limits["shared_unit"])
    by["shared memory"] = limits["shared_per_sm"] // per_block if shared_bytes > 0 else limits["blocks_per_sm"]
    if registers > limits["registers_per_thread"] or shared_bytes > limits["shared_per_block"]:
        by = {k: 0 for k in by}
    limiter = min(by, key=lambda k: (by[k], ["threads", "blocks per SM", "registers", "shared memory"].index(k)))
    blocks = by[limiter]
    return Occupancy(blocks, blocks * warps, blocks * warps / limits["warps_per_sm"], limiter, by)


def lift(occ, registers, block_threads):
    """What would raise the occupancy: the register count that allows one more block."""
    if occ.limiter != "registers" or occ.limits["registers"] >= min(occ.limits["threads"], occ.limits["blocks per SM"]):
        return None
    warps = -(-block_threads // 32)
    target = occ.blocks_per_sm + 1
    for r in range(registers - 1, 0, -1):
        if occupancy(r, block_threads, 0).limits["registers"] >= target:
            return (f"at most {r} registers per thread would allow {target} blocks "
                    f"({target * warps} warps): __launch_bounds__({block_threads}, {target})")
    return None
