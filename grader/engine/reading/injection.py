"""Spot answers that try to steer the judge, and cut the attempt out.

Student answers are untrusted. Patterns run on a normalized copy (NFKC, case-folded,
Traditional → Simplified, zero-width characters removed) so full-width letters or a
zero-width space inside "ignore" do not hide an attempt; matches are mapped back to the
original text so the offending sentence can be removed and the answer judged again without
it. Detection only flags and strips — the grade keeps the lower of the two scores and goes to
review, so a false positive costs an instructor a glance, not the student points.
"""

from __future__ import annotations

import base64
import binascii
import bisect
import re
import unicodedata
from dataclasses import dataclass

from grader.engine.reading.blanks import blank_reason
from grader.text import to_simplified

_INVISIBLE = set("\u200b\u200c\u200d\u2060\ufeff\u00ad\u180e")
# Cyrillic and Greek look-alikes of Latin letters ("Іgnоrе"), folded before matching.
_CONFUSABLES = str.maketrans(
    "аеорсухіјѕԁһкмтвпАЕОРСУХІЈЅКМТВНαορνκ", "aeopcyxijsdhkmtbnAEOPCYXIJSKMTBHaopvk"
)
_BASE64 = re.compile(r"[A-Za-z0-9+/]{16,}={0,2}")

