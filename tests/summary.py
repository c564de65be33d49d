#!/usr/bin/env python3
"""Read meson's testlog.json and print the plain closing line 'N passed, N failed, N skipped'.
Exit 1 when any test failed, timed out or errored."""
import json
import sys

counts = {"passed": 0, "failed": 0, "skipped": 0}
with open(sys.argv[1], encoding="utf-8") as f:
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
