#!/usr/bin/env python3
# bench_tokenizer.py: the Hugging Face `tokenizers` library's encoding speed on the same text and
# tokenizers as bench_tokenizer.c, on one thread, for the ratio in docs/performance.md.
"""Run from the repository root (needs `pip install tokenizers`):

    RAYON_NUM_THREADS=1 python3 bench/bench_tokenizer.py [fixtures folder] [rounds] [chunk]

With chunk (characters) the text goes through encode_batch in pieces of that size, as documents
would, rather than as one 10 MB string (the ids then differ where a chunk cuts a word).
Prints a table, then `RESULT hf_tokenizer_mbs=... hf_tokenizer_gpt2_mbs=... hf_tokenizer_nfc_mbs=...`
(best of rounds).
"""
import os
import sys
import time

os.environ.setdefault("RAYON_NUM_THREADS", "1")  # before the library starts its pool
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
from tokenizers import Tokenizer  # noqa: E402

TARGET = 10 << 20


def main():
    fixtures = sys.argv[1] if len(sys.argv) > 1 else "tests/fixtures"
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    chunk = int(sys.argv[3]) if len(sys.argv) > 3 else 0
    with open(os.path.join(fixtures, "bpe_heldout.txt"), "rb") as f:
        one = f.read()
    copies = -(-TARGET // len(one))
    text = (one * copies).decode("utf-8")
    nbytes = len(one) * copies
    docs = [text[i:i + chunk] for i in range(0, len(text), chunk)] if chunk else None
    print(f"encoding {nbytes} bytes ({copies} copies, chunks {chunk or 'none'}), {rounds} rounds, "
          f"RAYON_NUM_THREADS={os.environ['RAYON_NUM_THREADS']}")
    print(f"{'tokenizer':<12} {'load_ms':>10} {'ids':>10} {'best_MB/s':>12} {'median_MB/s':>12}")
    best = {}
    for name in ("bpe_llama3", "bpe_gpt2", "bpe_nfc"):
        t0 = time.perf_counter()
        tok = Tokenizer.from_file(os.path.join(fixtures, name, "tokenizer.json"))
        load_ms = 1e3 * (time.perf_counter() - t0)
        speeds = []
        for _ in range(rounds):
            t0 = time.perf_counter()
            if docs:
                n_ids = sum(len(e.ids) for e in tok.encode_batch(docs, add_special_tokens=False))
            else:
                n_ids = len(tok.encode(text, add_special_tokens=False).ids)
            speeds.append(nbytes / 1e6 / (time.perf_counter() - t0))
        speeds.sort()
        best[name] = speeds[-1]
        print(f"{name:<12} {load_ms:10.2f} {n_ids:10d} {speeds[-1]:12.2f} {speeds[len(speeds) // 2]:12.2f}")
    print(f"RESULT hf_tokenizer_mbs={best['bpe_llama3']:.2f} hf_tokenizer_gpt2_mbs={best['bpe_gpt2']:.2f} "
          f"hf_tokenizer_nfc_mbs={best['bpe_nfc']:.2f}")


if __name__ == "__main__":
    main()
