"""Settings, read from the environment (prefix ``GRADER_``) or a ``.env`` file."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from grader.models import MultipleChoiceCredit

JudgeBackend = Literal["vllm", "openai", "scripted", "none"]
JudgeMode = Literal["probability", "verdict"]
MIN_SECRET_KEY_BYTES = 32


class Settings(BaseSettings):
    # errors never echo a value: some are secrets (keys, a database URL's password)
    model_config = SettingsConfigDict(
        env_prefix="GRADER_", env_file=".env", extra="ignore", hide_input_in_errors=True
    )

    # objective questions
    multiple_choice_credit: MultipleChoiceCredit = MultipleChoiceCredit.ALL_OR_NOTHING
    default_objective_points: float = Field(1.0, description="points when the paper prints none")

    # the judge
    judge: JudgeBackend = "vllm"
    judge_mode: JudgeMode = Field(
        "probability",
        description="probability: one forward step per rubric check, points from the label "
        "distribution; verdict: a generated JSON verdict per answer",
    )
    scorer: str | None = Field(
        None,
        description="the calibrated scorer that weighs the judge against the other signals: "
        "'default' (shipped, fit on development data), a scorer file, or 'none' (judge only); "
        "unset: the exam's own scorer (scorer.json beside its rubrics), else the default",
    )
    feedback: Literal["template", "judge"] = Field(
        "template",
        description="template: feedback names the missing criteria; judge: one generated "
        "sentence per answer in a second pass (probability mode)",
    )
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
    judge_chunk: int | None = Field(
        None,
        ge=0,
        description="judge requests per call, so progress can be reported as calls finish; "
        "unset or 0: a whole grading batch in one call (the service), `grader grade` uses 16",
    )
    judge_seed: int = 0
    scripted_latency_s: float = Field(
        0.0, ge=0, description="the scripted judge's time per batch, standing in for a model"
    )

    # in-process vLLM
    vllm_max_model_len: int = 4096
    vllm_kv_cache_gib: int = Field(3, ge=1, description="VLLM_CPU_KVCACHE_SPACE on CPU")
    vllm_enforce_eager: bool = True
    vllm_dtype: str = Field(
        "auto",
        description="auto: bfloat16 on CUDA and on CPUs with bfloat16 instructions, float32 on "
        "other CPUs (bfloat16 runs about 6x slower there)",
    )
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

    # answer embeddings (the thresholds are on multilingual-e5-small's compressed cosine scale)
    embed_model: str = Field(
        "multilingual-e5-small",
        description="a packaged embedding model, a sentence-transformers folder, or 'none'",
    )
    embed_batch_size: int = Field(16, ge=1)
    offtopic_margin: float = Field(
        0.025, description="answers closer than this to unrelated text are off topic: review"
    )
    offtopic_zero_margin: float | None = Field(
        0.02,
        description="off-topic answers below this margin score 0 without the judge; those "
        "between it and offtopic_margin are graded, and go to review; offtopic_margin (or "
        "None): every off-topic answer scores 0. 0.02: every blatant off-topic text we test "
        "stays below it (highest 0.017); exams with one-line references may want -0.02",
    )
    offtopic_peer_margin: float | None = Field(
        0.045,
        description="an answer below offtopic_zero_margin is still graded (and goes to "
        "review) when it sits at least this much closer to its nearest classmates' answers "
        "than unrelated text does (AnswerSignals.peer_margin; 8 other answers at least), and "
        "one below it is flagged off topic; None (`none`): neither. 0.045: every blatant "
        "off-topic text we test stays below it (highest 0.036)",
    )
    coverage_span: float = Field(
        0.12, gt=0, description="cosine above unrelated text at which a key point counts covered"
    )
    duplicate_cosine: float = Field(0.97, gt=0, le=1, description="near-duplicate answers")
    duplicate_min_chars: int = Field(
        20, ge=0, description="shorter answers are too generic to call copies"
    )
    group_cosine: float = Field(0.90, gt=0, le=1, description="answer groups: mean cosine within")
    anchors_k: int = Field(3, ge=0, description="anchor answers shown to the judge, most similar")

    # review
    min_answer_chars: int = Field(2, ge=0, description="shorter answers are blank: 0, no judge")
    review_below_confidence: float = Field(
        0.65,
        ge=0,
        le=1,
        description="below it a grade is explained as low_confidence in the ranked review queue",
    )
    review_share: float = Field(
        0.2,
        ge=0,
        le=1,
        description="at most this share of a question's answers go to review by expected error; "
        "hard reasons (injection, unscored, judge failure) always do (engine.review_queue)",
    )
    review_derived: Literal["own", "all"] = Field(
        "own",
        description="grades against a derived rubric go to review for their own reasons only "
        "(own), or every one of them (all)",
    )

    # the grading service (`grader serve`, `grader worker`)
    database_url: str = Field(
        "sqlite:///grader.db", description="SQLAlchemy URL; postgresql+psycopg://... in production"
    )
    redis_url: str = "redis://127.0.0.1:6379/0"
    banks: list[Path] = Field(
        default_factory=lambda: sorted(Path("rubrics").glob("*.yaml")),
        description="bank files the service serves; each bank is an exam, named by its name",
    )
    batch_size: int = Field(32, ge=1, description="submissions per grading task (one grade_many)")
    batch_wait_ms: int = Field(200, ge=0, description="how long the API gathers single posts")
    bulk_limit: int = Field(1000, ge=1, description="most submissions in one POST")
    max_answer_chars: int = Field(20000, ge=1)
    max_body_bytes: int = Field(
        8 * 1024 * 1024, ge=1024, description="every request body, on every route"
    )
    max_form_bytes: int = Field(
        64 * 1024, ge=1024, description="form bodies (the instructor pages, login included)"
    )
    max_queued_per_platform: int = Field(
        10000, ge=1, description="queued submissions of one platform; a post past it: 429"
    )
    request_header_timeout_s: float = Field(
        10.0,
        gt=0,
        description="a connection that has not sent a whole request head by then is closed",
    )
    request_body_timeout_s: float = Field(
        60.0, gt=0, description="a request whose body has not all arrived by then is closed"
    )
    keep_alive_timeout_s: int = Field(
        5, ge=1, description="an idle keep-alive connection is closed after this"
    )
    rate_limit_per_minute: int = Field(
        6000, ge=0, description="requests per minute with one API key (429 past it); 0: no limit"
    )
    login_failures_per_minute: int = Field(
        10, ge=1, description="failed instructor logins per client address per minute; then 429"
    )
    visibility_timeout_s: int = Field(
        3600, ge=1, description="an unacknowledged task is redelivered after this (Redis)"
    )
    worker_start_timeout_s: float = Field(
        600.0,
        gt=0,
        description="how long a worker's pool process may take to start (the judge loads in it) "
        "before Celery kills it",
    )
    sweep_interval_s: float = Field(30.0, gt=0, description="how often workers look for lost work")
    sweep_after_s: float = Field(
        600.0, gt=0, description="a submission queued this long is enqueued again"
    )
    task_retries: int = Field(5, ge=0, description="retries of a grading task (transient errors)")
    retry_backoff_s: float = Field(2.0, gt=0, description="first retry delay; doubles each time")
    webhook_retries: int = Field(8, ge=0)
    webhook_timeout_s: float = Field(10.0, gt=0, description="each try: connect, send, answer")
    webhook_concurrency: int = Field(
        8, ge=1, le=256, description="inline mode: webhook deliveries in flight at once"
    )
    webhook_per_host: int = Field(
        2, ge=1, description="inline mode: of those, at most this many to one host"
    )
    inline_nice: int = Field(
        10,
        ge=0,
        le=19,
        description="serve --inline: how much lower the grading process's CPU priority is "
        "(os.nice), so the intake gets the CPU first when they share cores",
    )
    inline_batch_timeout_s: float = Field(
        600.0,
        gt=0,
        description="serve --inline: a batch grading longer is stopped (its process killed and "
        "restarted) and tried once more; answers in two such batches are set aside as failed",
    )
    webhook_allow_private: bool = Field(
        False,
        description="let webhooks reach loopback, link-local and private addresses (tests, "
        "a platform inside your network)",
    )

    # instructor pages
    secret_key: SecretStr | None = Field(
        None,
        description=f"signs instructor sessions, at least {MIN_SECRET_KEY_BYTES} bytes; unset: "
        "made once and kept in the database (a warning says so once per process)",
    )
    trust_proxy: bool = Field(
        False,
        description="behind a reverse proxy: X-Forwarded-Proto, -Host and -For name the scheme, "
        "host and client address (never set it when clients reach the server directly)",
    )
    metrics_token: SecretStr | None = Field(
        None, description="set: /metrics needs `Authorization: Bearer <token>`; unset: open"
    )

    @field_validator("offtopic_zero_margin", "offtopic_peer_margin", mode="before")
    @classmethod
    def _none_turns_off(cls, value: object) -> object:
        """``none`` (or nothing) in the environment turns the rule off: None."""
        return None if isinstance(value, str) and value.strip().lower() in ("", "none") else value

    @field_validator("metrics_token")
    @classmethod
    def _empty_is_unset(cls, token: SecretStr | None) -> SecretStr | None:
        return token if token is not None and token.get_secret_value() else None

    @field_validator("secret_key")
    @classmethod
    def _long_enough(cls, key: SecretStr | None) -> SecretStr | None:
        # a short key signs sessions that can be forged by guessing it offline
        size = len(key.get_secret_value().encode()) if key is not None else 0
        if key is not None and size < MIN_SECRET_KEY_BYTES:
            raise ValueError(
                f"GRADER_SECRET_KEY is {size} bytes, it needs at least {MIN_SECRET_KEY_BYTES}: "
                "make one with `python -c 'import secrets; print(secrets.token_urlsafe(32))'`"
            )
        return key
