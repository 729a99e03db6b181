"""The Attention Lab's second lens: views that show what the model *used*, beside where its attention looks.

Each view is one module of this package with two functions, ``offered(ctx) -> str | None`` (``None`` when the view
can run on the model shown, else a sentence saying why not) and ``draw(ctx) -> None``, and one entry in
:data:`~ui.attention.beyond.registry.VIEWS`. :func:`~ui.attention.beyond.section.beyond_section` draws the picker
and the chosen view with a :class:`~ui.attention.beyond.context.LensContext`.
"""
