"""Live Training page: a watchdog in the browser that makes a stalled live view impossible to miss.

The page's script draws a small script into the page once per run. In the browser it watches two things while
the progress bar says the run is training: whether anything on the page still changes, and whether Streamlit
still runs the page's script. When the page has not changed for :data:`~ui.common.pace.STALL_S` seconds although
the script is said to run (the server stopped sending), or the script has ended while the bar still says
"Training…", it shows a banner that says so and offers *Reconnect*: a reload of the tab's address, which carries
the run's token, so the run — paused on the server when the connection ended — comes back where it was
(:mod:`ui.training.resume`).
"""

from __future__ import annotations

import json

import streamlit as st

from explorer.i18n import N_, _
from ui.common import pace

BANNER_ID = "te-live-stalled"  # the banner's element id (the browser tests look for it)
MESSAGE = N_(
    "The live view stopped updating: the connection to the server was lost. Your run is paused on the "
    "server and waits for you."
)
FOLLOWING_MESSAGE = N_(
    "This page stopped following the run: it was stopped (the toolbar's Stop), or the connection "
    "to the server was lost. Reconnect to see the run as it is now."
)

_SCRIPT = """
<script>
(function () {
  const cfg = %(cfg)s;
  if (window.__teWatchdog) { window.__teWatchdog.cfg = cfg; return; }
  const dog = window.__teWatchdog = {cfg: cfg, changed: Date.now(), ended: null, node: null};
  const observer = new MutationObserver(() => { dog.changed = Date.now(); });
  function watch() {  // the page's main area (the banner lives outside it, so showing it changes nothing here)
    const node = document.querySelector('[data-testid="stMain"]');
    if (node && node !== dog.node) {
      observer.disconnect();
      observer.observe(node, {childList: true, subtree: true, characterData: true});
      dog.node = node;
      dog.changed = Date.now();
    }
  }
  function training() {
    return Array.from(document.querySelectorAll('[data-testid="stProgress"]'))
      .some((el) => (el.textContent || '').trim().startsWith(dog.cfg.running));
  }
  function show() {
    if (document.getElementById(dog.cfg.id)) return;
    const box = document.createElement('div');
    box.id = dog.cfg.id;
    box.setAttribute('role', 'alert');
    box.style.cssText = 'position:fixed;top:12px;left:50%%;transform:translateX(-50%%);z-index:1000010;' +
      'max-width:640px;padding:14px 18px;border-radius:10px;background:#FFF4E5;color:#4A2C00;' +
      'border:2px solid #E69F00;box-shadow:0 6px 24px rgba(0,0,0,.25);font:16px/1.45 sans-serif;';
    const text = document.createElement('div');
    text.id = dog.cfg.id + '-text';
    text.textContent = '\\u26a0\\ufe0f ' + dog.cfg.message;
    const button = document.createElement('button');
    button.textContent = dog.cfg.reconnect;
    button.style.cssText = 'margin-top:10px;padding:6px 16px;border-radius:8px;border:0;cursor:pointer;' +
      'background:#0072B2;color:#fff;font:600 15px sans-serif;';
    button.onclick = () => window.location.reload();
    box.append(text, button);
    document.body.appendChild(box);
  }
  function hide() { const box = document.getElementById(dog.cfg.id); if (box) box.remove(); }
  setInterval(() => {
    watch();
    const app = document.querySelector('[data-testid="stApp"]');
    const state = app ? app.getAttribute('data-test-script-state') : null;
    const now = Date.now();
    if (!dog.cfg.following && !training()) { dog.ended = null; hide(); return; }
    dog.ended = state === 'notRunning' ? (dog.ended || now) : null;
    const silent = !dog.cfg.following && state === 'running' && now - dog.changed > dog.cfg.stall * 1000;
    const ended = dog.ended !== null && now - dog.ended > dog.cfg.endedAfter * 1000;
    if (silent || ended) show(); else hide();
  }, 1000);
})();
</script>
"""


def watchdog_html(running_text: str, *, following: bool = False) -> str:
    """The watchdog's script; ``running_text`` is how the progress bar's text starts while training.

    ``running_text`` is in the page's language, as the progress bar shows it.
    ``following``: a watcher's page, whose script always runs while it follows a run (paused or not); the banner
    then shows whenever the script has ended, and says the page stopped following.
    """
    cfg = {
        "running": running_text,
        "stall": pace.STALL_S,
        "endedAfter": pace.ENDED_S,
        "id": BANNER_ID,
        "message": _(FOLLOWING_MESSAGE if following else MESSAGE),
        "following": following,
        "reconnect": _("Reconnect"),
    }
    return _SCRIPT % {"cfg": json.dumps(cfg)}


def live_watchdog(running_text: str, *, following: bool = False) -> None:
    """Draw the watchdog once per script run (it installs itself once per browser tab); ``running_text`` is
    English, marked with ``N_``."""
    st.html(watchdog_html(_(running_text), following=following), unsafe_allow_javascript=True, width="content")