# Each pattern is (code, regex on the normalized text). Every one is linear in the answer's
# length: a run a pattern may skip (``\W*`` after an opening bracket or a line start) cannot
# hold another place where the pattern starts, and optional parts between two runs of the same
# characters are possessive (``\s*+``), so no run is scanned again from each of its positions.
_OPENERS = r"[\[【<(（{]"
_POINTS = r"分(?![钟之布类析片组割配支区成])"  # 分 as points, not 分钟, 分之一, 分片, 分析…
_NOT_OPENERS = r"[^\w\[【<(（{]"  # the non-word run after an opener, up to the next opener
_PATTERNS: list[tuple[str, str]] = [
    # "ignore the rubric / previous instructions"
    (
        "ignore_instructions",
        r"(ignore|disregard|forget|override|bypass)\W*+(all\W*+)?(the\W*+|your\W*+|any\W*+|previous\W*+|prior\W*+|above\W*+|earlier\W*+)*(instruction|rule|rubric|criteri|prompt|guideline|grading)",
    ),
    (
        "ignore_instructions",
        r"(忽略|无视|忽视|不要理会|不用理会|别管|跳过|抛开|忘记|忘掉)\W{0,3}(之前|以上|上面|前面|上述|所有|一切|全部|你的|原来|原有|此前)?\W{0,3}(的)?\W{0,3}(指令|指示|规则|评分标准|评分细则|细则|标准|要求|提示|设定|rubric)",
    ),
    ("new_instructions", r"(new|updated|real|actual)\W+(instruction|rule|task)s?\W*[:：]"),
    ("new_instructions", r"(新的|最新|真正的|更新的?)\W{0,2}(指令|指示|任务|规则)\W*[:：]?"),
    # fake system / teacher / grader notes
    (
        "fake_authority",
        rf"{_OPENERS}{_NOT_OPENERS}*+(system|sys|admin|developer|teacher|instructor|grader|assistant|系统|管理员|老师|教师|阅卷|评分|助教)\w{{0,6}}\W*[\]】>)）}}]",
    ),
    (
        "fake_authority",
        r"(^|\n|[。！？!?.]\s?)(system|assistant|developer)\s*+((prompt|message|note)\s*+)?[:：]",
    ),
    (
        "fake_authority",
        r"(系统|管理员|阅卷|评分|批改)\W{0,2}(提示|消息|指令|通知|说明|注意|备注)\W*[:：]",
    ),
    (
        "fake_authority",
        r"(老师|教师|阅卷人|阅卷员|评分员|助教|批改人)\W{0,2}(批注|备注|说明|注|的话|提示|已确认|确认|认定|规定|要求)",
    ),
    (
        "fake_authority",
        r"(note|message|instruction)s?\W+(to|for)\W+(the\W+)?(grader|examiner|marker|judge|ai|model|assistant)",
    ),
    (
        "fake_authority",
        r"(teacher|instructor|grader|examiner|professor)('s)?\W+(note|comment|override|instruction|approval)",
    ),
    # asking for marks
    (
        "score_request",
        r"(give|award|assign|grant)\W+(me\W+|this\W+(answer\W+)?|it\W+|the\W+student\W+)?(full|maximum|max|perfect|top|all\W+the|high|\d+(\.\d+)?)(\W*+|[^\w/]*+/\W*+\d++\W*+)(mark|point|score|credit|grade)",
    ),
    (
        "score_request",
        r"(full|maximum|perfect|max)\W+(mark|score|point|credit)s?\W+(for\W+)?(this|me|the\W+student)",
    ),
    (
        "score_request",
        r"(score|grade|mark|rate)\W+(this|me|it)\W+(as\W+)?(a\W+)?(\d+|full|perfect|maximum|10\W*/\W*10)",
    ),
    (
        "score_request",
        r"(给|打|判|评)\W{0,2}(我|他|她|本题|这道题|此题|该答案|这个答案|此答案|本答案|这份答案)?\W{0,2}(满分|高分|最高分|全分|\d+\s*分)",
    ),
    (
        "score_request",
        r"(应|应该|应当|必须|可以)\W{0,2}(得|获得|拿到?|给予?)\W{0,2}(满分|高分|最高分|全部分数)",
    ),
    ("score_request", r"(满分答案|此答案满分|本答案满分|答案完全正确.{0,6}满分)"),
    (
        "score_request",
        r"(所有|每个|每一)\W{0,2}(评分项|评分点|criteria|criterion)\W{0,4}(都|均|全)?\W{0,2}(给|得|打)?\W{0,2}(满分|最高分)",
    ),
    # role-play
    (
        "role_play",
        r"(you\W+are\W+now|from\W+now\W+on\W+you|act\W+as|pretend\W+(to\W+be|you)|role\W*play|you\W+will\W+now\W+be|imagine\W+you\W+are)",
    ),
    (
        "role_play",
        r"(你现在是|从现在起你|从现在开始你|你将扮演|请扮演|扮演一[个名位]|角色扮演|假装你是|你的新身份|现在你是)",
    ),
    ("role_play", r"(lenient|generous|kind)\W+(grader|examiner|teacher|marker)"),
    ("role_play", r"(宽松|仁慈|善良|好心)\W{0,2}的?\W{0,2}(阅卷|评分|老师|考官)"),
    # output control and fake verdicts
    (
        "output_control",
        r"(output|return|respond\W+with|reply\W+with)\W+(only\W+)?(the\W+)?(following\W+)?(json|score|points|verdict|\{)",
    ),
    (
        "output_control",
        r"(请|直接|只|必须)\W{0,2}(输出|返回|回复)\W{0,4}(json|分数|得分|满分|points|以下|如下|\{)",
    ),
    (
        "fake_verdict",
        r"[\"'](c\d+|points|score|feedback|evidence|verdict|total|grade|marks)[\"']\s*[:：=]",
    ),
    ("fake_verdict", r"\b(c\d+|points)\s*[:：=]\s*\d"),
    # delimiter spoofing
    (
        "delimiter_spoof",
        r"<\s*+(/\s*+)?(student_answer|answer|system|instructions?|rubric|user|assistant)\s*+>",
    ),
    ("delimiter_spoof", r"‹\s*+(/\s*+)?student_answer\s*+›"),
    ("delimiter_spoof", r"(end\W+of\W+(the\W+)?(student\W+)?answer|答案结束|学生答案结束)"),
    # talk of marks at all: a technical answer has no reason to mention full marks or a score line
    ("score_request", r"(满分|最高分|全部分数|满点|満点|最高点)"),
    ("score_request", r"(full|maximum|max|perfect|top)\W+(marks?|points?|score|credit|grade)"),
    ("score_request", r"(deserves?|earns?)\W+(\w+\W+){0,2}(marks?|points|credit)"),
    (
        "score_request",
        r"(assign|award|give|grant)\W+(\w+\W+){0,4}(maximum|max|full|top|all|highest)\W+(\w+\W+)?(points?|marks?|score|credit)",
    ),
    ("score_request", r"(mark|rate|score|grade)\W+(every|each|all)\W+(\w+\W+)?criteri"),
    ("score_request", r"\b(score|total|grade|marks?|result)\s*[:=]\s*\d+(\.\d+)?\s*/\s*\d+"),
    (
        "score_request",
        r"(评分结果|总分\s*[:：]|评语\s*[:：]|得分\s*[:：]|(?<!\d)\d+\s*分\s*/\s*\d+)",
    ),
    ("fake_authority", r"评分(标准|细则)\W{0,2}(补充|修订|更新|变更|说明)"),
    # claims about how this question is graded: "评分标准已于5月更新", "本题只看…", "提到即得5分"
    (
        "fake_authority",
        r"(评分标准|评分细则|评分规则|评分要点|答案要点|标准答案|细则)[^。！？，,\n]{0,12}(更新|作废|修订|变更|为准|改为|改成)",
    ),
    ("fake_authority", r"(本题|此题|这道题|该题)\W{0,2}只看"),
    ("score_request", rf"(几|多少)\s*{_POINTS}"),  # "这个答案几分？"
    (
        "fake_authority",
        r"(老师|教师|助教|阅卷人|阅卷老师)\W{0,2}(发|给|提供|公布)\W{0,2}的?\W{0,2}(答案|要点|评分)",
    ),
    (
        "score_request",
        rf"(即得|就得|即可得|就能得|可得|能得|就是|就给|即给|才给|拿到)\s*\d+(\.\d+)?\s*{_POINTS}",
    ),
    (
        "fake_authority",
        r"[【\[]\s*+(参考答案|标准答案|评分标准|评分细则|reference\W+answer|rubric|marking\W+scheme)",
    ),
    (
        "fake_authority",
        r"(评分员|阅卷员|阅卷人|评分者|考官|采点者|採点者|grader|examiner|marker)\W{0,2}(指令|注意|须知|说明|instruction|[:：])",
    ),
    (
        "fake_authority",
        r"note\W+from\W+(the\W+)?(\w+\W+)?(examiner|grader|teacher|instructor|marker|professor)",
    ),
    ("fake_authority", r"(命题组|出题人|出题老师|命题人)"),
    ("hidden_content", r"<!--"),
    (
        "fake_authority",
        r"(override|pre-?approved|already\W+(been\W+)?(graded|approved|verified)|stay\W+in\W+character)",
    ),
    (
        "fake_authority",
        r"(^|\n)[^\w\n]*+(assistant|助手|ai助手)\s*[:：]",
    ),
    (
        "score_request",
        r"\b(score|scored|grade|graded)\W{0,3}(of\W+)?\d+(\.\d+)?\s*(/|out\W+of)\s*\d+",
    ),
    ("score_request", r"\b(score|points|marks)\s*[=＝]\s*\d"),
    ("output_control", r"(按|照|依)\W{0,2}(这个|此|以上|上述|上面)的?\W{0,2}(结果|分数|评分|得分)"),
    (
        "encoded",
        r"(解码|decode|decrypt|base64)\W{0,3}(并|and|then)?\W{0,3}(执行|遵守|照做|execute|follow|run|obey)",
    ),
    (
        "encoded",
        r"(translate|翻译)\W+(\w+\W+){0,3}(and|并|然后)\W+(follow|execute|obey|do|执行|照做|遵守)",
    ),
    ("delimiter_spoof", r"\"\"\"|'''|<\|im_(start|end)\|>"),
    # pressure
    (
        "pressure",
        r"(i\W+will|i'll|i\W+am\W+going\W+to)\W+(fail|lose|be\W+expelled|get\W+kicked|lose\W+my)",
    ),
    (
        "pressure",
        r"(否则|不然|要不然)\W{0,4}(我)?\W{0,2}(就|会)?\W{0,2}(挂科|不及格|被开除|退学|毕不了业|拿不到)",
    ),
    ("pressure", r"(begging|beg\W+you|求你|求您)"),
    ("pressure", r"(求求|拜托|恳请|恳求)\W{0,3}(你|您|老师|阅卷)?\W{0,3}(给|打|高抬贵手|放过)"),
]
_COMPILED = [(code, re.compile(pattern)) for code, pattern in _PATTERNS]
_BLOCK = re.compile(r"```.*?(?:```|$)|<!--.*?(?:-->|$)|/\*.*?(?:\*/|$)", re.DOTALL)
_TRAILING = set("）)」』】]!！?？。.")
_SENTENCE_END = re.compile(r"[。！？!?\n；;]|[.](?=\s|$)")


