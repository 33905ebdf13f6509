# -*- coding: utf-8 -*-
# Copyright (c) gpufleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""TEST-ONLY stand-in model for the GPU validation: a tiny, randomly initialised Qwen3.5
(Qwen3_5ForConditionalGeneration) checkpoint with an offline byte-level BPE tokenizer and a
Qwen3VL processor. No network needed; its answers mean nothing.

usage: python make_tiny_qwen35.py OUT_DIR
       python make_tiny_qwen35.py --layout MODELS_DIR REPO_ID

With --layout the model goes where gpufleet.llm_stack.qwen_model_fetch keeps a
model, MODELS_DIR/ORG/NAME/<commit>/ with its .llm_stack_manifest.json and
MODELS_DIR/ORG/NAME/current -> <commit>, so that vllm_serve finds it as it finds
a fetched one. The commit is a stand-in: the sha1 of the file list.

4 layers (3 linear-attention, 1 full-attention), 4 attention heads and 2 key/value heads,
so a tensor parallel size of 1 or 2 divides them.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import json
import os
import shutil
import sys
import tempfile

import torch
from transformers import (
    AutoProcessor,
    AutoTokenizer,
    Qwen2VLImageProcessor,
    Qwen3_5Config,
    Qwen3_5ForConditionalGeneration,
    Qwen3_5Tokenizer,
    Qwen3VLProcessor,
    Qwen3VLVideoProcessor,
)


def bytes_to_unicode():
    """GPT-2 byte-level alphabet (same mapping the ByteLevel pre-tokenizer uses)."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("\xa1"), ord("\xac") + 1)) \
        + list(range(ord("\xae"), ord("\xff") + 1))
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


def main(out):
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)

    # ---- tokenizer: 256 byte tokens + Qwen special tokens (ids 256..) -------------
    byte_vocab = {ch: i for i, ch in enumerate(bytes_to_unicode().values())}
    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|vision_start|>",
                "<|vision_end|>", "<|image_pad|>", "<|video_pad|>"]
    tok = Qwen3_5Tokenizer(vocab=byte_vocab, merges=[])
    tok.add_special_tokens({"additional_special_tokens": specials})
    tok.eos_token = "<|im_end|>"
    tok.pad_token = "<|endoftext|>"
    tok.chat_template = (
        "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
        "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
    ids = {s: tok.convert_tokens_to_ids(s) for s in specials}
    print("tokenizer size", len(tok), ids)

    # ---- model config (real Qwen3.5 layout, tiny sizes) ---------------------------
    text = dict(
        vocab_size=512, hidden_size=256, intermediate_size=512, num_hidden_layers=4,
        layer_types=["linear_attention"] * 3 + ["full_attention"],
        num_attention_heads=4, num_key_value_heads=2, head_dim=128,
        linear_num_key_heads=2, linear_num_value_heads=4,
        linear_key_head_dim=128, linear_value_head_dim=128, linear_conv_kernel_dim=4,
        max_position_embeddings=4096, rms_norm_eps=1e-6, tie_word_embeddings=False,
        rope_parameters={"rope_type": "default", "rope_theta": 10000000.0,
                         "partial_rotary_factor": 0.25, "mrope_section": [6, 5, 5],
                         "mrope_interleaved": True},
        eos_token_id=ids["<|im_end|>"], pad_token_id=ids["<|endoftext|>"],
    )
    vision = dict(depth=1, hidden_size=128, intermediate_size=256, num_heads=2,
                  out_hidden_size=256, patch_size=16, spatial_merge_size=2,
                  temporal_patch_size=2, num_position_embeddings=256)
    cfg = Qwen3_5Config(
        text_config=text, vision_config=vision,
        image_token_id=ids["<|image_pad|>"], video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"],
        vision_end_token_id=ids["<|vision_end|>"], tie_word_embeddings=False,
    )
    cfg.architectures = ["Qwen3_5ForConditionalGeneration"]
    model = Qwen3_5ForConditionalGeneration(cfg).to(torch.bfloat16)
    print("params", sum(p.numel() for p in model.parameters()))
    model.save_pretrained(out)

    # ---- processor (tokenizer + image/video processors) ---------------------------
    proc = Qwen3VLProcessor(image_processor=Qwen2VLImageProcessor(patch_size=16, merge_size=2),
                            video_processor=Qwen3VLVideoProcessor(patch_size=16, merge_size=2),
                            tokenizer=tok, chat_template=tok.chat_template)
    proc.save_pretrained(out)
    with open(os.path.join(out, "generation_config.json"), "w") as handle:
        json.dump({"eos_token_id": ids["<|im_end|>"], "pad_token_id": ids["<|endoftext|>"], "do_sample": False}, handle)

    # ---- self-check: reload with transformers and run a forward pass on CPU --------
    m2 = Qwen3_5ForConditionalGeneration.from_pretrained(out, dtype=torch.float32)
    t2 = AutoTokenizer.from_pretrained(out)
    AutoProcessor.from_pretrained(out)
    x = t2("Hello tiny Qwen3.5", return_tensors="pt")
    with torch.no_grad():
        y = m2.generate(**x, max_new_tokens=5, do_sample=False)
    print("generate ok:", y.shape, repr(t2.decode(y[0])))


def place(models_dir, repo_id):
    """Make the model and put it in qwen_model_fetch's layout; returns the revision directory."""
    work = tempfile.mkdtemp(prefix="tiny-qwen35-")
    main(work)
    entries = []
    for name in sorted(os.listdir(work)):
        with open(os.path.join(work, name), "rb") as handle:
            data = handle.read()
        entry = {"path": name, "size": len(data)}
        if name.endswith(".safetensors"):
            entry["sha256"] = hashlib.sha256(data).hexdigest()
        else:
            entry["blob_id"] = hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
        entries.append(entry)
    commit = hashlib.sha1(json.dumps(entries, sort_keys=True).encode("utf-8")).hexdigest()
    manifest = {"format": 1, "repo_id": repo_id, "revision": "main", "commit": commit, "model_type": "qwen3_5",
                "file_count": len(entries), "total_size": sum(e["size"] for e in entries), "files": entries}
    with open(os.path.join(work, ".llm_stack_manifest.json"), "w") as handle:
        handle.write(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    base = os.path.join(models_dir, repo_id)
    target = os.path.join(base, commit)
    os.makedirs(base, exist_ok=True)
    if os.path.isdir(target):
        shutil.rmtree(target)
    shutil.move(work, target)
    os.chmod(target, 0o755)
    for name in os.listdir(target):
        os.chmod(os.path.join(target, name), 0o644)
    link = os.path.join(base, "current")
    if os.path.lexists(link):
        os.unlink(link)
    os.symlink(commit, link)
    print("placed at %s (current -> %s)" % (target, commit))
    return target


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--layout":
        place(sys.argv[2], sys.argv[3])
    else:
        main(sys.argv[1] if len(sys.argv) > 1 else "tiny-qwen35")
