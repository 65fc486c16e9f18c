"""Runs transformers' run_glue_no_trainer.py unchanged with no download: writes a 1-layer
BERT (random weights, from a config) with a word-level tokenizer into `tiny_model/`, and
generated sentence pairs into `tiny_data/{train,validation}.csv`; `evaluate` (not
installed here, and it would download its metric) is a stand-in computing accuracy, and
`send_example_telemetry` (removed from transformers 5) does nothing.
Usage: python ocms_shim_run.py run_glue_no_trainer.py --model_name_or_path tiny_model
--train_file tiny_data/train.csv --validation_file tiny_data/validation.csv [...]."""

import csv
import random
import runpy
import sys
import types
from pathlib import Path

import tokenizers
import torch
import transformers

WORDS = "the a model trains on small data and every loss goes down slowly".split()


def write_model(directory: Path) -> None:
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]"]
    vocabulary = {word: index for index, word in enumerate([*specials, *WORDS])}
    tokenizer = tokenizers.Tokenizer(tokenizers.models.WordLevel(vocabulary, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
    tokenizer.post_processor = tokenizers.processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B [SEP]",
        special_tokens=[("[CLS]", 2), ("[SEP]", 3)],
    )
    fast = transformers.PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, pad_token="[PAD]", unk_token="[UNK]"
    )
    fast.save_pretrained(directory)
    torch.manual_seed(0)
    config = transformers.BertConfig(
        vocab_size=len(vocabulary),
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=64,
    )
    transformers.BertForSequenceClassification(config).save_pretrained(directory)


def write_data(directory: Path) -> None:
    directory.mkdir(exist_ok=True)
    pick = random.Random(0)
    for split, size in (("train", 32), ("validation", 16)):
        with open(directory / f"{split}.csv", "w", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(["sentence1", "sentence2", "label"])
            for _ in range(size):
                first = [pick.choice(WORDS) for _ in range(6)]
                second = [pick.choice(WORDS) for _ in range(6)]
                writer.writerow([" ".join(first), " ".join(second), int(first[0] == "the")])


class Accuracy:
    def __init__(self):
        self.predictions, self.references = [], []

    def add_batch(self, predictions, references):
        self.predictions += torch.as_tensor(predictions).tolist()
        self.references += torch.as_tensor(references).tolist()

    def compute(self):
        pairs = list(zip(self.predictions, self.references))
        self.predictions, self.references = [], []
        return {"accuracy": sum(p == r for p, r in pairs) / len(pairs)}


if not Path("tiny_model").exists():
    write_model(Path("tiny_model"))
if not Path("tiny_data").exists():
    write_data(Path("tiny_data"))
sys.modules["evaluate"] = types.SimpleNamespace(load=lambda *a, **k: Accuracy())
# The example's telemetry call (a request to the Hub) is gone from transformers 5.
transformers.utils.send_example_telemetry = lambda *a, **k: None
script = sys.argv[1]
sys.argv = sys.argv[1:]
sys.path.insert(0, ".")
runpy.run_path(script, run_name="__main__")
