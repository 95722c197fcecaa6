"""What a refit's report says, in a sentence: which agreement figures moved, which way, whether
clearly (the after's 95 % interval leaves the before's value out), and whether to apply it.

The deciding figure is MAE, the points a grade is off by on average: the figure a student
feels, and the one the scorer is fit to. QWK and the correlations count order: a refit that
moves grades toward the instructors' points can lower them (fewer grades far apart, but the
order of the close ones shuffled) while exact agreement rises, as an exam's did (QWK 0.59 →
0.52, exact 0.27 → 0.58). So: apply when MAE falls and no figure clearly worsens; keep the
scorer when MAE rises; otherwise the page names the figures that disagree and says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from grader.calibrate.metrics import Agreement, Estimate

HIGHER_IS_BETTER = {"qwk", "pearson", "spearman", "exact", "adjacent"}
LOWER_IS_BETTER = {"mae"}
NEAR_ZERO_IS_BETTER = {"mean_difference"}
EPSILON = 1e-9


@dataclass(frozen=True)
class Move:
    key: str
    label: str
    before: float
    after: float
    better: bool | None  # None: it did not move
    clear: bool  # the after's interval leaves the before's value out

    @property
    def said(self) -> str:
        way = "rose" if self.after > self.before else "fell"
        return f"{self.label} {way} {self.before:.2f} → {self.after:.2f}"


@dataclass(frozen=True)
class Advice:
    verdict: str  # apply, keep, mixed, same
    message: str
    moves: list[Move]


def advise(before: Agreement, after: Agreement, labels: tuple[tuple[str, str], ...]) -> Advice:
    moves = [m for key, label in labels if (m := _move(key, label, before, after)) is not None]
    mae = next((m for m in moves if m.key == "mae"), None)
    worse = [m for m in moves if m.better is False and m.clear]
    better = [m for m in moves if m.better and m.clear and m.key != "mae"]
    if mae is None or all(m.better is None for m in moves):
        return Advice("same", "No figure moved: applying changes nothing you can measure.", moves)
    if mae.better is False:
        return Advice("keep", f"Keep the scorer as it is: {mae.said} (grades further off your "
                      f"points){_also(better, ' although ')}.", moves)  # fmt: skip
    if not worse:
        clearly = "clearly " if mae.clear else ""
        return Advice("apply", f"Apply it: {mae.said}, {clearly}closer to your points, and no "
                      f"figure clearly worse{_also(better, '; also ')}.", moves)  # fmt: skip
    return Advice(
        "mixed",
        f"Mixed: {mae.said} (closer to your points) but {_list(worse)}. MAE counts points, the "
        "correlations and QWK count order: apply it if grades close to your points matter more "
        "than their order, else keep the scorer as it is.",
        moves,
    )


def _move(key: str, label: str, before: Agreement, after: Agreement) -> Move | None:
    old: Estimate = getattr(before, key)
    new: Estimate = getattr(after, key)
    if old.value is None or new.value is None:
        return None
    if abs(new.value - old.value) < EPSILON:
        better = None
    elif key in LOWER_IS_BETTER:
        better = new.value < old.value
    elif key in NEAR_ZERO_IS_BETTER:
        better = abs(new.value) < abs(old.value)
    else:
        better = new.value > old.value
    clear = new.low is not None and new.high is not None and not new.low <= old.value <= new.high
    return Move(key, label, old.value, new.value, better, clear)


def _list(moves: list[Move]) -> str:
    return ", ".join(m.said for m in moves)


def _also(moves: list[Move], lead: str) -> str:
    return f"{lead}{_list(moves)}" if moves else ""
