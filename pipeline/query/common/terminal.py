"""What `pipeline query <mode>` prints that several modes share: `--json`, the citations and quoted
sentences, and the exit code of an answer. Each mode's own printing is its record's renderer
(`Terminal.render`, in the mode's `terminal.py`); a mode without one is printed by `generic`."""

from __future__ import annotations

import json
from typing import Any

from pipeline.query.answer.pages import cite_line

ANSWERED = ("completed", "partial", "no_results")  # exit 0; anything else (cancelled, failed) exits 1


def print_json(result: Any) -> int:
    """`--json`: the whole result; exit 0 whatever its status."""
    print(json.dumps(result.to_dict(), indent=2, default=str))
    return 0


def exit_code(status: str, answered: tuple[str, ...] = ANSWERED) -> int:
    return 0 if status in answered else 1


def footer(result: Any, details: str, answered: tuple[str, ...] = ANSWERED) -> int:
    """The closing lines every mode prints the same way: `[status: ...; <details>]`, then the reason if
    there is one; returns the exit code of the result's status."""
    print(f"\n[status: {result.status}; {details}]")
    if result.reason:
        print(f"[{result.reason}]")
    return exit_code(result.status, answered)


def generic(result: Any, args: Any, scope: Any) -> int:
    """A mode without a renderer of its own: its answer (if it has one) and its status."""
    if args.json:
        return print_json(result)
    out = result.to_dict()
    if out.get("answer") is not None:
        print(out["answer"])
    print(f"\n[status: {out.get('status')}]")
    if out.get("reason"):
        print(f"[{out['reason']}]")
    return exit_code(out.get("status", ""))


def citations(citations: list[dict[str, Any]], quotes: list[dict[str, Any]] = ()) -> None:  # type: ignore[assignment]
    """Where each cited row comes from: a passage's document, pages, section and offsets, one a line;
    other rows by their names, one line per section; then each quoted sentence's own page (parsed files
    only, `pipeline.query.answer.pages`)."""
    if citations:
        print("Citations:")
    named: dict[str, list[str]] = {}
    for c in citations:
        if c.get("start_char") is not None:
            print(f"  [{c['section']} {c['id']}] {cite_line(c)}")
        else:
            name = c.get("title") or c.get("source") and f"{c.get('source')} -> {c.get('target')}" or ""
            named.setdefault(c["section"], []).append(f"{c['id']} {name}".strip())
    for section, names in named.items():
        print(f"  [{section}] " + "; ".join(names))
    if quotes:
        print("Quoted:")
    for q in quotes:
        print(f"  [sources {q['source']}] {cite_line(q)}")
