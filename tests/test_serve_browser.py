"""`causalplay serve` in a real browser: Playwright drives headless Chromium (Debian's /usr/bin/chromium) through
full sessions with the keyboard only; every response is recorded; the export is checked row by row."""

import os
import re
import shutil

import pytest

pytest.importorskip("playwright")
pytest.importorskip("fastapi")

from serve_server import TOKEN, Server  # noqa: E402

CHROMIUM = os.environ.get("CAUSALPLAY_CHROMIUM", "/usr/bin/chromium")
pytestmark = pytest.mark.skipif(shutil.which(CHROMIUM) is None,
                                reason=f"no Chromium at {CHROMIUM} (make system-deps installs Debian's chromium)")


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"], headless=True)
        yield b
        b.close()


def record_all(page, log):
    """Route every request through Playwright so each response's status and body are kept (htmx calls too)."""
    def handle(route):
        resp = route.fetch(max_redirects=0)
        log.append((route.request.method, route.request.url, resp.status, resp.body()))
        route.fulfill(response=resp)

    page.route("**/*", handle)


def press(page, selector, key="Space"):
    page.focus(selector)
    page.keyboard.press(key)


def play(page, url, pid, tests, n_blickets, answer, rule):
    """One participant with the keyboard only (focus + Space/Enter/Tab/typing); returns the results announced."""
    page.goto(f"{url}/?PROLIFIC_PID={pid}")
    page.get_by_label("I have read the information above and agree to take part.").focus()
    page.keyboard.press("Space")
    page.keyboard.press("Tab")  # -> Start
    page.keyboard.press("Enter")
    page.wait_for_url("**/check")
    page.get_by_label("By putting objects on the machine and pressing Test").focus()
    page.keyboard.press("Space")
    page.get_by_label("Number of blickets").focus()
    page.keyboard.type(str(n_blickets))
    page.get_by_label(re.compile("Whenever I am ready")).focus()
    page.keyboard.press("Space")
    press(page, "button[type=submit]", "Enter")
    page.wait_for_url("**/task")
    seen = []
    page.focus("#obj-0")
    for k, on in enumerate(tests, start=1):
        # from object 1's checkbox (where the page puts the focus after every test): Tab across the objects
        assert page.evaluate("document.activeElement.id") == "obj-0"
        for i in range(4):
            if i in on:
                page.keyboard.press("Space")
            page.keyboard.press("Tab")
        assert page.evaluate("document.activeElement.id") == "test-button"
        page.keyboard.press("Enter")
        status = page.locator("#last-result")
        status.get_by_text(f"Test {k}:").wait_for()
        page.wait_for_function("document.activeElement && document.activeElement.id === 'obj-0'")
        seen.append("lit up" in status.inner_text() and "did not" not in status.inner_text())
    page.get_by_role("link", name="I am ready to answer").focus()
    page.keyboard.press("Enter")
    page.wait_for_url("**/judge")
    for i in answer:
        page.get_by_label(f"Object {i + 1} is a blicket").focus()
        page.keyboard.press("Space")
    page.get_by_label(re.compile("at least one blicket" if rule == "disjunctive" else "at least two")).focus()
    page.keyboard.press("Space")
    page.get_by_role("button", name="Submit my answer").focus()
    page.keyboard.press("Enter")
    page.wait_for_url("**/debrief")
    return seen, page.locator("#truth").inner_text()


