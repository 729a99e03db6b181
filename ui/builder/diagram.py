"""The Model Builder's architecture diagram: an SVG drawn from the settings, read bottom to top like the paper.

Blocks are stacked in a frame marked "N×"; pre-norm blocks show LayerNorm before each sub-layer and a "+" for
the residual, post-norm blocks show "Add & Norm" after it. Decoders mark their causal mask, encoder-decoders
draw the cross-attention arrow from the encoder's output, and a ViT starts from patches and a CLS token.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from html import escape

from explorer.i18n import N_, _, num
from explorer.lab.builder import BuilderSettings
from explorer.render.fonts import width_units
from transformer_core import positional
from transformer_core.families import by_kind
from ui.builder.controls import library_text

BOX_W = 250  # width of a box in pixels
ROW_GAP = 16  # vertical space between rows (holds the arrow)
FRAME_PAD = 12  # space between a block frame and its boxes
RESIDUAL_DX = 22  # how far right of the boxes the residual lines run
COLUMN_W = BOX_W + 2 * FRAME_PAD + RESIDUAL_DX + 80  # one column, with room for the "N×" label and residuals
NOTE_SIZE = 10.5  # font size of a box's second line
NOTE_CHARS = 42  # Latin characters of a note line that fit a box (half a font size each; a Chinese one, two) ...
NOTE_LINES = 3  # ... and the most lines a note wraps to (a translation may be twice as long as English)
STYLES = {  # fill, stroke
    "attention": ("#FCE4C4", "#D55E00"),
    "ffn": ("#D3EAF8", "#0072B2"),
    "norm": ("#FFF4B8", "#A88F00"),
    "embed": ("#F7D9E8", "#CC79A7"),
    "head": ("#E4DCF3", "#6A4C9C"),
    "io": ("#FFFFFF", "#9AA5B1"),
    "add": ("#FFFFFF", "#1F2933"),
}


@dataclass
class Row:
    """One box of the diagram."""

    label: str  # main text
    style: str  # key of STYLES
    note: str = ""  # smaller second line
    y: float = 0.0  # top edge, filled in by the layout
    height: float = 0.0  # filled in by the layout

    @property
    def note_lines(self) -> list[str]:
        """The note wrapped to the box's width (German notes ran into the next column's)."""
        return _wrap(self.note, NOTE_CHARS, NOTE_LINES)

    @property
    def h(self) -> int:
        return 26 if self.style == "add" else 30 + 14 * len(self.note_lines)


@dataclass
class Column:
    """A vertical stack of rows, bottom row first, with block frames and residual connections."""

    title: str  # caption under the column
    rows: list[Row] = field(default_factory=list)
    frames: list[tuple[int, int, int, str]] = field(default_factory=list)  # (first, last, repeat, name)
    residuals: list[tuple[int, int]] = field(default_factory=list)  # (row whose input is kept, row that adds it)
    x: float = 0.0  # left edge of the boxes, filled in by the layout

    def add(self, *rows: Row) -> int:
        self.rows.extend(rows)
        return len(self.rows) - 1

    def sublayer(self, core: Row, norm: str) -> int:
        """A residual sub-layer in pre- or post-norm form; returns the index of the core row."""
        start = len(self.rows)
        if norm == "pre":
            self.add(Row("LayerNorm", "norm"), core, Row("+", "add"))
            self.residuals.append((start, start + 2))
            return start + 1
        self.add(core, Row(_("Add & Norm"), "norm"))
        self.residuals.append((start, start + 1))
        return start


# What the embedding row and each self-attention row add for an encoding that does not add a table, by its name.
EMBED_NOTES = {
    "rope": N_("positions: RoPE, inside attention"),
    "alibi": N_("positions: ALiBi, a bias on the scores"),
    "none": N_("no positions at all"),
}
ATTENTION_NOTES = {"rope": N_("RoPE on q, k"), "alibi": N_("ALiBi bias −m·distance")}


def _more(note: str | None) -> str:
    """A note to append after " · ", in the page's language ("" for none)."""
    return f" · {_(note)}" if note else ""