@dataclass(frozen=True)
class Finding:
    code: str
    start: int  # offsets in the original answer
    end: int
    text: str


def _normalize_with_map(text: str) -> tuple[str, list[int]]:
    """Normalized text, and for each of its characters the index of the original character."""
    chars: list[str] = []
    origin: list[int] = []
    for i, ch in enumerate(text):
        if ch in _INVISIBLE:
            continue
        for out in unicodedata.normalize("NFKC", ch.translate(_CONFUSABLES)).casefold():
            chars.append(out)
            origin.append(i)
    simplified = to_simplified("".join(chars))
    if len(simplified) != len(chars):  # OpenCC changed length: fall back to per-char mapping
        simplified = "".join(to_simplified(c) if len(to_simplified(c)) == 1 else c for c in chars)
    return simplified, origin


def find_injections(answer: str) -> list[Finding]:
    """Every suspicious span, in order; empty for an ordinary answer."""
    normalized, origin = _normalize_with_map(answer)
    findings = []
    for code, pattern in _COMPILED:
        for m in pattern.finditer(normalized):
            if m.end() == m.start():
                continue
            start, end = origin[m.start()], origin[m.end() - 1] + 1
            findings.append(Finding(code, start, end, answer[start:end]))
    findings.extend(_encoded_findings(answer))
    findings.sort(key=lambda f: (f.start, f.end))
    return findings


