"""The web server's heap and Python's cycle collector: what lives as long as the process is taken out of its reach.

Every browser session of a server runs in one process, and Python's cycle collector stops all of its threads while
it walks the objects it tracks. A full collection walks every one: after the app's imports (PyTorch, Streamlit,
Plotly, pandas, pyarrow, the app's own modules) that is about 290,000 objects, about 0.1 s on an idle core and
1 to 3.5 s measured on a loaded two-core server with a class on it. Every page of every session waited for those
pauses at the same moment. The imported modules, classes and functions live as long as the process, so walking
them finds nothing: :func:`settle_heap` moves what is alive once the app is imported into the collector's permanent
generation (:func:`gc.freeze`), and full collections then walk only what sessions made since.

Freezing is done once per process. What it costs: a reference cycle among the frozen objects that later becomes
garbage is never collected; the objects alive after the imports are modules and what they hold, which stay.
"""

from __future__ import annotations

import gc
import threading

__all__ = ["settle_heap", "settled"]

_LOCK = threading.Lock()
_SETTLED = False


def settle_heap() -> bool:
    """Move every object alive now out of the cycle collector's reach, once per process (see the module
    docstring); call it when the app's modules are imported. Returns whether this call did it."""
    global _SETTLED
    with _LOCK:
        if _SETTLED:
            return False
        gc.collect()  # what is garbage already goes now, not into the permanent generation
        gc.freeze()
        _SETTLED = True
        return True


def settled() -> bool:
    """Whether :func:`settle_heap` has run in this process."""
    return _SETTLED
