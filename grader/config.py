"""Settings, read from the environment (prefix ``GRADER_``) or a ``.env`` file, in parts.

Each part is read by the code that uses it and handed only to that code: the engine's rules,
the answer signals, embeddings, the judge (with its vLLM and OpenAI backends), the scorer, the
review queue, the service, its request limits, webhooks and the instructor pages. Every part
reads its own ``GRADER_*`` names, so the environment names are those of one flat list
(``GRADER_JUDGE_MODE`` is ``JudgeSettings.mode``, ``GRADER_WEBHOOK_RETRIES`` is
``WebhookSettings.retries``). ``Settings`` composes them; ``Settings()`` reads them all.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from grader.models import MultipleChoiceCredit
from grader.models.details import JudgeModeName, JudgePlanName

JudgeBackend = Literal["vllm", "openai", "scripted", "none"]
MIN_SECRET_KEY_BYTES = 32


def _reads(prefix: str = "GRADER_") -> SettingsConfigDict:
    # errors never echo a value: some are secrets (keys, a database URL's password); a field
    # whose environment name leaves the part's prefix has that name as its alias, and is
    # still set by its own name in code
    return SettingsConfigDict(
        env_prefix=prefix,
        env_file=".env",
        extra="ignore",
        hide_input_in_errors=True,
        validate_by_name=True,
        validate_by_alias=True,
    )


class RuleSettings(BaseSettings):
    """Answers scored by rule, without the judge: objective questions and blank answers."""

    model_config = _reads()

    multiple_choice_credit: MultipleChoiceCredit = MultipleChoiceCredit.ALL_OR_NOTHING
    default_objective_points: float = Field(1.0, description="points when the paper prints none")
    min_answer_chars: int = Field(2, ge=0, description="shorter answers are blank: 0, no judge")


class SignalSettings(BaseSettings):
    """What the answer embeddings are read for (thresholds on multilingual-e5-small's
    compressed cosine scale): off topic, key-point coverage, copies, groups, anchors."""

    model_config = _reads()

    offtopic_margin: float = Field(
        0.025, description="answers closer than this to unrelated text are off topic: review"
    )
    offtopic_zero_margin: float | None = Field(
        0.02,
        description="off-topic answers below this margin score 0 without the judge, those "
        "above it are graded and go to review; None: every off-topic answer scores 0",
    )
    offtopic_graded_rescue: float = Field(
        0.875, description="graded anyway below the zero margin: a graded answer that scored "
        "is this close (cosine); above 1: never",
    )  # fmt: skip
    offtopic_peer_margin: float | None = Field(
        0.045,
        description="flagged off topic (review only) when less than this much closer to its "
        "nearest classmates' answers than unrelated text is; None (`none`): not",
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

    @field_validator("offtopic_zero_margin", "offtopic_peer_margin", mode="before")
    @classmethod
    def _none_turns_off(cls, value: object) -> object:
        """``none`` (or nothing) in the environment turns the rule off: None."""
        return None if isinstance(value, str) and value.strip().lower() in ("", "none") else value


class EmbeddingSettings(BaseSettings):
    """The answer embedding model (``GRADER_EMBED_*``)."""

    model_config = _reads("GRADER_EMBED_")

    model: str = Field(
        "multilingual-e5-small",
        description="a packaged embedding model, a sentence-transformers folder, or 'none'",
    )
    batch_size: int = Field(16, ge=1)


class VllmSettings(BaseSettings):
    """The in-process vLLM engine (``GRADER_VLLM_*``)."""

    model_config = _reads("GRADER_VLLM_")

    max_model_len: int = 4096
    kv_cache_gib: int = Field(3, ge=1, description="VLLM_CPU_KVCACHE_SPACE on CPU")
    enforce_eager: bool = True
    dtype: str = Field(
        "auto",
        description="auto: bfloat16 on CUDA and on CPUs with bfloat16 instructions, float32 on "
        "other CPUs (bfloat16 runs about 6x slower there)",
    )
    gpu_memory_utilization: float = 0.85
    enable_prefix_caching: bool = Field(True, description="off only for benchmarks")
    load_format: str = Field(
        "auto", description='"dummy": random weights from config.json, for throughput runs'
    )


class OpenAISettings(BaseSettings):
    """An OpenAI-compatible server, e.g. `vllm serve` (``GRADER_OPENAI_*``)."""

    model_config = _reads("GRADER_OPENAI_")

    base_url: str = "http://127.0.0.1:8000/v1"
    model: str = Field("", description="model name on the server; empty: the first listed")
    api_key: SecretStr = SecretStr("EMPTY")
    concurrency: int = Field(16, ge=1)
    timeout_s: float = Field(120.0, gt=0)
    retries: int = Field(3, ge=0)


class JudgeSettings(BaseSettings):
    """The judge: which backend and model, how it is asked (``GRADER_JUDGE_*``)."""

    model_config = _reads("GRADER_JUDGE_")

    backend: JudgeBackend = Field("vllm", validation_alias="GRADER_JUDGE")
    mode: JudgeModeName = Field(
        JudgeModeName.PROBABILITY,
        description="probability: one forward step per rubric check, points from the label "
        "distribution; verdict: a generated JSON verdict per answer",
    )
    plan: JudgePlanName = Field(
        "budget",
        description="unset: full for a served judge, else budget (engine.judge_plan); budget: "
        "criterion checks where the scorer weighs the judge; full: every check; anchored: "
        "budget, plus on reviewed rubrics every check, anchored and blended in",
    )
    feedback: Literal["template", "judge"] = Field(
        "template",
        validation_alias="GRADER_FEEDBACK",
        description="template: feedback names the missing criteria; judge: one generated "
        "sentence per answer in a second pass (probability mode)",
    )
    model: str = Field(
        "qwen2.5-coder-1.5b-instruct",
        description="a packaged model name, a local model folder, or the server's model name",
    )
    samples: int = Field(1, ge=1, le=9, description="self-consistency: samples per answer")
    temperature: float = Field(0.7, ge=0, description="temperature when samples > 1")
    max_tokens: int = Field(
        2048, ge=16, description="cap; each request gets what its rubric's schema can need"
    )
    max_reasks: int = Field(2, ge=0, le=5)
    chunk: int | None = Field(
        None,
        ge=0,
        description="judge requests per call, so progress can be reported as calls finish; "
        "unset or 0: a whole grading batch in one call (the service), `grader grade` uses 16",
    )
    seed: int = 0
    scripted_latency_s: float = Field(
        0.0,
        ge=0,
        validation_alias="GRADER_SCRIPTED_LATENCY_S",
        description="the scripted judge's time per batch, standing in for a model",
    )
    trust: Path | None = Field(None, description="a judge trust file (calibrate judge-trust)")
    vllm: VllmSettings = Field(default_factory=VllmSettings)
    openai: OpenAISettings = Field(default_factory=OpenAISettings)


class ScorerSettings(BaseSettings):
    """Which calibrated scorer weighs the judge against the other signals."""

    model_config = _reads()

    choice: str | None = Field(
        None,
        validation_alias="GRADER_SCORER",
        description="'default' (shipped, fit on development data), a scorer file, or 'none' "
        "(judge only); unset: the exam's own scorer (scorer.json beside its rubrics), else "
        "the default",
    )


class ReviewSettings(BaseSettings):
    """The ranked review queue (``GRADER_REVIEW_*``)."""

    model_config = _reads("GRADER_REVIEW_")

    below_confidence: float = Field(
        0.65,
        ge=0,
        le=1,
        description="below it a grade is explained as low_confidence in the ranked review queue",
    )
    share: float = Field(
        0.2,
        ge=0,
        le=1,
        description="at most this share of a question's answers go to review by expected error; "
        "hard reasons (injection, unscored, judge failure) always do (engine.review.queue)",
    )
    derived: Literal["own", "all"] = Field(
        "own",
        description="grades against a derived rubric go to review for their own reasons only "
        "(own), or every one of them (all)",
    )


class ServiceSettings(BaseSettings):
    """The grading service (`grader serve`, `grader worker`): store, broker, exams, batches."""

    model_config = _reads()

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
    sweep_after_s: float = Field(600.0, gt=0, description="queued this long: enqueued again")
    task_retries: int = Field(5, ge=0, description="retries before a dead letter (not outages)")
    retry_backoff_s: float = Field(2.0, gt=0, description="first retry delay; doubles each time")
    # serve --inline: the grading process's niceness (the intake first on shared cores), and a
    # batch's time limit (its process restarted, tried once more, then its answers failed)
    inline_nice: int = Field(10, ge=0, le=19)
    inline_batch_timeout_s: float = Field(600.0, gt=0)


class LimitSettings(BaseSettings):
    """What the service's HTTP side lets one request, client or platform do."""

    model_config = _reads()

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
    keep_alive_timeout_s: int = Field(5, ge=1, description="idle keep-alive connections close")
    rate_limit_per_minute: int = Field(
        6000, ge=0, description="requests per minute with one API key (429 past it); 0: no limit"
    )
    login_failures_per_minute: int = Field(
        10, ge=1, description="failed instructor logins per client address per minute; then 429"
    )
    max_in_flight_per_key: int = Field(16, ge=1, description="one key's requests served at once")
    refused_posts_per_minute: int = Field(60, ge=0, description="one key's refused posts; 0: off")


