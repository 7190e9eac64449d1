"""Time `point_quotes` (a global answer's quotes, issue 58) on a large paged document, and check that it
returns what the whole-document search it replaced returned.

    .venv/bin/python bench/bench_point_quotes.py [--old PATH_TO_OLD_sources.py]

A synthetic namespace: one 5.7 MB document with 2,000 pages and a layout, 1,200-character text units and
communities of 20 units; each answer has 8 points citing 3 communities, half of them quoting a sentence of
a cited passage (with its line breaks collapsed, as a report writes it) and half quoting nothing."""

from __future__ import annotations

import argparse
import importlib.util
import random
import tempfile
import time
from pathlib import Path

import pyarrow as pa

from pipeline.core import schema
from pipeline.core.tables import registered_schema
from pipeline.io.store import NamespaceStore
from pipeline.parse.layout import Layout, Page, Section
from pipeline.query.global_.sources import point_quotes

WORDS = "matrix value routine returns list plot axis colour option default frame data model file".split()


def _document(rng: random.Random, size: int) -> str:
    parts: list[str] = []
    n = 0
    while n < size:
        words = [rng.choice(WORDS) for _ in range(rng.randint(6, 14))]
        sentence = f"Topic {len(parts)} " + " ".join(words) + "."
        sep = "\n" if rng.random() < 0.3 else " "
        parts.append(sentence + sep)
        n += len(sentence) + 1
    return "".join(parts)


def _table(name: str, columns: dict[str, list]) -> pa.Table:
    """`columns` with every other column of the registered schema null (query time reads none of them)."""
    schema_ = registered_schema(name)
    assert schema_ is not None
    n = len(next(iter(columns.values())))
    return pa.table(
        {f.name: pa.array(columns.get(f.name, [None] * n), f.type) for f in schema_}, schema=schema_
    )


def _store(root: Path, text: str) -> tuple[NamespaceStore, list[tuple[int, int]]]:
    store = NamespaceStore(root, "bench")
    pages = 2000
    step = len(text) // pages + 1
    layout = Layout(
        pages=[Page(i + 1, i * step, min((i + 1) * step, len(text))) for i in range(pages)],
        sections=[Section("1 All", 1, ("1 All",), 0, len(text))],
    )
    docs = _table(
        schema.DOCUMENTS, {"id": ["d1"], "title": ["big.pdf"], "text": [text], "layout": [layout.to_json()]}
    )
    store.write_table(schema.DOCUMENTS, docs)
    spans = [(a, min(a + 1200, len(text))) for a in range(0, len(text), 1000)]
    ids = [f"u{i}" for i in range(len(spans))]
    store.write_table(
        schema.TEXT_UNITS,
        _table(
            schema.TEXT_UNITS,
            {
                "id": ids,
                "document_id": ["d1"] * len(ids),
                "start_char": [a for a, _ in spans],
                "end_char": [b for _, b in spans],
            },
        ),
    )
    groups = [ids[i : i + 20] for i in range(0, len(ids), 20)]
    store.write_table(
        schema.COMMUNITIES,
        _table(schema.COMMUNITIES, {"community": list(range(len(groups))), "text_unit_ids": groups}),
    )
    return store, spans


def _points(rng: random.Random, text: str, spans: list[tuple[int, int]], n: int) -> list[dict]:
    communities = len(spans) // 20 + (len(spans) % 20 > 0)
    points = []
    for i in range(n):
        cited = rng.sample(range(communities), 3)
        description = "Nothing in this corpus says exactly this sentence at all."
        if i % 2 == 0:
            a, b = spans[cited[1] * 20 + rng.randrange(min(20, len(spans) - cited[1] * 20))]
            passage = text[a:b]
            first = passage.find("Topic ")
            last = passage.find(".", first)
            if first >= 0 and last > first:
                description = " ".join(passage[first : last + 1].split()) + " " + description
        points.append({"description": description, "community_ids": cited, "score": 100 - i})
    return points


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--old", help="the previous sources.py, to time and compare against")
    parser.add_argument("--answers", type=int, default=5)
    args = parser.parse_args()
    rng = random.Random(7)
    text = _document(rng, 5_700_000)
    old = None
    if args.old:
        spec = importlib.util.spec_from_file_location("old_sources", args.old)
        assert spec is not None and spec.loader is not None
        old = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(old)
    with tempfile.TemporaryDirectory() as tmp:
        store, spans = _store(Path(tmp), text)
        answers = [_points(rng, text, spans, 8) for _ in range(args.answers)]
        for name, fn in [("new", point_quotes), *([("old", old.point_quotes)] if old else [])]:
            fn(store, answers[0])  # warm: layouts and (new) the community map are cached per table version
            times, results = [], []
            for points in answers:
                t0 = time.perf_counter()
                results.append(fn(store, points))
                times.append(time.perf_counter() - t0)
            found = sum(len(r) for r in results)
            per = sorted(times)[len(times) // 2]
            print(
                f"{name}: median {per * 1000:.1f} ms per answer ({found} quotes over {len(answers)} answers)"
            )
            if name == "new":
                new_results = results
        if old:
            same = all(a == b for a, b in zip(new_results, results, strict=True))
            print("identical quotes:", same)


if __name__ == "__main__":
    main()
