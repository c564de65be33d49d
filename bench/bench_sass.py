#!/usr/bin/env python3
"""bench_sass.py: what a GPU kernel's main loop asks of the SM, read off its machine code.

    python3 bench/bench_sass.py OBJ [OBJ_B] [--kernel NAME[:ROWS[,ROWS_B]] ...]

OBJ is an object or shared library built with -gencode sm_90a (the tensor-core attention's is
build/src/kernels/libpw_kernels.so.p/cuda_attention_bf16.cu.o), whose SASS cuobjdump (the
CUDA toolkit's; $CUOBJDUMP names another) prints, or a file of that text named *.sass. For
each kernel it finds the main loop (the outermost backward branch whose body holds
tensor-core products, HMMA) and the loop's fast path: the fewest instructions from the loop's
head to its backward branch among the paths that make exactly the 16-byte copies (cp.async,
LDGSTS.128) a thread makes for the next tile, which is a tile that needs no mask, no zeroing
of padding and no rescale. It prints that path's instructions by kind and the instructions it
issues for each HMMA; with a second object, both, and B's count over A's. ROWS is the rows of
the kernel's shared tiles (32 where not given; ROWS_B the second object's where it differs),
which sets the copies a thread makes a tile; without --kernel, this tree's attention kernels.
A path's branches are taken the short way wherever their condition is data (a mask, a moved
max), so code that branches around work an element counts as if it never did that work: a
lower bound there.

Why count: an SM sub-partition issues one instruction a cycle, and an m16n8k16 HMMA (4096
flops) keeps its tensor core busy for 4 cycles at the H100's bf16 peak (989 TFLOP/s over 132
SMs of 4 sub-partitions at 1.83 GHz), nearer 6 at the rate mma.sync reaches. A loop that
issues more instructions than that per HMMA is bound by its issue slots however well its
latencies are hidden, so the ratio bounds the kernel's speed whatever else the GPU does. The
count is exact and the same on every machine; the kernels' time is bench_kernels_cuda's, on a
GPU.

Last line: RESULT <kernel>_per_hmma=... for each kernel (of B where two objects are given).
"""
import heapq
import os
import re
import subprocess
import sys

# NAME:ROWS, the rows of the kernel's shared tiles in this tree (flash_tc_kernels.cuh's TC_TILE)
KERNELS = ["pw_flash_tc_fwd_64:64", "pw_flash_tc_dq_64:64", "pw_flash_tc_dkv_64:64",
           "pw_flash_tc_fwd_128:32", "pw_flash_tc_dq_128:32", "pw_flash_tc_dkv_128:32"]

# instruction kinds for the table, by opcode (its first dotted part)
KINDS = [
    ("hmma", {"HMMA"}),
    ("mufu", {"MUFU"}),
    ("fp32", {"FMUL", "FADD", "FFMA", "FMNMX", "FSEL", "FSETP", "F2FP", "FCHK"}),
    ("int", {"IMAD", "IADD3", "VIADD", "LEA", "LOP3", "SHF", "ISETP", "SEL", "PRMT", "IABS",
             "VIMNMX", "IMNMX", "MOV", "UMOV", "S2R", "S2UR", "CS2R", "ULDC", "LDC", "PLOP3",
             "P2R", "R2P", "FLO", "POPC"}),  # and the uniform datapath's (kinds())
    ("shared", {"LDS", "STS", "LDSM"}),
    ("global", {"LDG", "STG", "LDGSTS", "LDGDEPBAR", "DEPBAR"}),
    ("sync", {"BAR", "B2R", "SHFL", "VOTE", "VOTEU", "WARPSYNC", "BSSY", "BSYNC", "BRA"}),
    ("local", {"LDL", "STL"}),  # spilled registers
]

INSN = re.compile(r"\s+/\*([0-9a-f]{4,})\*/\s+(@!?U?P[T0-9]+\s+)?([A-Z][A-Z0-9_.]*)\s*(.*?);")


