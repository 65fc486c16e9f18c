"""Runs an Accelerate GLUE/MRPC example unchanged with no download: stand-ins for the
`datasets` and `evaluate` packages (generated sentence pairs, accuracy and F1 computed
here), a word-sum tokenizer and a 1-layer BERT made from a config instead of
`from_pretrained`. Usage: python ocms_shim_run.py SCRIPT [the script's arguments]."""

import runpy
import sys
import types

import torch
import transformers

WORDS = "the a model trains on small data and every loss goes down slowly".split()


class GeneratedSplit:
    def __init__(self, columns):
        self.columns = columns

    @classmethod
    def sentence_pairs(cls, size, seed):
        generator = torch.Generator().manual_seed(seed)
        picks = torch.randint(0, len(WORDS), (size, 2, 6), generator=generator).tolist()
        return cls(
            {
                "idx": list(range(size)),
                "sentence1": [" ".join(WORDS[i] for i in row[0]) for row in picks],
                "sentence2": [" ".join(WORDS[i] for i in row[1]) for row in picks],
                "label": [int(row[0][0] % 2) for row in picks],
            }
        )

    def map(self, function, batched=True, remove_columns=()):
        columns = {k: v for k, v in self.columns.items() if k not in remove_columns}
        columns.update(function(self.columns))
        return GeneratedSplit(columns)

    def rename_column(self, old, new):
        return GeneratedSplit({new if k == old else k: v for k, v in self.columns.items()})

    def __len__(self):
        return len(next(iter(self.columns.values())))

    def __getitem__(self, index):
        return {name: values[index] for name, values in self.columns.items()}


class GeneratedSplits(dict):
    def map(self, *arguments, **options):
        return GeneratedSplits({k: v.map(*arguments, **options) for k, v in self.items()})

    def rename_column(self, old, new):
        return GeneratedSplits({k: v.rename_column(old, new) for k, v in self.items()})


def load_dataset(*arguments, **options):
    return GeneratedSplits(
        train=GeneratedSplit.sentence_pairs(64, 0),
        validation=GeneratedSplit.sentence_pairs(32, 1),
    )


class AccuracyAndF1:
    def __init__(self):
        self.predictions, self.references = [], []

    def add_batch(self, predictions, references):
        self.predictions += torch.as_tensor(predictions).tolist()
        self.references += torch.as_tensor(references).tolist()

    def compute(self):
        pairs = list(zip(self.predictions, self.references))
        self.predictions, self.references = [], []
        true_positive = sum(1 for p, r in pairs if p == r == 1)
        predicted, actual = sum(p for p, _ in pairs), sum(r for _, r in pairs)
        f1 = 2 * true_positive / (predicted + actual) if predicted + actual else 0.0
        return {"accuracy": sum(p == r for p, r in pairs) / len(pairs), "f1": f1}


class WordSumTokenizer:
    def _ids(self, text):
        return [2 + sum(map(ord, word)) % 60 for word in text.split()]

    def __call__(self, first, second, truncation=True, max_length=None):
        ids = [[1, *self._ids(a), 1, *self._ids(b)] for a, b in zip(first, second)]
        return {"input_ids": ids, "attention_mask": [[1] * len(row) for row in ids]}

    def pad(self, examples, padding="longest", max_length=None, pad_to_multiple_of=None, return_tensors="pt"):
        width = max(len(example["input_ids"]) for example in examples)
        batch = {
            "input_ids": [e["input_ids"] + [0] * (width - len(e["input_ids"])) for e in examples],
            "attention_mask": [
                e["attention_mask"] + [0] * (width - len(e["attention_mask"])) for e in examples
            ],
            "labels": [e["labels"] for e in examples],
        }
        return transformers.BatchEncoding(batch, tensor_type=return_tensors)


def tiny_bert(*arguments, **options):
    config = transformers.BertConfig(
        vocab_size=64,
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=64,
    )
    return transformers.BertForSequenceClassification(config)


sys.modules["datasets"] = types.SimpleNamespace(load_dataset=load_dataset)
sys.modules["evaluate"] = types.SimpleNamespace(load=lambda *a, **k: AccuracyAndF1())
transformers.AutoTokenizer.from_pretrained = staticmethod(lambda *a, **k: WordSumTokenizer())
transformers.AutoModelForSequenceClassification.from_pretrained = staticmethod(tiny_bert)
script = sys.argv[1]
sys.argv = sys.argv[1:]
sys.path.insert(0, ".")
runpy.run_path(script, run_name="__main__")
