"""Claims read by rules: terms in a clause, directions, values with units, negation scope,
refutation, and the patterns' own errors."""

from __future__ import annotations

import pytest

from grader.engine.reading.claims.patterns import PatternError, opposite, parse_group
from grader.engine.reading.claims.rules import ReadAnswer, read_claim
from grader.engine.reading.claims.text import clauses_of

COMPUTE_DOWN = [["计算量|运算量|运算|算力|flops|计算开销|compute|computation", "@down"]]


def status(answer: str, patterns: list[list[str]]) -> str:
    return read_claim(ReadAnswer.of(answer), patterns).status


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("用了梯度累積之後，每次參數更新前需要做的運算變少了。", "asserted"),  # Traditional
        ("梯度累积能省下不少算力，所以计算开销会下降。", "asserted"),
        ("Gradient accumulation reduces the computation.", "asserted"),
        ("总的浮点运算量和直接跑大批次差不多，并没有省下算力。", "negated"),
        ("梯度累积不能减少计算量，但能减少显存", "negated"),  # the other clause says 显存
        ("Gradient accumulation does not reduce the total compute.", "negated"),
        ("很多人以为梯度累积可以减少计算量，这是错误的。", "negated"),
        ("很多人说梯度累积可以减少计算量。这是错误的。", "negated"),  # the next sentence refutes
        ("梯度累积能减少显存占用。", "absent"),
        ("它不仅减少了计算量，还节省显存。", "asserted"),  # 不仅 negates nothing
    ],
)
def test_a_direction_claim_in_other_words(answer, expected):
    assert status(answer, COMPUTE_DOWN) == expected


@pytest.mark.parametrize(
    ("answer", "patterns", "denied"),
    [
        ("loss 不需要除以累积步数。", [["loss", "除以", "累积步数"]], True),  # a negator
        ("很多人以为梯度累积可以减少计算量，这是错误的。", COMPUTE_DOWN, True),  # refuted
        ("每个小批次都立即更新参数。", [["!立即|马上", "更新"]], False),  # the plain term
        ("计算量并非不变。", [["计算量", "@same"]], True),  # a negator right on the term
        # a negator further back is a verb's, the claim's own content ("不省" = 不变)
        ("它并不省算力，总次数和直接训练一样多。", [["算力", "@same"]], False),
        ("分两阶段是因为无法全量精排。", [["精排"]], False),
        # the negator may be the ``!`` term's own: never a denial in such a pattern
        ("中间不做 optimizer.step()。", [["!更新|step", "optimizer"]], False),
        # an opposite first and a denial later: the denial is the reading kept
        ("每步立即更新参数。计算量并非不变。", [["!立即", "更新"], ["计算量", "@same"]], True),
    ],
)
def test_a_denial_in_so_many_words_is_told_from_an_opposite(answer, patterns, denied):
    reading = read_claim(ReadAnswer.of(answer), patterns)
    assert reading.status == "negated" and reading.denied is denied


def test_a_negated_group_must_stand_negated():
    held = [["!立即|马上", "更新"]]
    assert status("累积期间不立即更新参数", held) == "asserted"
    assert status("每个小批次算出梯度后立即更新参数", held) == "negated"
    # a negator that belongs to the ``!`` group does not negate the other group
    assert status("先不要马上更新参数", held) == "asserted"


def test_the_patterns_own_words_negate_nothing():
    same = [["显存|memory", "@same"]]
    assert status("显存不随累积步数增加", same) == "asserted"
    assert status("memory stays unchanged as N grows", same) == "asserted"


@pytest.mark.parametrize(
    ("answer", "expected", "denied"),
    [
        ("观看时长和答题记录跟学生兴趣无关。", "negated", True),  # the comment after its topic
        ("用户画像也不需要。", "negated", True),
        ("用户画像和观看时长是不需要的。", "negated", True),  # a tail after the dismissal
        ("Watch time and the learner profile are unnecessary.", "negated", True),
        ("用户画像很重要，观看时长也要记录。", "asserted", False),
        ("不需要的用户画像字段要删掉，观看时长要保留。", "asserted", False),  # not at the end
    ],
)
def test_a_dismissal_ending_the_clause_negates_what_it_follows(answer, expected, denied):
    reading = read_claim(ReadAnswer.of(answer), [["用户画像|观看时长|learnerprofile|watchtime"]])
    assert (reading.status, reading.denied) == (expected, denied)


