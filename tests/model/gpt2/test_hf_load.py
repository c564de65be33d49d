#!/usr/bin/env python3
# test_hf_load.py: a folder written by pw_model_save loads in Hugging Face transformers as the same
# model it came from, any family (skipped where torch or transformers is not installed).
import subprocess
import sys


def main():
    resave, fixture_model, out = sys.argv[1:4]
    try:
        import torch
        from transformers import AutoModelForCausalLM as LM
        from transformers import AutoModelForSequenceClassification as SeqCls
    except ImportError as e:
        print(f"skipped: {e}")
        return 77
    subprocess.run([resave, fixture_model, out], check=True)
    a = LM.from_pretrained(fixture_model).eval()
    b = LM.from_pretrained(out).eval()
    sa, sb = a.state_dict(), b.state_dict()
    bad = [k for k in sa if k not in sb or not torch.equal(sa[k], sb[k])]
    gen = torch.Generator().manual_seed(0)
    x = torch.randint(0, a.config.vocab_size, (2, 12), generator=gen)
    with torch.no_grad():
        diff = (a(x).logits - b(x).logits).abs().max().item()
    # the score head is the tensor the family's ForSequenceClassification reads (no bias there)
    c = SeqCls.from_pretrained(out, num_labels=1).eval()
    from safetensors.torch import load_file
    ours = load_file(f"{out}/model.safetensors")
    score_ok = torch.equal(c.score.weight.detach(), ours["score.weight"])
    print(f"{len(sa)} tensors, {len(bad)} differ {bad[:3]}; logits max |diff| {diff:.3g}; "
          f"score head read by {type(c).__name__}: {score_ok}")
    return 0 if not bad and diff == 0.0 and score_ok else 1


if __name__ == "__main__":
    sys.exit(main())
