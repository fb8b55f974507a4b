"""Screenshots of every page of ``causalplay serve`` at 1280 and 390 px for ``docs/serve.md`` (``docs/img/serve_*``).

Starts the server (SQLite in a temporary folder, 127.0.0.1, a free port) with the example study file of
``docs/serve.md`` (Nexiom) and with the defaults for IVRE, and drives headless Chromium (Playwright,
``/usr/bin/chromium``) through a session at each width, keyboard only on the task, taking one full-page
screenshot per page (the phone's task page after 8 tests is shown as the screen shows it, to show the Test
button in view). Usage: ``python docs/serve_screenshots.py [--chromium /usr/bin/chromium]``.
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from serve_server import TOKEN, Server  # noqa: E402

IMG = ROOT / "docs" / "img"
WIDTHS = {1280: 800, 390: 844}


def shot(page, name: str, width: int, full: bool = True) -> None:
    path = IMG / f"serve_{name}_{width}.png"
    page.screenshot(path=str(path), full_page=full)
    print("wrote", path)


def nexiom(b, url: str, width: int) -> None:
    from playwright.sync_api import expect

    page = b.new_page(viewport={"width": width, "height": WIDTHS[width]})
    page.goto(f"{url}/?PROLIFIC_PID=demo{width}&STUDY_ID=study01&SESSION_ID=s{width}")
    shot(page, "consent", width)
    page.get_by_label("I have read the information above and agree to take part.").check()
    page.get_by_role("button", name="Start").click()
    page.wait_for_url("**/check")
    page.get_by_label("By putting objects on the machine and pressing Test").check()
    page.get_by_label("Number of blickets").fill("2")
    page.get_by_label(re.compile("Whenever I am ready")).check()
    shot(page, "check", width)
    page.get_by_role("button", name="Continue").click()
    page.wait_for_url("**/practice")
    page.check("#obj-1")
    page.click("#test-button")
    page.locator("#last-result").get_by_text("Test 1:").wait_for()
    shot(page, "practice", width)
    page.get_by_role("button", name="Start the study").click()
    page.wait_for_url("**/task")
    shot(page, "task_start", width)
    for k, on in enumerate([(0,), (1,), (0, 1), (2, 3), (0, 2), (1, 3), (0, 3), (1, 2)], start=1):
        page.focus("#obj-0")
        for i in range(4):
            if i in on:
                page.keyboard.press("Space")
            page.keyboard.press("Tab")
        page.keyboard.press("Enter")
        page.locator("#last-result").get_by_text(f"Test {k}:").wait_for()
        expect(page.locator("#obj-0")).to_be_focused()  # where the page puts the focus after a test
    page.keyboard.press("Tab")
    page.keyboard.press("Space")  # a choice in progress, focus ring visible
    shot(page, "task_tests", width, full=width > 400)
    code = page.locator("footer code").nth(1).inner_text()
    page.get_by_role("link", name="I am ready to answer").click()
    page.wait_for_url("**/judge")
    for i in (2, 3):
        page.get_by_label(f"Object {i + 1} is a blicket").check()
    page.get_by_label("It lights up only when at least two blickets are on it").check()
    shot(page, "judge", width)
    page.get_by_role("button", name="Submit my answer").click()
    page.wait_for_url("**/debrief")
    shot(page, "debrief", width)
    other = b.new_page(viewport={"width": width, "height": WIDTHS[width]})  # another device, no cookie
    other.goto(f"{url}/?PROLIFIC_PID=demo{width}")
    other.get_by_label("Resume code").fill(code)
    shot(other, "resume", width)


def ivre(b, url: str, width: int) -> None:
    page = b.new_page(viewport={"width": width, "height": WIDTHS[width]})
    page.goto(f"{url}/?PROLIFIC_PID=ivre{width}")
    page.get_by_label("I have read the information above and agree to take part.").check()
    page.get_by_role("button", name="Start").click()
    n = page.locator("#n-blickets").inner_text()
    page.get_by_label("By putting objects on the machine and pressing Test").check()
    page.get_by_label("Number of blickets").fill(n)
    page.get_by_label("Whenever I am ready (up to 6 tests)").check()
    page.get_by_role("button", name="Continue").click()
    page.get_by_role("button", name="Start the study").click()
    page.wait_for_url("**/task")
    for i in (0, 4):
        page.check(f"#obj-{i}")
    page.click("#test-button")
    page.locator("#last-result").get_by_text("Test 1:").wait_for()
    shot(page, "ivre_task", width)


def main(argv=None) -> None:
    from playwright.sync_api import sync_playwright

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--chromium", default="/usr/bin/chromium")
    a = ap.parse_args(argv)
    IMG.mkdir(parents=True, exist_ok=True)
    example = re.search(r"```toml\n(.*?)```", (ROOT / "docs" / "serve.md").read_text(), re.S).group(1)
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as p:
        b = p.chromium.launch(executable_path=a.chromium, args=["--no-sandbox"], headless=True)
        (Path(tmp) / "study.toml").write_text(example)
        with Server(f"sqlite:///{tmp}/nexiom.db", "", 1, None, "--study", f"{tmp}/study.toml") as srv:
            for width in WIDTHS:
                nexiom(b, srv.url, width)
            for width in WIDTHS:  # the dashboard once both sessions are in
                admin = b.new_page(viewport={"width": width, "height": WIDTHS[width]})
                admin.goto(f"{srv.url}/admin?token={TOKEN}")
                shot(admin, "admin", width)
        with Server(f"sqlite:///{tmp}/ivre.db", "ivre", 1) as srv:
            for width in WIDTHS:
                ivre(b, srv.url, width)
        b.close()


if __name__ == "__main__":
    main()