def test_a_dismissal_that_is_the_patterns_own_word_negates_nothing():
    assert status("显存占用与累积步数无关", [["显存", "@same"]]) == "asserted"
    assert status("显存占用与累积步数无关", [["显存", "步数"]]) == "negated"


def test_two_clauses_count_only_in_order():
    grows = [["n越大|步数越大", "显存|内存", "@up"]]
    assert status("步数越大，显存占用越大", grows) == "asserted"
    # the groups split the other way round across clauses say something else
    cross = [["小数据", "大模型"]]
    assert status("数据集大就用大模型，数据集小就用小模型", cross) == "absent"


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("每卡约45GB，40GB的卡放不下", "asserted"),
        ("每卡约 45 GiB", "asserted"),
        ("每卡约145GB", "absent"),  # another number
        ("每卡约45Gbit", "absent"),  # a unit running on into another word
        ("每卡 4.5GB", "absent"),
    ],
)
def test_values_with_units(answer, expected):
    assert status(answer, [["#40~50 gb/g/gib", "每卡"]]) == expected


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("显存不会因为累积步数变大而增加", "negated"),  # the negated cause reaches 增加
        ("总运算量并没有因此减少", "negated"),
        ("显存会因为累积步数变大而增加", "asserted"),
    ],
)
def test_a_negated_cause_reaches_the_predicate_after_it(answer, expected):
    assert status(answer, [["显存|运算量", "@up|@down"]]) == expected


def test_a_wrong_claim_in_code_is_read_line_by_line():
    """A block's comment on one line says nothing of the statement below: a part reads the
    whole block (a configuration), a wrong claim one line."""
    code = "```python\noptimizer.zero_grad()  # 先把旧梯度清掉\nfor x, y in loader:\n    loss.backward()\n```"
    clears = [["backward", "清掉"]]
    assert read_claim(ReadAnswer.of(code), clears).status == "asserted"
    assert read_claim(ReadAnswer.of(code), clears, strict=True).status == "absent"
    said = "```python\nloss.backward()  # backward 会清掉旧梯度\n```"
    assert read_claim(ReadAnswer.of(said), clears, strict=True).status == "asserted"


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("180e9 x 16 B = 2.88 TB in total", "asserted"),  # the key runs "tbintotal" together
        ("2.88TBytes", "absent"),  # a unit running on into a longer word as written
    ],
)
def test_a_unit_before_an_english_word_is_a_unit(answer, expected):
    assert status(answer, [["#2.5~3.3 tb/t"]]) == expected


def test_a_table_row_is_read_under_its_first_cell():
    """«| 小数据 + 简单模型 | 显存充足；N = 1 |» says N = 1 of small data, as a heading would."""
    table = "| 场景 | 策略 |\n|---|---|\n| 小数据 + 简单模型 | 显存充足；N = 1 或 2 |"
    small_n = [["小数据", "n=1|1或2"]]
    assert status(table, small_n) == "asserted"
    other_row = "| 小数据 + 简单模型 | 显存充足 |\n| 大数据 + 大模型 | N = 1 或 2 |"
    assert status(other_row, small_n) == "absent"  # a row is its own sentence


def test_a_code_block_is_one_clause():
    config = '```json\n{"zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu"}}, "bf16": {"enabled": true}}\n```'
    assert len(clauses_of(config)) == 1
    assert status(config, [['"stage":3', "offload_optimizer"]]) == "asserted"


