"""Measure the Live Training page in headless Chromium against a running app, and print the figures.

Measured: how often the live view refreshes while training (changes of the Step metric per second), training
throughput with the page open against the headless CLI (``python -m transformer_core.train``) for the same
configuration, pause latency, how fast a widget responds during training, two sessions training at once, the
server's CPU use and memory after leaving the page and after closing the tab (whose run is kept, paused, for a
reload, then freed), and memory growth over a long run.

Usage::

    python benchmarks/live_refresh.py                     # starts the app on a free port
    python benchmarks/live_refresh.py --minutes 1         # shorter memory run
    python benchmarks/live_refresh.py --url http://localhost:8501 --pid 12345   # an app already running
    python benchmarks/live_refresh.py --only latency      # Pause and widget latency, and the bytes they cost
    python benchmarks/live_refresh.py --only throughput   # refreshes per second and the page/CLI ratio only
    python benchmarks/live_refresh.py --only throughput --busy   # ... with one more core kept busy meanwhile

The page and the CLI are measured alternately (page, CLI, page, CLI ...) and summarised by medians, so a busy
machine slows both sides alike. Memory and CPU figures need the server's process id (known when this script
starts the app).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run as a script: make the repository's packages importable
from benchmarks.processes import browser_pids, cpu_of, cpu_percent, rss_mb  # noqa: E402
from tests.e2e.browser import find_chromium  # noqa: E402  (needs ROOT on the path)

LIVE_THREADS = 1  # torch threads per training session on the page (explorer.runs.live.LIVE_THREADS)
QUERY = "task=reverse&steps=5000"  # the default reverse model; long enough for every measurement
MEMORY_QUERY = "task=reverse&steps=5000&batch=128"  # one run that lasts longer than the memory measurement
# A wider reverse model (about 5.3 M parameters, within the 0.4 s step budget): its gradients and AdamW state
# (about 63 MB) are what leaving the page or closing the tab frees.
LEAVE_QUERY = "task=reverse&steps=5000&d_model=256&d_ff=1024&layers=3&batch=8"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-dev-shm-usage"]
OBSERVER_JS = """() => {
  window.__live = {changes: [], last: null};
  const read = () => { const el = document.querySelector('[data-testid=stMetricValue]');
                       return el ? el.textContent : null; };
  new MutationObserver(() => { const t = read();
    if (t !== null && t !== window.__live.last) { window.__live.last = t;
      window.__live.changes.push([performance.now(), t]); } })
    .observe(document.body, {subtree: true, childList: true, characterData: true});
}"""


BURN = "import time\nend = time.time() + 3600\nwhile time.time() < end: pass"  # one busy core (--busy)
PARK_MINUTES = 0.1  # the started server keeps a closed tab's run this long (6 s) for a reload, then frees it


def start_server() -> tuple[str, subprocess.Popen]:
    """Start ``streamlit run app.py`` on a free port; return its URL and process.

    The server keeps the run of a closed tab for :data:`PARK_MINUTES` instead of 15 minutes, so that the
    memory it then frees can be measured. It keeps no recordings: the same settings must train again each
    time, not replay.
    """
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    cmd = [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true",
           "--server.fileWatcherType", "none", "--server.port", str(port), "--browser.gatherUsageStats", "false"]
    env = {**os.environ, "TE_PARK_MINUTES": str(PARK_MINUTES), "TE_RECORDINGS_MB": "0"}
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    url = f"http://127.0.0.1:{port}"
    for _ in range(240):
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2):
                return url, proc
        except OSError:
            time.sleep(0.25)
    proc.kill()
    raise RuntimeError("the app did not start within 60 s")


def step_of(text: str) -> int:
    """ "1,234 / 5,000" -> 1234."""
    return int(text.split("/")[0].replace(",", "").strip())


def button(page, label: str):
    """The enabled button whose visible text ends with ``label`` (icons add their own words in front)."""
    return page.locator("[data-testid=stMain] button:visible:enabled", has_text=re.compile(rf"{label}$")).first


def warm_up(context, url: str) -> None:
    """Open the home page once: until the router has run in the process, deep links show "Page not found"."""
    page = context.new_page()
    page.goto(url)
    page.wait_for_selector("[data-testid=stMain] h1", timeout=120_000)
    page.wait_for_timeout(1000)
    context.close()


def open_page(context, url: str, query: str = QUERY, frames: list[int] | None = None):
    """The Live Training page at ``query``; ``frames`` collects the sizes of the websocket frames it receives."""
    page = context.new_page()
    if frames is not None:
        page.on("websocket", lambda ws: ws.on("framereceived", lambda payload: frames.append(len(payload))))
    page.set_default_timeout(120_000)
    page.goto(f"{url}/training?{query}")
    page.wait_for_selector("[data-testid=stMetricValue]")
    button(page, "Start").wait_for()
    page.wait_for_timeout(1000)
    page.evaluate(OBSERVER_JS)
    return page


def current_step(page) -> int:
    return step_of(page.locator("[data-testid=stMetricValue]").first.inner_text())


def click_and_time(page, label: str) -> float:
    """Click a button from inside the page; return the page's clock at the click (ms)."""
    return page.evaluate("""(label) => { const b = [...document.querySelectorAll('[data-testid=stMain] button')]
        .find(b => b.checkVisibility() && !b.disabled && b.innerText.trim().endsWith(label));
        const t = performance.now(); b.click(); return t; }""", label)


