"""A grouped bar chart as inline SVG (no library, no script): one group per question type, one bar per
mode, for `pipeline eval`'s HTML pages. Inline in HTML an `<svg>` needs no namespace declaration, so
the pages name no URL at all."""

from __future__ import annotations

from html import escape

COLOURS = ("#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7")


def bar_chart(
    title: str, groups: list[str], series: list[str], values: dict[tuple[str, str], float | None]
) -> str:
    """Bars of `values[(group, series)]` (0-100; None draws no bar), a legend of `series` on top."""
    bar, gap, height, left, top = 16, 18, 220, 40, 48
    group_w = bar * len(series) + gap
    legend_w = 72  # per series: the longest mode name (global, basic) and its swatch
    width = max(left + group_w * max(1, len(groups)) + 20, left + legend_w * len(series))
    out = [
        f'<svg width="{width}" height="{top + height + 70}" '
        f'font-family="sans-serif" font-size="11" role="img" aria-label="{escape(title)}">',
        f'<text x="{left}" y="16" font-size="14" font-weight="bold">{escape(title)}</text>',
    ]
    for i, s in enumerate(series):
        x = left + i * legend_w
        out.append(f'<rect x="{x}" y="26" width="10" height="10" fill="{COLOURS[i % len(COLOURS)]}"/>')
        out.append(f'<text x="{x + 14}" y="35">{escape(s)}</text>')
    for tick in range(0, 101, 25):
        y = top + height - tick * height / 100
        out.append(f'<line x1="{left}" x2="{width - 10}" y1="{y:.1f}" y2="{y:.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{tick}</text>')
    for g, group in enumerate(groups):
        x0 = left + g * group_w + gap / 2
        for i, s in enumerate(series):
            v = values.get((group, s))
            if v is None:
                continue
            h = max(0.0, min(100.0, v)) * height / 100
            x, y = x0 + i * bar, top + height - h
            out.append(
                f'<rect x="{x:.1f}" y="{y:.1f}" width="{bar - 2}" height="{h:.1f}" '
                f'fill="{COLOURS[i % len(COLOURS)]}"><title>{escape(s)}, {escape(group)}: {v:.1f}%</title></rect>'
            )
        label = group if len(group) <= 22 else group[:21] + "…"
        cx = x0 + bar * len(series) / 2
        out.append(f'<text x="{cx:.1f}" y="{top + height + 16}" text-anchor="middle">{escape(label)}</text>')
    out.append("</svg>")
    return "\n".join(out)
