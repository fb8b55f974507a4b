"""Screenshots of a browser session of ``causalplay serve`` for ``docs/serve.md`` (writes ``docs/img/serve_*.png``).

Starts the server (SQLite in a temporary folder, 127.0.0.1, a free port) for the Nexiom task and for IVRE, and
drives headless Chromium (Playwright, ``/usr/bin/chromium``) through a session, keyboard only, taking one
screenshot per stage. Usage: ``python docs/serve_screenshots.py [--chromium /usr/bin/chromium]``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from serve_server import TOKEN, Server  # noqa: E402

IMG = ROOT / "docs" / "img"


def shot(page, name: str) -> None:
    page.screenshot(path=str(IMG / f"serve_{name}.png"), full_page=True)
    print("wrote", IMG / f"serve_{name}.png")


def main(argv=None) -> None:
    from playwright.sync_api import sync_playwright

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--chromium", default="/usr/bin/chromium")
    a = ap.parse_args(argv)
    IMG.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as p:
        b = p.chromium.launch(executable_path=a.chromium, args=["--no-sandbox"], headless=True)
        with Server(f"sqlite:///{tmp}/nexiom.db", "nexiom", 1) as srv:
            page = b.new_page(viewport={"width": 900, "height": 700})
            page.goto(f"{srv.url}/?PROLIFIC_PID=demo01")
            shot(page, "1_consent")
            page.get_by_label("I have read the information above and agree to take part.").focus()
            page.keyboard.press("Space")
            page.keyboard.press("Tab")
            page.keyboard.press("Enter")
            page.wait_for_url("**/check")
            page.get_by_label("By putting objects on the machine and pressing Test").focus()
            page.keyboard.press("Space")
            page.get_by_label("Number of blickets").focus()
            page.keyboard.type("2")
            page.get_by_label("Whenever I am ready (up to 16 tests)").focus()
            page.keyboard.press("Space")
            shot(page, "2_check")
            page.get_by_role("button", name="Continue").focus()
            page.keyboard.press("Enter")
            page.wait_for_url("**/task")
            shot(page, "3_task_start")
            for k, on in enumerate([(0,), (1,), (0, 1), (2, 3)], start=1):
                page.focus("#obj-0")
                for i in range(4):
                    if i in on:
                        page.keyboard.press("Space")
                    page.keyboard.press("Tab")
                page.keyboard.press("Enter")
                page.locator("#last-result").get_by_text(f"Test {k}:").wait_for()
            page.focus("#obj-1")
            page.keyboard.press("Space")  # a choice in progress, focus ring visible
            shot(page, "4_task_tests")
            page.get_by_role("link", name="I am ready to answer").focus()
            page.keyboard.press("Enter")
            page.wait_for_url("**/judge")
            for i in (2, 3):
                page.get_by_label(f"Object {i + 1} is a blicket").focus()
                page.keyboard.press("Space")
            page.get_by_label("It lights up only when at least two blickets are on it").focus()
            page.keyboard.press("Space")
            shot(page, "5_judge")
            page.get_by_role("button", name="Submit my answer").focus()
            page.keyboard.press("Enter")
            page.wait_for_url("**/debrief")
            shot(page, "6_debrief")
            admin = b.new_page(viewport={"width": 900, "height": 500})
            admin.goto(f"{srv.url}/admin?token={TOKEN}")
            shot(admin, "8_admin")
        with Server(f"sqlite:///{tmp}/ivre.db", "ivre", 1) as srv:
            page = b.new_page(viewport={"width": 1000, "height": 800})
            page.goto(f"{srv.url}/?PROLIFIC_PID=demo02")
            page.get_by_label("I have read the information above and agree to take part.").check()
            page.get_by_role("button", name="Start").click()
            page.wait_for_url("**/check")
            n = page.locator("strong").first.inner_text()
            page.get_by_label("By putting objects on the machine and pressing Test").check()
            page.get_by_label("Number of blickets").fill(n)
            page.get_by_label("Whenever I am ready (up to 6 tests)").check()
            page.get_by_role("button", name="Continue").click()
            page.wait_for_url("**/task")
            for i in (0, 4):
                page.check(f"#obj-{i}")
            page.click("#test-button")
            page.locator("#last-result").get_by_text("Test 1:").wait_for()
            shot(page, "7_ivre_task")
        b.close()


if __name__ == "__main__":
    main()
