"""Fixtures that load real models: the packaged judge, and a tiny random Qwen2 built here.

They need the `embedded` extra. Where it is missing the tests skip, unless
GRADER_REQUIRE_EMBEDDED=1 (set by .ci/run), which turns the skip into a failure so CI cannot
pass by running nothing.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from grader.config import Settings

# vLLM logs a lot at INFO, and its shutdown messages can outlive pytest's captured streams.
os.environ.setdefault("VLLM_LOGGING_LEVEL", "WARNING")

PACKAGED = "qwen2.5-coder-1.5b-instruct"


def _need(module: str) -> None:
    try:
        __import__(module)
    except ImportError as exc:
        if os.environ.get("GRADER_REQUIRE_EMBEDDED") == "1":
            pytest.fail(f"{module} is required here (GRADER_REQUIRE_EMBEDDED=1): {exc}")
        pytest.skip(f"needs the embedded extra ({module})")


@pytest.fixture(scope="session")
def model_cache() -> Path:
    """The same cache users get, so the 1.5B conversion is done once per machine."""
    return Settings().cache.dir / "models"


@pytest.fixture(scope="session")
def packaged_model(model_cache) -> Path:
    _need("vllm")
    from grader.packaged import prepare_model

    return prepare_model(PACKAGED, model_cache)


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory, packaged_model) -> Path:
    """A 20M-parameter random Qwen2 with the real Qwen tokenizer: tests plumbing, not quality.

    head_dim must be 64: vLLM's CPU attention refuses 16.
    """
    import torch
    from transformers import AutoTokenizer, Qwen2Config, Qwen2ForCausalLM

    folder = tmp_path_factory.mktemp("tiny-qwen2")
    tokenizer = AutoTokenizer.from_pretrained(packaged_model)
    config = Qwen2Config(
        vocab_size=len(tokenizer), hidden_size=128, intermediate_size=256, num_hidden_layers=2,
        num_attention_heads=2, num_key_value_heads=2, head_dim=64, max_position_embeddings=4096,
        tie_word_embeddings=True, bos_token_id=tokenizer.convert_tokens_to_ids("<|endoftext|>"),
        eos_token_id=tokenizer.convert_tokens_to_ids("<|im_end|>"),
        pad_token_id=tokenizer.convert_tokens_to_ids("<|endoftext|>"),
    )  # fmt: skip
    torch.manual_seed(0)
    Qwen2ForCausalLM(config).to(torch.bfloat16).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder
