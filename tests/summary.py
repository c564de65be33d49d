#!/usr/bin/env python3
"""Read meson's testlog.json files (one per `meson test` run: the plain build, the sanitizer
build) and print the plain closing line 'N passed, N failed, N skipped' over all of them.
Each --skipped NAME counts one part that could not run on this machine as a skip.
Exit 1 when any test failed, timed out or errored, or a log is missing (its run never ended)."""
import argparse
import json
import sys

parser = argparse.ArgumentParser()
parser.add_argument("logs", nargs="+")
parser.add_argument("--skipped", action="append", default=[])
args = parser.parse_args()

counts = {"passed": 0, "failed": 0, "skipped": len(args.skipped)}
for path in args.logs:
    try:
        f = open(path, encoding="utf-8")
    except OSError as e:
        print(f"summary: {path}: {e.strerror}", file=sys.stderr)
        counts["failed"] += 1
        continue
    with f:
        for line in f:
            if not line.strip():
                continue
            result = json.loads(line).get("result", "")
            if result in ("OK", "EXPECTEDFAIL"):
                counts["passed"] += 1
            elif result == "SKIP":
                counts["skipped"] += 1
            else:
                counts["failed"] += 1
print(f"{counts['passed']} passed, {counts['failed']} failed, {counts['skipped']} skipped")
sys.exit(1 if counts["failed"] else 0)
