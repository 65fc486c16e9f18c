"""Runs TRL's sft.py unchanged with no download: writes a tiny Llama (random weights, from
a config), a word-level tokenizer and a JSON-lines dataset of generated sentences into the
working directory, then runs the script on them. Usage: python ocms_shim_run.py sft.py
--model_name_or_path tiny_model --dataset_name tiny_data [the script's arguments]."""

import json
import random
import runpy
import sys
from pathlib import Path

import tokenizers
import torch
import transformers

WORDS = "the a model trains on small data and every loss goes down slowly".split()


def write_model(directory: Path) -> None:
    vocabulary = {word: index for index, word in enumerate(["<pad>", "<unk>", "<s>", "</s>", *WORDS])}
    tokenizer = tokenizers.Tokenizer(tokenizers.models.WordLevel(vocabulary, unk_token="<unk>"))
    tokenizer.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
    fast = transformers.PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        pad_token="<pad>",
        unk_token="<unk>",
        bos_token="<s>",
        eos_token="</s>",
    )
    fast.save_pretrained(directory)
    torch.manual_seed(0)
    config = transformers.LlamaConfig(
        vocab_size=len(vocabulary),
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=64,
        pad_token_id=0,
        bos_token_id=2,
        eos_token_id=3,
    )
    transformers.LlamaForCausalLM(config).save_pretrained(directory)


def write_data(directory: Path) -> None:
    directory.mkdir(exist_ok=True)
    pick = random.Random(0)
    for split, size in (("train", 32), ("test", 8)):
        lines = [
            json.dumps({"text": " ".join(pick.choice(WORDS) for _ in range(10))})
            for _ in range(size)
        ]
        (directory / f"{split}.jsonl").write_text("\n".join(lines) + "\n")


if not Path("tiny_model").exists():
    write_model(Path("tiny_model"))
if not Path("tiny_data").exists():
    write_data(Path("tiny_data"))
script = sys.argv[1]
sys.argv = sys.argv[1:]
sys.path.insert(0, ".")
runpy.run_path(script, run_name="__main__")
