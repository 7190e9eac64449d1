"""Quality of the offline default, for a newcomer's eye; prints JSON.

    .venv/bin/python bench/bench_quality_report.py [--corpus book|podcasts|novels ...] [--keep DIR]

Indexes each corpus with the offline engine (the functions the Dagster assets call) and reports:
- the share of entities typed `unknown`;
- entities per main character: the sample book's five main characters (an evaluation list, not used by any
  rule), and for each novel of GraphRAG-Bench split A its protagonist (the person entity mentioned in
  the most text units, not a bare role such as 'God') with the entities its surname became;
- the top 10 entities by degree and the top 10 level-0 communities (as `pipeline communities` lists them),
  each flagged when its title or summary holds boilerplate (licence, e-book credits, front matter);
- for podcasts, filler words among the top 100 entities by degree;
- for the sample book, the offline global answer to "What are the main themes of the story?".
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import tempfile
import time
import zipfile
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pipeline.core import schema  # noqa: E402
from pipeline.core.names import normalize_name  # noqa: E402
from pipeline.engine.offline import OfflineEngine  # noqa: E402
from pipeline.index import (  # noqa: E402
    base_text_units,
    claims,
    communities,
    community_reports,
    documents,
    entities_and_relationships,
    extracted_graph,
    input_documents,
    text_units,
)
from pipeline.index.context import IndexContext  # noqa: E402
from pipeline.io.store import NamespaceStore  # noqa: E402
from pipeline.ops.communities import top_communities  # noqa: E402
from pipeline.ops.extraction.lexicon import DESCRIPTORS, HONORIFICS, PERSON_HEADS  # noqa: E402
from pipeline.settings import Settings  # noqa: E402

DATA = ROOT.parent / "shared" / "data"
BOOK = ROOT / "samples" / "demo"
PODCASTS = DATA / "graphrag_podcasts" / "kevin_scott_podcast_transcripts_input_text.zip"
NOVELS = DATA / "graphrag_bench_novel_a" / "novel_corpus.json"
THEMES_QUESTION = "What are the main themes of the story?"

# Evaluation lists (what a reader checks), never read by the pipeline's rules.
BOOK_CHARACTERS = ["Scrooge", "Marley", "Bob Cratchit", "Fezziwig", "Fred"]
BOILERPLATE = re.compile(
    r"gutenberg|licen[cs]e|e-?book|copyright|trademark|produced by|proofread|transcriber|www\.|https?:|"
    r"\billustrations?\b|\bcontents\b|\bfrontispiece\b|\btailpiece\b|\bheading\b|\bchapter [ivxlc\d]+\b|"
    r"\bstave\b|all rights reserved",
    re.IGNORECASE,
)
FILLERS = frozenset(
    "yeah yes yep no nope okay ok um uh uhm hmm mm oh ah right so well like sure i'm i i've i'll you "
    "know mean totally absolutely exactly great cool awesome wow thanks thank".split()
)
# Honorifics that name a different person than the bare surname ('Mrs. Fezziwig' is not Fezziwig).
OTHER_PERSON = frozenset({"mrs", "miss", "ms", "madam", "madame", "mademoiselle", "lady"})


def build(input_dir: Path, work: Path, name: str) -> tuple[NamespaceStore, Settings, dict[str, float]]:
    """Index `input_dir` offline up to community reports with the assets' own runners; seconds per stage."""
    settings = Settings(storage_root=work / "storage")
    ctx = IndexContext.build(name, settings, engine=OfflineEngine())
    seconds: dict[str, float] = {}
    for stage, run in (
        ("input_documents", lambda: input_documents.run(ctx, input_dir)),
        ("base_text_units", lambda: base_text_units.run(ctx)),
        ("documents", lambda: documents.run(ctx)),
        ("extraction", lambda: extracted_graph.run(ctx)),
        ("entities", lambda: entities_and_relationships.run(ctx)),
        ("claims", lambda: claims.run(ctx)),
        ("text_units", lambda: text_units.run(ctx)),
        ("communities", lambda: communities.run(ctx)),
        ("reports", lambda: community_reports.run(ctx)),
    ):
        started = time.perf_counter()
        run()
        seconds[stage] = round(time.perf_counter() - started, 1)
        print(f"{name} {stage}: {seconds[stage]}s", file=sys.stderr, flush=True)
    return ctx.store, settings, seconds


def _words(key: str) -> list[str]:
    return key.split()


def _head(words: list[str]) -> str:
    """A name's head: the word before 'of' ('Ghost of Jacob Marley' -> ghost), else its last word."""
    for connector in ("of", "von", "de", "to", "from"):
        if connector in words[1:]:
            return words[words.index(connector) - 1]
    return words[-1]


