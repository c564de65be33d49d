#!/usr/bin/env python3
"""ncu_shares.py: each kernel's share of the GPU time in an Nsight Compute report, from the CSV
that `ncu --import REPORT --csv --page raw --metrics gpu__time_duration.sum` prints (on stdin):
kernels grouped by name (their argument lists left out), sorted by total time, the top N rows
(default 40) and one line with the totals. Used by gpu_checks.sh's profile part.
    ncu --import r.ncu-rep --csv --page raw --metrics gpu__time_duration.sum | ncu_shares.py [N]
"""
import collections
import csv
import sys


def main():
    top = int(sys.argv[1]) if len(sys.argv) > 1 else 40
    rows = list(csv.reader(sys.stdin))
    if len(rows) < 3:
        sys.exit("ncu_shares: no kernels in the CSV (expected a header, a units row, then rows)")
    head, units = rows[0], rows[1]
    try:
        name_col, time_col = head.index("Kernel Name"), head.index("gpu__time_duration.sum")
    except ValueError:
        sys.exit("ncu_shares: the CSV lacks 'Kernel Name' or 'gpu__time_duration.sum'")
    total = collections.defaultdict(float)
    count = collections.Counter()
    for r in rows[2:]:
        try:
            t = float(r[time_col].replace(",", ""))
        except (IndexError, ValueError):
            continue
        name = r[name_col].split("(")[0]
        total[name] += t
        count[name] += 1
    grand = sum(total.values())
    if grand <= 0:
        sys.exit("ncu_shares: no kernel time in the CSV")
    unit = units[time_col] or "?"
    print(f"{'share':>7} {'calls':>6} {'total ' + unit:>14}  kernel")
    for name, t in sorted(total.items(), key=lambda kv: -kv[1])[:top]:
        print(f"{100 * t / grand:6.2f}% {count[name]:6d} {t:14.1f}  {name}")
    print(f"total {grand:.1f} {unit} over {sum(count.values())} kernels, {len(total)} names")


if __name__ == "__main__":
    main()
