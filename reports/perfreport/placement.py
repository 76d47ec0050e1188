"""The table of `scripts/gpu_run.sh placement`: each cell timed with its
device buffers at several offsets into their allocations
(`routing_benchmark --buffer-offset`), to see how much of a cell's time
depends on where its data lies rather than on the kernel.

Files are routing_benchmark JSON; each names its offset in the context
(buffer_offset). A cell's time at an offset is the median over the files
of that offset (rounds) of each file's median repetition.
"""
import math
import statistics

from . import load

# A cell whose slowest offset takes more than this times its fastest is
# marked "<==" (the repetitions of one process agree to about 1%).
MARK_SPREAD = 1.05


def offset_of(context, filename):
    value = context.get("buffer_offset")
    if value is None:
        raise ValueError(f"{filename}: its context has no buffer_offset (a routing_benchmark from before the flag?)")
    return int(value)


def load_rounds(files):
    """({cell key: {offset: [us, one per file (process) of that offset]}}, {cell key: path})."""
    per_offset = {}
    paths = {}
    for path in files:
        context, cells = load.load_benchmark_json(path)
        offset = offset_of(context, path)
        for key, cell in cells.items():
            per_offset.setdefault(key, {}).setdefault(offset, []).append(cell.median_us)
            paths.setdefault(key, cell.path)
    return per_offset, paths


def medians(per_offset):
    """load_rounds' times as (offsets ascending, {cell key: {offset: median us over its rounds}})."""
    offsets = sorted({o for by_offset in per_offset.values() for o in by_offset})
    times = {key: {o: statistics.median(v) for o, v in by_offset.items()} for key, by_offset in per_offset.items()}
    return offsets, times


def control(per_offset):
    """The rounds at one offset against each other: each (cell, offset)'s slowest
    process over its fastest. Where these spread as far as the offsets do, the
    cells move with the process, not with where their data lies."""
    spreads = [max(v) / min(v) for by_offset in per_offset.values() for v in by_offset.values() if len(v) > 1]
    if not spreads:
        return "placement control: one round per offset, so nothing to hold the offsets against"
    moved = sum(s > MARK_SPREAD for s in spreads)
    return (f"placement control: at one offset, {moved} of {len(spreads)} (cell, offset) pairs take more than "
            f"{MARK_SPREAD:.2f}x their fastest round in another round; {max(spreads):.3f}x at most")


def spread(by_offset):
    values = list(by_offset.values())
    return max(values) / min(values)


def table(offsets, times, paths):
    """Markdown: one row per cell, its time at each offset and the slowest over the fastest."""
    head = ["tokens", "experts", "topk", "dtype", "norm", "path"] + [f"+{o} B" for o in offsets] + ["max / min"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for key in sorted(times):
        _, tokens, experts, topk, dtype, norm, _ = key
        by_offset = times[key]
        cols = [f"{by_offset[o]:.3f}" if o in by_offset else "-" for o in offsets]
        s = spread(by_offset)
        mark = " <==" if s > MARK_SPREAD else ""
        lines.append("| " + " | ".join([str(tokens), str(experts), str(topk), dtype, norm, paths.get(key, "")]
                                       + cols + [f"{s:.3f}{mark}"]) + " |")
    return "\n".join(lines)


def summary(times):
    """One line: how many cells move by more than MARK_SPREAD with the offset, and the spreads' geomean."""
    spreads = [spread(v) for v in times.values() if len(v) > 1]
    if not spreads:
        return "placement: no cell was timed at more than one offset"
    moved = sum(s > MARK_SPREAD for s in spreads)
    gm = math.exp(sum(math.log(s) for s in spreads) / len(spreads))
    return (f"placement: {moved} of {len(spreads)} cells take more than {MARK_SPREAD:.2f}x their fastest time at "
            f"some offset; slowest over fastest offset {gm:.3f}x geomean, {max(spreads):.3f}x at most")