def refresh_window(page, seconds: float) -> tuple[float, float]:
    """(Step-metric refreshes per second, training steps per second) while the page trains."""
    t0 = page.evaluate("performance.now()")
    time.sleep(seconds)
    t1 = page.evaluate("performance.now()")
    changes = [(t, step_of(s)) for t, s in page.evaluate("window.__live.changes") if t0 <= t <= t1]
    if len(changes) < 2:
        return len(changes) / seconds, 0.0
    span = (changes[-1][0] - changes[0][0]) / 1000
    return (len(changes) - 1) / span, (changes[-1][1] - changes[0][1]) / span


def cli_rate(steps: int, threads: int | None) -> float:
    """Steps per second of the headless CLI training the same configuration (``threads=None``: its default)."""
    cmd = [sys.executable, "-m", "transformer_core.train", "--task", "reverse", "--steps", str(steps),
           "--eval-every", "25", "--json", "--quiet"] + ([] if threads is None else ["--threads", str(threads)])
    out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])["steps_per_second"]


def throughput(page, rounds: int, seconds: float, server_pid: int | None = None) -> dict:
    """Alternate page and CLI measurements; medians of each, and the CPU the browser and server used meanwhile.

    The page trains with one torch thread per session (explorer.runs.live.LIVE_THREADS), so the CLI is measured
    with ``--threads 1`` for the same configuration, and also with its default thread count.
    """
    hz, page_rates, cli_rates, cli_default, browser_cpu, server_cpu = [], [], [], [], [], []
    for _ in range(rounds):
        click_and_time(page, "Resume")
        button(page, "Pause").wait_for()
        page.wait_for_timeout(1500)
        pids, start = browser_pids(), time.perf_counter()
        before = cpu_of(pids), cpu_of([server_pid] if server_pid else [])
        h, rate = refresh_window(page, seconds)
        spent = time.perf_counter() - start
        browser_cpu.append(100 * (cpu_of(pids) - before[0]) / spent)
        server_cpu.append(100 * (cpu_of([server_pid] if server_pid else []) - before[1]) / spent)
        hz.append(h)
        page_rates.append(rate)
        click_and_time(page, "Pause")
        button(page, "Resume").wait_for()
        steps = max(50, int(rate * seconds))
        cli_rates.append(cli_rate(steps, LIVE_THREADS))
        cli_default.append(cli_rate(steps, None))
    page_rate, cli, default = (statistics.median(v) for v in (page_rates, cli_rates, cli_default))
    return {"refresh_hz": statistics.median(hz), "refresh_hz_min": min(hz), "page_steps_per_s": page_rate,
            "cli_steps_per_s": cli, "throughput_ratio": page_rate / cli,
            "cli_default_threads_steps_per_s": default, "throughput_ratio_vs_cli_default_threads": page_rate / default,
            "browser_cpu_percent": round(statistics.median(browser_cpu)),
            **({"server_cpu_percent": round(statistics.median(server_cpu))} if server_pid else {})}


