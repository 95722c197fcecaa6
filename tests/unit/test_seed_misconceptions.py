"""The seed rubrics' listed misconceptions are read in other words, and the right statement
next to each is not read as the misconception: a listed wrong claim that only matched its own
wording missed every student who put it differently."""

from __future__ import annotations

import pytest

from grader.bank.files import load_bank
from grader.engine.reading.claims.rules import ReadAnswer, read_claim
from grader.engine.reading.rubrics import load_rubrics
from tests.conftest import RUBRICS

CASES = [
    # (bank, question, the misconception as listed (its start), a wrong answer's clause, a right one)
    ("grad_accum_engineer", "004-s5-q1", "梯度累积是在多张GPU之间",
     "梯度累積指的是在多張 GPU 之間把梯度累加起來",
     "每个小批次反向后把梯度累加起来，多卡时再各自做all-reduce"),
    ("grad_accum_engineer", "004-s5-q1", "梯度累积是在多张GPU之间",
     "累积步数N就是GPU的数量", "累积步数N由目标batch除以卡数和micro-batch得到"),
    ("grad_accum_engineer", "004-s5-q1", "梯度累积能加快训练速度",
     "训练速度提升N倍", "训练速度并不会提升，每次更新要等N个小批次"),
    ("llm_trainer_solutions", "001-s5-q1", "先排序后召回",
     "排序一定要先做，先排序后召回", "先召回几百门候选，再用DeepFM精排"),
    ("llm_trainer_solutions", "001-s5-q1", "知识追踪是追踪点击",
     "DKT是一个点击率预估模型", "DKT根据答题序列估计每个知识点的掌握度"),
    ("llm_trainer_solutions", "001-s5-q1", "协同过滤能解决新用户冷启动",
     "新用户冷启动用基于用户的协同过滤解决，不需要他本人的历史行为",
     "协同过滤无法解决新用户冷启动，新用户先做入学测评"),
    ("llm_trainer_solutions", "001-s5-q1", "冷启动指服务器",
     "冷启动指的是服务器重启后缓存还没载入", "新用户冷启动：推Redis里缓存的热门课程"),
    ("llm_trainer_solutions", "001-s5-q1", "模型一年",
     "学习行为变化慢，模型一年重训一次即可", "离线模型每天重训，实时特征用Flink秒级更新"),
    ("llm_trainer_solutions", "001-s5-q1", "不需要A/B测试",
     "不需要A/B测试，因为离线指标就是线上效果", "没有A/B测试就无法确认线上效果"),
    ("grad_accum_engineer", "004-s6-q1", "梯度累积会增加显存",
     "累積只會讓顯存壓力更大", "显存吃紧时用较大的累积步数，累积并不会增加显存占用"),
    ("grad_accum_engineer", "004-s6-q1", "有效batch越大越好",
     "对策是把有效batch开到越大越好，大batch不会过拟合", "小数据微调大模型时batch不宜过大，防止过拟合"),
    ("grad_accum_engineer", "004-s6-q1", "有效batch越大越好",
     "小数据微调大模型：batch 越大越不容易过拟合", "小数据微调大模型：batch 越大越容易过拟合"),
    ("grad_accum_engineer", "004-s5-q3", "loss要乘以累积步数",
     "loss = loss * accum_steps，放大到大batch的量级", "loss = loss / accum_steps 再 backward"),
    ("grad_accum_engineer", "004-s5-q3", "loss要乘以累积步数",
     "把损失乘以累积步数再反向", "```\nloss = criterion(out, y) / accum\nlr = base_lr * accum\n```"),
    ("grad_accum_engineer", "004-s5-q3", "loss要乘以累积步数",
     "loss = loss * accum_steps", "学习率乘以累积步数（线性缩放）"),
    ("grad_accum_engineer", "004-s5-q3", "每个micro-batch后都调用zero_grad",
     "每个micro-batch之后都调用zero_grad()", "zero_grad() must only happen at the start and after each step"),
    ("grad_accum_engineer", "004-s5-q3", "每个micro-batch都调用optimizer.step()",
     "每个micro-batch都调用optimizer.step()", "zero_grad() must only happen at the start and after each step"),
    # the exam's own false statements (``grader rubric claims``), accepted with patterns
    ("grad_accum_engineer", "004-s5-q4", "梯度累积步数增加，会导致模型参数更新更频繁",
     "累积步数越大，更新次数也越多，收敛更快", "N越大梯度越稳，N越小更新越频繁"),
    ("grad_accum_engineer", "004-s5-q4", "梯度累积步数增加，会导致模型参数更新更频繁",
     "As N grows the optimizer updates more often", "N=1时更新次数更多"),
    ("grad_accum_engineer", "004-s5-q4", "梯度累积步数增加，会导致训练速度变快",
     "累积步数越大，训练速度越快", "N越大，通信越少，训练更快"),
    ("grad_accum_engineer", "004-s5-q4", "梯度累积和批次大小两者相互独立",
     "梯度累积步数和有效batch size无关", "显存峰值与累积步数无关，只与micro-batch大小有关"),
    ("grad_accum_engineer", "004-s5-q1", "梯度累积和批次大小两者相互独立",
     "effective batch size is independent of the accumulation steps", "累积步数与每卡batch大小无关"),
    ("grad_accum_engineer", "004-s5-q1", "优化器在梯度累积时更新参数的频率变高",
     "梯度累积让参数更新更频繁", "不累积时更新更频繁，累积后N步才更新一次"),
    ("grad_accum_engineer", "004-s5-q2", "梯度累积的主要作用是减少训练时间",
     "用梯度累积可以缩短训练时间", "多卡时梯度累积减少通信，训练更快"),
    # misconceptions of the field, each read in one clause, its right statement beside it
    ("grad_accum_engineer", "004-s5-q1", "梯度累积会增加显存占用",
     "累积越多，显存压力越大", "大batch会增加显存占用，而累积不会"),
    ("grad_accum_engineer", "004-s5-q2", "梯度累积会增加显存占用",
     "用梯度累积显存需求会增加", "直接开大batch显存会增加，累积只需一个micro-batch的显存"),
    ("grad_accum_engineer", "004-s5-q3", "梯度累积需要 backward(retain_graph=True)",
     "backward(retain_graph=True) 才能累积梯度", "retain_graph 与梯度累积无关"),
    ("grad_accum_engineer", "004-s6-q1", "算累积步数不用考虑卡数",
     "多卡的时候不需要再除以卡数，global batch 和卡数无关",
     "N = 目标全局 batch ÷ (micro-batch × 卡数)"),
    ("grad_accum_engineer", "004-s5-q3", "梯度累积需要 backward(retain_graph=True)",
     "这里一定要加 retain_graph=True，不然上一个 micro-batch 的梯度会随计算图被释放",
     "不需要 retain_graph=True，.grad 默认就会累加"),
    ("grad_accum_engineer", "004-s5-q3", "梯度累积需要 backward(retain_graph=True)",
     "梯度累积的关键是 backward(retain_graph=True)", "loss.backward(retain_graph=True)"),
    ("grad_accum_engineer", "004-s5-q3", "no_sync会增加通信",
     "用 no_sync 会让通信变多", "不用no_sync的话每个micro-batch都同步，通信变多"),
    ("ai_trainer_l2", "000-s4-q51", "ZeRO-3只切分优化器状态",
     "ZeRO-3 only shards the optimizer states", "ZeRO-1只切分优化器状态，ZeRO-2再切梯度，ZeRO-3连参数也切"),
    ("ai_trainer_l2", "000-s4-q51", "ZeRO-3或offload没有性能代价",
     "offload到CPU没有性能损失", "开了overlap_comm后通信几乎不影响吞吐"),
    ("llm_trainer_solutions", "001-s5-q1", "实时推荐要在每次请求时重新训练模型",
     "每个请求来了就重训一遍模型", "每次请求实时计算特征，模型每天重训"),
    ("llm_trainer_solutions", "001-s5-q1", "学生数据可以直接使用",
     "学生的行为数据可以直接用，无需授权", "未经授权不得使用学生数据"),
    # the direction of N's effect on the gradient noise, turned round
    ("grad_accum_engineer", "004-s5-q4", "累积步数越小，梯度越稳定",
     "累积步数小的时候梯度噪声小，训练更平稳", "N小更新频繁，N大梯度更稳定"),
    ("grad_accum_engineer", "004-s5-q4", "累积步数越小，梯度越稳定",
     "A small N gives less noisy gradients", "with small N, gradients are noisier, with large N more stable"),
    ("grad_accum_engineer", "004-s5-q4", "累积步数越大，梯度噪声越大",
     "累积步数增大以后训练更不稳定", "N越大梯度越平滑，N越小噪声越大"),
    # session 23: what seed set 17's answers said in other words
    ("grad_accum_engineer", "004-s6-q2", "Adam对梯度尺度敏感",
     "SGD 对尺度不敏感，反倒是 Adam 对尺度非常敏感", "Adam 自适应，对梯度尺度不敏感，SGD 比 Adam 更敏感"),
    ("grad_accum_engineer", "004-s6-q2", "Adam对梯度尺度敏感",
     "大 batch 下 Adam 对梯度尺度比 SGD 敏感得多", "Adam 比 SGD 更不敏感"),
    ("grad_accum_engineer", "004-s6-q2", "权重衰减要在每个micro-batch",
     "权重衰减要在每个 micro-batch 都施加一次", "权重衰减不要在每个 micro-batch 都施加，每次更新一次"),
    ("grad_accum_engineer", "004-s6-q2", "BatchNorm会合并",
     "BN 会自动合并各份的统计量", "BN 的统计只来自当前 micro-batch，不会因为累积而变成大 batch 统计"),
    ("grad_accum_engineer", "004-s5-q3", "混合精度（GradScaler）与梯度累积冲突",
     "GradScaler 和梯度累积冲突，所以要把混合精度关掉", "混合精度下用 scaler.scale(loss).backward() 配合累积"),
    ("grad_accum_engineer", "004-s5-q3", "backward会覆盖",
     "loss.backward() 会把上一份的梯度清掉",
     "```python\noptimizer.zero_grad()  # 进入循环前先把旧梯度清掉\nfor x, y in loader:\n    loss.backward()\n```"),
]  # fmt: skip


