"""Writes the committed model files of tests/test_compatibility.py and what they predict.

Run by hand, with the streamherd version whose files later versions must keep reading
(``PYTHONPATH=<that checkout> python tests/compat/make_models.py``): one small model per
algorithm and task (binary, joint and one-versus-all multiclass, regression where the learner
has a squared-loss form; 2^4 slots), each format-1 binary model as that format wrote it (no
``task``), three models trained with --normalize, the data they were trained on (made here from
a fixed seed) and, in expected.json, every prediction output of each model on that data.

``--format3`` adds the format-3 (sparse) files of ``FORMAT_3``, every task of each, named
``ALGO.KIND.format3.npz``, to the files already there (and to expected.json), trained on the data
already there: run it with the version that writes format 3.
"""
import json
import os
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
BITS = 4


def write_data():
    rng = np.random.default_rng(20261124)
    w = rng.normal(size=(3, 6))
    files = {"binary": [], "multiclass": [], "regression": []}
    for _ in range(60):
        k = int(rng.integers(1, 5))
        slots = sorted(rng.choice(np.arange(1, 7), size=k, replace=False).tolist())
        x = np.zeros(6)
        x[np.array(slots) - 1] = np.round(rng.uniform(-2, 2, size=k), 3)
        features = " ".join(f"{j}:{x[j - 1]:g}" for j in slots)
        scores = w @ x
        files["binary"].append(f"{'+1' if scores[0] > 0 else '-1'} {features}")
        files["multiclass"].append(f"{['red', 'green', 'blue'][int(np.argmax(scores))]} {features}")
        files["regression"].append(f"{scores[0] + 0.1 * rng.normal():.4f} {features}")
    for name, lines in files.items():
        with open(os.path.join(HERE, f"{name}.svm"), "w") as f:
            f.write("\n".join(lines) + "\n")


def outputs(model, data, gaussian, task):
    """Every output predict gives for this model: the label, the raw value, and for a
    multiclass model the scores, for a Gaussian classifier the probabilities."""
    from streamherd.training import predict

    kinds = {"label": {}, "raw": {"raw": True}}
    if task == "multiclass":
        kinds["scores"] = {"scores": True}
    if gaussian and task != "regression":
        kinds["proba"] = {"proba": True}
    found = {}
    for kind, flags in kinds.items():
        with tempfile.TemporaryDirectory() as folder:
            out = os.path.join(folder, "p.txt")
            predict(model, [data], output=out, quiet=True, **flags)
            with open(out) as f:
                found[kind] = f.read().splitlines()
    return found


# the learners of the format-3 files: the default, a Gaussian one, sop, the averaged
# perceptron, and full-matrix ones (a covariance, an inverse)
FORMAT_3 = ("pa2", "nherd-p", "sop", "avg-perceptron", "arow-full", "sop-full")


def train_every_task(algo, suffix, expected):
    """A model of ``algo`` for each task it has, ``ALGO.KIND{suffix}.npz``, with its outputs in
    ``expected``; yields (kind, path, name)."""
    from streamherd import learners
    from streamherd.training import train

    variant = learners.spec(algo)
    gaussian = variant.covariance != "none" and not algo.startswith("sop")
    tasks = [("binary", {}), ("joint", {"multiclass": "joint"}), ("ova", {"multiclass": "ova"})]
    if variant.regression is not None:
        tasks.append(("regression", {"loss": "squared"}))
    for kind, flags in tasks:
        data = os.path.join(HERE, f"{'multiclass' if kind in ('joint', 'ova') else kind}.svm")
        name = f"{algo}.{kind}{suffix}.npz"
        path = os.path.join(HERE, name)
        train([data], algo=algo, bits=BITS, final_model=path, quiet=True, **flags)
        task = "multiclass" if kind in ("joint", "ova") else kind
        expected[name] = {"data": os.path.basename(data), **outputs(path, data, gaussian, task)}
        yield kind, path, name


def add_format_3():
    path = os.path.join(HERE, "expected.json")
    with open(path) as f:
        written = json.load(f)
    for algo in FORMAT_3:
        for _ in train_every_task(algo, ".format3", written["models"]):
            pass
    written["format3_streamherd"] = __import__("streamherd").__version__
    with open(path, "w") as f:
        json.dump(written, f, indent=0, sort_keys=True)


def main():
    from streamherd import learners
    from streamherd.training import train

    if "--format3" in sys.argv[1:]:
        return add_format_3()
    write_data()
    expected = {}
    for algo in learners.REGISTRY:
        for kind, path, name in train_every_task(algo, "", expected):
            if kind == "binary":
                expected[f"{algo}.format1.npz"] = {**expected[name]}
                write_format_1(path, os.path.join(HERE, f"{algo}.format1.npz"))
    for algo in ("pa2", "arow-p", "nherd-p"):   # --normalize (before "l2": bias scaled too)
        name = f"{algo}.normalize.npz"
        data = os.path.join(HERE, "binary.svm")
        train([data], algo=algo, bits=BITS, final_model=os.path.join(HERE, name), quiet=True,
              normalize=True)
        expected[name] = {"data": "binary.svm",
                          **outputs(os.path.join(HERE, name), data, algo != "pa2", "binary")}
    with open(os.path.join(HERE, "expected.json"), "w") as f:
        json.dump({"streamherd": __import__("streamherd").__version__, "models": expected}, f,
                  indent=0, sort_keys=True)


def write_format_1(path, target):
    """The binary model as format 1 wrote it: the same arrays, a meta without ``task``."""
    with np.load(path, allow_pickle=False) as archive:
        arrays = {name: archive[name] for name in archive.files}
    meta = json.loads(arrays.pop("meta").item())
    del meta["task"]
    meta["format_version"] = 1
    with open(target, "wb") as f:
        np.savez(f, meta=np.array(json.dumps(meta, sort_keys=True)), **arrays)


if __name__ == "__main__":
    sys.exit(main())
