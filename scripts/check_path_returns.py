#!/usr/bin/env python3
"""Audits the CUDA kernel's tier table for path returns: a run of rows on
one path between two runs of another (`musespark path --row-runs ...
--marked-only` marks them), over every logits width, normalization, E in
steps of 16 and k = 1-8, at 8192-65536 rows in steps of 1024. Such a run is
either timed and kept on purpose, and listed with its reason in the
accepted list, or a gap that a band edit left: this fails on a marked shape
the list does not hold (with the command that shows it), and on a listed
shape that is no longer marked (the list is stale).

  scripts/check_path_returns.py --musespark build/cpu/harness/musespark \
      --accepted impl/cuda/accepted_path_returns.txt
"""
import argparse
import re
import subprocess
import sys

WIDTHS = ("float32", "bfloat16")  # the table asks only whether logits are 4-byte
NORMS = ("sigmoid", "softmax")
ROWS = "8192:65536:1024"
EXPERTS = range(16, 513, 16)
TOPK = range(1, 9)
SHAPE_LINE = re.compile(r"^\s*(\d+)\s+(\d+)\s+\d+-\d+\s+.*<- between two ")


def read_accepted(path):
    """The (dtype, norm, experts, topk) of lines `dtype norm E K-range reason` (a reason is required)."""
    accepted = set()
    with open(path, encoding="utf-8") as f:
        for line_no, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            fields = line.split(None, 4)
            if len(fields) < 5 or fields[0] not in WIDTHS or fields[1] not in NORMS:
                sys.exit(f"{path}:{line_no}: expected `dtype norm experts k-or-range reason`, got `{line}`")
            first, _, last = fields[3].partition("-")
            for k in range(int(first), int(last or first) + 1):
                accepted.add((fields[0], fields[1], int(fields[2]), k))
    return accepted


def marked_shapes(musespark):
    marked = set()
    for dtype in WIDTHS:
        for norm in NORMS:
            command = [musespark, "path", "--row-runs", ROWS, "--experts", ",".join(map(str, EXPERTS)),
                       "--topk", ",".join(map(str, TOPK)),
                       "--dtype", dtype, "--norm", norm, "--marked-only"]
            run = subprocess.run(command, capture_output=True, text=True)
            if run.returncode != 0:
                sys.exit(f"`{' '.join(command)}` failed (exit {run.returncode}): {run.stderr.strip()}")
            for line in run.stdout.split("\n"):
                match = SHAPE_LINE.match(line)
                if match:
                    marked.add((dtype, norm, int(match.group(1)), int(match.group(2))))
    return marked


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--musespark", required=True, help="the built musespark binary")
    parser.add_argument("--accepted", required=True, help="the accepted returns, one shape or k range a line")
    args = parser.parse_args()
    accepted = read_accepted(args.accepted)
    marked = marked_shapes(args.musespark)
    unexpected = sorted(marked - accepted)
    stale = sorted(accepted - marked)
    for dtype, norm, experts, k in unexpected:
        print(f"path return not in {args.accepted}: {dtype} {norm} E = {experts} k = {k}; see"
              f" `musespark path --row-runs {ROWS} --experts {experts} --topk {k} --dtype {dtype} --norm {norm}`")
    for dtype, norm, experts, k in stale:
        print(f"{args.accepted} lists {dtype} {norm} E = {experts} k = {k}, which has no path return now:"
              f" remove it")
    print(f"path returns: {len(marked)} of {len(WIDTHS) * len(NORMS) * len(EXPERTS) * len(TOPK)} shapes marked,"
          f" {len(marked) - len(unexpected)} accepted, {len(unexpected)} not accepted, {len(stale)} listed but gone")
    return 1 if unexpected or stale else 0


if __name__ == "__main__":
    sys.exit(main())