def _wrong_claim(bank_name: str, question: str, claim_start: str):
    path = RUBRICS / f"{bank_name}.yaml"
    rubric = load_rubrics(path, load_bank(path))[question]
    found = [w for c in rubric.criteria for w in c.wrong_claims if w.claim.startswith(claim_start)]
    assert len(found) == 1, f"{question}: no one wrong claim starts with {claim_start!r}"
    return found[0]


@pytest.mark.parametrize(("bank_name", "question", "claim", "wrong", "right"), CASES)
def test_a_listed_misconception_is_read_in_other_words(bank_name, question, claim, wrong, right):
    listed = _wrong_claim(bank_name, question, claim)
    assert read_claim(ReadAnswer.of(wrong), listed.when, strict=True).status == "asserted"
    assert read_claim(ReadAnswer.of(right), listed.when, strict=True).status != "asserted"


def test_a_one_over_n_of_the_compute_is_no_loss_divided_by_n():
    """«每张卡只做 1/N 的计算» says nothing of the loss: the equivalence criterion needs it."""
    path = RUBRICS / "grad_accum_engineer.yaml"
    rubric = load_rubrics(path, load_bank(path))["004-s5-q1"]
    c3 = next(c for c in rubric.criteria if c.id == "C3")
    patterns = [w for part in c3.parts for w in part.when]
    assert read_claim(ReadAnswer.of("每张卡只做 1/N 的计算"), patterns).status == "absent"
    assert read_claim(ReadAnswer.of("loss = loss / n"), patterns).status == "asserted"


