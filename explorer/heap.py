"""The web server's heap and Python's cycle collector: what lives as long as the process is taken out of its reach.

Every browser session of a server runs in one process, and Python's cycle collector stops all of its threads while
it walks the objects it tracks. A full collection walks every one: after the app's imports (PyTorch, Streamlit,
Plotly, pandas, pyarrow, the app's own modules) that is about 290,000 objects, about 0.1 s on an idle core and
1 to 3.5 s measured on a loaded two-core server with a class on it. Every page of every session waited for those
pauses at the same moment. The imported modules, classes and functions live as long as the process, so walking
them finds nothing: :func:`settle_heap` moves what is alive once the app is imported into the collector's permanent
generation (:func:`gc.freeze`), and full collections then walk only what sessions made since.

Before freezing, the modules PyTorch imports on first use rather than with ``import torch`` are imported
(:data:`LAZY_MODULES`): the first optimiser step or model built on the meta device imports ``torch._dynamo``,
about 800 modules, 2.5 s on an idle core and 117,000 objects. Imported later, by a session, that import held every
other page that needed one of those modules (a module being imported is locked: three explorers' reruns on
different pages once ended together after 10 s) and left its objects in every full collection's walk.

Freezing is done once per process. What it costs: a reference cycle among the frozen objects that later becomes
garbage is never collected; the objects alive after the imports are modules and what they hold, which stay.
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import threading

__all__ = ["LAZY_MODULES", "settle_heap", "settled"]

LAZY_MODULES = ("torch._dynamo",)  # imported by PyTorch on first use; imported here once, before the freeze

_LOCK = threading.Lock()
_SETTLED = False


def settle_heap() -> bool:
    """Move every object alive now out of the cycle collector's reach, once per process (see the module
    docstring); call it when the app's modules are imported. Returns whether this call did it."""
    global _SETTLED
    with _LOCK:
        if _SETTLED:
            return False
        for name in LAZY_MODULES:
            with contextlib.suppress(ImportError):  # a PyTorch without it imports nothing more on first use either
                importlib.import_module(name)
        gc.collect()  # what is garbage already goes now, not into the permanent generation
        gc.freeze()
        _SETTLED = True
        return True


def settled() -> bool:
    """Whether :func:`settle_heap` has run in this process."""
    return _SETTLED
