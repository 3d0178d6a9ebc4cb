#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""What failed in a `meson test` run, at the end where a reader of a long
CI log looks first: each failed test's name, result and time, its "not ok"
lines and the last lines it printed.

  failed-tests.py [--lines N] TESTLOG.json

meson's --print-errorlogs prints a failed test's output where the test
ended, which in a long run is far above the end (and outside a CI log's
shown part). Exits 0; prints nothing when nothing failed.
"""

import argparse
import json
import sys

PASSED = {"OK", "SKIP", "EXPECTEDFAIL"}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lines", type=int, default=40)
    ap.add_argument("testlog")
    args = ap.parse_args()
    try:
        with open(args.testlog, encoding="utf-8", errors="replace") as f:
            results = [json.loads(line) for line in f if line.strip()]
    except (OSError, ValueError) as e:
        print(f"failed-tests: {args.testlog}: {e}", file=sys.stderr)
        return 0
    for r in results:
        if r.get("result") in PASSED:
            continue
        out = (r.get("stdout") or "").splitlines()
        print(f"\n=== {r.get('name')}: {r.get('result')} after "
              f"{r.get('duration', 0):.0f} s (exit status "
              f"{r.get('returncode')})")
        bad = [line for line in out if line.startswith("not ok")]
        for line in bad[:20]:
            print(f"  {line}")
        print(f"--- its last {args.lines} lines:")
        for line in out[-args.lines:]:
            print(f"  {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
