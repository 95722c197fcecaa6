import json
from pathlib import Path

import pytest

from tests.databases import BACKENDS, fresh_database, stop_own_cluster

ROOT = Path(__file__).resolve().parents[1]
SEEDS = ROOT / "examples" / "papers"  # the seed papers, kept in the repository
RUBRICS = ROOT / "rubrics"


def objective_submissions(path: Path, count: int = 5) -> Path:
    """A submissions file of ``count`` answers "C" to the example exam's objective questions
    (graded without a model)."""
    rows = ({"id": f"s{i}", "question_id": f"004-s2-q{i}", "answer": "C"}
            for i in range(1, count + 1))  # fmt: skip
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


SEED_BANKS = {
    "000_c6a4a222620dd943.txt": "ai_trainer_l2",
    "001_90443b3f2f8725e0.txt": "llm_trainer_solutions",
    "004_06153bb6e740fef5.txt": "grad_accum_engineer",
}


@pytest.fixture(params=BACKENDS)
def database_url(request, tmp_path):
    """An empty service database: a SQLite file, then a fresh database on PostgreSQL (see
    ``tests/databases.py``); a test runs once per backend."""
    with fresh_database(request.param, tmp_path) as url:
        yield url


@pytest.fixture(scope="session")
def seeds_dir() -> Path:
    return SEEDS


def pytest_collection_modifyitems(config, items):
    """`gpu` tests run only where CUDA is present."""
    try:
        import torch

        has_cuda = torch.cuda.is_available()
    except ImportError:
        has_cuda = False
    if has_cuda:
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


def pytest_sessionfinish(session, exitstatus):
    """The throwaway PostgreSQL cluster, if a test started one, stops with the session."""
    stop_own_cluster()
