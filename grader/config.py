"""Settings, read from the environment (prefix ``GRADER_``) or a ``.env`` file."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from grader.objective import MultipleChoiceCredit

JudgeBackend = Literal["vllm", "openai", "scripted", "none"]


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="GRADER_", env_file=".env", extra="ignore")

    # objective questions
    multiple_choice_credit: MultipleChoiceCredit = MultipleChoiceCredit.ALL_OR_NOTHING
    default_objective_points: float = Field(1.0, description="points when the paper prints none")

    # the judge
    judge: JudgeBackend = "vllm"
    judge_model: str = Field(
        "qwen2.5-coder-1.5b-instruct",
        description="a packaged model name, a local model folder, or the server's model name",
    )
    cache_dir: Path = Path.home() / ".cache" / "grader"
    judge_samples: int = Field(1, ge=1, le=9, description="self-consistency: samples per answer")
    judge_temperature: float = Field(0.7, ge=0, description="temperature when samples > 1")
    judge_max_tokens: int = Field(
        2048, ge=16, description="cap; each request gets what its rubric's schema can need"
    )
    judge_max_reasks: int = Field(2, ge=0, le=5)
    judge_seed: int = 0

    # in-process vLLM
    vllm_max_model_len: int = 4096
    vllm_kv_cache_gib: int = Field(3, ge=1, description="VLLM_CPU_KVCACHE_SPACE on CPU")
    vllm_enforce_eager: bool = True
    vllm_dtype: str = "bfloat16"
    vllm_gpu_memory_utilization: float = 0.85
    vllm_enable_prefix_caching: bool = Field(True, description="off only for benchmarks")
    vllm_load_format: str = Field(
        "auto", description='"dummy": random weights from config.json, for throughput runs'
    )

    # OpenAI-compatible server (e.g. `vllm serve`)
    openai_base_url: str = "http://127.0.0.1:8000/v1"
    openai_model: str = Field("", description="model name on the server; empty: the first listed")
    openai_api_key: SecretStr = SecretStr("EMPTY")
    openai_concurrency: int = Field(16, ge=1)
    openai_timeout_s: float = Field(120.0, gt=0)
    openai_retries: int = Field(3, ge=0)

    # review
    min_answer_chars: int = Field(2, ge=0, description="shorter answers are blank: 0, no judge")
    review_below_confidence: float = Field(0.6, ge=0, le=1)
