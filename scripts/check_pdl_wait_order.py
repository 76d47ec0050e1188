#!/usr/bin/env python3
"""Checks the router kernels' PTX for the PDL order: every kernel waits
(griddepcontrol.wait), and no global or generic memory access comes before
its first wait in the text.

Why. The decode kernels put the wait inside their row loop so that the
compiler hoists the row-invariant setup above it (routing_kernel_common.cuh,
pdl_trigger_early). A load hoisted with it would read what the previous
grid may still be writing. The wait's asm clobbers memory, which forbids
that; this check holds the compiler to it on every kernel it emits. It
reads the text order only: it catches an access placed before the wait,
not one on a path that jumps past it (the row loop's first iteration
always waits; a block without rows reads nothing).

  scripts/check_pdl_wait_order.py build/cpu/impl/CMakeFiles/musespark_kernels_*_ptx.dir/cuda/instances/*.ptx
"""
import re
import sys

ENTRY = re.compile(r"^\.(?:visible\s+)?\.entry\s+(\S+?)\(", re.M)
# Memory instructions that reach global memory: ld/st/atom/red/prefetch/cp.async
# in the global or generic state space (no state space means generic).
MEMORY_OP = re.compile(r"^\s*(?:@!?%p\d+\s+)?(ld|st|atom|red|prefetch|prefetchu|cp\.async|cp\.reduce\.async|multimem)"
                       r"((?:\.[a-z0-9_]+)*)\s")
NOT_GLOBAL = {"param", "shared", "local", "const", "shared::cta", "shared::cluster"}


def entries(ptx):
    """(name, body) of each kernel: from its .entry to the line '}' that closes it."""
    starts = [(m.group(1), m.start()) for m in ENTRY.finditer(ptx)]
    for i, (name, start) in enumerate(starts):
        end = starts[i + 1][1] if i + 1 < len(starts) else len(ptx)
        yield name, ptx[start:end]


def global_accesses_before_wait(body):
    """Lines before the first griddepcontrol.wait that access global or generic memory; None without a wait."""
    at = body.find("griddepcontrol.wait")
    if at < 0:
        return None
    hits = []
    for line in body[:at].splitlines():
        m = MEMORY_OP.match(line)
        if not m:
            continue
        spaces = {q for q in m.group(2).strip(".").split(".") if q}
        if spaces & NOT_GLOBAL:
            continue
        hits.append(line.strip())
    return hits


def main(paths):
    if not paths:
        sys.exit("usage: check_pdl_wait_order.py FILE.ptx [FILE.ptx ...]")
    kernels = failures = 0
    for path in paths:
        with open(path, encoding="utf-8") as f:
            ptx = f.read()
        for name, body in entries(ptx):
            kernels += 1
            hits = global_accesses_before_wait(body)
            if hits is None:
                failures += 1
                print(f"FAIL {path}: {name} has no griddepcontrol.wait")
            elif hits:
                failures += 1
                print(f"FAIL {path}: {name} accesses memory before its PDL wait:")
                for line in hits[:5]:
                    print(f"    {line}")
    if kernels == 0:
        sys.exit(f"no .entry in {', '.join(paths)}: is it PTX?")
    print(f"{kernels} kernels in {len(paths)} PTX files, {failures} failing the PDL wait order")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
