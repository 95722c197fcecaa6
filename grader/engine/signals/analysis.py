"""What answer embeddings say about the answers to one question, before and beside the judge.

For each answer: its similarity to the reference; how far above *unrelated* text it sits near
the question and reference (off-topic when barely above); for each rubric key point the
closest sentence and how well it covers the point; near-duplicates among other students'
answers; and its answer group.

E5 cosines are compressed (unrelated texts still score ~0.8), so raw cosines are never
compared with fixed thresholds. Each question is calibrated against a few everyday sentences
in the answer's language: "unrelated" is how close those get to the question, reference or key
point, and an answer's margin above that is what counts. Comparing within the answer's own
language keeps an English answer to a Chinese question (cross-lingual cosines run lower) from
looking off-topic.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from grader.config import SignalSettings
from grader.engine.signals.anchors import choose_anchors
from grader.engine.signals.cohort import DuplicatePair, group_answers, near_duplicates
from grader.engine.signals.copies import is_copy
from grader.models import (
    Anchor,
    AnswerSignals,
    GradedAnswer,
    KeyPointMatch,
    NearDuplicate,
    Question,
    Rubric,
    Submission,
)
from grader.text import content_chars, language_of, match_key, sentences_of

if TYPE_CHECKING:
    import numpy as np

    from grader.embed import Embedder

# Everyday sentences that answer no exam question: the per-question zero of the cosine scale.
UNRELATED = {
    "zh": (
        "今天食堂的饭菜很好吃。",
        "明天可能会下雨，记得带伞。",
        "周末我和朋友去看了一场电影。",
        "这件衣服打折以后很便宜。",
        "我家的猫每天睡十几个小时。",
        "火车晚点了半个小时。",
        "他每天早上跑步五公里。",
        "这本小说的结局让人意外。",
    ),
    "en": (
        "The food in the cafeteria was good today.",
        "It might rain tomorrow, so bring an umbrella.",
        "I watched a movie with friends last weekend.",
        "This shirt is cheap after the discount.",
        "My cat sleeps more than ten hours a day.",
        "The train was half an hour late.",
        "He runs five kilometers every morning.",
        "The ending of this novel was surprising.",
    ),
}

_SENTENCE_CHARS = 80  # a key point's matching sentence, as shown on the grade
PEERS_K = 5  # the nearest classmates' answers a peer margin averages over
MIN_PEERS = 8  # fewer other answers say too little about what the class wrote


def copied_pairs(
    submissions: Sequence[Submission],
    vectors: np.ndarray,
    settings: SignalSettings,
    question: str = "",
) -> list[DuplicatePair]:
    """Near-duplicate pairs of different students' answers: close in meaning (cosine), long
    enough to call copies, and sharing their wording beyond the ``question``'s own words
    (``copies.is_copy``). E5 cosines alone are compressed: two short answers in their
    own words ("不正确，当栈里只有一个元素时…", "错误 栈底元素可删除…") sat at 0.973."""
    candidates = near_duplicates(
        vectors,
        [s.student for s in submissions],
        settings.duplicate_cosine,
        eligible=[content_chars(s.answer) >= settings.duplicate_min_chars for s in submissions],
    )
    return [
        pair
        for pair in candidates
        if is_copy(
            pair.similarity,
            submissions[pair.first].answer,
            submissions[pair.second].answer,
            question,
            min_cosine=settings.duplicate_cosine,
            min_chars=settings.duplicate_min_chars,
        )
    ]


@dataclass
class QuestionAnalysis:
    """Signals for a cohort of answers to one question, and the anchors each answer is shown.

    ``graded`` are the question's human-scored answers with their signals, and ``vectors``
    holds the answer vectors of the batch and of the graded answers, so neighbours are found
    without embedding anything twice.
    """

    question_id: str
    signals: dict[str, AnswerSignals]  # by submission id
    anchors: dict[str, list[Anchor]]  # by submission id: the rubric's nearest the answer
    graded: list[tuple[GradedAnswer, AnswerSignals]] = field(default_factory=list)
    vectors: dict[str, np.ndarray] = field(default_factory=dict)  # batch and graded, by id


def analyze_question(
    question: Question,
    rubric: Rubric,
    submissions: Sequence[Submission],
    embedder: Embedder,
    settings: SignalSettings,
    cohort: Sequence[Submission] = (),
    graded: Sequence[GradedAnswer] = (),
    twins: Sequence[Submission] = (),
) -> QuestionAnalysis:
    """Signals for ``submissions``; the ``cohort`` (other answers to the question) joins the
    comparisons among answers (near-duplicates, groups, the peer margin): only its vectors.
    Those are review and integrity signals; nothing a score reads depends on the cohort, so an
    answer gets one score alone or among its classmates.
    ``graded`` answers get signals too (the scorer compares its own view of them with the
    human scores); those that are not students' answers here (rubric anchors) take no part
    in duplicates or groups; nor do ``twins`` (answers with an injection cut out).

    Everything is embedded in one batch. Groups are formed over all answers in id order, so
    the same answers get the same group ids whichever batch asks.
    """
    mine = {s.id for s in submissions}
    everyone = sorted([*submissions, *(c for c in cohort if c.id not in mine)], key=lambda s: s.id)
    students = len(everyone)
    index = {s.id: i for i, s in enumerate(everyone)}
    for g in graded:
        if g.id not in index:  # an anchor: analysed, but not one of the students' answers
            index[g.id] = len(everyone)
            everyone.append(Submission(id=g.id, question_id=g.question_id, answer=g.answer))
    for t in twins:
        index[t.id] = len(everyone)
        everyone.append(t)
    own = sorted({index[s.id] for s in (*submissions, *twins)} | {index[g.id] for g in graded})
    space = _embed(question, rubric, everyone, own, embedder, settings, students)
    analysed = {
        everyone[i].id: _answer_signals(everyone[i], i, space, rubric, settings) for i in own
    }
    signals = {sid: analysed[sid] for sid in (*mine, *(t.id for t in twins))}
    students_v = space.answers[:students]
    for pair in copied_pairs(everyone[:students], students_v, settings, question.stem):
        for me, other in ((pair.first, pair.second), (pair.second, pair.first)):
            if everyone[me].id in signals:
                signals[everyone[me].id].near_duplicates.append(
                    NearDuplicate(
                        submission_id=everyone[other].id,
                        student=everyone[other].student,
                        similarity=pair.similarity,
                    )
                )
    for group in group_answers(students_v, settings.group_cosine):
        for member in group.members:
            if everyone[member].id in signals:
                signals[everyone[member].id].group = group.id
    # The anchors nearest the answer itself, not its group's centre: groups form among whoever
    # shares the run, and the judge's points must not depend on that.
    k, near = settings.anchors_k, space.anchors
    anchors = {s: choose_anchors(rubric.anchors, k, near, space.answers[index[s]]) for s in mine}
    return QuestionAnalysis(
        question.id,
        signals,
        anchors,
        graded=[(g, analysed[g.id]) for g in graded],
        vectors={everyone[i].id: space.answers[i] for i in own},
    )


@dataclass
class _Space:
    """Every text of one question's analysis, embedded in one batch, with the scales' zeros."""

    anchors: np.ndarray  # the rubric's anchors, when there are more than the judge is shown
    answers: np.ndarray  # every answer of the cohort, in id order
    topics: np.ndarray  # the question, then the reference when there is one
    key_points: list[tuple[str, str]]  # (criterion id, key point)
    points: np.ndarray  # the key points' vectors
    sentences: dict[int, tuple[list[str], np.ndarray]]  # own answers: sentences and vectors
    topic_zero: dict[str, float]  # per language: how close unrelated text gets to the topics
    point_zero: dict[str, np.ndarray]  # per language and key point: the same for key points
    reference_margins: np.ndarray | None  # every answer: reference cosine above its zero
    students: int  # the first answers are students' (peers are among them), then anchors
    keys: np.ndarray  # the students' answers' match keys (copies are no peers)
    peer_zero: dict[str, float]  # per language: how close unrelated text gets to the class


def _embed(
    question: Question,
    rubric: Rubric,
    everyone: list[Submission],
    own: list[int],
    embedder: Embedder,
    settings: SignalSettings,
    students: int,
) -> _Space:
    import numpy as np

    answers = [s.answer for s in everyone]
    sentences = {i: sentences_of(answers[i]) or [answers[i]] for i in own}
    key_points = [(c.id, p) for c in rubric.criteria for p in (c.key_points or [c.description])]
    topics = [question.stem]
    if isinstance(question.answer, str) and question.answer:
        topics.append(question.answer)  # the reference
    # Anchors are compared with groups only when the rubric has more than the judge is shown.
    rubric_anchors = rubric.anchors if len(rubric.anchors) > settings.anchors_k else []
    texts = [
        *[a.answer for a in rubric_anchors],
        *answers,
        *topics,
        *(p for _, p in key_points),
        *UNRELATED["zh"],
        *UNRELATED["en"],
        *(s for i in own for s in sentences[i]),
    ]
    vectors = embedder.encode(texts)
    sizes = [len(rubric_anchors), len(answers), len(topics), len(key_points), len(UNRELATED["zh"])]
    anchor_v, answer_v, topic_v, point_v, zh_v, rest = np.split(vectors, np.cumsum(sizes))
    unrelated_v = {"zh": zh_v, "en": rest[: len(UNRELATED["en"])]}
    sentence_v = rest[len(UNRELATED["en"]) :]
    margins = None
    if len(topics) > 1:
        zero = {lang: float((v @ topic_v[1]).max()) for lang, v in unrelated_v.items()}
        margins = answer_v @ topic_v[1] - np.array([zero[language_of(a)] for a in answers])
    own_sentences = {}
    start = 0
    for i in own:
        own_sentences[i] = (sentences[i], sentence_v[start : start + len(sentences[i])])
        start += len(sentences[i])
    return _Space(
        anchors=anchor_v,
        answers=answer_v,
        topics=topic_v,
        key_points=key_points,
        points=point_v,
        sentences=own_sentences,
        # The zero of each scale, per language: how close unrelated text gets.
        topic_zero={lang: float((v @ topic_v.T).max()) for lang, v in unrelated_v.items()},
        point_zero={lang: (point_v @ v.T).max(axis=1) for lang, v in unrelated_v.items()},
        reference_margins=margins,
        students=students,
        keys=np.array([match_key(a) for a in answers[:students]], dtype=object),
        peer_zero={
            lang: max(_nearest_mean(answer_v[:students] @ u) for u in v)
            for lang, v in unrelated_v.items()
        }
        if students >= MIN_PEERS
        else {},
    )


def _nearest_mean(similarities: np.ndarray) -> float:
    """The mean of the ``PEERS_K`` largest similarities."""
    import numpy as np

    return float(np.sort(similarities)[::-1][:PEERS_K].mean())


def _peer_margin(
    i: int, answer: str, space: _Space, lang: str, duplicate_cosine: float
) -> float | None:
    """How much closer answer ``i`` sits to its nearest classmates than unrelated text does.
    Blatant off-topic text sits far from every classmate; a genuine answer that merely shares
    few words with a one-line reference sits among the others. Itself, copies of its text and
    near-duplicates are no peers (two students pasting the same joke do not vouch for it)."""
    if not space.peer_zero:
        return None
    similarities = space.answers[: space.students] @ space.answers[i]
    peers = (space.keys != match_key(answer)) & (similarities < duplicate_cosine)
    if i < space.students:
        peers[i] = False
    if peers.sum() < MIN_PEERS:
        return None
    return round(_nearest_mean(similarities[peers]) - space.peer_zero[lang], 4)


def _answer_signals(
    submission: Submission, i: int, space: _Space, rubric: Rubric, settings: SignalSettings
) -> AnswerSignals:
    """One answer's reference similarity, topic margin and key-point matches."""
    import numpy as np

    lang = language_of(submission.answer)
    sentences, sentence_v = space.sentences[i]
    candidates = np.vstack([sentence_v, space.answers[i : i + 1]])
    closeness = space.points @ candidates.T  # key point x (sentences + whole answer)
    best = closeness.argmax(axis=1)
    best_sim = closeness[np.arange(len(space.key_points)), best]
    coverage = np.clip((best_sim - space.point_zero[lang]) / settings.coverage_span, 0.0, 1.0)
    matches = [
        KeyPointMatch(
            criterion=cid,
            key_point=point,
            sentence=(sentences[best[k]] if best[k] < len(sentences) else submission.answer)[
                :_SENTENCE_CHARS
            ],
            similarity=round(float(best_sim[k]), 4),
            coverage=round(float(coverage[k]), 3),
        )
        for k, (cid, point) in enumerate(space.key_points)
    ]
    criterion_points = {c.id: c.points for c in rubric.criteria}
    per_criterion = {
        c.id: sum(1 for cid, _ in space.key_points if cid == c.id) for c in rubric.criteria
    }
    covered_points = sum(
        criterion_points[m.criterion] * m.coverage / per_criterion[m.criterion] for m in matches
    )
    margin = float((space.answers[i] @ space.topics.T).max()) - space.topic_zero[lang]
    peers = _peer_margin(i, submission.answer, space, lang, settings.duplicate_cosine)
    reference_margin = None
    if space.reference_margins is not None:
        reference_margin = round(float(space.reference_margins[i]), 4)
    return AnswerSignals(
        reference_similarity=round(float(space.answers[i] @ space.topics[1]), 4)
        if len(space.topics) > 1
        else None,
        reference_margin=reference_margin,
        topic_margin=round(margin, 4),
        off_topic=margin < settings.offtopic_margin or among_classmates(peers, settings) is False,
        peer_margin=peers,
        key_points=matches,
        coverage_points=round(covered_points, 3),
    )


def among_classmates(peer_margin: float | None, settings: SignalSettings) -> bool | None:
    """Whether the answer sits among its classmates' answers (peer margin at least
    ``offtopic_peer_margin``); None when the class cannot tell (rule off, too few classmates).
    Blatant text sits far from every classmate, even where a one-line reference lets it pass
    the topic margin (docs/research/benchmarks-log.md, "The off-topic rule, second round")."""
    limit = settings.offtopic_peer_margin
    if limit is None or peer_margin is None:
        return None
    return peer_margin >= limit