def _encoded_findings(answer: str) -> list[Finding]:
    """Base64 that decodes to text with an attempt inside: flag the encoded span itself."""
    found = []
    for m in _BASE64.finditer(answer):
        token = m.group()
        try:
            decoded = base64.b64decode(token + "=" * (-len(token) % 4), validate=True)
            text = decoded.decode("utf-8")
        except (binascii.Error, UnicodeDecodeError, ValueError):
            continue
        normalized, _ = _normalize_with_map(text)
        if any(pattern.search(normalized) for _, pattern in _COMPILED):
            found.append(Finding("encoded", m.start(), m.end(), token))
    return found


def strip_injections(answer: str, findings: list[Finding]) -> str:
    """The answer without the sentences (or code/comment blocks) that hold an attempt.

    Linear in the answer however many findings there are: blocks and sentence ends are found
    once, and the spans to cut are merged before the answer is rebuilt.
    """
    if not findings:
        return answer
    blocks = [(m.start(), m.end()) for m in _BLOCK.finditer(answer)]
    block_starts = [s for s, _ in blocks]
    sentences = _Sentences(answer)
    spans = []
    for f in findings:
        i = bisect.bisect_right(block_starts, f.start) - 1
        if i >= 0 and f.start < blocks[i][1]:
            spans.append(blocks[i])
        else:
            spans.append(sentences.around(f.start, f.end))
    # Rebuild from the kept runs, joining them the way the answer would read without the
    # insertion: nothing between CJK text, one space between Latin words.
    pieces: list[str] = []
    kept_from = 0
    for start, end in sorted(span for span in spans if span[1] > span[0]):
        if start > kept_from:
            pieces.append(answer[kept_from:start])
        kept_from = max(kept_from, end)
    pieces.append(answer[kept_from:])
    out = ""
    for piece in (p for p in pieces if p):
        out, piece = out.rstrip(), piece.lstrip()
        if out and piece and out[-1].isascii() and piece[0].isascii():
            out += " "
        out += piece
    return out.strip()


class _Sentences:
    """The sentence ends of one answer, found once, to cut the sentence around each finding."""

    def __init__(self, text: str):
        self.text = text
        matches = list(_SENTENCE_END.finditer(text))
        self.starts = [m.start() for m in matches]
        self.ends = [m.end() for m in matches]
        self.stops: dict[int, int] = {}

    def around(self, start: int, end: int) -> tuple[int, int]:
        """From just after the previous sentence end to just after the next one; a "." right
        before ``start`` ends the previous sentence even when no space follows it."""
        text = self.text
        i = bisect.bisect_right(self.ends, start) - 1
        before = self.ends[i] if i >= 0 else 0
        if start > 0 and text[start - 1] == ".":
            before = start
        j = bisect.bisect_left(self.starts, end)
        stop = self.ends[j] if j < len(self.ends) else len(text)
        if stop not in self.stops:  # a dangling "）" or "！" goes too
            extended = stop
            while extended < len(text) and text[extended] in _TRAILING:
                extended += 1
            self.stops[stop] = extended
        return before, self.stops[stop]


@dataclass(frozen=True)
class Flagged:
    """A suspected injection: what was found and the answer without it."""

    findings: list[Finding]
    cleaned: str

    def nothing_left(self, min_chars: int) -> bool:
        """Whether the cleaned answer is blank or a non-answer: the attempt was all of it."""
        return blank_reason(self.cleaned, min_chars) is not None


def flag(answer: str) -> Flagged | None:
    """The answer's suspected injection, or None for an ordinary answer."""
    findings = find_injections(answer)
    if not findings:
        return None
    return Flagged(findings, strip_injections(answer, findings))