def _embedding(col: Column, s: BuilderSettings, what: str) -> None:
    col.add(Row(_("{what} ({tokens} tokens)").format(what=what, tokens=num(s.seq_len)), "io"))
    spec = positional.get(s.positional)
    col.add(
        Row(
            _("Token embedding × √d_model"),
            "embed",
            _("{vocab} tokens → {d_model}").format(vocab=num(s.vocab_size), d_model=s.d_model)
            + _more(EMBED_NOTES.get(s.positional)),
        )
    )
    if spec.table is not None:
        col.add(
            Row(
                _("+ {encoding} positions").format(encoding=library_text(s.positional)),
                "embed",
                library_text(spec.summary),
            )
        )


def _attention(s: BuilderSettings, kind: str) -> Row:
    rope = "" if by_kind(s.kind).reads_images else _more(ATTENTION_NOTES.get(s.positional))
    heads = _("{heads} heads of {size}").format(heads=s.n_heads, size=s.d_model // max(s.n_heads, 1))
    if kind == "masked":
        return Row(
            _("Masked multi-head self-attention"), "attention", _("causal mask · {heads}").format(heads=heads) + rope
        )
    if kind == "cross":
        return Row(_("Multi-head cross-attention"), "attention", _("queries: decoder · keys, values: encoder"))
    return Row(
        _("Multi-head self-attention"), "attention", _("all tokens see each other · {heads}").format(heads=heads) + rope
    )


def _stack(col: Column, s: BuilderSettings, attention: tuple[str, ...], name: str, norm: str) -> dict[str, int]:
    first, cores = len(col.rows), {}
    for kind in attention:
        cores[kind] = col.sublayer(_attention(s, kind), norm)
    col.sublayer(Row(_("Feed-forward"), "ffn", f"{s.d_model} → {s.d_ff} → {s.d_model}"), norm)
    col.frames.append((first, len(col.rows) - 1, s.n_layers, name))
    if norm == "pre":
        col.add(Row(_("Final LayerNorm"), "norm"))
    return cores


def columns_for(s: BuilderSettings) -> tuple[list[Column], tuple[int, int] | None]:
    """The diagram's columns and, for an encoder-decoder, the decoder's cross-attention row."""
    family = by_kind(s.kind)
    norm = "pre" if family.reads_images else s.norm
    if family.reads_images:
        col = Column(_("Vision Transformer"))
        grid = s.image_size // max(s.patch_size, 1)
        p = s.patch_size
        col.add(
            Row(_("Image {size}×{size}×3").format(size=s.image_size), "io"),
            Row(
                _("Cut into {count} patches of {patch}×{patch}").format(count=num(grid * grid), patch=p),
                "embed",
                _("each flattened to 3·{patch}·{patch} = {numbers} numbers").format(patch=p, numbers=num(3 * p**2)),
            ),
            Row(_("Linear projection"), "embed", f"{3 * s.patch_size**2} → {s.d_model}"),
            Row(_("Prepend CLS, + learned positions"), "embed", _("{count} tokens").format(count=num(grid * grid + 1))),
        )
        _stack(col, s, ("self",), _("Encoder block"), norm)
        col.add(
            Row(
                _("Linear head on the CLS token"),
                "head",
                _("{d_model} → {classes} classes").format(d_model=s.d_model, classes=num(s.num_classes)),
            )
        )
        return [col], None
    probabilities = _("{d_model} → {vocab} next-token probabilities").format(d_model=s.d_model, vocab=num(s.vocab_size))
    if family.cross_attention:
        enc, dec = Column(_("Encoder")), Column(_("Decoder"))
        _embedding(enc, s, _("Source"))
        _stack(enc, s, ("self",), _("Encoder block"), norm)
        _embedding(dec, s, _("Target, shifted right"))
        cross = _stack(dec, s, ("masked", "cross"), _("Decoder block"), norm)["cross"]
        dec.add(Row(_("Linear + softmax"), "head", probabilities))
        return [enc, dec], (1, cross)
    col = Column(_("Decoder-only") if family.decoder_only else _("Encoder-only"))
    _embedding(col, s, _("Tokens"))
    if not family.decoder_only:
        _stack(col, s, ("self",), _("Encoder block"), norm)
        col.add(
            Row(
                _("Mean over tokens → Linear"), "head", _("{d_model} → 1 number per sequence").format(d_model=s.d_model)
            )
        )
    else:
        _stack(col, s, ("masked",), _("Decoder block"), norm)
        col.add(Row(_("Linear + softmax"), "head", probabilities))
    return [col], None


MARGIN_X = 110  # left margin of a column (holds the "N×" label)
MARGIN_Y = 24  # space above the diagram
CAPTION_H = 34  # space under the columns for their titles


WIDE = "\u2e80-\u9fff\uac00-\ud7af\uff00-\uffef"  # Chinese, Japanese and Korean characters and full-width forms
PIECES = re.compile(rf"[{WIDE}]|[^\s{WIDE}]+\s*|\s+")  # what a line may break between: words, wide characters


def _wrap(text: str, width: int, most: int) -> list[str]:
    """``text`` in lines of at most ``width`` units (see :func:`_units`), broken between words, or between any two
    wide characters; at most ``most`` lines, the last ending in "…" where the text goes on."""
    lines, line = [], ""
    for piece in PIECES.findall(text):
        if line and width_units(line + piece.rstrip()) > width:
            lines.append(line.rstrip())
            line = piece.lstrip()
        else:
            line += piece
    lines += [line.rstrip()] if line.strip() else []
    if len(lines) > most:
        lines = lines[:most]
        lines[-1] = lines[-1][: max(0, len(lines[-1]) - 2)] + " …"
    return lines


def _column_height(col: Column) -> float:
    starts = {f[0] for f in col.frames}
    ends = {f[1] for f in col.frames}
    total = sum(r.h for r in col.rows) + ROW_GAP * (len(col.rows) - 1)
    return total + FRAME_PAD * (len(starts) + len(ends))


def _layout(cols: list[Column]) -> tuple[float, float]:
    """Place every row; columns share their bottom line. Returns (width, height)."""
    height = MARGIN_Y + max(_column_height(c) for c in cols) + CAPTION_H + 8
    for i, col in enumerate(cols):
        col.x = MARGIN_X + i * (COLUMN_W + 40)
        starts, ends = {f[0] for f in col.frames}, {f[1] for f in col.frames}
        y = height - CAPTION_H
        for k, row in enumerate(col.rows):
            y -= FRAME_PAD if k in starts else 0
            row.y, row.height = y - row.h, row.h
            y = row.y - ROW_GAP - (FRAME_PAD if k in ends else 0)
    width = MARGIN_X + len(cols) * COLUMN_W + (len(cols) - 1) * 40
    return width, height


def _text(
    x: float, y: float, text: str, size: float = 13, weight: int = 400, anchor: str = "middle", colour: str = "#1F2933"
) -> str:
    return (
        f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" font-weight="{weight}" fill="{colour}" '
        f'text-anchor="{anchor}" dominant-baseline="central">{escape(text)}</text>'
    )


def _label_size(label: str, size: float = 13) -> float:
    """The font size that keeps a box's bold label inside the box (a translation may be longer than English)."""
    return round(min(size, (BOX_W - 12) / (0.55 * max(width_units(label), 1))), 1)


def _row_svg(col: Column, row: Row) -> str:
    fill, stroke = STYLES[row.style]
    cx = col.x + BOX_W / 2
    if row.style == "add":
        r = row.h / 2
        return (
            f'<circle cx="{cx:.1f}" cy="{row.y + r:.1f}" r="{r - 1:.1f}" fill="{fill}" stroke="{stroke}" '
            f'stroke-width="1.5"/>' + _text(cx, row.y + r, "+", 18, 600)
        )
    dash = ' stroke-dasharray="5 3"' if row.style == "io" else ""
    parts = [
        f'<rect x="{col.x:.1f}" y="{row.y:.1f}" width="{BOX_W}" height="{row.h}" rx="7" fill="{fill}" '
        f'stroke="{stroke}" stroke-width="1.5"{dash}/>'
    ]
    if row.note:
        parts.append(_text(cx, row.y + 15, row.label, _label_size(row.label), 600))
        parts.extend(_text(cx, row.y + 32 + 14 * i, line, NOTE_SIZE, 400, colour="#52606D")
                     for i, line in enumerate(row.note_lines))
    else:
        parts.append(_text(cx, row.y + row.h / 2, row.label, _label_size(row.label), 600))
    return "".join(parts)


def _frame_svg(col: Column, frame: tuple[int, int, int, str], label_right: bool) -> str:
    first, last, repeat, name = frame
    top = col.rows[last].y - FRAME_PAD
    bottom = col.rows[first].y + col.rows[first].h + FRAME_PAD
    left, width = col.x - FRAME_PAD, BOX_W + 2 * FRAME_PAD + RESIDUAL_DX
    lx = left + width + 10 if label_right else left - 10
    anchor = "start" if label_right else "end"
    mid = (top + bottom) / 2
    return (
        f'<rect x="{left:.1f}" y="{top:.1f}" width="{width}" height="{bottom - top:.1f}" rx="12" '
        f'fill="#F3F6FA" stroke="#7B8794" stroke-width="1.5"/>'
        + _text(lx, mid - 12, f"{repeat}×", 22, 700, anchor)
        + "".join(_text(lx, mid + 10 + 13 * i, word, 11, 400, anchor, "#52606D") for i, word in enumerate(_words(name)))
    )


def _words(name: str) -> list[str]:
    """A block's name a word a line, long compounds broken after their hyphens ("Encoder-" / "Block")."""
    return re.findall(r"[^\s-]+-?", name)


def _arrow(points: list[tuple[float, float]], colour: str = "#3E4C59", marker: str = "arrow") -> str:
    path = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
    return f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="1.6" marker-end="url(#{marker})"/>'


def _marker(name: str, colour: str) -> str:
    return (
        f'<marker id="{name}" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" '
        f'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="{colour}"/></marker>'
    )


def _flow_svg(col: Column) -> str:
    cx, parts = col.x + BOX_W / 2, []
    for below, above in zip(col.rows, col.rows[1:], strict=False):
        parts.append(_arrow([(cx, below.y), (cx, above.y + above.h + 1)]))
    side = col.x + BOX_W + RESIDUAL_DX
    for start, target in col.residuals:
        y0 = col.rows[start].y + col.rows[start].h + ROW_GAP / 2
        row = col.rows[target]
        y1 = row.y + row.h / 2
        end = cx + row.h / 2 + 1 if row.style == "add" else col.x + BOX_W + 1
        parts.append(f'<circle cx="{cx:.1f}" cy="{y0:.1f}" r="2.5" fill="#3E4C59"/>')
        parts.append(_arrow([(cx, y0), (side, y0), (side, y1), (end, y1)], "#7B8794"))
    return "".join(parts)


def _cross_svg(enc: Column, dec: Column, row_index: int) -> str:
    top, target = enc.rows[-1], dec.rows[row_index]
    x0, y_turn = enc.x + BOX_W / 2, top.y - 14
    x_gap = dec.x - FRAME_PAD - 18
    y1 = target.y + target.h / 2
    points = [(x0, top.y), (x0, y_turn), (x_gap, y_turn), (x_gap, y1), (dec.x - 1, y1)]
    return (
        _arrow(points, "#D55E00", "accent")
        + _text(x_gap - 6, y1 - 10, _("encoder output"), 10.5, 600, "end", "#D55E00")
        + _text(x_gap - 6, y1 + 4, _("(keys, values)"), 10.5, 400, "end", "#D55E00")
    )


def architecture_svg(settings: BuilderSettings) -> str:
    """The configured architecture as a standalone SVG document."""
    cols, cross = columns_for(settings)
    width, height = _layout(cols)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
        f'viewBox="0 0 {width:.0f} {height:.0f}" font-family="Source Sans Pro, Helvetica, Arial, sans-serif">',
        f"<defs>{_marker('arrow', '#3E4C59')}{_marker('accent', '#D55E00')}</defs>",
        f'<rect width="{width:.0f}" height="{height:.0f}" fill="white"/>',
    ]
    for i, col in enumerate(cols):
        parts.extend(_frame_svg(col, f, label_right=i > 0) for f in col.frames)
        parts.append(_flow_svg(col))
        parts.extend(_row_svg(col, row) for row in col.rows)
        parts.append(_text(col.x + BOX_W / 2, height - CAPTION_H / 2, col.title, 14, 700))
    if cross is not None:
        parts.append(_cross_svg(cols[0], cols[1], cross[1]))
    parts.append("</svg>")
    return "".join(parts)
