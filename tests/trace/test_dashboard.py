"""The dashboard in a real browser: Debian's headless Chromium, driven by Selenium, loads the
page over a store this test fills, and the numbers it shows are checked against what was
stored; then a filter, and one run opened up. Screenshots go to the test's directory (and to
$OUTFORM_SCREENSHOTS when set: that is how docs/images/ was made)."""

from __future__ import annotations

import os
import shutil
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn

from outform.gateway.dashboard import standalone
from outform.trace import Batch
from outform.trace.sqlite_store import SqliteTraceStore
from tests.gateway.harness import free_port
from tests.trace.runs import RunSpec, run_events

KEY = "dashboard-key-for-tests"
CHROMIUM = ("/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome")
DRIVER = ("/usr/bin/chromedriver", "/usr/lib/chromium/chromedriver")


def _first(paths: tuple[str, ...], name: str) -> str | None:
    found = shutil.which(name)
    return found or next((p for p in paths if Path(p).exists()), None)


@contextmanager
def serving(store: SqliteTraceStore, keys: tuple[str, ...] = ()) -> Iterator[str]:
    port = free_port()
    config = uvicorn.Config(
        standalone(store, keys=keys), host="127.0.0.1", port=port, log_level="warning"
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive(), "the dashboard did not start"
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(15)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteTraceStore]:
    """Over the last hours: 30 extract runs (12 with a coercion), 8 classify runs with a
    re-ask of /label, 2 summarize runs cut while streaming and then failed."""
    store = SqliteTraceStore(tmp_path / "trace.sqlite")
    store.open()
    now = time.time()
    events = []
    for n in range(30):
        changes = (("semantic", "string_to_int", "/qty"),) if n < 12 else ()
        events += run_events(RunSpec(changes=changes), now - 3 * 3600 + 60 * n)
    for n in range(8):
        spec = RunSpec(
            step="classify",
            provider="anthropic",
            model="claude-sonnet-4-5",
            mode="json_object",
            skipped="the caller asked for mode json",
            reasked=("/label",),
            changes=(("extract", "strip_fence", ""),),
            confidence=0.55,
            sources=("doc-1", "doc-2", "doc-3", "doc-4"),
        )
        events += run_events(spec, now - 2 * 3600 + 60 * n, run_id=f"classify-{n}")
    for n in range(2):
        spec = RunSpec(
            step="summarize", provider="gemini", model="gemini-2.5-flash", aborted=True,
            outcome="invalid", latency_ms=2400.0,
        )  # fmt: skip
        events += run_events(spec, now - 1800 + 60 * n)
    store.write(Batch(events, time=now))
    yield store
    store.close()


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Any]:
    chromium = _first(CHROMIUM, "chromium")
    driver_path = _first(DRIVER, "chromedriver")
    if chromium is None or driver_path is None:
        pytest.skip(
            "headless Chromium is not installed: apt-get install chromium chromium-driver "
            "(.ci/run does)"
        )
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage",
                     "--disable-gpu", "--window-size=1400,2200", "--no-first-run",
                     f"--user-data-dir={tmp_path / 'chromium-profile'}"):  # fmt: skip
        options.add_argument(argument)
    driver = webdriver.Chrome(service=Service(driver_path), options=options)
    driver.set_page_load_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()


def wait_for(driver: Any, script: str, timeout: float = 20) -> Any:
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, timeout).until(lambda d: d.execute_script(script))


def shot(driver: Any, tmp_path: Path, name: str) -> None:
    driver.save_screenshot(str(tmp_path / f"{name}.png"))
    target = os.environ.get("OUTFORM_SCREENSHOTS")
    if target:
        Path(target).mkdir(parents=True, exist_ok=True)
        shutil.copy(tmp_path / f"{name}.png", Path(target) / f"{name}.png")


def texts(driver: Any, selector: str) -> list[str]:
    from selenium.webdriver.common.by import By

    return [e.text for e in driver.find_elements(By.CSS_SELECTOR, selector)]


