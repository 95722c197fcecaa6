"""The words that mark the parts of a paper: answers, explanations, cases, questions, points.

One place for the vocabulary, so every reader of a part (question, case, collected list) agrees
on where an answer or an explanation starts. Simplified and Traditional forms are both listed.
"""

from __future__ import annotations

import re

_KEY_PREFIX = r"(?:参考|參考|正确|正確|标准|標準)?"
_AFTER_BREAK = r"(?:^|(?<=[\s。；;]))"

# 答案：B · 【答案】B · 参考答案：… · 正确答案：… · 答案要点：… · 答：… (at a line or clause start)
ANSWER_MARK = re.compile(
    rf"【\s*{_KEY_PREFIX}答案(?:要点|要點)?\s*】\s*[:：]?"
    rf"|\[\s*{_KEY_PREFIX}答案\s*\]\s*[:：]?"
    rf"|{_KEY_PREFIX}答案(?:要点|要點|(?:及|与|與|和)(?:评分标准|評分標準|评分要点|評分要點))?\s*[:：]"
    r"|(?:参考|參考|答题|答題|评分|評分)(?:要点|要點)\s*[:：]"
    r"|评分标准\s*[:：]|評分標準\s*[:：]"
    rf"|{_AFTER_BREAK}答\s*[:：]"
)

# 解析：… · 【解析】… · 答案解析：… · 【详解】…
EXPLAIN_MARK = re.compile(
    r"【\s*+(?:答案|试题|試題)?(?:解析|详解|詳解|分析|点拨|點撥|点评|點評)\s*+】\s*+[:：]?"
    r"|(?:答案|试题|試題)?解析\s*[:：]"
)
# "答案：B 解析 因为…": 解析 and a space, looked for only after an answer
EXPLAIN_AFTER_KEY = re.compile(rf"{EXPLAIN_MARK.pattern}|(?<=[\s。．.；;，,)）])解析[ ]+(?=\S)")

# Paper text is untrusted too: no pattern here scans one run of characters again from each of
# its positions. Runs between optional parts are possessive (``\s*+``) where what follows cannot
# be whitespace, and a run a pattern may start in front of is capped.
_LINE_SPACE = r"[^\S\n]*+"  # spaces within one line

# A standalone line that heads collected answers: 答案 · 参考答案 · 【参考答案】 · 答案与解析 …
# (blank lines and one rule line of ——— or === just above it belong to it, up to 64 characters
# of whitespace; what follows the head stays on its line).
ANSWER_HEAD_LINE = re.compile(
    r"^[ \t—\-=*]*+[【\[〔]?\s{0,64}+(?:试卷|試卷|试题|試題)?(?:参考|參考|标准|標準)?答案"
    rf"(?:及|与|與|和)?(?:解析|评分标准|評分標準|详解|詳解)?{_LINE_SPACE}[】\]〕]?{_LINE_SPACE}"
    r"[:：]?[ \t—\-=*]*+$",
    re.MULTILINE,
)

_CN = "一二三四五六七八九十"
# 案例： · 案例一 · 【案例】 · 案例背景： · 材料一： · 背景： · 阅读材料，回答问题。
CASE_INTRO = re.compile(
    rf"{_AFTER_BREAK}(?:【\s*+)?(?P<word>案例|材料|資料|资料|背景)"
    rf"(?:背景|描述|材料|資料|资料)?(?:\s*+(?P<num>[{_CN}]{{1,3}}|\d{{1,2}}))?(?:\s*+】)?"
    r"(?:\s*+(?P<points>[（(]\s*+(?:(?:共|本题|本題)\s*+)?\d+(?:\.\d+)?\s*+分\s*+[)）]))?"
    rf"(?:\s*+[.．、:：]|(?<=[{_CN}\d】)）])(?=\s|$|[（(])|(?<=】))"
    rf"|(?:^|(?<=[\n。])){_LINE_SPACE}(?:请)?(?:阅读|閱讀)(?:下面|下列|以下|下述)?(?:的)?(?:材料|案例|資料|资料)"
    r"[^\n。]{0,24}?(?:回答|完成|作答)(?:下列|下面|以下|后面的|後面的)?"
    r"(?:问题|問題|各题|各題|小题|小題|[\d～~\-—至第题題、]+)?[。：:.]?"
)

# 阅读下面的材料，完成14～16题。 — a material shared by several numbered questions, not a case
SHARED_MATERIAL = re.compile(
    r"(?:^|(?<=[\n。]))[ \t]*(?:请)?(?:阅读|閱讀)[^\n。]{0,30}?(?:回答|完成|作答)[^\n。\d]{0,6}?"
    r"(?:第\s*)?(?P<first>\d{1,3})\s*(?:[～~\-—至到]|[题題]至)\s*(?:第\s*)?(?P<last>\d{1,3})\s*小?[题題]"
    r"[^\n。]{0,12}[。：:.]?"
)

# 问题： · 【问题】 · 思考题： — what a case asks, after its material
QUESTION_LEAD = re.compile(
    rf"{_AFTER_BREAK}(?:【\s*+)?(?:问题|問題|思考题|思考題|要求)(?:\s*+】)?(?:\s*+[:：])?(?=\s|$|[^，,])"
)

# （5分） · (本题10分) · [10分] · 【本题满分12分】 — points printed with a question
POINTS_NOTE = re.compile(
    r"[（(\[【]\s*+(?:(?:本小题|本题|本題|本小題)\s*+)?(?:(?:满分|滿分|共)\s*+)?(\d+(?:\.\d+)?)\s*+分\s*+[)）\]】]"
)
POINTS_PHRASE = re.compile(r"本小?[题題]\s*+(?:(?:满分|滿分|共)\s*+)?(\d+(?:\.\d+)?)\s*+分")
PER_BLANK = re.compile(r"每[空格]\s*(\d+(?:\.\d+)?)\s*分")
PER_QUESTION = re.compile(r"每小?[题題道]\s*(\d+(?:\.\d+)?)\s*分")
TOTAL = re.compile(r"共\s*(\d+(?:\.\d+)?)\s*分")
COUNT = re.compile(r"共\s*(\d+)\s*(?:小|道)?[题題道]")
# 满分100分 · 总分：100 · 卷面满分 120 分 — the paper's total, in the title
PAPER_TOTAL = re.compile(
    r"(?:满分|滿分|总分|總分|卷面分|全卷共|试卷共|試卷共|本试卷共|本試卷共)[^\d\n]{0,6}(\d+(?:\.\d+)?)\s*分?"
)

# Blanks in a fill-in stem: ____ · ＿＿ · （ ） · 【 】
BLANK = re.compile(r"_{2,}|＿{2,}|[（(]\s*[)）]|【\s+】")

TF_MARK = r"[√×✓✗✔✘对错對錯TF]|正[确確]|[错錯][误誤]|不正[确確]"
