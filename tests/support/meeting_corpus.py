"""A generated corpus for indexing with a scripted graph model: `meeting_corpus(n)` is n documents in which twenty
people meet and write to each other; `scripted_llm_env` the environment that points the pipeline at the scripted
OpenAI-compatible server (one extraction call per text unit, no retries, a long timeout)."""

from __future__ import annotations

from pathlib import Path

PEOPLE = [
    f"{first} {last}"
    for first, last in zip(
        "Ada Ben Cora Dan Eva Finn Gia Hal Ivy Jon Kai Lea Max Nia Oto Pia Quin Rex Sia Tom".split(),
        "Abbot Brandt Cole Drake Ernst Fox Grant Hale Irwin Jost Kent Lowe Marsh Nash Orr Pike Quill Rowe "
        "Stone Tate".split(),
        strict=True,
    )
]


def meeting_corpus(n: int) -> dict[str, str]:
    return {
        f"doc{i:02d}.txt": (
            f"{PEOPLE[i % 20]} met {PEOPLE[(i + 1) % 20]} at meeting {i}. "
            f"Later {PEOPLE[(i + 7) % 20]} wrote to {PEOPLE[i % 20]} about meeting {i}.\n"
        )
        for i in range(n)
    }


def scripted_llm_env(storage: Path, base_url: str, concurrency: int = 4) -> dict[str, str]:
    return {
        "PIPELINE_STORAGE_ROOT": str(storage),
        "PIPELINE_LLM_PROVIDER": "openai",
        "PIPELINE_LLM_BASE_URL": base_url,
        "PIPELINE_LLM_MODEL": "scripted-graph",
        "PIPELINE_LLM_JSON_MODE": "json_object",
        "PIPELINE_LLM_API_KEY_ENV": "INCR_TEST_KEY",
        "INCR_TEST_KEY": "test-key",
        "PIPELINE_LLM_CONCURRENCY": str(concurrency),
        "PIPELINE_LLM_MAX_RETRIES": "0",
        "PIPELINE_EXTRACTION_MAX_GLEANINGS": "0",  # one extraction call per text unit
        "PIPELINE_EXTRACTION_PACK_TOKENS": "0",
        "PIPELINE_REPORT_MIN_ENTITIES": "0",  # ... each unit alone (packing: test_extraction_packed)
        # a request the proxy holds must not time out meanwhile, however slow the machine
        "PIPELINE_LLM_TIMEOUT_S": "600",
    }
