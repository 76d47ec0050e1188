"""How many candidates the block-threshold path's rows hold on the
benchmark's inputs, computed on the CPU. The path's candidates are the
experts whose selection input reaches tau, the k-th largest of its groups'
maxima (impl/cuda/routing_block_threshold_path.cuh); warp 0 ranks up to 32
of them alone, past that every thread ranks its share behind one more block
barrier, so the count per row says which band a decode cell's rows take.

The inputs are routing_benchmark's (perf/bench_cuda.cu, fill_logits): the
same hash, seed 1 for the logits and 2 for the bias, in float32, logits
rounded to bfloat16 when asked. The scores are computed in float64, not the
kernel's float32: a count can differ from the kernel's where two inputs tie
within float32 rounding, which the benchmark's inputs make rare."""
import math
import struct

MASK32 = 0xFFFFFFFF


def f32(x):
    """x rounded to float32."""
    return struct.unpack("<f", struct.pack("<f", x))[0]


def bf16(x):
    """x (a float32 value) rounded to bfloat16, to nearest even."""
    bits = struct.unpack("<I", struct.pack("<f", x))[0]
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return struct.unpack("<f", struct.pack("<I", bits))[0]


def bench_value(i, seed):
    """fill_logits' element i for seed: a sum of four hashed uniforms, in float32."""
    h = ((i * 2654435761) & MASK32) ^ seed ^ ((i >> 32) & MASK32)
    acc = 0.0
    for _ in range(4):
        h ^= h >> 16
        h = (h * 0x7FEB352D) & MASK32
        h ^= h >> 15
        h = (h * 0x846CA68B) & MASK32
        h ^= h >> 16
        acc = f32(acc + f32(float(h) * f32(2.3283064e-10)))
    return f32(f32(acc - 2.0) * f32(1.7320508))


def group_of(expert, warps, groups_per_warp):
    """The group of an expert in a form of `warps` warps: thread t holds experts t + i * 32 warps,
    and a warp's lanes split into `groups_per_warp` runs (1: the warp, 2: half-warps, 4: quarter-warps)."""
    t = expert % (32 * warps)
    return (t // 32) * groups_per_warp + (t % 32) // (32 // groups_per_warp)


def row_candidates(x, b, k, softmax, warps, groups_per_warp):
    """The candidate count of one row: logits x, bias b."""
    if softmax:
        m = max(x)
        terms = [math.exp(v - m) for v in x]
        s = sum(terms)
        q = [t / s + bb for t, bb in zip(terms, b)]
    else:
        q = [1.0 / (1.0 + math.exp(-v)) + bb for v, bb in zip(x, b)]
    best = {}
    for e, v in enumerate(q):
        g = group_of(e, warps, groups_per_warp)
        best[g] = max(best.get(g, v), v)
    maxima = sorted(best.values(), reverse=True)
    if k > len(maxima):
        return len(q)  # fewer groups than k: every expert qualifies
    tau = maxima[k - 1]
    return sum(1 for v in q if v >= tau)


def counts(tokens, experts, k, softmax, dtype, warps, per_thread, groups_per_warp):
    """The candidate count of every row of a benchmark cell, on the form (warps, per_thread, groups)."""
    if not 1 <= k <= experts:
        raise ValueError(f"k = {k} must lie in [1, {experts}]")
    if groups_per_warp not in (1, 2, 4):
        raise ValueError(f"groups per warp = {groups_per_warp}: a group is a warp (1), a half-warp (2) "
                         "or a quarter-warp (4)")
    if 32 * warps * per_thread < experts:
        raise ValueError(f"{warps} warps of {per_thread} experts hold {32 * warps * per_thread}, fewer than {experts}")
    if dtype not in ("float32", "bfloat16"):
        raise ValueError(f"dtype {dtype!r}: float32 or bfloat16")
    b = [bench_value(e, 2) for e in range(experts)]
    out = []
    for t in range(tokens):
        x = [bench_value(t * experts + e, 1) for e in range(experts)]
        if dtype == "bfloat16":
            x = [bf16(v) for v in x]
        out.append(row_candidates(x, b, k, softmax, warps, groups_per_warp))
    return out


def summary(ns):
    """One line: the counts' range and median, and the rows past warp 0's band."""
    s = sorted(ns)
    return (f"{len(s)} rows: candidates {s[0]}-{s[-1]}, median {s[len(s) // 2]}; "
            f"{sum(1 for n in s if n > 32)} rows over 32")
