"""Files into in-memory chunks: gathering rows, masking slots down, normalising, tasks."""
import numpy as np
import pytest

from streamherd.experiment.data import (
    LOAD_BITS,
    dataset_name,
    injective_bits,
    load_dataset,
    mask_slots,
    normalize_features,
    read_chunk,
    tasks_of,
)
from streamherd.features.hashing import VW_CONSTANT_HASH
from streamherd.io.csr import Chunk

from helpers import chunk_of_rows

REPO_SAMPLES = __import__("pathlib").Path(__file__).resolve().parents[1] / "samples"


def dense(csr, width):
    out = np.zeros((csr.n_examples, width))
    for i in range(csr.n_examples):
        np.add.at(out[i], csr.indices[csr.indptr[i]:csr.indptr[i + 1]],
                  csr.values[csr.indptr[i]:csr.indptr[i + 1]])
    return out


def random_csr(rng, n=40, width=1 << 12, nnz=6):
    rows = [rng.choice(width, size=rng.integers(0, nnz + 1), replace=False) for _ in range(n)]
    indptr = np.concatenate([[0], np.cumsum([len(r) for r in rows])]).astype(np.int64)
    indices = np.concatenate(rows).astype(np.int32)
    return chunk_of_rows(rng.normal(size=n), rng.random(n), indptr, indices,
                         rng.normal(size=len(indices)))


def test_take_gathers_rows_in_the_given_order():
    csr = random_csr(np.random.default_rng(0))
    order = np.array([5, 0, 39, 5, 17])
    taken = csr.take(order)
    assert np.array_equal(dense(taken, 1 << 12), dense(csr, 1 << 12)[order])
    assert np.array_equal(taken.labels, csr.labels[order])
    assert np.array_equal(taken.importance, csr.importance[order])
    assert csr.take(np.array([], np.int64)).n_examples == 0


def test_mask_slots_sums_colliding_slots():
    csr = random_csr(np.random.default_rng(1))
    masked = mask_slots(csr, 5)
    wide = dense(csr, 1 << 12)
    folded = sum(wide[:, k << 5:(k + 1) << 5] for k in range(1 << 7))  # slot & 31
    assert np.allclose(dense(masked, 32), folded)
    for i in range(masked.n_examples):   # each row is a proper sparse vector again
        row = masked.indices[masked.indptr[i]:masked.indptr[i + 1]]
        assert len(np.unique(row)) == len(row)


def test_injective_bits_is_the_fewest_bits_without_collisions():
    # 200 & (2^b - 1) is 8 (colliding with 8) for b = 4, 5, 6; at 7 bits it is 72
    assert injective_bits(np.array([3, 8, 1, 200]), 18) == 7
    assert injective_bits(np.array([1, 1 + 2 ** 20]), 18) == 18  # collide below 21 bits: cap
    assert injective_bits(np.array([4, 5, 6, 7]), 18) == 2


def test_normalize_scales_features_to_unit_norm_and_keeps_the_bias():
    bits = 10
    bias = VW_CONSTANT_HASH & ((1 << bits) - 1)
    csr = chunk_of_rows(np.ones(3), np.ones(3), np.array([0, 3, 4, 5]),
                        np.array([1, 2, bias, bias, 7], np.int32),
                        np.array([3.0, 4.0, 1.0, 1.0, 0.0]))
    values = normalize_features(csr, bits).values
    assert values.tolist() == pytest.approx([0.6, 0.8, 1.0, 1.0, 0.0])