def pause_latency(page, repeats: int) -> dict:
    """Seconds from a click on Pause until the page shows Resume, and steps trained after that."""
    shown, after = [], []
    for _ in range(repeats):
        click_and_time(page, "Resume")
        button(page, "Pause").wait_for()
        page.wait_for_timeout(2000)
        t_click = click_and_time(page, "Pause")
        button(page, "Resume").wait_for()
        shown.append((page.evaluate("performance.now()") - t_click) / 1000)
        step = current_step(page)
        page.wait_for_timeout(1500)
        after.append(current_step(page) - step)
    return {"pause_latency_s_median": statistics.median(shown), "pause_latency_s_max": max(shown),
            "steps_after_pause_shown": max(after)}


def frames_per_second(page, sizes: list[int], seconds: float = 5.0) -> dict:
    """Websocket frames and kilobytes per second the browser receives while the page trains."""
    click_and_time(page, "Resume")
    button(page, "Pause").wait_for()
    page.wait_for_timeout(2000)
    before = len(sizes)
    page.wait_for_timeout(1000 * seconds)
    got = sizes[before:]
    click_and_time(page, "Pause")
    button(page, "Resume").wait_for()
    return {"ws_frames_per_s": len(got) / seconds, "ws_kb_per_s": sum(got) / 1024 / seconds}


def widget_latency(page) -> float:
    """Seconds from choosing another attention kind while training until the heatmap title shows it."""
    click_and_time(page, "Resume")
    button(page, "Pause").wait_for()
    page.wait_for_timeout(2000)
    start = time.perf_counter()
    page.get_by_text("Encoder self-attention", exact=True).click()
    page.get_by_text(re.compile(r"^Encoder self-attention · step")).first.wait_for()
    latency = time.perf_counter() - start
    page.get_by_text("Cross-attention (decoder reads the encoder)", exact=True).click()
    click_and_time(page, "Pause")
    button(page, "Resume").wait_for()
    return latency


def two_sessions(context_factory, url: str, seconds: float) -> dict:
    """Two browser sessions (seeds 1 and 2) train at once; each sees only its own run."""
    pages = [open_page(context_factory(), url, f"{QUERY}&seed={seed}") for seed in (1, 2)]
    for p in pages:
        click_and_time(p, "Start")
        button(p, "Pause").wait_for()
    time.sleep(2)
    rates = [refresh_window(p, seconds)[1] for p in pages]
    losses = [p.locator("[data-testid=stMetricValue]").nth(2).inner_text() for p in pages]
    for p in pages:
        p.context.close()
    return {"two_sessions_steps_per_s": rates, "two_sessions_losses": losses}


def memory_run(context_factory, url: str, pid: int, minutes: float) -> dict:
    """Server memory at the start and end of ``minutes`` of continuous training in one run."""
    page = open_page(context_factory(), url, MEMORY_QUERY)
    click_and_time(page, "Start")
    button(page, "Pause").wait_for()
    page.wait_for_timeout(10_000)
    start_rss, samples, restarts = rss_mb(pid), [], 0
    end = time.monotonic() + 60 * minutes
    while time.monotonic() < end:
        time.sleep(min(30, max(0.0, end - time.monotonic())))
        samples.append(round(rss_mb(pid), 1))
        if button(page, "Start").count():  # the run ended early: start another
            restarts += 1
            click_and_time(page, "Start")
    growth = rss_mb(pid) - start_rss
    steps = current_step(page)
    page.context.close()
    return {"memory_start_mb": round(start_rss, 1), "memory_growth_mb": round(growth, 1),
            "memory_samples_mb": samples, "memory_run_minutes": minutes, "memory_run_restarts": restarts,
            "steps_in_memory_run": steps}


