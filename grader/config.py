"""Settings, read from the environment (prefix ``GRADER_``) or a ``.env`` file."""

from __future__ import annotations

from pydantic_settings import BaseSettings, SettingsConfigDict

from grader.objective import MultipleChoiceCredit


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="GRADER_", env_file=".env", extra="ignore")

    multiple_choice_credit: MultipleChoiceCredit = MultipleChoiceCredit.ALL_OR_NOTHING
    default_objective_points: float = 1.0
    """Points of an objective question whose paper prints none."""
