"""The live page in a real browser: headless Chromium (Debian's chromium and chromium-driver,
driven by python3-selenium) loads a launched cluster run's page while it trains, and the page
must log no console error, show every node of the run in its table and in its graph, and show
its epoch advance.

usage: live_page_browser.py TROUPE CONFIG WORKDIR [--screenshot PNG]
(exit 77 without chromium, chromedriver or selenium)
"""
import os
import shutil
import sys
import time

from status_run import SKIP, StatusRun, fail


def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    options = webdriver.ChromeOptions()
    for argument in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--window-size=1400,1500"]:
        options.add_argument(argument)
    options.binary_location = shutil.which("chromium")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=options)


def page_epoch(driver):
    text = driver.execute_script("const e = document.getElementById('epoch'); return e ? e.textContent.trim() : ''")
    return int(text) if text.isdigit() else -1


def wait_for(what, check, timeout):
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.2)
    fail(f"not within {timeout} s: {what}")


def attributes(driver, selector, name):
    """`name` of every element `selector` finds, read in one script: the page redraws its table
    and graph every second, so elements found in one call may be gone by the next."""
    return driver.execute_script(
        "return Array.from(document.querySelectorAll(arguments[0]), e => e.getAttribute(arguments[1]))",
        selector, name)


def main(troupe, config, workdir, screenshot=None):
    try:
        import selenium  # noqa: F401
    except ImportError:
        print("skipped: no python3-selenium")
        return SKIP
    if not shutil.which("chromium") or not shutil.which("chromedriver"):
        print("skipped: no chromium or chromedriver (apt install chromium chromium-driver)")
        return SKIP
    os.makedirs(workdir, exist_ok=True)
    argv = [troupe, "launch", "-n", "2", "-s", "1", "--config", config, "--network", "mlp",
            "--num-epochs", "1000", "--progress", "off", "--disp-batches", "0", "--status-listen", "0"]
    with StatusRun(argv, workdir) as run:
        url = run.wait_for_url()
        status = run.wait_until("every node ready", lambda s: s["nodes"] and all(
            n["state"] == "ready" for n in s["nodes"]) and s["position"]["step"] > 0)
        names = [n["name"] for n in status["nodes"]]
        driver = browser()
        try:
            driver.get(url)
            first = wait_for("the page showing an epoch", lambda: page_epoch(driver) >= 0 and
                             page_epoch(driver) + 1, 60) - 1
            wait_for(f"the page's epoch advancing past {first}", lambda: page_epoch(driver) > first, 120)
            rows = set(attributes(driver, "#nodes tbody tr", "data-node"))
            if rows != set(names):
                fail(f"the page's node table shows {sorted(rows)}, the run has {sorted(names)}")
            actors = set(attributes(driver, "#graph g[data-actor]", "data-actor"))
            planned = {a["name"] for a in status["plan"]["actors"]}
            if actors != planned:
                fail(f"the graph draws {sorted(actors)}, the plan has {sorted(planned)}")
            points = driver.find_elements("css selector", "#loss polyline")
            if not points:
                fail("the loss chart draws no training curve")
            if screenshot:
                wait_for("a validated epoch in the chart", lambda: driver.find_elements(
                    "css selector", "#loss circle"), 60)
                driver.save_screenshot(screenshot)
            errors = [e for e in driver.get_log("browser") if e["level"] in ("SEVERE", "ERROR")]
            if errors:
                fail(f"the page logged console errors: {errors}")
            print(f"ok: {url} showed {len(names)} nodes ({', '.join(names)}), {len(actors)} actors, "
                  f"epoch {first} -> {page_epoch(driver)}, no console error")
        finally:
            driver.quit()
    return 0


if __name__ == "__main__":
    args = sys.argv[1:]
    shot = None
    if "--screenshot" in args:
        i = args.index("--screenshot")
        shot = args[i + 1]
        del args[i:i + 2]
    if len(args) != 3:
        print(__doc__)
        sys.exit(2)
    sys.exit(main(*args, screenshot=shot))