def _part_patterns(question: str, criterion: str) -> list[list[str]]:
    path = RUBRICS / "grad_accum_engineer.yaml"
    rubric = load_rubrics(path, load_bank(path))[question]
    found = next(c for c in rubric.criteria if c.id == criterion)
    return [w for part in found.parts for w in part.when]


@pytest.mark.parametrize(
    ("question", "criterion", "premise", "decisive"),
    [
        ("004-s6-q1", "C2", "大模型、大数据集的特点是显存受限",
         "大模型显存不够，就把累积步数开大一点，但也别太大"),
        ("004-s5-q1", "C4", "梯度累积可以模拟大batch",
         "显存放不下大batch时，用它模拟大batch"),
        ("004-s6-q1", "C1", "小数据集、简单模型的计算量和内存需求都比较小",
         "小数据集、简单模型：显存够用，一般不用累积"),
    ],
)  # fmt: skip
def test_a_premise_alone_does_not_verify_the_strategy(question, criterion, premise, decisive):
    """The level names what the criterion turns on (the larger N; the memory limit), and a
    fluent wrong answer states the premise too."""
    patterns = _part_patterns(question, criterion)
    assert read_claim(ReadAnswer.of(premise), patterns).status == "absent"
    assert read_claim(ReadAnswer.of(decisive), patterns).status == "asserted"


