"""Two small tenant corpora (acme's harbour town, globex's Christmas Carol) written as indexed namespaces:
`write_corpus` gives a namespace its documents and text units, one sentence each, with MiniLM vectors,
pieces and full-text search, as the pipeline's text-unit stage does."""

from __future__ import annotations

import pyarrow as pa

from pipeline.index.text_unit_embeddings import index_text_units
from pipeline.io.store import NamespaceStore

CORPORA = {
    "acme": {
        "harbour.txt": [
            "The lighthouse keeper logs every ship passing Skerry Point.",
            "In winter the ferry to Halvik stops running and the island is cut off.",
            "The keeper orders supplies by radio when storms close the harbour.",
            "Fishing boats unload herring at the quay before dawn.",
        ],
        "orchard.txt": [
            "The orchard grows apples, pears and plums on the southern slope.",
            "Bees from the hives pollinate the apple blossom in spring.",
            "Cider is pressed from the windfall apples every October.",
        ],
    },
    "globex": {
        "carol.txt": [
            "Marley was dead, to begin with; there is no doubt whatever about that.",
            "Scrooge signed the register of his burial.",
            "Bob Cratchit warmed his hands at the candle in the cold counting-house.",
        ],
    },
}


def write_corpus(root, namespace: str, embedder, corpus=None) -> NamespaceStore:
    store = NamespaceStore(root, namespace)
    docs, units = [], []
    for title, sentences in (corpus or CORPORA[namespace]).items():
        doc_id = f"{namespace}-{title}"
        docs.append({"id": doc_id, "title": title})
        offset = 0
        for n, sentence in enumerate(sentences):
            units.append(
                {
                    "id": f"{doc_id}-{n}",
                    "text": sentence,
                    "document_id": doc_id,
                    "start_char": offset,
                    "end_char": offset + len(sentence),
                    "n_tokens": len(sentence.split()),
                }
            )
            offset += len(sentence) + 1
    index_text_units(store, pa.Table.from_pylist(units), pa.Table.from_pylist(docs), embedder)
    return store
