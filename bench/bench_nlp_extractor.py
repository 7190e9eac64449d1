"""Throughput of the NLP extractor (spaCy NER on top of the rules) against the rules alone, same text;
prints JSON.

    .venv/bin/python bench/bench_nlp_extractor.py [--units N]

The text is the sample book cut into 1,200-token text units and the first MuSiQue-100 passages (one unit
each). Each extractor runs over all of it once after a warm-up (the spaCy model loads outside the timing);
the NLP extractor goes pack by pack as the pipeline sends it (`packed.plan_packs`, one `nlp.pipe` batch
a pack). Also reported: the `unknown` share of each extractor's entity mentions.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
BOOK = ROOT / "samples" / "demo" / "a_christmas_carol.txt"
MUSIQUE = ROOT.parent / "shared" / "data" / "musique_hipporag100" / "musique_train_corpus.json"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--units", type=int, default=600, help="MuSiQue passages")
    args = parser.parse_args()

    from pipeline.core.ner import entity_spans
    from pipeline.ops.chunking import chunk_text
    from pipeline.ops.extraction.models import GENERIC_TYPE, ExtractionOptions, ExtractionRequest
    from pipeline.ops.extraction.offline import extract_requests
    from pipeline.ops.extraction.packed import plan_packs

    texts = [c.text for c in chunk_text("book", BOOK.read_text(encoding="utf-8"))]
    texts += [r["text"] for r in json.loads(MUSIQUE.read_text(encoding="utf-8"))[: args.units]]
    words = sum(len(t.split()) for t in texts)
    entity_spans(["Warm-up: Ebenezer Scrooge lived in London."])
    out: dict = {"text_units": len(texts), "words": words}
    for name, ner in (("rules", False), ("nlp", True)):
        options = ExtractionOptions(ner=ner)
        requests = [ExtractionRequest(t, f"u{i}", "d", 0, options) for i, t in enumerate(texts)]
        started = time.perf_counter()
        units = []
        for pack in plan_packs(requests, options.encoding, options.pack_tokens):
            units += extract_requests([requests[i] for i in pack])
        seconds = time.perf_counter() - started
        mentions = [e for u in units for e in u.entities]
        out[name] = {
            "seconds": round(seconds, 2),
            "words_per_s": round(words / seconds),
            "entity_mentions": len(mentions),
            "unknown_share": round(sum(e.type == GENERIC_TYPE for e in mentions) / max(len(mentions), 1), 3),
        }
    out["nlp_vs_rules_time"] = round(out["nlp"]["seconds"] / out["rules"]["seconds"], 2)
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