def sass(obj):
    """{function name: [(address, predicate, opcode, operands)]} of an object, or of a file
    of cuobjdump's text (a name ending in .sass)"""
    if obj.endswith(".sass"):
        with open(obj, encoding="utf-8") as f:
            text = f.read()
    else:
        tool = os.environ.get("CUOBJDUMP", "cuobjdump")
        try:
            out = subprocess.run([tool, "-sass", obj], capture_output=True, text=True,
                                 check=True)
        except FileNotFoundError:
            sys.exit(f"bench_sass: {tool} not found (set CUOBJDUMP to the CUDA toolkit's "
                     "cuobjdump)")
        except subprocess.CalledProcessError as e:
            sys.exit(f"bench_sass: {tool} -sass {obj} failed: {e.stderr.strip()}")
        text = out.stdout
    funcs, name = {}, None
    for line in text.splitlines():
        m = re.match(r"\s+Function : (\S+)", line)
        if m:
            name = m.group(1)
            funcs[name] = []
            continue
        m = INSN.match(line)
        if m and name:
            funcs[name].append((int(m.group(1), 16), m.group(2) or "", m.group(3), m.group(4)))
    return funcs


def blocks(ins):
    """basic blocks [(start index, end index exclusive)] and each one's successors"""
    at = {a: i for i, (a, _, _, _) in enumerate(ins)}
    lead = {0}
    for i, (a, pred, op, rest) in enumerate(ins):
        if op.startswith("BRA") or op.startswith("EXIT") or op.startswith("RET"):
            lead.add(i + 1)
            t = re.search(r"0x([0-9a-f]+)", rest)
            if op.startswith("BRA") and t and int(t.group(1), 16) in at:
                lead.add(at[int(t.group(1), 16)])
    starts = sorted(x for x in lead if x < len(ins))
    bl = [(s, starts[k + 1] if k + 1 < len(starts) else len(ins)) for k, s in enumerate(starts)]
    index = {s: k for k, (s, _) in enumerate(bl)}
    succ = []
    for k, (s, e) in enumerate(bl):
        a, pred, op, rest = ins[e - 1]
        out = []
        if op.startswith("BRA"):
            t = re.search(r"0x([0-9a-f]+)", rest)
            if t and int(t.group(1), 16) in at:
                out.append(index[at[int(t.group(1), 16)]])
            if pred and e < len(ins):
                out.append(index[e])
        elif op.startswith("EXIT") or op.startswith("RET"):
            if pred and e < len(ins):
                out.append(index[e])
        elif e < len(ins):
            out.append(index[e])
        succ.append(out)
    return bl, succ


def fast_path(ins, copies):
    """the instructions of the main loop's fast path, or None where there is no loop"""
    bl, succ = blocks(ins)
    loop = None  # (head block, latch block): the widest backward branch around an HMMA
    for k, (s, e) in enumerate(bl):
        for t in succ[k]:
            if t <= k and any(ins[i][2].startswith("HMMA") for i in range(bl[t][0], e)):
                if loop is None or e - bl[t][0] > bl[loop[1]][1] - bl[loop[0]][0]:
                    loop = (t, k)
    if loop is None:
        return None
    head, latch = loop

    def issued(k):
        return sum(1 for i in range(*bl[k])
                   if ins[i][2].startswith("LDGSTS") and ".128" in ins[i][2])

    def cost(k):
        return sum(1 for i in range(*bl[k]) if not ins[i][2].startswith("NOP"))

    # Dijkstra over (block, 16-byte copies so far): the path must make exactly the copies a
    # thread makes a tile, which rules out the paths no thread takes (one tensor's copies by
    # the 16-byte branch, the other's by the 2-byte one; a loop left before its trips)
    start = (head, issued(head))
    dist, prev, heap = {start: cost(head)}, {}, [(cost(head), start)]
    goal = None
    while heap:
        d, (k, n) = heapq.heappop(heap)
        if d > dist.get((k, n), 1 << 60):
            continue
        if k == latch and n == copies:
            goal = (k, n)
            break
        for t in succ[k]:
            if t < head or t > latch or (t == head and k == latch):
                continue
            state = (t, n + issued(t))
            nd = d + cost(t)
            if state[1] <= copies and nd < dist.get(state, 1 << 60):
                dist[state], prev[state] = nd, (k, n)
                heapq.heappush(heap, (nd, state))
    if goal is None:
        return None
    path, state = [], goal
    while True:
        path.append(state[0])
        if state == start:
            break
        state = prev[state]
    return [ins[i] for k in reversed(path) for i in range(*bl[k])
            if not ins[i][2].startswith("NOP")]


