import pytest


@pytest.fixture(autouse=True)
def _no_embedding_model(monkeypatch):
    """Unit tests are fast and model-free; tests/integration exercises the real embedder."""
    monkeypatch.setenv("GRADER_EMBED_MODEL", "none")
