# runs.py: read the JSONL files of ppo_world runs and turn them into the quickstart's table,
# its RESULT line, the PNG plots (through gnuplot), and the ensemble experiment's table.
"""Summaries of ppo_world run folders (no third-party modules: the quickstart installs none).

  python3 runs.py quickstart OUT --minutes M [--sft-eval DIR]
  python3 runs.py ensembles EXP_DIR NAME=RUN_DIR ...
"""
import json
import math
import os
import re
import shutil
import subprocess
import sys


def die(msg):
    print(f"runs.py: {msg}", file=sys.stderr)
    sys.exit(1)


def read_jsonl(path):
    if not os.path.isfile(path):
        die(f"missing {path}")
    rows = []
    with open(path) as f:
        for i, line in enumerate(f, 1):
            if line.strip():
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError as e:
                    die(f"{path}:{i}: not JSON ({e})")
    return rows


def saved_config(run):
    """The few keys of RUN/config.yaml the summaries need (ppo_world writes one key a line)."""
    path = os.path.join(run, "config.yaml")
    if not os.path.isfile(path):
        die(f"missing {path}")
    section, out = "", {}
    with open(path) as f:
        for line in f:
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            m = re.match(r"^(\s*)([A-Za-z_]+):\s*(.*)$", line.rstrip("\n"))
            if not m:
                continue
            indent, key, val = m.groups()
            if not indent:
                section = key if not val else ""
                if val:
                    out[key] = val.strip('"')
            else:
                out[f"{section}.{key}"] = val.strip('"')
    return out


def count_prompts(path):
    with open(path) as f:
        return sum(1 for line in f if line.strip())


def eval_size(run):
    """Responses per evaluation: eval.num_prompts, or fewer when the prompt file is shorter."""
    cfg = saved_config(run)
    n = int(cfg["eval.num_prompts"])
    src = cfg.get("data.eval_prompts") or cfg["data.prompts"]
    if os.path.isfile(src):
        n = min(n, count_prompts(src))
    return n


def gold_se(row, n):
    """Standard error of one evaluation's mean gold score over n responses.

    When eval.jsonl carries the spread of the per-response gold scores (eval/gold_scores_std)
    this is std / sqrt(n). Otherwise only the mean is known; gold lies in [0, 1], so
    E[g^2] <= E[g] and the variance is at most m (1 - m): the bound sqrt(m (1 - m) / n) is
    used, which can only overstate the error (about 20% for the task's typical spread)."""
    for key in ("eval/gold_scores_std", "eval/gold_std"):
        if row.get(key) is not None:
            return row[key] / math.sqrt(n), "measured"
    m = min(max(row["eval/gold_scores"], 0.0), 1.0)
    return math.sqrt(m * (1.0 - m) / n), "bound"


def kl_at(metrics, step):
    """objective/kl of the batch sampled right after `step`'s update: the policy an evaluation
    after step `step` sees (the last step's own batch when the run ends there)."""
    by_step = {int(r["step"]): r for r in metrics}
    for s in (step + 1, step):
        if s in by_step and by_step[s].get("objective/kl") is not None:
            return by_step[s]["objective/kl"]
    return float("nan")


def eval_points(run):
    """One point per evaluation: step, proxy score, gold, its SE, KL, mean response length."""
    evals, metrics = read_jsonl(os.path.join(run, "eval.jsonl")), read_jsonl(os.path.join(run, "metrics.jsonl"))
    n = eval_size(run)
    pts = []
    for row in evals:
        if row.get("eval/gold_scores") is None:
            die(f"{run}/eval.jsonl: no eval/gold_scores (is model.gold set?)")
        se, how = gold_se(row, n)
        step = int(row["step"])
        initial = int(row.get("episode", 1)) == 0
        pts.append({"step": step, "initial": initial, "proxy": row["eval/scores"],
                    "gold": row["eval/gold_scores"], "se": se, "se_kind": how,
                    "kl": 0.0 if initial else kl_at(metrics, step),
                    "len": row.get("eval/sequence_lengths", float("nan")), "n": n})
    if not pts:
        die(f"{run}/eval.jsonl: no evaluation")
    return pts, metrics


def gnuplot(script, cwd):
    exe = shutil.which("gnuplot")
    if not exe:
        print("runs.py: gnuplot not found: no plots", file=sys.stderr)
        return False
    probe = subprocess.run([exe, "-e", "set terminal"], capture_output=True, text=True)
    terms = probe.stdout + probe.stderr
    term = "pngcairo size 900,560 font ',11'" if "pngcairo" in terms else "png size 900,560"
    r = subprocess.run([exe], input=f"set terminal {term}\n" + script, cwd=cwd,
                       capture_output=True, text=True)
    if r.returncode != 0:
        print(f"runs.py: gnuplot failed:\n{r.stderr}", file=sys.stderr)
        return False
    return True


def write_dat(path, header, rows):
    with open(path, "w") as f:
        f.write("# " + " ".join(header) + "\n")
        for r in rows:
            f.write(" ".join(f"{v:.6g}" if isinstance(v, float) else str(v) for v in r) + "\n")


def plot_run(run, pts, metrics, sft):
    """score.png, kl.png, gold.png in RUN: proxy score, KL and gold score per PPO step."""
    write_dat(os.path.join(run, "train.dat"), ["step", "score", "kl", "rlhf_reward"],
              [(int(m["step"]), m["objective/scores"], m["objective/kl"], m["objective/rlhf_reward"])
               for m in metrics])
    # x = updates the evaluated policy has had: 0 for the SFT policy, s + 1 after step s
    rows = [] if pts[0]["initial"] else [(0, sft["proxy"], sft["gold"], sft["se"], 0.0)]
    rows += [(0 if p["initial"] else p["step"] + 1, p["proxy"], p["gold"], p["se"], p["kl"]) for p in pts]
    write_dat(os.path.join(run, "eval.dat"), ["updates", "proxy", "gold", "gold_se", "kl"], rows)
    gnuplot("""set key bottom right
set grid
set xlabel 'PPO step'
set output 'score.png'
set title 'Proxy reward-model score (training batches and evaluation prompts)'
set ylabel 'score'
plot 'train.dat' using 1:2 with lines lw 1 title 'training batch', \\
     'eval.dat' using 1:2 with linespoints lw 2 pt 7 title 'evaluation'
set output 'kl.png'
set title 'KL to the SFT policy (sum over response tokens, mean over responses)'
set ylabel 'KL (nats)'
set key top left
plot 'train.dat' using 1:3 with lines lw 2 title 'objective/kl'
set output 'gold.png'
set title 'Gold score on held-out prompts (error bars: 1 standard error)'
set ylabel 'gold score (2^{-edit distance})'
set key bottom right
plot 'eval.dat' using 1:3:4 with yerrorlines lw 2 pt 7 title 'gold'
""", run)


def fmt(x, nd=3):
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{nd}f}"


