"""The base every record model shares: unknown fields are errors, not silently dropped."""

from __future__ import annotations

from pydantic import (
    BaseModel,
    ConfigDict,
)


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=False)
