"""The rubric's listed wrong claims read in an answer, asserted or negated.

A claim with patterns (``WrongClaim.when``) is read by rules (``parts.patterned_wrong_claims``:
"运算变少了" for "减少计算量"). One without is read by its wording: the sentence, or the two
adjacent sentences, holding the largest share of its character 3-grams beyond the question
stem's asserts it when that share is at least ``CLAIM_CONTAINMENT`` and the sentence, with its
neighbours, does not negate it ("并不是", "not"). Read once per answer (``Finishing.
wrong_claims``): the claims step sets the criteria of asserted ones aside, the substance step
deducts their points.
"""

from __future__ import annotations

from grader.engine.reading.claims.parts import found_claim, patterned_wrong_claims
from grader.engine.reading.claims.rules import ReadAnswer
from grader.engine.signals.copies import char_ngrams
from grader.models import FoundClaim, Rubric
from grader.text import sentences_of

CLAIM_CONTAINMENT = 0.6
NEGATIONS = (
    *("不是", "并非", "并不", "不一定", "不会", "不能", "不要", "不应", "不必", "不需要", "避免"),
    *("错误", "误区", "误解", "以为", "不对", "不正确", "不能说", "而不是"),
    *(" not ", "n't", " no ", "never", "avoid", "instead of", "rather than", "wrong", "myth"),
    *("misconception", "false", "incorrect"),
)


def wrong_claims(answer: str, rubric: Rubric, stem: set[str]) -> list[FoundClaim]:
    """Each listed wrong claim the answer asserts or negates: read by the rubric's patterns
    where it has them ("运算变少了" for "减少计算量"), else by its wording (the closest
    sentence carrying enough of it)."""
    found = []
    sentences = sentences_of(answer) or [answer]
    spans = [(k, k + width) for width in (1, 2) for k in range(len(sentences) - width + 1)]
    read = ReadAnswer.of(answer)
    for criterion in rubric.criteria:
        patterned = patterned_wrong_claims(read, criterion)
        found.extend(patterned)
        taken = sum(c.points for c in patterned)
        for wrong in criterion.wrong_claims:
            if wrong.when:
                continue
            wanted = (char_ngrams(wrong.claim) - stem) or char_ngrams(wrong.claim)
            if not wanted:
                continue
            # A claim may run over two clauses ("步数越大，显存占用越大"): single clauses and
            # adjacent pairs are its candidate spans.
            (a, b), share = max(
                (((a, b), len(wanted & char_ngrams("".join(sentences[a:b]))) / len(wanted))
                 for a, b in spans),
                key=lambda pair: pair[1],
            )  # fmt: skip
            if share < CLAIM_CONTAINMENT:
                continue
            best = "，".join(sentences[a:b])
            # The clauses on either side count: "……能减少计算量，这是错误的".
            negated = _negates(" ".join(sentences[max(0, a - 1) : b + 1]), wrong.claim)
            # A criterion loses at most its own points, however many of its claims match.
            claim = found_claim(criterion, wrong, best, round(share, 3), negated, taken, "wording")
            taken += claim.points
            found.append(claim)
    return found


def _negates(sentence: str, claim: str) -> bool:
    """Whether the sentence negates what it shares with the claim ("并不是…", "it is not
    true that…"): a negation word in the sentence that the claim itself does not have."""
    text, own = f" {sentence.casefold()} ", f" {claim.casefold()} "
    return any(n in text and n not in own for n in NEGATIONS)
