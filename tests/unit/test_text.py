import pytest

from grader.text import clean, language_of, match_key, strip_pinyin


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("人工智能訓(xùn)練師二級(jí)", "人工智能訓練師二級"),
        ("選(xuǎn)擇(zé)題", "選擇題"),
        ("全角（xùn）括号", "全角括号"),
        ("D(zhuǎn).VAE崩潰", "D.VAE崩潰"),  # after an option letter, not only after hanzi
        ("因?yàn)榇", "因榇"),  # mangled bytes left "?" where the bracket was
    ],
)
def test_strip_pinyin_removes_annotations(raw, expected):
    assert strip_pinyin(raw) == expected


@pytest.mark.parametrize(
    "kept", ["特征(BERT/GPT)", "量化(int8)", "O(N)", "(8×8×4)", "bubble=(p–1)"]
)
def test_strip_pinyin_keeps_real_parentheticals(kept):
    assert strip_pinyin(kept) == kept


def test_clean_drops_replacement_and_zero_width_characters():
    assert clean("穩\ufffd定\u200b性") == "穩定性"


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("ＩＮＴ８", "int8"),  # full-width → half-width, case
        ("梯度 緩存", "梯度缓存"),  # spaces, Traditional → Simplified
        ("邊緣計算。", "边缘计算"),  # trailing punctuation
    ],
)
def test_match_key_equates_variants(a, b):
    assert match_key(a) == match_key(b)


def test_language_of():
    assert language_of("梯度累積是為了模擬更大的批次") == "zh"
    assert language_of("Gradient accumulation simulates a larger batch.") == "en"
    assert language_of("在PyTorch2.1中，若需將模型權重以FP16保存，應調用model.half()") == "zh"
