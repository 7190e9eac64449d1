"""How many MuSiQue gold-passage titles become entities with the offline extractor; prints JSON.

    .venv/bin/python bench/measure_entity_recall.py [--corpus-dir DIR] [--carol FILE]

Runs the same store-level functions the Dagster assets call (ingest -> chunk -> extract -> resolve ->
claims -> communities) on the 1,890-passage corpus, then checks each gold supporting passage's title:
- `strict`: the normalised title is an entity's name or alias anywhere in the graph;
- `base`: the same after dropping Wikipedia disambiguation ('Tic Tac (film)' -> 'Tic Tac',
  'Jacksonville, Florida' -> 'Jacksonville');
- `own_passage`: base title extracted from the gold passage itself (the entity lists its text unit);
- `verbatim_only`: own_passage among the titles whose base form occurs in the passage text (what an
  extractor that only sees the text can find at all).
Also times every stage on christmas_carol and counts its tables.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pipeline.core import schema  # noqa: E402
from pipeline.core.names import normalize_name  # noqa: E402
from pipeline.engine.offline import OfflineEngine  # noqa: E402
from pipeline.index.claims import index_claims  # noqa: E402
from pipeline.index.communities import index_communities  # noqa: E402
from pipeline.index.entities_and_relationships import index_entities  # noqa: E402
from pipeline.index.extracted_graph import index_extracted_graph  # noqa: E402
from pipeline.io.store import NamespaceStore  # noqa: E402
from pipeline.ops.chunking import chunk_documents_table  # noqa: E402
from pipeline.ops.ingest import documents_table, read_documents  # noqa: E402
from pipeline.settings import Settings  # noqa: E402

DATA = ROOT.parent / "shared" / "data"
_QUALIFIER = re.compile(r"\s*\([^)]*\)\s*$|,\s[^,]+$")


def base_title(title: str) -> str:
    return _QUALIFIER.sub("", title).strip() or title


def build(input_dir: Path, work: Path, namespace: str) -> tuple[NamespaceStore, dict]:
    settings = Settings(storage_root=work / "storage")
    store = NamespaceStore(settings.storage_root, namespace)
    engine = OfflineEngine()  # this measures the offline extractor's recall, whatever the env says
    timings: dict[str, float] = {}
    t = time.perf_counter()
    docs = documents_table(read_documents(input_dir).documents)
    units, docs, _ = chunk_documents_table(
        docs, settings.chunk_size, settings.chunk_overlap, settings.encoding
    )
    store.write_table(schema.DOCUMENTS, docs)
    store.write_table(schema.TEXT_UNITS, units)
    timings["ingest_and_chunk_s"] = time.perf_counter() - t
    for name, step in (
        ("extract_s", lambda: index_extracted_graph(store, settings, engine)),
        ("resolve_s", lambda: index_entities(store, settings, engine)),
        ("claims_s", lambda: index_claims(store)),
        ("communities_s", lambda: index_communities(store, settings)),
    ):
        t = time.perf_counter()
        result = step()
        timings[name] = time.perf_counter() - t
        if name == "resolve_s":
            resolution = result.stats
        if name == "communities_s":
            levels = result.levels
    counts = {t: store.read_table(t).num_rows for t in (schema.TEXT_UNITS, *_GRAPH_TABLES)}
    return store, {
        "counts": counts,
        "timings_s": {k: round(v, 3) for k, v in timings.items()},
        "graph_s": round(sum(v for k, v in timings.items() if k != "ingest_and_chunk_s"), 3),
        "fuzzy_merges": resolution.fuzzy_merges,
        "pruned_edges": resolution.pruned_edges,
        "communities_per_level": {lv: v["communities"] for lv, v in levels.items()},
    }


_GRAPH_TABLES = (schema.ENTITIES, schema.RELATIONSHIPS, schema.COVARIATES, schema.COMMUNITIES)


def musique(corpus_dir: Path, work: Path) -> dict:
    input_dir = work / "musique_input"
    input_dir.mkdir()
    shutil.copy(corpus_dir / "musique_train_corpus.json", input_dir / "corpus.json")
    store, out = build(input_dir, work, "musique")

    questions = json.loads((corpus_dir / "musique_train.json").read_text(encoding="utf-8"))
    gold = {
        (p["title"], p["paragraph_text"]) for q in questions for p in q["paragraphs"] if p["is_supporting"]
    }
    docs = store.read_table(schema.DOCUMENTS).select(["text", "text_unit_ids"]).to_pylist()
    units_of_text = {d["text"]: set(d["text_unit_ids"]) for d in docs}
    entities = (
        store.read_table(schema.ENTITIES)
        .select(["name_key", "title", "aliases", "text_unit_ids"])
        .to_pylist()
    )
    units_by_key: dict[str, set[str]] = {}
    for e in entities:
        for name in {e["title"], *e["aliases"]}:
            units_by_key.setdefault(normalize_name(name), set()).update(e["text_unit_ids"])

    strict = base = own = verbatim = verbatim_own = 0
    missed: list[str] = []
    for title, text in sorted(gold):
        key, bkey = normalize_name(title), normalize_name(base_title(title))
        strict += key in units_by_key
        base += bkey in units_by_key
        found_here = bool(units_by_key.get(bkey, set()) & units_of_text.get(text, set()))
        own += found_here
        if base_title(title).casefold() in text.casefold():
            verbatim += 1
            verbatim_own += found_here
            if not found_here:
                missed.append(title)
    n = len(gold)
    out["gold_passages"] = n
    out["gold_title_entity_fraction"] = {
        "strict": round(strict / n, 4),
        "base": round(base / n, 4),
        "own_passage": round(own / n, 4),
        "verbatim_only": round(verbatim_own / verbatim, 4) if verbatim else None,
        "verbatim_titles": verbatim,
    }
    out["missed_verbatim_examples"] = missed[:15]
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--corpus-dir", type=Path, default=DATA / "musique_hipporag100")
    parser.add_argument("--carol", type=Path, default=DATA / "christmas_carol")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="entity_recall_"))
    try:
        result = {"musique": musique(args.corpus_dir, work)}
        result["christmas_carol"] = build(args.carol, work, "carol")[1]
        print(json.dumps(result, indent=2))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
