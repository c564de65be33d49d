#!/usr/bin/env python3
# test_hf_load.py: a folder written by pw_model_save loads in Hugging Face transformers as the same
# model it came from, any family (skipped where torch or transformers is not installed). With
# "score", the folder is a ForSequenceClassification reward model, resaved as one; with a shard
# size, it is saved in bfloat16 shards of at most that many bytes, as published models are.
import json
import os
import subprocess
import sys


def main():
    resave, fixture_model, out = sys.argv[1:4]
    extra = sys.argv[4] if len(sys.argv) > 4 else None
    score = extra == "score"
    shard_bytes = extra if extra and not score else None
    try:
        import torch
        from safetensors import safe_open
        from transformers import AutoModelForCausalLM as LM
        from transformers import AutoModelForSequenceClassification as SeqCls
    except ImportError as e:
        print(f"skipped: {e}")
        return 77
    subprocess.run([resave, fixture_model, out] + ([extra] if extra else []), check=True)
    if score:
        a = SeqCls.from_pretrained(fixture_model).eval()
        # our config.json does not carry pad_token_id; transformers needs it to find each row's
        # last real token
        b = SeqCls.from_pretrained(out, num_labels=1, pad_token_id=a.config.pad_token_id).eval()
    else:
        a = LM.from_pretrained(fixture_model).eval()
        b = LM.from_pretrained(out, dtype="auto").eval()
    if shard_bytes:
        with open(f"{out}/model.safetensors.index.json") as f:
            shards = sorted(set(json.load(f)["weight_map"].values()))
        sizes = [os.path.getsize(f"{out}/{s}") for s in shards]
        print(f"{len(shards)} shards of {min(sizes)} to {max(sizes)} bytes, "
              f"read as {next(b.parameters()).dtype}")
        if len(shards) < 2 or next(b.parameters()).dtype != torch.bfloat16:
            return 1
        # read back in float32 (exact), against the fixture's weights rounded by torch: the
        # same values if our rounding is torch's (buffers such as RoPE's stay float32 in both)
        b = LM.from_pretrained(out, dtype=torch.float32).eval()
        with torch.no_grad():
            for p in a.parameters():
                p.copy_(p.to(torch.bfloat16).float())
    sa, sb = a.state_dict(), b.state_dict()
    bad = [k for k in sa if k not in sb or not torch.equal(sa[k], sb[k])]
    gen = torch.Generator().manual_seed(0)
    x = torch.randint(1, a.config.vocab_size, (2, 12), generator=gen)
    mask = torch.ones_like(x)
    if score:  # a left-padded row: the score is read at the last real token
        x[1, :5], mask[1, :5] = a.config.pad_token_id, 0
    with torch.no_grad():
        diff = (a(x, attention_mask=mask).logits - b(x, attention_mask=mask).logits)
        diff = diff.abs().max().item()
    # the score head is the tensor the family's ForSequenceClassification reads (no bias there)
    c = b if score else SeqCls.from_pretrained(out, num_labels=1, dtype="auto").eval()
    if shard_bytes:
        with open(f"{out}/model.safetensors.index.json") as f:
            holder = f"{out}/" + json.load(f)["weight_map"]["score.weight"]
    else:
        holder = f"{out}/model.safetensors"
    with safe_open(holder, "pt") as f:
        score_ok = torch.equal(c.score.weight.detach(), f.get_tensor("score.weight"))
    print(f"{type(b).__name__}: {len(sa)} tensors, {len(bad)} differ {bad[:3]}; "
          f"{'scores' if score else 'logits'} max |diff| {diff:.3g}; "
          f"score head read by {type(c).__name__}: {score_ok}")
    return 0 if not bad and diff == 0.0 and score_ok else 1


if __name__ == "__main__":
    sys.exit(main())
