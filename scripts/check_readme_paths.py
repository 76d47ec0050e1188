#!/usr/bin/env python3
"""Checks that every `$ musespark path ...` example in README.md prints what
the README shows, so that a tier-table change that moves an example fails
the CPU suite instead of leaving the README's "real output" stale.

  scripts/check_readme_paths.py --musespark build/cpu/harness/musespark [--readme README.md]

An example is the command line and the lines after it up to the next `$ `
line or the end of its code block. The command runs through bash (an
example may use `$(seq ...)`) with its first word replaced by the binary.
"""
import argparse
import difflib
import subprocess
import sys


def examples(lines):
    for i, line in enumerate(lines):
        if not line.startswith("$ musespark path"):
            continue
        shown = []
        for after in lines[i + 1:]:
            if after.startswith("$ ") or after.startswith("```"):
                break
            shown.append(after)
        yield i + 1, line[2:], shown


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--musespark", required=True, help="the built musespark binary")
    parser.add_argument("--readme", default="README.md")
    args = parser.parse_args()
    with open(args.readme, encoding="utf-8") as f:
        lines = f.read().split("\n")
    checked, stale = 0, 0
    for line_no, command, shown in examples(lines):
        run = subprocess.run(["bash", "-c", command.replace("musespark", args.musespark, 1)],
                             capture_output=True, text=True)
        printed = run.stdout.rstrip("\n").split("\n")
        checked += 1
        if run.returncode != 0 or printed != shown:
            stale += 1
            print(f"{args.readme}:{line_no}: `{command}` prints otherwise than the README shows"
                  f" (exit {run.returncode}):")
            for diff_line in difflib.unified_diff(shown, printed, "README", "printed", lineterm=""):
                print("  " + diff_line)
            if run.stderr:
                print("  stderr: " + run.stderr.strip())
    if checked == 0:
        print(f"{args.readme}: no `$ musespark path` example found")
        return 1
    print(f"{args.readme}: {checked} `musespark path` examples, {stale} stale")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