class WebhookSettings(BaseSettings):
    """Result deliveries to the platforms' webhooks (``GRADER_WEBHOOK_*``)."""

    model_config = _reads("GRADER_WEBHOOK_")

    retries: int = Field(8, ge=0)
    timeout_s: float = Field(10.0, gt=0, description="each try: connect, send, answer")
    concurrency: int = Field(
        64, ge=1, le=1024, description="deliveries in flight in one sender (a courier)"
    )
    per_host: int = Field(
        16, ge=1, description="of those, at most this many to one host (scheme, host, port)"
    )
    allow_private: bool = Field(
        False,
        description="let webhooks reach loopback, link-local and private addresses (tests, "
        "a platform inside your network)",
    )


class PageSettings(BaseSettings):
    """The instructor pages and the service's own pages (/metrics), behind a proxy or not."""

    model_config = _reads()

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


class CacheSettings(BaseSettings):
    """Where prepared models (the judge's and the embedder's) and run logs are kept."""

    model_config = _reads("GRADER_CACHE_")

    dir: Path = Path.home() / ".cache" / "grader"


class Settings(BaseModel):
    """Every part; ``Settings()`` reads each from the environment, a part given is used as is."""

    rules: RuleSettings = Field(default_factory=RuleSettings)
    signals: SignalSettings = Field(default_factory=SignalSettings)
    embeddings: EmbeddingSettings = Field(default_factory=EmbeddingSettings)
    judge: JudgeSettings = Field(default_factory=JudgeSettings)
    scorer: ScorerSettings = Field(default_factory=ScorerSettings)
    review: ReviewSettings = Field(default_factory=ReviewSettings)
    service: ServiceSettings = Field(default_factory=ServiceSettings)
    limits: LimitSettings = Field(default_factory=LimitSettings)
    webhooks: WebhookSettings = Field(default_factory=WebhookSettings)
    pages: PageSettings = Field(default_factory=PageSettings)
    cache: CacheSettings = Field(default_factory=CacheSettings)


# the parts a bad GRADER_* variable can fail in (the CLI names them without a traceback)
PARTS: tuple[type[BaseSettings], ...] = (
    RuleSettings,
    SignalSettings,
    EmbeddingSettings,
    VllmSettings,
    OpenAISettings,
    JudgeSettings,
    ScorerSettings,
    ReviewSettings,
    ServiceSettings,
    LimitSettings,
    WebhookSettings,
    PageSettings,
    CacheSettings,
)


def env_name(part: type[BaseSettings], field: str) -> str:
    """The environment variable that sets ``field`` of ``part``: its alias where it leaves the
    part's prefix, else the prefix and its name (what an error about it should name)."""
    info = part.model_fields.get(field)
    alias = info.validation_alias if info is not None else field
    if isinstance(alias, str):
        return alias.upper()
    return (str(part.model_config.get("env_prefix", "")) + field).upper()