def test_an_update_deferred_with_cai_is_no_update_during_accumulation():
    """«才» defers the update: «第 N 个之后才 optimizer.step()» says it waits, not that it
    updates at every step; a step taken each micro-batch still reads as updating."""
    path = RUBRICS / "grad_accum_engineer.yaml"
    rubric = load_rubrics(path, load_bank(path))["004-s5-q1"]
    waits = next(p for p in rubric.criteria[0].parts if p.claim == "累积期间不更新参数").when
    assert read_claim(ReadAnswer.of("第 N 个之后才 optimizer.step()"), waits).status == "asserted"
    eager = ReadAnswer.of("每个小批次反向后都调用 optimizer.step() 更新参数")
    assert read_claim(eager, waits).status != "asserted"


@pytest.mark.parametrize(
    ("question", "criterion", "answer"),
    [
        ("004-s6-q1", "C1", "Small data, simple model: everything fits -> no accumulation (N = 1)"),
        ("004-s5-q2", "C1", "Big models need too much GPU memory, so the batch we can use is small."),
        ("004-s5-q1", "C4", "only one small batch has to be in memory at a time"),
        ("004-s5-q2", "C3", "a large batch without needing more GPUs or more memory per step"),
        ("004-s5-q2", "C1", "the GPU has to store the parameters, their gradients and the activations"),
    ],
)  # fmt: skip
def test_english_answers_verify_the_decisive_part(question, criterion, answer):
    patterns = _part_patterns(question, criterion)
    assert read_claim(ReadAnswer.of(answer), patterns).status == "asserted"


@pytest.mark.parametrize(
    ("question", "criterion", "claim", "says_nothing", "decisive"),
    [
        ("004-s5-q2", "C1", "显存被参数", "大模型参数很多，显存不够用",
         "大模型参数多，显存不足，单卡只能跑很小的 batch"),
        ("004-s5-q2", "C1", "显存不够", "大模型训练很慢", "大模型太大了，显存不够用"),
        ("004-s6-q1", "C4", "先取显存允许", "N = 单卡显存 GB 数 ÷ 模型参数量", "N = B / (m × GPU 数)"),
        ("004-s6-q1", "C4", "先取显存允许", "N 等于单卡显存除以参数量", "N = 全局 batch ÷ 每卡 batch"),
        ("004-s6-q2", "C3", "优化器与累积", "反倒是 Adam 对尺度非常敏感", "Adam 自适应，对尺度不敏感"),
        ("004-s6-q2", "C3", "优化器与累积", "Adam 对梯度尺度比 SGD 敏感得多", "普通 SGD 对学习率更敏感"),
        ("004-s6-q2", "C5", "混合精度loss", "权重衰减要在每个 micro-batch 都施加一次", "权重衰减每次更新只施加一次"),
        ("004-s6-q2", "C5", "混合精度loss", "Clipping: unscale first when using AMP",
         "AMP 下 GradScaler 缩放 loss，累积 N 步后才 scaler.step"),
        ("004-s5-q1", "C1", "每个小批次反向后", "梯度累积就是把梯度累积起来",
         "每个小批次反向后把梯度加到 .grad 上"),
        ("004-s5-q1", "C2", "累积到设定步数", "梯度累积要更新参数",
         "把 N 个 batch 的梯度累积起来之后再更新一次参数"),
        ("004-s5-q2", "C4", "数据并行中", "the gradients are all-reduced after every micro-batch",
         "累积期间不需要 all-reduce 梯度"),
        ("004-s5-q2", "C4", "数据并行中", "梯度累积不会减少同步次数",
         "during accumulation you don't need to all-reduce the gradients"),
        ("004-s6-q1", "C1", "小数据", "small datasets are common in practice",
         "For small datasets and small models you usually dont need accumulation at all"),
        ("004-s6-q1", "C1", "小数据", "Small dataset, small model: accumulate 64 steps",
         "Small dataset, small model: memory is enough, so skip accumulation"),
        ("004-s6-q1", "C1", "小数据", "資料多而模型小時，直接開大 micro-batch，不必累積",
         "小資料集跟簡單模型的話，顯存一般夠用，步數可以設很小或者乾脆不用"),
        ("004-s5-q2", "C4", "数据并行中", "每个micro batch反向后都必须做一次all-reduce同步梯度",
         "累积期间只在最后一个 micro-batch 做一次 all-reduce"),
        ("004-s5-q3", "C3", "每个micro-batch调用backward", "backward 之后要手动把梯度加起来吗？",
         "backward 算出来的梯度是往 .grad 里加的，不会清掉"),
        ("004-s5-q3", "C3", "每个micro-batch调用backward", "用 loss.backward() 多跑几次",
         "用 loss.backward() 多跑几次，梯度会自己加在 .grad 上"),
    ],
)  # fmt: skip
def test_a_part_turns_on_what_its_level_names(question, criterion, claim, says_nothing, decisive):
    """A part reads the decisive content, not its topic: the cause of the memory limit only
    with its consequence (the level: what fills memory, so the batch is tiny), a formula with the wrong operands, Adam called sensitive, weight decay per
    micro-batch, a comparison turned round (seed sets 17 and 18, each checked against the
    development sets); the question's own term restated («把梯度累积起来»: the level that
    "only says accumulate the gradients"), and AMP's unscale before clipping, which is the
    clipping criterion's (C4), not the mixed-precision trap's (seed set 19 and development);
    no all-reduce during accumulation is the sync saved, "all-reduced" no "reduce"; the
    crossover case (much data, a small model) is not the small one, an all-reduce "once" after
    every micro-batch saves nothing, and gradients "added into" ``.grad`` are accumulated
    (development: 004-s5-q3 C3 and 004-s5-q2 C4 each two answers closer, seed set 22)."""
    path = RUBRICS / "grad_accum_engineer.yaml"
    rubric = load_rubrics(path, load_bank(path))[question]
    found = next(c for c in rubric.criteria if c.id == criterion)
    part = next(p for p in found.parts if p.claim.startswith(claim))
    assert read_claim(ReadAnswer.of(says_nothing), part.when).status != "asserted"
    assert read_claim(ReadAnswer.of(decisive), part.when).status == "asserted"