@pytest.mark.parametrize(
    ("written", "message"),
    [
        ("@sideways", "unknown class '@sideways'"),
        ("#50~40 gb", "LOW <= HIGH"),
        ("#lots gb", "'#LOW~HIGH unit/unit'"),
        ("a||b", "an empty term"),
    ],
)
def test_a_pattern_that_cannot_be_read_says_why(written, message):
    with pytest.raises(PatternError, match=message):
        parse_group(written)


def test_a_group_mixes_terms_classes_and_values():
    group = parse_group("#1~100 步/steps|每n|@up")
    assert group.values and "每n" in group.terms and "增加" in group.terms


def test_an_excluded_group_keeps_a_pattern_from_matching():
    times = [["n=", "×", "micro", "-÷|/"]]
    assert status("N = 目标全局batch × micro × 卡数", times) == "asserted"
    assert status("N = 目标全局batch ÷ (micro × 卡数)", times) == "absent"


def test_a_wrong_claims_subject_and_direction_stay_in_one_clause():
    down = [["flops|计算量", "@down"]]
    said = ReadAnswer.of("总 FLOPs 不变，optimizer 更新次数变少")
    assert read_claim(said, down).status == "asserted"  # a part may span the two clauses
    assert read_claim(said, down, strict=True).status == "absent"  # a wrong claim may not


def test_a_heading_reads_before_each_clause_after_its_colon():
    small = [["小数据|数据少", "不必|不用|无需"]]
    assert status("小数据集、简单模型：显存够用，一般不用梯度累积。", small) == "asserted"


def test_a_condition_reads_before_each_clause_after_it():
    """«…的话，» states the case the rest of the sentence speaks of, as a heading does; «…时，»
    is too often a time to head anything, and a statement heads nothing."""
    small = [["小数据|数据少", "不必|不用|无需"]]
    said = "小数据集跟简单模型的话，显存一般够用，步数设小或者干脆不用。"
    assert status(said, small) == "asserted"
    assert status("数据少的话，显存够用，更新本来就少，不必累积。", small) == "asserted"
    assert status("数据少时，显存够用，更新本来就少，不必累积。", small) == "absent"
    assert status("小数据集很常见，显存一般够用，步数设小或者干脆不用。", small) == "absent"


def test_an_answer_wide_pattern_reads_across_the_answer():
    layers = [["*", "数据层", "特征层", "召回", "排序"]]
    answer = "1. 数据层：收集行为。\n2. 特征层：画像。\n3. 召回用协同过滤，再排序。"
    assert status(answer, layers) == "asserted"
    assert status("1. 数据层：收集行为。\n2. 特征层：画像。", layers) == "absent"


def test_english_negation_spares_the_patterns_own_words():
    without = [["withoutmore", "memory"]]
    assert status("It reaches the batch without more memory per step.", without) == "asserted"
    # a negator inside the pattern's own terms, words before the next group, deep in a clause
    instead = [["insteadof", "optimizer"]]
    answer = (
        "Gradient accumulation runs several small mini-batches through forward and backward "
        "passes and adds up their gradients instead of calling the optimizer after each one."
    )
    assert status(answer, instead) == "asserted"


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("Accumulation doesn't reduce the total compute.", "negated"),
        ("Accumulation doesnt reduce the total compute.", "negated"),  # the apostrophe dropped
        ("Accumulation doesn’t reduce the total compute.", "negated"),  # a typographic one
        ("Accumulation does reduce the total compute.", "asserted"),
    ],
)
def test_an_english_contraction_is_read_as_its_full_words(answer, expected):
    """«doesn't» is «does not» to every pattern: «doesn't reduce the compute» is the class
    @same's «does not reduce», and «don't need» a wide negator as «do not need» is."""
    assert status(answer, COMPUTE_DOWN) == expected
    same = [["compute", "@same"]]
    assert (status(answer, same) == "asserted") == (expected == "negated")
    dismissed = [["small", "accumulation"]]
    assert status("for small data you dont need accumulation", dismissed) == "negated"