def quickstart(argv):
    import argparse
    ap = argparse.ArgumentParser(prog="runs.py quickstart")
    ap.add_argument("out")
    ap.add_argument("--minutes", type=float, required=True)
    ap.add_argument("--sft-eval", default="", help="run folder of the SFT policy's evaluation")
    ap.add_argument("--rms", nargs="+", required=True, help="reward-model folders")
    a = ap.parse_args(argv)
    ppo = os.path.join(a.out, "ppo")
    pts, metrics = eval_points(ppo)
    if pts[0]["initial"]:
        sft = dict(pts[0])
    else:
        if not a.sft_eval:
            die(f"{ppo}/eval.jsonl has no evaluation of the initial policy; give --sft-eval")
        spts, _ = eval_points(a.sft_eval)
        sft = dict(spts[0], kl=0.0, initial_from_sft_eval=True)
    fin = pts[-1]
    train_kl = metrics[-1].get("objective/kl", float("nan"))
    accs = []
    for rm in a.rms:
        rows = [r for r in read_jsonl(os.path.join(rm, "metrics.jsonl")) if r.get("valid/accuracy") is not None]
        if not rows:
            die(f"{rm}/metrics.jsonl: no valid/accuracy")
        accs.append(rows[-1]["valid/accuracy"])
    rm_acc = sum(accs) / len(accs)
    n_pairs = count_prompts(os.path.join(a.out, "task", "prefs_valid.jsonl"))
    diff = fin["gold"] - sft["gold"]
    se = math.sqrt(sft["se"] ** 2 + fin["se"] ** 2)
    z = diff / se if se > 0 else float("nan")
    plot_run(ppo, pts, metrics, sft)
    se_note = ("standard errors from the per-response spread" if fin["se_kind"] == "measured" else
               "standard errors: upper bound sqrt(m(1-m)/n), eval.jsonl has no per-response spread")
    print()
    print(f"  policy  gold score      proxy score  KL (nats)  response length   ({fin['n']} held-out prompts)")
    print(f"  SFT     {fmt(sft['gold'])} +- {fmt(sft['se'])}  {fmt(sft['proxy']):>11}  {fmt(0.0, 2):>9}  {fmt(sft['len'], 1):>15}")
    print(f"  PPO     {fmt(fin['gold'])} +- {fmt(fin['se'])}  {fmt(fin['proxy']):>11}  {fmt(fin['kl'], 2):>9}  {fmt(fin['len'], 1):>15}")
    print(f"  gold improvement {diff:+.3f} +- {se:.3f} = {z:.1f} standard errors ({se_note})")
    print(f"  reward models: held-out accuracy {' '.join(fmt(x) for x in accs)} (mean {fmt(rm_acc)}, {n_pairs} pairs, chance 0.5)")
    print(f"  PPO: {len(metrics)} steps, last training batch KL {fmt(train_kl, 2)}")
    print(f"  files: {a.out}/ (task, sft, rm_seed*, ppo: metrics.jsonl, eval.jsonl, checkpoints, score.png, kl.png, gold.png)")
    print(f"RESULT sft_gold={sft['gold']:.4f} ppo_gold={fin['gold']:.4f} gold_se={se:.4f} "
          f"rm_accuracy={rm_acc:.4f} minutes={a.minutes:.2f}")


def ensembles(argv):
    """EXP_DIR/gold_vs_kl.png and EXP_DIR/table.md from runs named NAME=RUN_DIR."""
    if len(argv) < 2:
        die("usage: runs.py ensembles EXP_DIR NAME=RUN_DIR ...")
    exp, runs = argv[0], [x.split("=", 1) for x in argv[1:]]
    lines = ["| objective | steps | final KL | final proxy score | final gold +- SE | best gold +- SE (at KL) |",
             "|---|---|---|---|---|---|"]
    plots = []
    for name, run in runs:
        pts, metrics = eval_points(run)
        fn = f"{name}.dat"
        write_dat(os.path.join(exp, fn), ["kl", "gold", "gold_se", "proxy", "step"],
                  [(p["kl"], p["gold"], p["se"], p["proxy"], p["step"]) for p in pts])
        plots.append(f"'{fn}' using 1:2:3 with yerrorlines lw 2 title '{name}'")
        fin = pts[-1]
        best = max(pts, key=lambda p: p["gold"])
        lines.append(f"| {name} | {len(metrics)} | {fmt(fin['kl'], 2)} | {fmt(fin['proxy'])} | "
                     f"{fmt(fin['gold'])} +- {fmt(fin['se'])} | {fmt(best['gold'])} +- {fmt(best['se'])} "
                     f"({fmt(best['kl'], 2)}) |")
    with open(os.path.join(exp, "table.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    gnuplot("set output 'gold_vs_kl.png'\nset grid\nset key bottom right\n"
            "set title 'Gold score against KL to the SFT policy'\n"
            "set xlabel 'KL (nats, sum over response tokens)'\nset ylabel 'gold score'\n"
            "plot " + ", \\\n     ".join(plots) + "\n", exp)


def main():
    if len(sys.argv) < 2:
        die(__doc__)
    cmd, rest = sys.argv[1], sys.argv[2:]
    if cmd == "quickstart":
        quickstart(rest)
    elif cmd == "ensembles":
        ensembles(rest)
    else:
        die(f"unknown command '{cmd}'\n{__doc__}")


if __name__ == "__main__":
    main()
