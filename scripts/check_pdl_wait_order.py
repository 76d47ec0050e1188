#!/usr/bin/env python3
"""Checks the router kernels' PTX for the PDL order: every kernel waits
(griddepcontrol.wait), and no global or generic memory access comes before
its first wait in the text on a path from the kernel's entry.

Why. The decode kernels put the wait inside their row loop so that the
compiler hoists the row-invariant setup above it (routing_kernel_common.cuh,
pdl_trigger_early). A load hoisted with it would read what the previous
grid may still be writing. The wait's asm clobbers memory, which forbids
that; this check holds the compiler to it on every kernel it emits. It
reads the text order: it catches an access placed before the wait, not
one on a path that jumps past it (the row loop's first iteration always
waits; a block without rows reads nothing). Of the text before the wait
it reads what the entry reaches there, following branches and
fall-through but not into or out of the text after the wait: the compiler
may lay out a block of the loop's tail above the wait (a store that only a
branch from after the wait reaches), which runs after the wait as
everything after it in the text does.

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


LABEL = re.compile(r"^\s*(\$?[A-Za-z_][\w$]*):")
BRANCH = re.compile(r"^\s*(@!?%p\d+\s+)?bra(?:\.uni)?\s+(\$?[A-Za-z_][\w$]*)\s*;")
LEAVE = re.compile(r"^\s*(ret|exit)\s*;")


def global_accesses_before_wait(body):
    """Lines before the first griddepcontrol.wait, reached from the entry without passing it,
    that access global or generic memory; None without a wait."""
    at = body.find("griddepcontrol.wait")
    if at < 0:
        return None
    lines = body[:at].splitlines()
    labels = {}
    for i, line in enumerate(lines):
        m = LABEL.match(line)
        if m:
            labels[m.group(1)] = i
    hits, seen, todo = [], set(), [0]
    while todo:
        i = todo.pop()
        while i < len(lines) and i not in seen:  # one run of fall-through from line i
            seen.add(i)
            line = lines[i]
            m = MEMORY_OP.match(line)
            if m and not ({q for q in m.group(2).strip(".").split(".") if q} & NOT_GLOBAL):
                hits.append((i, line.strip()))
            b = BRANCH.match(line)
            if b:
                if b.group(2) in labels:  # a target past the wait is after it
                    todo.append(labels[b.group(2)])
                if not b.group(1):
                    break
            if LEAVE.match(line):
                break
            i += 1
    return [line for _, line in sorted(hits)]


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