def leaving(context_factory, url: str, pid: int) -> dict:
    """Server CPU and memory while training, after leaving the page, and after closing a training tab.

    Uses a wider model (:data:`LEAVE_QUERY`) so that the run's gradients and AdamW state, which leaving or
    closing frees, stand out from the noise of the server's resident memory.
    """
    page = open_page(context_factory(), url, LEAVE_QUERY)
    before = rss_mb(pid)
    click_and_time(page, "Start")
    button(page, "Pause").wait_for()
    busy = cpu_percent(pid)
    page.wait_for_timeout(3000)
    training = rss_mb(pid)
    page.locator("[data-testid=stSidebarNav] a", has_text="Home").click()
    page.wait_for_timeout(1500)
    after_leave, after_leave_cpu = rss_mb(pid), cpu_percent(pid)
    page.locator("[data-testid=stSidebarNav] a", has_text="Live Training").click()
    page.get_by_text("when you left this page").wait_for()
    page.context.close()

    page = open_page(context_factory(), url, LEAVE_QUERY)
    click_and_time(page, "Start")
    button(page, "Pause").wait_for()
    page.wait_for_timeout(3000)
    training_again = rss_mb(pid)
    page.context.close()
    time.sleep(1.5)
    after_close_cpu, kept = cpu_percent(pid), rss_mb(pid)  # paused and kept for a reload of the tab
    time.sleep(60 * PARK_MINUTES + 4)  # nobody came back: the parked run is released
    return {"cpu_percent_training": round(busy), "cpu_percent_after_leaving": round(after_leave_cpu),
            "cpu_percent_after_closing_tab": round(after_close_cpu),
            "memory_before_start_mb": round(before, 1), "memory_training_mb": round(training, 1),
            "memory_freed_on_leaving_mb": round(training - after_leave, 1),
            "memory_training_again_mb": round(training_again, 1),
            "memory_kept_after_closing_tab_mb": round(kept - training_again, 1),
            "memory_freed_after_closed_tab_expired_mb": round(training_again - rss_mb(pid), 1)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url", help="address of a running app (default: start one)")
    parser.add_argument("--pid", type=int, help="process id of that app's server, for memory and CPU figures")
    parser.add_argument("--minutes", type=float, default=5.0, help="length of the memory run")
    parser.add_argument("--rounds", type=int, default=3, help="page/CLI alternations for throughput")
    parser.add_argument("--seconds", type=float, default=10.0, help="length of each throughput window")
    parser.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    parser.add_argument("--busy", action="store_true", help="keep one more core busy while measuring")
    parser.add_argument("--only", choices=["latency", "throughput"],
                        help="measure only Pause and widget latency and frame sizes, or only refreshes and throughput")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    proc = None
    url, pid = args.url, args.pid
    if url is None:
        url, proc = start_server()
        pid = proc.pid
    results: dict = {}
    burner = subprocess.Popen([sys.executable, "-c", BURN]) if args.busy else None
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=find_chromium(), args=CHROMIUM_ARGS)
            new_context = lambda: browser.new_context(viewport={"width": 1400, "height": 900})  # noqa: E731
            warm_up(new_context(), url)
            frames: list[int] = []
            page = open_page(new_context(), url, frames=frames)
            click_and_time(page, "Start")
            button(page, "Pause").wait_for()
            click_and_time(page, "Pause")
            button(page, "Resume").wait_for()
            if args.only == "latency":
                report(results, pause_latency(page, 5))
                report(results, {"widget_latency_s": statistics.median(widget_latency(page) for _ in range(3))})
                report(results, frames_per_second(page, frames))
                browser.close()
                return _finish(proc, results, args.json)
            report(results, throughput(page, args.rounds, args.seconds, pid))
            if args.only == "throughput":
                browser.close()
                return _finish(proc, results, args.json)
            report(results, pause_latency(page, 5))
            report(results, {"widget_latency_s": widget_latency(page)})
            report(results, two_sessions(new_context, url, args.seconds))
            if pid is not None:
                report(results, leaving(new_context, url, pid))
                if args.minutes > 0:
                    report(results, memory_run(new_context, url, pid, args.minutes))
            browser.close()
    finally:
        if burner is not None:
            burner.kill()
        if proc is not None:
            proc.terminate()
            proc.wait(timeout=20)
    return _finish(None, results, args.json)


def _finish(proc: subprocess.Popen | None, results: dict, as_json: bool) -> int:
    if proc is not None:
        proc.terminate()
        proc.wait(timeout=20)
    if as_json:
        print(json.dumps(results, indent=2))
    return 0


def report(results: dict, new: dict) -> None:
    """Keep ``new`` figures and print them at once (to stderr, so --json output stays clean)."""
    results.update(new)
    for key, value in new.items():
        print(f"{key}: {round(value, 3) if isinstance(value, float) else value}", file=sys.stderr, flush=True)


if __name__ == "__main__":
    sys.exit(main())