def test_read_chunk_matches_the_streaming_reader(read_rows):
    for name in ("sample.svm", "sample.vw"):
        path = REPO_SAMPLES / name
        csr = read_chunk(str(path))
        rows, _, _ = read_rows(path, bits=LOAD_BITS)
        labelled = [r for r in rows if not np.isnan(r["label"])]
        assert csr.n_examples == len(labelled)
        for i in (0, 1, len(labelled) // 2, len(labelled) - 1):
            start, end = csr.indptr[i], csr.indptr[i + 1]
            assert dict(zip(csr.indices[start:end].tolist(), csr.values[start:end].tolist())) \
                == labelled[i]["x"]
            assert csr.labels[i] == labelled[i]["label"]


def test_multiclass_is_one_task_or_with_all_pairs_every_pair(tmp_path):
    path = tmp_path / "three.train.svm"
    path.write_text("".join(f"{c} 1:{i + 1} 2:{c + 1}\n" for i, c in enumerate([0, 1, 2] * 4)))
    dataset = load_dataset(str(path))
    assert dataset.name == "three" and dataset.multiclass and dataset.test is None
    (task,) = tasks_of(dataset)
    assert (task.name, task.problem.kind, task.problem.labels.texts) == \
        ("three", "multiclass", ["0", "1", "2"])
    rows, y = task.problem.value_targets(dataset.train.labels)
    assert rows.tolist() == list(range(12)) and y.tolist() == [0.0, 1.0, 2.0] * 4
    tasks = tasks_of(dataset, all_pairs=True)
    assert [t.name for t in tasks] == ["three:0v1", "three:0v2", "three:1v2"]
    rows, y = tasks[1].problem.value_targets(dataset.train.labels)
    assert rows.tolist() == [0, 2, 3, 5, 6, 8, 9, 11]
    assert y.tolist() == [1.0, -1.0] * 4


def test_binary_positive_class_is_the_larger_label(tmp_path):
    path = tmp_path / "b.svm"
    path.write_text("0 1:1\n1 2:1\n0 3:1\n")
    (task,) = tasks_of(load_dataset(str(path)))
    assert task.problem.value_targets(np.array([0.0, 1.0]))[1].tolist() == [-1.0, 1.0]


def test_dataset_names_drop_suffixes():
    assert dataset_name("/x/usps.train.svm.gz") == "usps"
    assert dataset_name("a9a.svm.gz") == "a9a"
    assert dataset_name("sms_spam.vw") == "sms_spam"


def test_read_chunk_keeps_every_block_of_a_file_longer_than_one_block(tmp_path):
    """The reader reuses its buffers from block to block; rows of the early blocks must survive.
    Each line i holds i in its label and its feature values, so any overwritten row shows."""
    lines = 150_000   # about 6 MB: several blocks
    path = tmp_path / "long.svm"
    path.write_text("".join(f"{1 if i % 2 else -1} {i % 97 + 1}:{i} 500:1.5 600:2.25 700:3.125\n"
                            for i in range(lines)))
    csr = read_chunk(str(path))
    assert csr.n_examples == lines
    assert np.array_equal(csr.labels, np.where(np.arange(lines) % 2 == 1, 1.0, -1.0))
    first_values = csr.values[csr.indptr[:-1]]
    expected = np.arange(lines, dtype=float)
    expected[0] = 1.5   # line 0's first value is the explicit zero, which is dropped
    assert len(set(first_values[::1000].tolist())) == lines // 1000  # not one block repeated
    assert np.array_equal(first_values, expected)


def test_concatenated_chunks_are_the_file_read_at_once(tmp_path):
    """Many small blocks joined (their label and tag offsets moved into the joined text, their
    bad lines kept in order) are the chunk of the whole file read as one block."""
    from streamherd.features.space import FeatureSpace
    from streamherd.io.reader import ChunkReader

    rng = np.random.default_rng(4)
    lines = [f"{rng.choice(['1', '-1', 'spam'])} {rng.integers(1, 3)} 't{i}|f a:{i} b" if i % 7
             else "1 |f a:x" for i in range(200)]
    path = tmp_path / "c.vw"
    path.write_text("\n".join(lines) + "\n")

    def chunks(block_size):
        return [chunk.copy() for chunk in ChunkReader(
            [str(path)], fmt="vw", features=FeatureSpace(), skip_bad=True,
            block_size=block_size, workers=0)]

    small = chunks(256)
    (whole,) = chunks(1 << 20)
    assert len(small) > 10
    joined = Chunk.concatenate(small)
    for name in ("labels", "importance", "line_numbers", "indptr", "indices", "values",
                 "bad_line_numbers"):
        np.testing.assert_array_equal(getattr(joined, name), getattr(whole, name), err_msg=name)
    assert joined.tags() == whole.tags() == [f"t{i}" for i in range(200) if i % 7]
    assert [joined.label_token(i) for i in range(joined.n_examples)] == \
        [line.split()[0] for line in lines if not line.endswith("a:x")]
    assert (joined.bad_lines, joined.n_lines, joined.n_bytes) == \
        (whole.bad_lines, whole.n_lines, whole.n_bytes)