@pytest.mark.parametrize(
    "answer",
    [
        "理由：召回求快，排序求准",
        "cheap recall + precise ranking",
        "课程有十几万门，不可能每门都用重模型算",
    ],
)
def test_the_reason_for_two_stages_is_read_in_its_usual_words(answer):
    """«召回求快、排序求准» is the textbook reason; seventeen development answers gave it in
    words the part did not read (001-s5-q1 C4 read exactly 17 of 45 before, 28 after)."""
    path = RUBRICS / "llm_trainer_solutions.yaml"
    rubric = load_rubrics(path, load_bank(path))["001-s5-q1"]
    c4 = next(c for c in rubric.criteria if c.id == "C4")
    reason = next(p for p in c4.parts if p.claim.startswith("分阶段的理由"))
    assert read_claim(ReadAnswer.of(answer), reason.when).status == "asserted"
    assert read_claim(ReadAnswer.of("召回和排序都很重要"), reason.when).status == "absent"


@pytest.mark.parametrize(
    ("bank", "question", "criterion", "claim", "answer", "says_nothing"),
    [
        ("ai_trainer_l2", "000-s4-q51", "C1", "参数、梯度、优化器状态",
         "Each rank holds 1/64 of the fp16 weights, the gradients and the fp32 Adam states",
         "每张卡都存完整的参数和梯度"),
        ("ai_trainer_l2", "000-s4-q51", "C1", "参数、梯度、优化器状态",
         "每个rank只持有1/64的fp16权重、梯度和Adam状态", "ZeRO-1 只切分优化器状态"),
        ("llm_trainer_solutions", "001-s5-q1", "C1", "用户反馈回流",
         "推荐 API → 学生行为再回到埋点，形成闭环", "推荐 API 返回课程列表"),
        ("llm_trainer_solutions", "001-s5-q1", "C1", "用户反馈回流",
         "Serving + logging -> events flow back to step 1", "Serving is done by a REST API"),
        ("llm_trainer_solutions", "001-s5-q1", "C3", "用户侧与课程侧",
         "On the user side I'd build a profile of mastery. Course side: tags and difficulty.",
         "Features are important for the model."),
        ("llm_trainer_solutions", "001-s5-q1", "C9", "关键技术的选择理由",
         "DIN fits because a learner's interests shift over the history.", "We use DIN and Kafka."),
    ],
)  # fmt: skip
def test_a_part_is_read_in_the_words_right_answers_use(
    bank, question, criterion, claim, answer, says_nothing
):
    """Development answers wrote the sharded states as each rank's 1/64 and the loop as events
    flowing back, the two sides of the features and the reasons in English: 000-s4-q51 C1 read
    exactly 25 of 45, now 31; 001-s5-q1 C1 27 → 33, C3 33 → 37, C9 33 → 37."""
    path = RUBRICS / f"{bank}.yaml"
    rubric = load_rubrics(path, load_bank(path))[question]
    found = next(c for c in rubric.criteria if c.id == criterion)
    part = next(p for p in found.parts if p.claim.startswith(claim))
    assert read_claim(ReadAnswer.of(answer), part.when).status == "asserted"
    assert read_claim(ReadAnswer.of(says_nothing), part.when).status != "asserted"