def test_the_page_shows_the_stored_numbers(
    browser: Any, store: SqliteTraceStore, tmp_path: Path
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    with serving(store, keys=(KEY,)) as url:
        browser.get(url + "/")  # redirected to /dashboard/
        wait_for(browser, "return document.body.dataset.state === 'login'")
        shot(browser, tmp_path, "dashboard-login")
        browser.find_element(By.ID, "key").send_keys(KEY)
        browser.find_element(By.CSS_SELECTOR, "#login-form button").click()
        wait_for(browser, "return document.body.dataset.state === 'ready'")
        shot(browser, tmp_path, "dashboard-overview")

        kpi = {k: browser.find_element(By.ID, f"kpi-{k}").text
               for k in ("runs", "interventions", "reask", "abort", "failed", "calls")}  # fmt: skip
        # 40 runs; 12 + 8 changes = 50 per 100 runs; 8 + 2 re-asked; 2 of 2 streams cut
        assert kpi == {
            "runs": "40",
            "interventions": "50.0",
            "reask": "25.0%",
            "abort": "100.0%",
            "failed": "2",
            "calls": str(30 + 16 + 4),
        }
        stages = browser.execute_script(
            "return Chart.getChart('chart-stages').data.datasets.map("
            "d => [d.label, d.data.reduce((a, b) => a + b, 0)])"
        )
        assert sorted(stages) == [["extract", 8], ["semantic", 12]]
        models = browser.execute_script(
            "return Chart.getChart('chart-models').data.datasets.map("
            "d => [d.label, d.data.reduce((a, b) => a + b, 0)])"
        )
        assert sorted(models) == [["anthropic:claude-sonnet-4-5", 8], ["openai:gpt-4o", 12]]
        latency = browser.execute_script(
            "const c = Chart.getChart('chart-latency');"
            "return [c.data.labels, c.data.datasets[0].data];"
        )
        p50 = dict(zip(latency[0], latency[1], strict=True))
        assert p50["gemini:gemini-2.5-flash"] == pytest.approx(2400, rel=0.05)
        assert texts(browser, "#transforms tbody tr td:nth-child(2)") == [
            "string_to_int",
            "strip_fence",
        ]
        failures = texts(browser, "#failures tbody tr")
        assert len(failures) == 8 + 2 + 2 + 2  # validation failures, aborts, failed re-asks
        assert any("at /label: expected integer" in row for row in failures)
        assert len(texts(browser, "#runs tbody tr")) == 40
        native = texts(browser, "#native tbody tr")
        assert any("the caller asked for mode json (8)" in row for row in native)
        recommendations = browser.find_elements(By.CSS_SELECTOR, "#recommendations li")
        kinds = {li.get_attribute("data-kind") for li in recommendations}
        assert {"enable_native", "custom_processor"} <= kinds

        Select(browser.find_element(By.ID, "step")).select_by_value("classify")
        wait_for(
            browser,
            "return document.body.dataset.state === 'ready'"
            " && document.getElementById('kpi-runs').textContent === '8'",
        )
        assert browser.find_element(By.ID, "kpi-reask").text == "100.0%"
        assert len(texts(browser, "#runs tbody tr")) == 8
        shot(browser, tmp_path, "dashboard-filtered")

        browser.find_element(By.CSS_SELECTOR, "#runs a[data-run='classify-0']").click()
        wait_for(browser, "return document.body.dataset.run === 'classify-0'")
        info = browser.find_element(By.ID, "run-info").text
        assert "the profile's strongest mode" in info  # why this mode
        assert "skipped: the caller asked for mode json" in info
        # the agent envelope's metadata: confidence in its band, the first three sources
        confidence = browser.find_element(By.CSS_SELECTOR, "#run-info dd.confidence")
        assert confidence.text == "0.55" and "low" in confidence.get_attribute("class")
        assert "doc-1, doc-2, doc-3 and 1 more" in info
        attempts = browser.find_elements(By.CSS_SELECTOR, "#run-attempts .attempt")
        assert len(attempts) == 2
        assert "asked again (schema): /label" in attempts[0].text
        assert "HTTP 200" in attempts[0].text and "120 in / 40 out tokens" in attempts[0].text
        change = texts(browser, "#run-attempts .attempt[data-attempt='2'] tbody td")
        assert change == ["extract", "/", "strip_fence", '"42"', "42", "no"]
        shot(browser, tmp_path, "dashboard-run")
    assert (tmp_path / "dashboard-run.png").stat().st_size > 10_000


def test_data_needs_a_key_the_page_does_not(store: SqliteTraceStore) -> None:
    with serving(store, keys=(KEY,)) as url:
        page = httpx.get(url + "/dashboard/")
        assert page.status_code == 200 and "outform dashboard" in page.text
        assert httpx.get(url + "/dashboard/static/vendor/chart.umd.min.js").status_code == 200
        assert httpx.get(url + "/dashboard/api/overview").status_code == 401
        wrong = {"Authorization": "Bearer nope"}
        assert httpx.get(url + "/dashboard/api/runs", headers=wrong).status_code == 401
        right = {"Authorization": f"Bearer {KEY}"}
        overview = httpx.get(url + "/dashboard/api/overview", headers=right).json()
        assert overview["totals"]["runs"] == 40
        missing = httpx.get(url + "/dashboard/api/runs/no-such-run", headers=right)
        assert missing.status_code == 404
        # A query parameter out of range, or not a number, is refused naming itself (the
        # trial's `abc` was told as `--since-hours ... not -1.0`; limit=0 was made 1).
        for query, name, sent in [
            ("overview?since_hours=-3", "since_hours", "'-3'"),
            ("overview?since_hours=abc", "since_hours", "'abc'"),
            ("runs?limit=0", "limit", "'0'"),
            ("failures?limit=-5", "limit", "'-5'"),
            ("overview?buckets=abc", "buckets", "'abc'"),
        ]:
            bad = httpx.get(url + "/dashboard/api/" + query, headers=right)
            error = bad.json()["error"]  # the gateway's (OpenAI's) error shape
            said = error["message"]
            assert bad.status_code == 400, query
            assert error["param"] == name and error["code"] == "invalid_value"
            assert f"the query parameter {name} must be" in said and f"not {sent}" in said
            assert "--" not in said


def test_outform_dashboard_serves_the_store_and_asks_for_the_keys_named(
    store: SqliteTraceStore, tmp_path: Path
) -> None:
    import subprocess
    import sys

    port = free_port()
    env = {**os.environ, "DASH_KEY": KEY}
    command = [sys.executable, "-m", "outform.cli", "dashboard", "--port", str(port),
               "--store", f"sqlite:{store.path}", "--api-key-env", "DASH_KEY"]  # fmt: skip
    server = subprocess.Popen(command, env=env, stderr=subprocess.PIPE, text=True)
    try:
        assert server.stderr is not None
        assert f"http://127.0.0.1:{port}/dashboard/" in server.stderr.readline()
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 20
        while True:
            try:
                page = httpx.get(url + "/", follow_redirects=True)
                break
            except httpx.ConnectError:
                assert time.monotonic() < deadline, "outform dashboard did not start"
                time.sleep(0.05)
        assert page.status_code == 200 and str(page.url).endswith("/dashboard/")
        assert httpx.get(url + "/dashboard/api/runs").status_code == 401
        runs = httpx.get(url + "/dashboard/api/runs", headers={"Authorization": f"Bearer {KEY}"})
        assert len(runs.json()) == 40
    finally:
        server.terminate()
        server.wait(20)
