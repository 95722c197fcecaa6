"""What an instructor's marks say about wording: a per-question model of the graded answers.

Once a question has many graded answers, the words and phrases that separate its good answers
from its weak ones are in those answers themselves: "链式存储" in the good ones, "顺序表" in
the ones marked down. The nearest graded answers (``neighbour_features``) see that only
through whole-answer cosines; this model weighs the pieces. A ridge regression over TF-IDF
character n-grams of the question's graded answers learns how far each answer's human share
sits from the first-stage scorer's share (the residual) and predicts it for a new answer — the
second stage weighs that prediction beside the neighbours' (docs/research/benchmarks-log.md, "The
wording of graded answers").

Character n-grams need no word segmentation: Chinese n-grams of 1–3 characters, English ones
of 2–5 characters inside words (so "stack" and "stacks" share most of theirs).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

MIN_GRADED = 5  # fewer graded answers teach a ridge nothing it could be trusted with
ALPHA = 0.1  # chosen on development data (scorer_wording, docs/research/explorations.md)
_NGRAMS = {
    "zh": {"analyzer": "char", "ngram_range": (1, 3)},
    "en": {"analyzer": "char_wb", "ngram_range": (2, 5)},
}


@dataclass(frozen=True)
class WordingModel:
    """A question's graded answers' residuals, fit on their character n-grams."""

    vectoriser: Any  # sklearn TfidfVectorizer
    ridge: Any  # sklearn Ridge

    @classmethod
    def fit(
        cls, answers: Sequence[str], residuals: Sequence[float], language: str | None
    ) -> WordingModel | None:
        """None with fewer than ``MIN_GRADED`` answers or no n-gram among them."""
        from sklearn.linear_model import Ridge

        if len(answers) < MIN_GRADED or len(answers) != len(residuals):
            return None
        vectoriser = wording_vectoriser(language)
        try:
            x = vectoriser.fit_transform([flat(a) for a in answers])
        except ValueError:  # every answer blank or punctuation: an empty vocabulary
            return None
        return cls(vectoriser, Ridge(alpha=ALPHA).fit(x, list(residuals)))

    def predict(self, answers: Sequence[str]) -> np.ndarray:
        """The residual each answer's wording predicts (human − first stage, as a share)."""
        residuals: np.ndarray = self.ridge.predict(
            self.vectoriser.transform([flat(a) for a in answers])
        )
        return residuals


def wording_residual(
    graded: Sequence[str], residuals: Sequence[float], answer: str, language: str | None
) -> float | None:
    """One answer's predicted residual from graded answers (never the answer itself)."""
    model = WordingModel.fit(graded, residuals, language)
    return None if model is None else float(model.predict([answer])[0])


def wording_vectoriser(language: str | None) -> Any:
    """An unfitted TF-IDF over the language's character n-grams: how the model reads wording."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    return TfidfVectorizer(sublinear_tf=True, **_NGRAMS.get(language or "zh", _NGRAMS["zh"]))


def flat(text: str) -> str:
    """Whitespace runs as one space: line breaks and indentation are not wording."""
    return " ".join(text.split())
