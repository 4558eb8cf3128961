"""Browser tests of the dashboard (issue 24): headless Chromium (Debian's chromium + chromium-driver) driven by
Selenium against the release binary on temporary SQLite files.

    python tools/browser/dashboard_test.py --bin target/release/bayesd [--screenshots docs]

1. Open server: one study of each kind is created over the API (tools/browser/seed.py); the list page shows them,
   filters by status; each study page has, in every plot that stands for observations, one mark per observation
   (data-mark attributes), the block panels are there, the table sorts with the keyboard, a new observation posted
   over the API appears without a reload, the page fits a phone-width window, and the browser logged no error (a
   Content-Security-Policy violation is one).
2. Server with a token: without a token the list and the study page show the token form and no study data; a wrong
   token is refused; the right one shows the study.
Prints the time of each step. With --screenshots DIR it saves the plain and the context study pages at 1280 px.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.request

from selenium import webdriver
from selenium.common.exceptions import TimeoutException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import Select, WebDriverWait

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import seed  # noqa: E402

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver")
T0 = time.monotonic()
_step = [T0]


def step(msg):
    now = time.monotonic()
    print(f"[{now - T0:6.1f} s] (+{now - _step[0]:4.1f} s) {msg}", flush=True)
    _step[0] = now


def start_server(binary, tmp, name, token=None):
    """Starts bayesd on a port the OS picks and a fresh SQLite file; returns (process, base url)."""
    env = dict(os.environ, BAYESD_LOG_FORMAT="json", RUST_LOG="info,sqlx=warn,bayesd::access=off")
    env.pop("BAYESD_API_TOKENS", None)
    if token:
        env["BAYESD_API_TOKENS"] = token
    log = open(os.path.join(tmp, f"{name}.log"), "w+")
    proc = subprocess.Popen([binary, "serve", "--bind", "127.0.0.1:0", "--database-url",
                             f"sqlite://{tmp}/{name}.db"], stdout=log, stderr=log, env=env)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        log.seek(0)
        for line in log:
            if '"bayesd listening"' in line:
                return proc, "http://" + json.loads(line)["fields"]["addr"], log
        if proc.poll() is not None:
            log.seek(0)
            raise SystemExit(f"bayesd exited at start:\n{log.read()}")
        time.sleep(0.05)
    raise SystemExit("bayesd did not report its address within 30 s")


def browser(width=1280, height=1000, downloads=None):
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    if downloads:
        opts.add_experimental_option("prefs", {"download.default_directory": downloads,
                                               "download.prompt_for_download": False})
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
              f"--window-size={width},{height}"):
        opts.add_argument(a)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)


def wait(d, cond, what, timeout=20):
    try:
        return WebDriverWait(d, timeout, poll_frequency=0.1).until(lambda _: cond())
    except TimeoutException:
        raise AssertionError(f"timed out waiting for {what} on {d.current_url}") from None


def count(d, selector):
    return d.execute_script("return document.querySelectorAll(arguments[0]).length", selector)


def check(cond, msg):
    if not cond:
        raise AssertionError(msg)


def no_console_errors(d, expect_401=False):
    """No error in the browser's console (script errors, CSP violations, failed loads); the API's 401 answers are
    expected where the test goes without a token."""
    errors = [e for e in d.get_log("browser") if e["level"] == "SEVERE"
              and not (expect_401 and e["source"] == "network" and "status of 401" in e["message"])]
    check(not errors, f"browser errors: {errors}")


def open_study(d, base, sid, n):
    d.get(f"{base}/studies/{sid}")
    wait(d, lambda: d.execute_script(
        "const c = document.querySelector('[data-study]'); return c && c.dataset.observations"), "the study page")
    got = int(d.execute_script("return document.querySelector('[data-study]').dataset.observations"))
    check(got == n, f"page shows {got} observations, API has {n}")


def check_per_plot(d, plot, mark, n, label):
    """Every figure of a small-multiple panel (data-plot=...) has one mark per observation."""
    counts = d.execute_script(
        "return [...document.querySelectorAll(`[data-plot='${arguments[0]}']`)].map(e => "
        "[e.dataset.param, e.querySelectorAll(`[data-mark='${arguments[1]}']`).length])", plot, mark)
    check(counts, f"{label}: no {plot} plots")
    for param, c in counts:
        check(c == n, f"{label}: {plot} plot of {param} has {c} marks, expected {n}")
    return len(counts)


def open_server_checks(binary, tmp, shots):
    proc, base, log = start_server(binary, tmp, "open")
    try:
        step(f"bayesd at {base}")
        api = seed.Api(base)
        ids = seed.seed_all(api)
        step(f"created {len(ids)} studies over the API")
        studies = {k: api.call("GET", f"/v1/studies/{sid}") for k, sid in ids.items()}

        # Headers of the shell and assets.
        with urllib.request.urlopen(base + "/") as r:
            check(r.headers["Content-Type"].startswith("text/html"), r.headers["Content-Type"])
            check("default-src 'self'" in r.headers["Content-Security-Policy"], r.headers["Content-Security-Policy"])
        with urllib.request.urlopen(base + "/dashboard/app.js") as r:
            check(r.headers["Content-Type"].startswith("text/javascript"), r.headers["Content-Type"])

        d = browser()
        try:
            # The list.
            d.get(base + "/")
            for sid in ids.values():
                wait(d, lambda sid=sid: count(d, f"#studies tr[data-study='{sid}']") == 1, f"study {sid} in the list")
            plain = ids["plain"]
            best = api.call("GET", f"/v1/studies/{plain}/best")["best_observed"]["value"]
            cell = f"#studies td[data-best='{plain}']"
            wait(d, lambda: d.find_element(By.CSS_SELECTOR, cell).text not in ("…", ""), "the best value")
            shown = float(d.find_element(By.CSS_SELECTOR, cell).text)
            check(abs(shown - best) <= 1e-3 * abs(best), f"best value shown {shown}, API {best}")
            row = d.find_element(By.CSS_SELECTOR, f"#studies tr[data-study='{plain}']").text
            check("reaction yield" in row and "gp-ei" in row and re.search(r"\b30\b", row), f"list row: {row}")
            Select(d.find_element(By.ID, "status-filter")).select_by_value("completed")
            wait(d, lambda: count(d, "#studies tr[data-study]") == 0, "the status filter to hide active studies")
            Select(d.find_element(By.ID, "status-filter")).select_by_value("active")
            wait(d, lambda: count(d, "#studies tr[data-study]") == len(ids), "the active studies")
            no_console_errors(d)
            step("list page: every study listed with its best value; status filter works")

            # Each study page: marks per observation in every plot that shows observations.
            for kind, sid in ids.items():
                st = studies[kind]
                n = st["counts"]["observations"]
                open_study(d, base, sid, n)
                wait(d, lambda: count(d, "#observations tbody tr[data-mark='table']") == n, "the table")
                check(count(d, "[data-mark='convergence']") == n, f"{kind}: convergence marks")
                check(count(d, "[data-mark='parcoords']") == n, f"{kind}: parallel-coordinates lines")
                check_per_plot(d, "slice", "slice", n, kind)
                if st.get("indirect"):
                    check(count(d, "[data-plot='model']") == len(st["parameters"]), f"{kind}: model plots")
                else:
                    check_per_plot(d, "model", "model", n, kind)
                extra = []
                if kind in ("plain", "control_sets", "level_set"):
                    check(count(d, "[data-mark='convergence-cost']") == n, f"{kind}: cost convergence marks")
                    extra.append("cost")
                if kind == "plain":
                    failed = count(d, "[data-mark='convergence'].failed")
                    check(failed == 1, f"plain: {failed} failed marks, expected 1")
                    check(count(d, "[data-mark='importance']") > 0, "plain: importance from lengthscales")
                    text = d.find_element(By.ID, "suggestions").text
                    check("robot-1" in text and "robot-2" in text and "1 open" in text, f"suggestions panel: {text}")
                    extra += ["failed", "importance", "suggestions"]
                block = {"control_sets": "control-sets", "contexts": "contexts", "level_set": "level-set",
                         "indirect": "indirect"}.get(kind)
                if block:
                    check(count(d, f"[data-mark='{block}']") == n, f"{kind}: {block} panel marks")
                    extra.append(block)
                if kind == "kernel":
                    sugs = api.call("GET", f"/v1/studies/{sid}/suggestions?limit=1000")["suggestions"]
                    chosen = sum(1 for s in sugs if s["diagnostics"].get("extra", {}).get("candidate"))
                    check(count(d, "[data-mark='kernel']") == chosen, f"kernel: {chosen} choices expected")
                    check(count(d, "#kernel-table tbody tr") == 3, "kernel: three candidates")
                    extra.append("kernel")
                if kind == "indirect":
                    check(count(d, "[data-mark='pairs']") == 64, "indirect: the 64 pairs")
                if kind == "level_set":
                    check(count(d, "#noise-level-table tbody tr") == 2, "level set: the two noise levels")
                if kind == "outcomes":
                    obs = api.call("GET", f"/v1/studies/{sid}/observations?limit=1000")["observations"]
                    ok = sum(1 for o in obs if not o["failed"])
                    infeasible = sum(1 for o in obs if o.get("feasible") is False)
                    check(count(d, "[data-mark='pareto']") == ok, f"outcomes: {ok} runs in the Pareto panel")
                    check(count(d, "[data-mark='pareto'].infeasible") == infeasible, f"outcomes: {infeasible} infeasible")
                    check(count(d, "#observations tr.infeasible") == infeasible, "outcomes: infeasible rows")
                    check(count(d, "#observations tr.failed") == 1, "outcomes: the failed row")
                    front = api.call("GET", f"/v1/studies/{sid}/best")["pareto"]["points"]
                    check(f"{len(front)} points" in d.find_element(By.ID, "pareto-summary").text, "outcomes: front size")
                    extra.append(f"pareto ({len(front)} on the front, {infeasible} infeasible)")
                no_console_errors(d)
                if shots and kind in ("plain", "contexts"):
                    screenshot(d, os.path.join(shots, f"dashboard-{kind.replace('_', '-')}.png"))
                step(f"study page {kind}: {n} marks in convergence, slices, model, parallel coordinates, table"
                     + (f"; {', '.join(extra)}" if extra else ""))

            # A study without observations: the page says so, draws no marks and logs no error.
            empty = api.create({"name": "empty", "parameters": [{"name": "x", "type": "float", "low": 0, "high": 1}]})
            open_study(d, base, empty, 0)
            check("No observations yet" in d.find_element(By.ID, "convergence").text, "empty study: convergence text")
            check("No model yet" in d.find_element(By.ID, "model").text, "empty study: model text")
            check(count(d, "[data-mark]") == 0, "empty study: marks")
            no_console_errors(d)
            step("study page without observations")

            # Sorting with the keyboard: focus the value column's button and press Enter (ascending, then descending).
            n = studies["plain"]["counts"]["observations"]
            open_study(d, base, plain, n)
            d.find_elements(By.CSS_SELECTOR, "#observations thead th button")[1].send_keys(Keys.ENTER)
            wait(d, lambda: d.find_element(By.CSS_SELECTOR, "#observations thead th:nth-child(2)")
                 .get_attribute("aria-sort") == "ascending", "ascending sort")
            d.switch_to.active_element.send_keys(Keys.ENTER)
            wait(d, lambda: d.find_element(By.CSS_SELECTOR, "#observations thead th:nth-child(2)")
                 .get_attribute("aria-sort") == "descending", "descending sort")
            first = d.find_element(By.CSS_SELECTOR, "#observations tbody tr td:nth-child(2)").text
            check(abs(float(first) - best) <= 1e-3 * abs(best), f"first row after sorting descending: {first}")
            step("observations table sorts by value with the keyboard")

            # A new observation over the API appears without a reload.
            d.execute_script("window.__sameDocument = true")
            open_sug = api.call("GET", f"/v1/studies/{plain}/suggestions?state=open")["suggestions"][0]
            api.observe(plain, {"suggestion_id": open_sug["id"],
                                "value": seed.plain_value(open_sug["assignments"]), "cost": 1.0})
            wait(d, lambda: count(d, "[data-mark='convergence']") == n + 1, "the new observation", timeout=15)
            check(d.execute_script("return window.__sameDocument === true"), "the page was reloaded")
            check(count(d, "#observations tbody tr") == n + 1, "the table has the new observation")
            check_per_plot(d, "slice", "slice", n + 1, "plain after the update")
            step("a new observation appeared without a reload")

            # Paging: 25 studies a page, the cursor of the API behind Next and Previous.
            for i in range(25):
                api.create({"name": f"paging {i:02d}", "algorithm": {"name": "sobol"},
                            "parameters": [{"name": "x", "type": "float", "low": 0, "high": 1}]})
            d.get(base + "/")
            wait(d, lambda: count(d, "#studies tr[data-study]") == 25, "a first page of 25 studies")
            d.find_element(By.ID, "next-page").click()
            rest = len(ids) + 1  # the seeded studies and the empty one
            wait(d, lambda: count(d, "#studies tr[data-study]") == rest, f"the second page with the other {rest}")
            check(d.find_element(By.ID, "next-page").get_attribute("disabled") is not None, "Next on the last page")
            d.find_element(By.ID, "prev-page").click()
            wait(d, lambda: count(d, f"#studies tr[data-study='{plain}']") == 1, "the first page again")
            step(f"list paging: 25 + {rest} studies over two pages")

            # Phone width: nothing wider than the window.
            open_study(d, base, plain, n + 1)
            # (Device emulation: a headless window does not shrink below 500 px.)
            d.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                              {"width": 390, "height": 844, "deviceScaleFactor": 1, "mobile": True})
            time.sleep(0.5)
            inner, scroll = d.execute_script("return [window.innerWidth, document.documentElement.scrollWidth]")
            check(inner == 390, f"the emulated window is {inner} px wide")
            check(scroll <= inner + 1, f"the study page is {scroll} px wide in a 390 px window")
            d.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
            no_console_errors(d)
            step("study page fits a 390 px window")
        finally:
            d.quit()
    finally:
        proc.terminate()
        proc.wait(10)
    log.seek(0)
    errors = [line for line in log if '"level":"ERROR"' in line]
    check(not errors, f"server errors: {errors[:5]}")


def token_checks(binary, tmp):
    secret = "ui-test-token"
    proc, base, _ = start_server(binary, tmp, "tokens", token=secret)
    try:
        api = seed.Api(base, secret)
        sid = api.create(dict(seed.PLAIN, name="secret study"))
        for s in api.suggest(sid, count=5):
            api.observe(sid, {"suggestion_id": s["id"], "value": seed.plain_value(s["assignments"])})
        step(f"token server at {base}; study with 5 observations")
        downloads = os.path.join(tmp, "downloads")
        os.makedirs(downloads)
        d = browser(downloads=downloads)
        try:
            for path in ("/", f"/studies/{sid}"):
                d.get(base + path)
                wait(d, lambda: count(d, "form.token input#token") == 1, f"the token form on {path}")
                src = d.page_source
                check("secret study" not in src and sid not in src, f"study data shown on {path}")
                check(count(d, "[data-mark]") == 0, f"marks on {path} without a token")
            box = d.find_element(By.ID, "token")
            box.send_keys("wrong" + Keys.ENTER)
            wait(d, lambda: "not accepted" in d.find_element(By.TAG_NAME, "main").text, "the refusal of a wrong token")
            check("secret study" not in d.page_source, "study data shown with a wrong token")
            d.find_element(By.ID, "token").send_keys(secret + Keys.ENTER)
            wait(d, lambda: count(d, "[data-mark='convergence']") == 5, "the study with the token")
            check(d.find_element(By.ID, "study-name").text == "secret study", "study name")
            # The CSV download goes through fetch with the token and a blob link.
            d.find_element(By.ID, "csv-download").click()
            path = os.path.join(downloads, "secret study.csv")
            wait(d, lambda: os.path.exists(path) and os.path.getsize(path) > 0, "the CSV download")
            with open(path) as f:
                lines = f.read().splitlines()
            check(lines[0].startswith("id,seq,") and "temperature,catalyst_ppm,stir_rpm,solvent,value" in lines[0]
                  and len(lines) == 6, f"the CSV: {lines[:2]} ({len(lines)} lines)")
            d.get(base + "/")
            wait(d, lambda: count(d, f"#studies tr[data-study='{sid}']") == 1, "the list with the kept token")
            no_console_errors(d, expect_401=True)
            step("tokens: no study data without a token; wrong token refused; CSV downloaded with the token; "
                 "the token is asked once and kept")
        finally:
            d.quit()
    finally:
        proc.terminate()
        proc.wait(10)


def screenshot(d, path):
    """The whole page at 1280 px wide (the window grown to the page's height)."""
    d.set_window_size(1280, 1000)
    time.sleep(0.3)
    height = d.execute_script("return document.documentElement.scrollHeight")
    d.set_window_size(1280, min(height + 140, 8000))
    time.sleep(0.5)
    d.save_screenshot(path)
    d.set_window_size(1280, 1000)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="target/release/bayesd")
    ap.add_argument("--screenshots", help="directory for the screenshots (optional)")
    args = ap.parse_args()
    binary = os.path.abspath(args.bin)
    with tempfile.TemporaryDirectory() as tmp:
        open_server_checks(binary, tmp, args.screenshots)
        token_checks(binary, tmp)
    print(f"dashboard browser tests passed in {time.monotonic() - T0:.1f} s")


if __name__ == "__main__":
    main()
