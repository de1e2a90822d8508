"""Write the bundled sample files: a small text-like binary svmlight file and its VW twin.

    python samples/make_samples.py            # rewrites samples/sample.svm and samples/sample.vw

Documents are bags of words drawn from a Zipf-like vocabulary of 2000 words; the two classes
prefer different halves of it, with 5% of the labels flipped. The VW twin writes each word id
as an all-digit feature name in the bare namespace, which VW (and streamherd) hash to the same
slot as the svmlight index, and tags each line with its document number: both files train the
same model. Deterministic: the same bytes on every run.
"""
from pathlib import Path

import numpy as np

LINES = 2000
VOCABULARY = 2000
SEED = 20101206  # NIPS 2010


def documents(rng):
    ranks = np.arange(1, VOCABULARY + 1)
    base = 1.0 / ranks
    for doc in range(LINES):
        label = 1 if rng.random() < 0.5 else -1
        tilt = np.where((ranks % 2 == 0) == (label > 0), 1.6, 0.6)
        p = base * tilt
        p /= p.sum()
        length = int(rng.integers(8, 60))
        words, counts = np.unique(rng.choice(ranks, size=length, p=p), return_counts=True)
        if rng.random() < 0.05:
            label = -label
        yield doc, label, words, counts


HERE = Path(__file__).resolve().parent


def main(folder=HERE):
    rng = np.random.default_rng(SEED)
    svm_lines, vw_lines = [], []
    for doc, label, words, counts in documents(rng):
        pairs = " ".join(f"{w}:{c}" for w, c in zip(words.tolist(), counts.tolist()))
        svm_lines.append(f"{label:+d} {pairs}\n")
        vw_lines.append(f"{label} 'doc{doc}| {pairs}\n")
    (folder / "sample.svm").write_text("".join(svm_lines))
    (folder / "sample.vw").write_text("".join(vw_lines))


if __name__ == "__main__":
    main()