@pytest.mark.parametrize(
    ("answer", "pattern"),
    [
        ("各框架梯度累积的实现方式不一致", ["框架", "实现|方式", "相同|一致"]),
        ("小批次时训练不稳定", ["训练", "稳定"]),
        ("通信开销随设备数量非线性增长", ["通信", "线性"]),
    ],
)
def test_a_word_that_starts_with_a_negator_still_negates_its_own_end(answer, pattern):
    assert status(answer, [pattern]) == "negated"


SAME = [["计算量|算力", "@same|不变"]]


@pytest.mark.parametrize(
    ("answer", "status", "denied"),
    [
        ("梯度累积的意义在于减少计算量。", "negated", True),  # the opposite direction
        ("计算量只有原来的一半，显存也省了。", "negated", True),
        ("总计算量不变，只是每步的计算量减少了。", "asserted", False),  # asserted wins
        # a negator anywhere in the clause: the opposite may be negated from further back
        ("算力并不会因为多攒几次而增加。", "absent", False),
        ("很多人以为梯度累积能减少计算量，这是错误的。", "absent", False),  # refuted
    ],
)
def test_a_direction_claim_is_denied_by_its_opposite(answer, status, denied):
    reading = read_claim(ReadAnswer.of(answer), SAME, opposites=True)
    assert (reading.status, reading.denied) == (status, denied)
    if status == "negated":  # only a decisive part is read for its opposite
        assert read_claim(ReadAnswer.of(answer), SAME).status == "absent"


def test_the_opposite_of_a_pattern():
    assert opposite(["计算量|算力", "@same|不变"]) == ["计算量|算力", "@up|@down"]
    assert opposite(["显存", "@up|线性上涨"]) == ["显存", "@down"]
    assert opposite(["!立即", "更新"]) is None  # a negation's opposite is not read
    assert opposite(["*", "召回", "@down"]) is None
    assert opposite(["梯度", "累加"]) is None  # no direction


def test_a_wrong_claim_is_not_read_across_a_pronoun_into_another_subject():
    """«计算量不变，它减少的是显存» says the compute stays: a wrong claim's subject and direction
    stay in one clause even where the next one opens on a pronoun."""
    assert (
        read_claim(ReadAnswer.of("计算量不变，它减少的是显存。"), COMPUTE_DOWN, strict=True).status
        != "asserted"
    )
    same = ReadAnswer.of("Accumulation keeps the compute the same, it just reduces memory.")
    assert read_claim(same, COMPUTE_DOWN, strict=True).status != "asserted"


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("训练时开启 AMP 混合精度。", "asserted"),
        ("for example, a larger batch", "absent"),  # "amp" inside "example"
        ("开启 ZeRO-3 分片。", "asserted"),
        ("每步之后 optimizer.zero_grad() 清零。", "absent"),  # "zero" of an identifier
    ],
)
def test_a_short_latin_term_stands_as_a_word(answer, expected):
    assert status(answer, [["amp|zero"]]) == expected


def test_a_conjunction_that_starts_with_a_negator_negates_nothing():
    memory_up = [["步数|n越大", "显存", "增加|变大"]]
    assert status("不过 N 越大显存占用会增加。", memory_up) == "asserted"
    assert status("N 越大显存占用并不会增加。", memory_up) == "negated"


def test_an_inline_object_is_one_clause():
    answer = '配置：{"zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu"}}}，另外开启检查点'
    assert [c.text for c in clauses_of(answer)][-1] == "配置：另外开启检查点"
    assert status(answer, [['"stage":3', "offload_optimizer"]]) == "asserted"
    # an unclosed brace holds the rest of its sentence together, and no more
    assert len(clauses_of("集合 {a, b 没有闭合，到句末为止。下一句，照常切分。")) == 3