def character_entities(entities: list[dict[str, Any]], name: str) -> list[str]:
    """Entities that stand for the character `name` ('Scrooge', 'Bob Cratchit'): a person (or untyped)
    entity with a title or alias whose head is the character's surname, or its given name alone (with
    honorifics and descriptors), and which carries no honorific of another person ('Mrs. Fezziwig'),
    no other given name ('Martha Cratchit') and no 'and' (a firm: 'Scrooge and Marley')."""
    words = _words(normalize_name(name))
    given, surname = (words[0], words[-1]) if len(words) > 1 else (None, words[-1])
    out = []
    for e in entities:
        if e["type"] not in ("person", "unknown"):
            continue
        for form in [e["title"], *e["aliases"]]:
            fw = _words(normalize_name(form))
            if not fw or OTHER_PERSON & set(fw) or {"and", "&"} & set(fw):
                continue
            rest = [w for w in fw if w not in HONORIFICS and w not in DESCRIPTORS]
            if not rest:
                continue
            if _head(fw) == surname and (given is None or given in rest or rest == [surname]):
                out.append(e["title"])
                break
            if given is not None and rest == [given]:
                out.append(e["title"])
                break
    return sorted(out)


def report(store: NamespaceStore) -> dict[str, Any]:
    entities = store.read_table(schema.ENTITIES).to_pylist()
    reports = store.read_table(schema.COMMUNITY_REPORTS).to_pylist()
    by_degree = sorted(entities, key=lambda e: (-e["degree"], e["title"]))
    top_level0 = top_communities(reports, level=0, limit=10)
    unknown = sum(1 for e in entities if e["type"] == "unknown")
    return {
        "entities": len(entities),
        "unknown_share": round(unknown / max(len(entities), 1), 3),
        "types": dict(Counter(e["type"] for e in entities).most_common()),
        "top10_by_degree": [f"{e['title']} ({e['type']}, {e['degree']})" for e in by_degree[:10]],
        "top10_level0": [
            {
                "title": r["title"],
                "size": r["size"],
                "rank": r["rank"],
                "boilerplate": bool(BOILERPLATE.search(r["title"] + " " + r["summary"])),
            }
            for r in top_level0
        ],
        "boilerplate_in_top10": any(BOILERPLATE.search(r["title"] + " " + r["summary"]) for r in top_level0),
        "_entities": entities,
        "_by_degree": by_degree,
    }


def book(work: Path) -> dict[str, Any]:
    store, settings, seconds = build(BOOK, work / "book", "book")
    out = report(store)
    entities = out.pop("_entities")
    out.pop("_by_degree")
    out["entities_per_main_character"] = {c: character_entities(entities, c) for c in BOOK_CHARACTERS}
    from pipeline.api import global_search

    result = global_search("book", THEMES_QUESTION, settings=settings)
    out["themes_answer"] = result.answer
    out["themes_cited_communities"] = result.cited_communities
    out["themes_answer_boilerplate"] = bool(BOILERPLATE.search(result.answer))
    out["seconds"] = seconds
    return out


def podcasts(work: Path) -> dict[str, Any]:
    input_dir = work / "podcasts_input"
    with zipfile.ZipFile(PODCASTS) as z:
        z.extractall(input_dir)
    store, _, seconds = build(input_dir, work / "podcasts", "podcasts")
    out = report(store)
    out.pop("_entities")
    by_degree = out.pop("_by_degree")
    out["fillers_in_top100"] = [e["title"] for e in by_degree[:100] if normalize_name(e["title"]) in FILLERS]
    out["seconds"] = seconds
    return out


def novels(work: Path) -> dict[str, Any]:
    input_dir = work / "novels_input"
    input_dir.mkdir(parents=True, exist_ok=True)
    for novel in json.loads(NOVELS.read_text(encoding="utf-8")):
        (input_dir / f"{novel['corpus_name']}.txt").write_text(novel["context"], encoding="utf-8")
    store, _, seconds = build(input_dir, work / "novels", "novels")
    out = report(store)
    entities = out.pop("_entities")
    out.pop("_by_degree")
    titles = {d["id"]: Path(d["title"]).stem for d in store.read_table(schema.DOCUMENTS).to_pylist()}
    protagonists = {}
    for doc_id, title in sorted(titles.items(), key=lambda kv: kv[1]):
        people = [
            e
            for e in entities
            if e["type"] == "person"
            and doc_id in e["document_ids"]
            and set(_words(normalize_name(e["title"]))) - HONORIFICS - PERSON_HEADS
        ]
        if not people:
            protagonists[title] = None
            continue
        hero = max(people, key=lambda e: (e["frequency"], e["title"]))
        mine = [e for e in entities if doc_id in e["document_ids"]]
        surname = _words(normalize_name(hero["title"]))[-1]
        protagonists[title] = {"protagonist": hero["title"], "entities": character_entities(mine, surname)}
    out["protagonists"] = protagonists
    out["seconds"] = seconds
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--corpus", action="append", choices=["book", "podcasts", "novels"])
    parser.add_argument("--keep", type=Path, help="build here and keep it, instead of a temp folder")
    args = parser.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="bench_quality_"))
    runs = {"book": book, "podcasts": podcasts, "novels": novels}
    try:
        out = {c: runs[c](work) for c in args.corpus or list(runs)}
        print(json.dumps(out, indent=2, default=str))
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
