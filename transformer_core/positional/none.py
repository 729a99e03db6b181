"""No positions at all: attention sees a bag of tokens, so permuting the input merely permutes the output."""

from __future__ import annotations

from .base import PositionalKind

KIND = PositionalKind(
    name="none", title="none", short="None", acts="nothing",
    summary="leaves every token vector as it is, so all positions look the same",
)