def test_a_list_of_terms_asserts_nothing():
    """Six terms or more in a row name the rubric's words and say nothing of them; a
    sentence's first and last terms may carry its verb, and a shorter list is read."""
    pattern = [["梯度", "累加"]]
    dump = "梯度累积的原理：梯度累加、累积步数、有效批次、optimizer.step、zero_grad、显存有限、loss/N。"
    assert read_claim(ReadAnswer.of(dump), pattern).status == "absent"
    assert [c.text for c in clauses_of(dump)] == ["梯度累积的原理"]
    inside = (
        "在 PyTorch 的训练循环里实现时要依次用到 zero_grad()、梯度累加、backward()、no_sync、"
        "GradScaler、clip_grad_norm_、尾批处理等工具"
    )
    assert [c.text for c in clauses_of(inside)] == [
        "在 PyTorch 的训练循环里实现时要依次用到 zero_grad()", "尾批处理等工具",
    ]  # fmt: skip
    said = "每个小批次的梯度累加起来、显存不变、步数为N、学习率调大"
    assert read_claim(ReadAnswer.of(said), pattern).status == "asserted"
    metrics = "离线：AUC、GAUC、Recall@K、NDCG@10"
    assert [c.text for c in clauses_of(metrics)][-1] == "离线：NDCG@10"
    subject = "参数、梯度、一阶矩、二阶矩、激活值都把显存占满"
    assert [c.text for c in clauses_of(subject)][-1] == "激活值都把显存占满"
    bracketed = (
        "在实际训练里梯度累积要和学习率调整一起考虑、warmup、优化器选择（Adam、SGD、LAMB）、"
        "梯度裁剪、混合精度、GradScaler、BatchNorm、权重衰减都有协同作用"
    )  # a term's examples in brackets do not break the list
    assert [c.text for c in clauses_of(bracketed)] == [
        "在实际训练里梯度累积要和学习率调整一起考虑", "权重衰减都有协同作用",
    ]  # fmt: skip
    example = "优化器可以换成LAMB（Adam、SGD、LARS、AdamW、Lion、Adafactor 都行），配合 warmup"
    assert "优化器可以换成LAMB" in [c.text for c in clauses_of(example)]


def test_a_denial_before_a_colon_heads_nothing():
    """«我认为不应该先召回后排序，而是反过来：…» says something itself: only its last phrase
    heads the clauses after the colon, so «先召回后排序» is not read into each of them."""
    answer = "我认为不应该先召回后排序，而是反过来：先精排全部课程，再从结果里召回前100门"
    assert [c.text for c in clauses_of(answer)][-2:] == [
        "而是反过来：先精排全部课程", "而是反过来：再从结果里召回前100门",
    ]  # fmt: skip
    assert status(answer, [["召回", "排序"]]) != "asserted"
    topic = "小数据集、简单模型：显存够用，一般不用梯度累积"
    assert [c.text for c in clauses_of(topic)][-1] == "小数据集、简单模型：一般不用梯度累积"


def test_a_latin_term_after_a_prefix_is_another_word():
    """«recomputed» is not «compute» and «unstable» is not «stable»; a unit prefix
    («TFLOPs») or a compound («microbatch») still holds the term."""
    down = [["compute|flops", "@down|shrink"]]
    assert status("total steps must be recomputed (they shrink by N)", down) == "absent"
    assert status("compute shrinks by N", down) == "asserted"
    assert status("6 TFLOPs shrink by N", down) == "asserted"
    assert status("training is unstable with a small batch", [["training", "stable"]]) == "absent"
    assert status("the microbatch is small", [["batch", "small"]]) == "asserted"


def test_a_short_term_inside_an_identifier_is_not_read():
    """«step» of «accum_steps» is part of a name, not the optimizer's step."""
    step = [["every|each", "step"]]
    assert status("for every micro-batch: loss = loss / accum_steps", step) == "absent"
    assert status("for every micro-batch: call optimizer.step()", step) == "asserted"


def test_a_wide_negator_in_a_heading_stays_in_the_heading():
    """«…without raising the memory per step: … you reach a global batch» reaches the batch;
    «without» negates what the heading says, not the clause after its colon."""
    reach = [["reach|achieve", "globalbatch|largebatch"]]
    answer = "It fixes this without raising the memory per step: with 16 steps you reach a global batch of 1024"
    assert status(answer, reach) == "asserted"
    assert status("you cannot reach a global batch without more GPUs", reach) == "negated"
