"""Shared word classes of the claim patterns (``@up``, ``@down``, ``@same``) and the words
that negate a claim. Simplified Chinese and English, compared on ``claims.text`` keys: a
Traditional answer is read through its Simplified key."""

from __future__ import annotations

CLASSES: dict[str, tuple[str, ...]] = {
    "up": (
        *("增加", "增大", "增长", "增多", "变大", "变多", "变高", "提高", "提升", "上升", "升高"),
        *("加大", "更多", "更大", "更高", "越大", "越多", "越高", "翻倍", "倍增", "上涨", "膨胀"),
        *("加快", "更快", "变快", "加速", "提速", "成倍", "线性增长", "吃紧", "紧张", "暴涨"),
        *("调高", "调大", "变强", "更强", "翻一倍", "还要占", "更占"),
        *("increase", "grow", "more", "larger", "higher", "bigger", "faster", "speedup"),
        *("rise", "double", "moremem", "blowup"),
    ),
    "down": (
        *("减少", "降低", "减小", "下降", "变少", "变小", "变低", "更少", "更小", "更低", "越小"),
        *("越少", "越低", "缩小", "节省", "节约", "省下", "省去", "省了", "缩短", "降到", "降为"),
        *("降至", "减半", "只有原来", "减轻", "减为", "少了", "减掉", "还少", "更省", "越省"),
        *("调低", "调小", "变弱", "省掉"),
        *("decrease", "reduce", "lower", "less", "fewer", "smaller", "save", "cut", "drop"),
        *("shrink", "lessen"),
    ),
    "same": (
        *("不变", "保持不变", "没有变化", "没变", "一样", "相同", "相等", "等价", "等同", "无关"),
        *("不受影响", "不影响", "不随", "差不多", "持平", "恒定", "固定", "不会变", "不改变"),
        *("不增加", "不会增加", "并不增加", "不减少", "不会减少", "并不减少", "没有减少", "没少"),
        *("并未减少", "一点没少", "没有少", "照旧", "依旧", "还是那么多", "一样多"),
        *("一致", "不会改变", "保持一致"),
        *("unchanged", "same", "constant", "independent", "unaffected", "doesnotchange"),
        *("notchange", "doesnotgrow", "doesnotincrease", "doesnotreduce", "doesnotdecrease"),
    ),
}

# A direction's contradiction: "计算量不变" is contradicted by "计算量减少" or "计算量增加".
OPPOSITES: dict[str, tuple[str, ...]] = {"up": ("down",), "down": ("up",), "same": ("up", "down")}

# A negator this close before a term negates it ("并不会减少"), within the term's clause.
NEGATORS_ZH = ("不", "没", "无", "未", "非", "别", "勿", "否")
# Words that start with a negator and negate nothing.
NOT_NEGATIONS_ZH = (
    *("不仅", "不但", "不断", "不同", "不少", "不久", "不错", "不管", "不论", "不只", "不光"),
    *("无论", "非常", "未来", "无数", "并非常", "不外乎", "无非", "否则", "是否", "能否", "可否"),
    *("无损", "非线性", "非零", "不确定", "不稳定", "不均", "不足", "不够", "不一致", "不平衡"),
    *("不过", "不然", "要不然", "不妨"),
)
NEGATORS_EN = ("not", "no", "never", "without", "cannot", "neither", "nor", "n't", "instead")
# English contractions read as their full words, with or without the apostrophe students drop
# ("doesn't save compute", "dont need it"): the patterns and classes are written in full words.
CONTRACTIONS = {
    **{f"{verb}n{mark}t": f"{verb} not" for mark in ("'", "") for verb in (
        "do", "does", "did", "is", "are", "was", "were", "has", "have", "had", "should",
        "would", "could", "need", "must",
    )},
    "can't": "cannot", "cant": "cannot", "won't": "will not",
}  # fmt: skip
# A negated cause reaches the predicate after it: «不会因为累积而变成大 batch 统计» denies the
# 变成大 batch, six characters or more away («不会因 N 变大而多衰减», «并没有因此减少»).
CAUSE_NEGATORS = tuple(
    n + c
    for n in ("不", "不会", "并不", "并不会", "没有", "并没有", "并未", "未")
    for c in ("因为", "因", "由于", "随着")
)
# Verbs whose negation reaches every term after them in the clause ("不需要实时特征和Flink").
WIDE_NEGATORS = (
    *("不需要", "不用", "无需", "无须", "不必", "不含", "不包括", "不涉及"),
    *("并不需要", "根本不", "完全不", "noneed", "doesnotneed", "donotneed", "without"),
    *CAUSE_NEGATORS,
)
# Predicates that end a clause and dismiss every term before it, the way Chinese puts the
# comment after its topic ("用户画像也不需要", "答题记录跟兴趣无关", "warmup 没必要").
DISMISSALS = (
    *("不需要", "不用", "无需", "不必", "没必要", "没有必要", "无关", "不相关", "没关系"),
    *("没用", "没有用", "无用", "不重要", "没有意义", "无意义", "是多余", "可以忽略", "可忽略"),
    *("可以丢弃", "丢弃", "丢掉", "可以不要", "不要", "isunnecessary", "unnecessary"),
    *("notneeded", "isirrelevant", "irrelevant", "useless", "canbeignored", "canbedropped"),
)
# What may follow a dismissal at the clause's end ("是不需要的", "没必要了", "是多余的吧").
CLAUSE_TAIL = "了的啊吧呢哦呀嘛!！~…."
NEGATION_WINDOW = 6  # characters before a Chinese term; words before an English one: 4
# What may stand between a negator and the term it denies ("没有减少", "不会增加", "不再同步").
DENIAL_LINKS = ("", "有", "是", "会", "能", "再")

# A sentence that holds up a claim only to refute it ("很多人以为…，这是错误的").
REFUTATIONS = (
    *("误区", "误解", "错误的", "是错的", "并非如此", "不对", "不正确", "其实不然", "以为"),
    *("并不是这样", "错误观点", "说法错误", "这种说法", "常见错误", "谬误"),
    *("myth", "misconception", "isnottrue", "isfalse", "iswrong", "mistaken", "fallacy"),
)
# Words that make the text before a colon a statement, not a topic: a contrast or a denial
# («我认为不应该先召回后排序，而是反过来：») heads the clauses after it with its last phrase only.
STATEMENT_MARKS_ZH = ("而是", "但是", "不应", "不该", "不是", "并非")
# Endings of a clause that states the case its sentence speaks of («小数据集的话，»). Not «…时，»
# or «…的时候，»: too often a time, not a case («loss 除以 N 时，» then read into the formula).
CONDITION_ENDS = ("的话",)
# Prefixes that make a Latin term another word ("recomputed" is not "compute", "unstable" not
# "stable"); a term longer than ``patterns.SHORT_WORD`` is not read right after one of them.
LATIN_PREFIXES = ("re", "un", "non", "pre", "dis", "mis", "in", "de")
