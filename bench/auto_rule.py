"""How auto's offline comparison (`pipeline.query.auto.search`, rule 4) should pick among the passage
modes: each question asked of basic, local and lazy once, what each rule would have seen in each
context, and the gold answer coverage each mode got; then every rule's pick scored, on a choosing half
and a held-out half of each set. Prints JSON.

    .venv/bin/python bench/auto_rule.py [--sets musique,novel] [--limit N] [--features FILE]

The indexes are `make eval`'s (`bench/eval_sets.py`, data/eval_storage). The novel set is split by book:
books 1-5 (sorted by name) choose, books 6-10 are held out; MuSiQue by question order (first half
chooses). `--features FILE` reuses the features a previous run saved instead of asking again.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.eval_sets import NAMESPACES, ensure_index, prepare, set_inputs  # noqa: E402

PASSAGE_MODES = ("basic", "local", "lazy")
TIE_ORDER = {m: i for i, m in enumerate(PASSAGE_MODES)}  # what today's rule prefers on equal shares


def _features(question: str, texts: list[str], answer: str, frequencies: Any) -> dict[str, float]:
    """The candidate rules' inputs; `best_passage_idf` and `union` are auto's own scores
    (`compare.context_scores`), the others variants of them."""
    from pipeline.query.auto.compare import context_scores
    from pipeline.query.retrieval.sentence_rank import stems

    terms = stems(question)
    per_text = [terms & stems(t) for t in texts]
    shown = set().union(*per_text) if per_text else set()
    idf = {t: frequencies.idf(t) for t in terms}
    total = sum(idf.values()) or 1.0
    auto = context_scores(question, texts, frequencies)
    return {
        "union": auto["context"],
        "best_passage_idf": auto["best_passage"],
        "idf_union": sum(idf[t] for t in shown) / total,
        "best_passage": max(map(len, per_text), default=0) / len(terms) if terms else 0.0,
        "words": float(sum(len(t.split()) for t in texts)),
        "answer_union": len(terms & stems(answer)) / len(terms) if terms else 0.0,
    }


def collect(name: str, limit: int | None) -> list[dict[str, Any]]:
    """One row per question: its half, and per passage mode the rules' features and the gold coverage."""
    from pipeline.eval.metrics import score
    from pipeline.eval.questions import load_questions
    from pipeline.query import registry
    from pipeline.query.auto.compare import stem_frequencies
    from pipeline.query.auto.search import AutoSearchConfig, run_mode
    from pipeline.runtime import query_runtime

    with tempfile.TemporaryDirectory() as work:
        input_dir, qfile = set_inputs(name, Path(work), None)
        ensure_index(NAMESPACES[name], input_dir)
        questions = load_questions(qfile, limit)
        raw = json.loads(Path(qfile).read_text(encoding="utf-8"))
    books = sorted({r.get("source", "") for r in raw}) if name == "novel" else []
    source = {str(r.get("id", i)): r.get("source", "") for i, r in enumerate(raw)}
    rt = query_runtime(NAMESPACES[name])
    frequencies = stem_frequencies(rt.store)
    config = AutoSearchConfig.from_settings(rt.settings)
    rows = []
    for i, q in enumerate(questions):
        if name == "novel":
            half = "choose" if books.index(source.get(q.id, books[0])) < len(books) // 2 else "held_out"
        else:
            half = "choose" if i < len(questions) // 2 else "held_out"
        row: dict[str, Any] = {"set": name, "id": q.id, "type": q.type, "half": half, "modes": {}}
        for mode in PASSAGE_MODES:
            scope = registry.scope(rt.store, rt.engine, rt.embedder)
            result = rt.engine.run_sync(run_mode(mode, scope, q.question, config)).to_dict()
            context = registry.mode(mode).shown(result, rt.store)
            _, _, coverage, _ = score(q, context)
            row["modes"][mode] = {
                "coverage": coverage or 0.0,
                **_features(q.question, context.texts, result.get("answer") or "", frequencies),
            }
        rows.append(row)
        if (i + 1) % 100 == 0:
            print(f"{name}: {i + 1}/{len(questions)}", file=sys.stderr, flush=True)
    return rows


def pick(row: dict[str, Any], rule: str) -> str:
    modes = row["modes"]
    if rule in PASSAGE_MODES:
        return rule
    if rule == "union_per_word":  # the share of the question shown per thousand words of context
        key = {m: (round(modes[m]["union"] / max(modes[m]["words"], 1.0), 4),) for m in modes}
    elif rule == "best_passage_idf_then_union":  # what pipeline.query.auto.compare does
        key = {m: (round(modes[m]["best_passage_idf"], 4), round(modes[m]["union"], 4)) for m in modes}
    else:
        key = {m: (round(modes[m][rule], 4),) for m in modes}
    return max(modes, key=lambda m: (*key[m], -TIE_ORDER[m]))


RULES = (
    *PASSAGE_MODES,
    "union",
    "idf_union",
    "best_passage",
    "best_passage_idf",
    "union_per_word",
    "answer_union",
    "best_passage_idf_then_union",
)


def table(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Mean gold coverage of each rule's pick (and the oracle's), per set and half, and per type."""
    out: dict[str, Any] = {}
    groups: dict[str, list[dict]] = {}
    for r in rows:
        groups.setdefault(f"{r['set']}/{r['half']}", []).append(r)
        groups.setdefault(f"{r['set']}/all", []).append(r)
        groups.setdefault(f"{r['set']}/type:{r['type']}", []).append(r)
    for key, group in sorted(groups.items()):
        scores = {
            rule: round(100 * sum(g["modes"][pick(g, rule)]["coverage"] for g in group) / len(group), 1)
            for rule in RULES
        }
        scores["oracle"] = round(
            100 * sum(max(m["coverage"] for m in g["modes"].values()) for g in group) / len(group), 1
        )
        out[key] = {"questions": len(group), **scores}
    return out


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sets", default="musique,novel")
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--storage", type=Path, default=ROOT / "data" / "eval_storage")
    parser.add_argument("--features", type=Path, default=None, help="read (or, if absent, write) features")
    args = parser.parse_args()
    if args.features and args.features.exists():
        rows = json.loads(args.features.read_text(encoding="utf-8"))
    else:
        prepare(args.storage.resolve())
        rows = [r for name in args.sets.split(",") if name for r in collect(name.strip(), args.limit)]
        if args.features:
            args.features.write_text(json.dumps(rows), encoding="utf-8")
    print(json.dumps(table(rows), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