def test_browser_sessions_truth_hidden_and_export_row_by_row(browser, tmp_path):
    from causalplay.data import load_trials
    from causalplay.serve.store import export_trials

    db = f"sqlite:///{tmp_path / 'b.db'}"
    logs = {}
    with Server(db, "nexiom", 5) as srv:
        # Two participants whose tests light the same way in every Nexiom world (all 4 objects: lit; nothing:
        # not lit): with nothing of the world in any page, their responses before the judgement are identical.
        for pid in ("PWA", "PWB"):
            ctx = browser.new_context()
            page = ctx.new_page()
            log = logs[pid] = []
            record_all(page, log)
            play(page, srv.url, pid, [(0, 1, 2, 3), ()], 2, (0, 1), "disjunctive")
            ctx.close()
        # A third with varied tests, checked against the export.
        ctx = browser.new_context()
        page = ctx.new_page()
        record_all(page, logs.setdefault("PWC", []))
        tests = [(0,), (1,), (0, 1), (2, 3), (1, 3)]
        seen, truth_text = play(page, srv.url, "PWC", tests, 2, (1, 3), "conjunctive")
        ctx.close()
        # admin page in the browser
        ctx = browser.new_context()
        page = ctx.new_page()
        assert page.goto(f"{srv.url}/admin").status == 401
        page.goto(f"{srv.url}/admin?token={TOKEN}")
        assert page.get_by_text("3 sessions, 3 completed").is_visible()
        ctx.close()

    def before_judgement(log):
        out = []
        for method, url, status, body in log:
            if method == "POST" and url.endswith("/judge"):
                break
            out.append((method, re.sub(r"PW[ABC]", "PID", url), status, body.replace(b"PWA", b"PID")
                        .replace(b"PWB", b"PID").replace(b"PWC", b"PID")))
        return out

    # no response before the judgement names the truth in any form the server knows it by
    for pid in ("PWA", "PWB", "PWC"):
        for _, url, _, body in before_judgement(logs[pid]):
            for marker in (b"true_blickets", b"rule_idx", b"The blickets were", b"blickets were on it",
                           b"episode_seed"):
                assert marker not in body, (pid, url, marker)
    a, b = before_judgement(logs["PWA"]), before_judgement(logs["PWB"])
    assert len(a) >= 10 and all(s < 400 for _, _, s, _ in a)
    assert sum(u.endswith("/test") and m == "POST" for m, u, _, _ in a) == 2  # the htmx calls are in the record
    # (the browser loads the page's CSS and script in either order, so the records are compared as sets)
    assert sorted(a) == sorted(b)

    export_trials(db, tmp_path / "out")
    d = load_trials(tmp_path / "out", n_objects=4, impossible="raise")
    assert d.ids == ["PWA", "PWB", "PWC"]
    P = d.participants.set_index("participant")
    rule, truth = P.loc["PWC", "rule"], P.loc["PWC", "true_blickets"]
    assert P.loc["PWA", "rule"] != P.loc["PWB", "rule"] or P.loc["PWA", "true_blickets"] != \
        P.loc["PWB", "true_blickets"]
    # the debrief names the true blickets the export holds
    assert truth_text.startswith("The blickets were: " + ", ".join(f"Object {i + 1}" for i in truth) + ".")
    assert P.loc["PWC", "judged_blickets"] == (1, 3) and P.loc["PWC", "rule_choice"] == "conjunctive"
    assert P.loc["PWC", "blickets_correct"] == (truth == (1, 3))
    assert P.loc["PWC", "rule_correct"] == (rule == "conjunctive")
    assert P.loc["PWA", "judged_blickets"] == (0, 1) and P.loc["PWA", "rule_choice"] == "disjunctive"
    t = d.tests[d.tests["participant"] == "PWC"]
    assert list(t["test"]) == [1, 2, 3, 4, 5]
    assert [tuple(o) for o in t["objects_on"]] == tests
    want = [len(set(on) & set(truth)) >= (1 if rule == "disjunctive" else 2) for on in tests]
    assert list(t["lit"]) == want == seen  # what the page announced = what was stored = the rule on the truth
    assert (t["seconds_since_previous"].astype(float) >= 0).all() and P.loc["PWC", "round_seconds"] > 0
    for pid in ("PWA", "PWB"):
        g = d.tests[d.tests["participant"] == pid]
        assert [tuple(o) for o in g["objects_on"]] == [(0, 1, 2, 3), ()] and list(g["lit"]) == [True, False]


def test_browser_shows_refusals_of_htmx_requests(browser, tmp_path):
    # A refused test (here: the rate limit, 429) is announced in the page's alert region, and the stored tests
    # and the panel stay as they were.
    with Server(f"sqlite:///{tmp_path / 'r.db'}", "nexiom", 0, None, "--rate", "0.01", "--burst", "4") as srv:
        ctx = browser.new_context()
        page = ctx.new_page()
        page.goto(f"{srv.url}/?PROLIFIC_PID=RL1")
        page.get_by_label("I have read the information above and agree to take part.").check()
        page.get_by_role("button", name="Start").click()
        page.get_by_label("By putting objects on the machine and pressing Test").check()
        page.get_by_label("Number of blickets").fill("2")
        page.get_by_label(re.compile("Whenever I am ready")).check()
        page.get_by_role("button", name="Continue").click()  # request 1 of the burst of 4
        page.wait_for_url("**/task")
        for k in (1, 2, 3):
            page.check("#obj-0")
            page.click("#test-button")
            page.locator("#last-result").get_by_text(f"Test {k}:").wait_for()
        assert page.locator("#htmx-problem").inner_text() == ""
        page.check("#obj-1")
        page.click("#test-button")
        page.locator("#htmx-problem").get_by_text("Too many requests").wait_for()
        assert page.locator("#last-result").inner_text().startswith("Test 3:")
        assert page.get_by_role("heading", name="Your tests (3 of 16)").is_visible()
        ctx.close()