def kinds(path):
    counts = {name: 0 for name, _ in KINDS}
    counts["other"] = 0
    for _, _, op, _ in path:
        base = op.split(".")[0]
        if base in ("R2UR", "I2F", "F2I") or (base[0] == "U" and base not in ("UMOV", "ULDC")):
            base = "IMAD"  # the uniform datapath's integer work, and conversions
        for name, ops in KINDS:
            if base in ops:
                counts[name] += 1
                break
        else:
            counts["other"] += 1
    return counts


def spec(arg):
    """NAME[:ROWS[,ROWS_B]] -> (NAME, [rows of object A, rows of object B])"""
    name, _, rows = arg.partition(":")
    try:
        r = [int(x) for x in rows.split(",")] if rows else [32]
    except ValueError:
        sys.exit(f"bench_sass: {arg}: expected NAME[:ROWS[,ROWS_B]], rows a number")
    if not 1 <= len(r) <= 2 or min(r) < 1:
        sys.exit(f"bench_sass: {arg}: expected NAME[:ROWS[,ROWS_B]], rows a positive number")
    return name, r + r[-1:] if len(r) == 1 else r


def measure(obj, wanted, which):
    """{kernel: kinds of its fast path, or a string saying why there is none}"""
    funcs = sass(obj)
    res = {}
    for short, rows in wanted:
        # a mangled name: the length of the name, then the name, then its parameters
        name = next((n for n in funcs if re.search(r"\d" + re.escape(short) + r"P", n)), None)
        size = re.search(r"_(\d+)(x\d+)?$", short)  # the bucket, and a variant's blocks
        if name is None:
            res[short] = f"not in {os.path.basename(obj)}"
        elif size is None:
            res[short] = "no head-size bucket in the name (expected a suffix like _64)"
        else:
            # a tile: two tensors of `rows` rows of hs / 8 16-byte chunks, over 128 threads
            copies = 2 * rows[which] * (int(size.group(1)) // 8) // 128
            path = fast_path(funcs[name], copies)
            res[short] = kinds(path) if path else \
                f"no loop of HMMA making {copies} copies a tile ({rows[which]} rows)"
    return res


def main(argv):
    objs, wanted, i = [], [], 0
    while i < len(argv):
        if argv[i] == "--kernel" and i + 1 < len(argv):
            wanted.append(argv[i + 1])
            i += 2
        elif argv[i].startswith("-"):
            sys.exit(f"bench_sass: unknown option {argv[i]}\n" + __doc__.split("\n\n")[1])
        else:
            objs.append(argv[i])
            i += 1
    if not 1 <= len(objs) <= 2:
        sys.exit("usage: bench_sass.py OBJ [OBJ_B] [--kernel NAME[:ROWS[,ROWS_B]] ...]")
    for o in objs:
        if not os.path.isfile(o):
            sys.exit(f"bench_sass: {o}: no such file")
    wanted = [spec(k) for k in (wanted or KERNELS)]
    runs = [measure(o, wanted, w) for w, o in enumerate(objs)]
    cols = ["hmma", "mufu", "fp32", "int", "shared", "global", "sync", "local", "other"]
    print("the main loop's fast path (a tile with no mask, no padding, no rescale), per warp")
    print(f"{'kernel':22} {'obj':3} {'insns':>6} " + " ".join(f"{c:>6}" for c in cols)
          + f" {'/hmma':>6}")
    result, missing = [], 0
    for k, _ in wanted:
        per = []
        for tag, run in zip("AB", runs):
            c = run[k]
            if isinstance(c, str):
                print(f"{k:22} {tag:3} {c}")
                per.append(None)
                missing += 1
                continue
            total = sum(c.values())
            ratio = total / c["hmma"] if c["hmma"] else float("nan")
            per.append(ratio)
            print(f"{k:22} {tag:3} {total:6d} " + " ".join(f"{c[x]:6d}" for x in cols)
                  + f" {ratio:6.2f}")
        if len(per) == 2 and None not in per:
            print(f"{'':22} B/A {per[1] / per[0]:6.3f} (instructions per HMMA)")
        if per[-1] is not None:
            result.append(f"{k.replace('pw_flash_tc_', '')}_per_hmma={per[-1]:.2f}")
    print("RESULT " + " ".join(result))
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
