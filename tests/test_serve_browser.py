"""`causalplay serve` in a real browser: Playwright drives headless Chromium (Debian's /usr/bin/chromium) through
whole sessions: with the keyboard only (every response recorded, the export checked row by row), through lost
answers and a restarted server, on a second device, with abandoned sessions, and on a 390 px wide phone screen.
Every server binds 127.0.0.1; every wait is bounded (Playwright's default 30 s timeout, or less)."""

import os
import re
import shutil
import time

import pytest

pytest.importorskip("playwright")
pytest.importorskip("fastapi")

from serve_server import TOKEN, Server, write_study  # noqa: E402

CHROMIUM = os.environ.get("CAUSALPLAY_CHROMIUM", "/usr/bin/chromium")
pytestmark = pytest.mark.skipif(shutil.which(CHROMIUM) is None,
                                reason=f"no Chromium at {CHROMIUM} (make system-deps installs Debian's chromium)")
PHONE = {"width": 390, "height": 844}


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


def rows(db: str, sql: str) -> list:
    import sqlite3

    con = sqlite3.connect(db.removeprefix("sqlite:///"))
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def htmx_idle(page):
    """Wait until htmx has no request in flight and has finished swapping and settling."""
    page.wait_for_function("!document.querySelector('.htmx-request, .htmx-swapping, .htmx-settling')")


def play(page, url, pid, tests, n_blickets, answer, rule):
    """One participant with the keyboard only (focus + Space/Enter/Tab/typing); returns the results announced."""
    from playwright.sync_api import expect

    page.goto(f"{url}/?PROLIFIC_PID={pid}")
    page.get_by_label("I have read the information above and agree to take part.").focus()
    page.keyboard.press("Space")
    page.keyboard.press("Tab")  # -> Start
    page.keyboard.press("Enter")
    page.wait_for_url("**/check")
    code = page.locator("#resume-code").inner_text()
    page.get_by_label("By putting objects on the machine and pressing Test").focus()
    page.keyboard.press("Space")
    page.get_by_label("Number of blickets").focus()
    page.keyboard.type(str(n_blickets))
    page.get_by_label(re.compile("Whenever I am ready")).focus()
    page.keyboard.press("Space")
    page.get_by_role("button", name="Continue").focus()
    page.keyboard.press("Enter")
    page.wait_for_url("**/practice")
    # the practice: object 2 on the machine (Tab from object 1), Test, then on to the study
    page.focus("#obj-0")
    for key in ("Tab", "Space", "Tab", "Tab", "Enter"):
        page.keyboard.press(key)
    page.locator("#last-result").get_by_text("Test 1:").wait_for()
    htmx_idle(page)  # the text shows mid-swap; a key pressed before htmx settles can land on a replaced button
    page.get_by_role("button", name="Start the study").focus()
    page.keyboard.press("Enter")
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
        expect(page.locator("#obj-0")).to_be_focused()
        seen.append("lit up" in status.inner_text() and "did not" not in status.inner_text())
    htmx_idle(page)
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
    return seen, page.locator("#truth").inner_text(), code


def begin(page, url, pid, practice=False):
    """Consent and comprehension check with clicks; returns the resume code shown."""
    page.goto(f"{url}/?PROLIFIC_PID={pid}")
    page.get_by_label("I have read the information above and agree to take part.").check()
    page.get_by_role("button", name="Start").click()
    page.wait_for_url("**/check")
    code = page.locator("#resume-code").inner_text()
    n = page.locator("#n-blickets").inner_text()
    page.get_by_label("By putting objects on the machine and pressing Test").check()
    page.get_by_label("Number of blickets").fill(n)
    page.get_by_label(re.compile("Whenever I am ready")).check()
    page.get_by_role("button", name="Continue").click()
    page.wait_for_url("**/practice" if practice else "**/task")
    return code


def run_one(page, k, on):
    """Test ``k``: tick ``on`` and press Test; whether the machine lit."""
    for i in on:
        page.check(f"#obj-{i}")
    page.click("#test-button")
    page.locator("#last-result").get_by_text(f"Test {k}:").wait_for()
    return "did not light up" not in page.locator("#last-result").inner_text()


def finish(page, blickets=(0, 1), rule="disjunctive"):
    page.get_by_role("link", name="I am ready to answer").click()
    for i in blickets:
        page.get_by_label(f"Object {i + 1} is a blicket").check()
    page.get_by_label(re.compile("at least one blicket" if rule == "disjunctive" else "at least two")).check()
    page.get_by_role("button", name="Submit my answer").click()
    page.wait_for_url("**/debrief")


def test_browser_sessions_truth_hidden_and_export_row_by_row(browser, tmp_path):
    from causalplay.data import load_trials
    from causalplay.serve.store import export_trials

    db = f"sqlite:///{tmp_path / 'b.db'}"
    logs, codes = {}, {}
    study = write_study(tmp_path / "s.toml", raw_ids=True)
    with Server(db, "nexiom", 5, None, "--study", str(study)) as srv:
        # Two participants whose tests light the same way in every Nexiom world (all 4 objects: lit; nothing:
        # not lit): with nothing of the world in any page, their responses before the judgement are identical.
        for pid in ("PWA", "PWB"):
            ctx = browser.new_context()
            page = ctx.new_page()
            log = logs[pid] = []
            record_all(page, log)
            *_, codes[pid] = play(page, srv.url, pid, [(0, 1, 2, 3), ()], 2, (0, 1), "disjunctive")
            page.unroute_all(behavior="ignoreErrors")  # requests still loading (the favicon) are not recorded
            ctx.close()
        # A third with varied tests, checked against the export.
        ctx = browser.new_context()
        page = ctx.new_page()
        record_all(page, logs.setdefault("PWC", []))
        tests = [(0,), (1,), (0, 1), (2, 3), (1, 3)]
        seen, truth_text, codes["PWC"] = play(page, srv.url, "PWC", tests, 2, (1, 3), "conjunctive")
        page.unroute_all(behavior="ignoreErrors")
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
            # the participant's own resume code and id, not the world; the random code first, since it
            # can contain the id's letters (a code like XDZV-UCPWA would otherwise keep half of itself)
            for pid, code in codes.items():
                body = body.replace(code.encode(), b"C").replace(pid.encode(), b"PID")
                url = url.replace(code, "C").replace(pid, "PID")
            out.append((method, url, status, body))
        return out

    # no response before the judgement names the truth in any form the server knows it by
    for pid in ("PWA", "PWB", "PWC"):
        for _, url, _, body in before_judgement(logs[pid]):
            for marker in (b"true_blickets", b"rule_idx", b"The blickets were", b"blickets were on it",
                           b"episode_seed"):
                assert marker not in body, (pid, url, marker)
    a, b = before_judgement(logs["PWA"]), before_judgement(logs["PWB"])
    assert len(a) >= 10 and all(s < 400 for _, _, s, _ in a)
    assert sum(u.endswith("/test") and m == "POST" for m, u, _, _ in a) == 3  # the htmx calls, practice too
    # (the browser loads the page's CSS and scripts in either order, so the records are compared as sets)
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
    t = d.tests[d.tests["participant"] == "PWC"]
    assert list(t["test"]) == [1, 2, 3, 4, 5]  # the practice test is not among them
    assert [tuple(o) for o in t["objects_on"]] == tests
    want = [len(set(on) & set(truth)) >= (1 if rule == "disjunctive" else 2) for on in tests]
    assert list(t["lit"]) == want == seen  # what the page announced = what was stored = the rule on the truth
    assert (t["seconds_since_previous"].astype(float) >= 0).all() and P.loc["PWC", "round_seconds"] > 0


def test_browser_lost_answers_and_a_restarted_server(browser, tmp_path):
    db = f"sqlite:///{tmp_path / 'l.db'}"
    args = ("--study", str(write_study(tmp_path / "s.toml", practice=False, raw_ids=True)))
    srv = Server(db, "nexiom", 0, None, *args).start()
    try:
        page = browser.new_context().new_page()
        begin(page, srv.url, "LOST1")

        def reset_after_storing(route):  # the server stores the test; its answer is lost (connection reset)
            route.fetch()
            route.abort("connectionreset")

        # 1. the answer to test 1 is lost: the page says so and re-syncs by itself, showing the stored outcome
        page.route("**/test", reset_after_storing)
        for i in range(4):
            page.check(f"#obj-{i}")
        page.click("#test-button")
        page.locator("#htmx-problem").get_by_text("your last test may not have arrived").wait_for(timeout=10_000)
        page.locator("#last-result").get_by_text("Connected again").wait_for(timeout=10_000)
        assert re.search(r"Test 1: .* the machine lit up", page.locator("#last-result").inner_text())
        assert rows(db, "select count(*) from tests")[0][0] == 1
        # 2. the answer to test 2 is lost and so is every re-sync; the participant presses Test again (another
        # choice): nothing more is stored, and the page shows test 2 as the server has it
        page.route("**/panel", lambda route: route.abort("connectionreset"))
        page.check("#obj-0")
        page.click("#test-button")
        page.locator("#htmx-problem").get_by_text("may not have arrived").wait_for(timeout=10_000)
        page.unroute("**/test")
        page.check("#obj-3")
        page.click("#test-button")
        page.locator("#last-result").get_by_text("Test 2 had already reached the server").wait_for(timeout=10_000)
        assert re.search(r"Test 2: Object 1 \u2192 the machine", page.locator("#last-result").inner_text())
        assert rows(db, "select test, objects_on from tests") == [(1, "0 1 2 3"), (2, "0")]
        page.unroute("**/panel")
        # 3. the server is down when test 3 is sent: a message, and once it is back the page re-syncs itself
        srv.stop()
        page.check("#obj-2")
        page.click("#test-button")
        page.locator("#htmx-problem").get_by_text("No answer from the server").wait_for(timeout=10_000)
        srv = Server(db, "nexiom", 0, srv.port, *args).start()
        page.locator("#last-result").get_by_text("Connected again").wait_for(timeout=30_000)
        assert rows(db, "select count(*) from tests")[0][0] == 2  # test 3 never arrived; the page is at test 3
        assert run_one(page, 3, (1,)) is not None
        finish(page)
        assert [r[0] for r in rows(db, "select objects_on from tests order by test")] == ["0 1 2 3", "0", "1"]
    finally:
        srv.stop()


def test_browser_resume_on_a_second_device(browser, tmp_path):
    db = f"sqlite:///{tmp_path / 'r.db'}"
    with Server(db, "nexiom", 0, None, "--study", str(write_study(tmp_path / "s.toml", practice=False))) as srv:
        a = browser.new_context().new_page()
        code = begin(a, srv.url, "DEV1")
        run_one(a, 1, (0,))
        run_one(a, 2, (1, 2))
        b = browser.new_context().new_page()  # another device, no cookie
        b.goto(f"{srv.url}/?PROLIFIC_PID=DEV1")
        assert b.get_by_text("already started the study").is_visible()
        b.get_by_label("Resume code").fill("WRONG123")
        b.get_by_role("button", name="Continue").click()
        assert b.get_by_text("do not match").is_visible()
        assert b.get_by_label("Participant ID").input_value() == "DEV1"
        b.get_by_label("Resume code").fill(code.lower())
        b.get_by_role("button", name="Continue").click()
        b.wait_for_url("**/task")
        assert b.get_by_role("heading", name="Your tests: 2 of 16").is_visible()
        assert b.locator("#last-result").inner_text().startswith("Test 2: Object 2, Object 3")
        run_one(b, 3, (3,))
        # the first device's session has ended: its next test is refused with a way back
        a.check("#obj-0")
        a.click("#test-button")
        a.locator("#htmx-problem").get_by_text("continued on another device").wait_for()
        finish(b)
    assert [r[0] for r in rows(db, "select objects_on from tests order by test")] == ["0", "1 2", "3"]


def test_browser_study_file_abandoned_sessions_and_balanced_completions(browser, tmp_path):
    from causalplay.data import load_trials
    from causalplay.serve.store import export_trials

    db = f"sqlite:///{tmp_path / 'a.db'}"
    study = write_study(tmp_path / "s.toml", title="Lights study", researcher="Dr Ada Example",
                        contact="ada@example.org", ethics="Approved by Board 7 (ref 2026-01).",
                        consent="We study *learning*.\n\n- you may stop at any time", debrief="## Why\n\nThanks!",
                        completion_code="CPL-77", practice=False, timeout_minutes=0.3, conditions=[
                            {"label": lab, "rule": r, "blickets": b} for lab, r, b in (
                                ("D01", "disjunctive", [0, 1]), ("D23", "disjunctive", [2, 3]),
                                ("C01", "conjunctive", [0, 1]), ("C23", "conjunctive", [2, 3]))])
    with Server(db, "", 4, None, "--study", str(study)) as srv:
        first = browser.new_context().new_page()
        first.goto(f"{srv.url}/?PROLIFIC_PID=AB1")
        for text in ("Lights study", "Dr Ada Example", "ada@example.org", "Board 7", "you may stop at any time",
                     "a coded ID instead"):
            assert first.get_by_text(text).first.is_visible(), text
        assert first.locator("em", has_text="learning").count() == 1
        # two participants start and leave; two others complete
        for pid in ("AB1", "AB2"):
            begin(browser.new_context().new_page(), srv.url, pid)
        idle_from = time.monotonic()
        for pid in ("OK3", "OK4"):
            page = browser.new_context().new_page()
            begin(page, srv.url, pid)
            run_one(page, 1, (0, 2))
            finish(page)
            assert page.locator("#completion-code").inner_text() == "CPL-77"
            assert page.get_by_role("heading", name="Why").is_visible()
        time.sleep(max(0.0, idle_from + 18.5 - time.monotonic()))  # AB1, AB2 idle past the 18 s timeout: abandoned
        for pid in ("OK5", "OK6"):
            page = browser.new_context().new_page()
            begin(page, srv.url, pid)
            run_one(page, 1, (1, 3))
            finish(page)
        admin = browser.new_context().new_page()
        admin.goto(f"{srv.url}/admin", wait_until="domcontentloaded")
        assert admin.locator("#live").count() == 0  # no token, no dashboard
        admin.set_extra_http_headers({"Authorization": f"Bearer {TOKEN}"})
        admin.goto(f"{srv.url}/admin")
        cells = admin.locator("#per-condition tbody tr").all_inner_texts()
        assert [c.split("\t")[1] for c in cells] == ["D01", "D23", "C01", "C23"]
        assert [c.split("\t")[3] for c in cells] == ["1"] * 4  # completed per condition
        assert sum(int(c.split("\t")[5]) for c in cells) == 2  # abandoned
        admin.set_extra_http_headers({})  # the export link works through the cookie the Bearer login set
        with admin.expect_download() as dl:
            admin.get_by_role("link", name=re.compile("Export completed")).click()
        assert dl.value.path().stat().st_size > 100
    cond = dict(rows(db, "select code, condition from participants"))
    assert sorted(cond[p] for p in ("OK3", "OK4", "OK5", "OK6")) == [0, 1, 2, 3]
    # the abandoned sessions' two conditions went to later participants (OK4 too, if the machine was slow)
    assert {cond["AB1"], cond["AB2"]} <= {cond[p] for p in ("OK4", "OK5", "OK6")} and cond["AB1"] != cond["AB2"]
    export_trials(db, tmp_path / "out")
    d = load_trials(tmp_path / "out", n_objects=4)
    ids = dict(rows(db, "select code, export_id from participants"))
    assert sorted(d.ids) == sorted(ids[p] for p in ("OK3", "OK4", "OK5", "OK6"))  # hashed, not the codes
    assert all(re.fullmatch(r"p[0-9a-f]{16}", i) for i in d.ids)


@pytest.mark.parametrize("task,n_tests", [("nexiom", 12), ("est", 6)])
def test_browser_phone_keeps_the_test_button_in_view(browser, tmp_path, task, n_tests):
    db = f"sqlite:///{tmp_path / 'm.db'}"
    with Server(db, task, 0, None, "--study", str(write_study(tmp_path / "s.toml", practice=False))) as srv:
        page = browser.new_context(viewport=PHONE).new_page()
        begin(page, srv.url, "PHONE1")
        for k in range(1, n_tests + 1):
            run_one(page, k, (k % 4,))
            # after every test the Test button (or, after the last, the answer link) is on screen, and nothing
            # is wider than the phone
            box = page.locator("#test-button" if k < n_tests else "#answer-link").bounding_box()
            assert box["y"] >= 0 and box["y"] + box["height"] <= PHONE["height"], (k, box)
            assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
        # the controls come before the history on a narrow screen
        assert page.locator("#answer-link").bounding_box()["y"] < page.locator("ol.tests").bounding_box()["y"]


def test_browser_shows_refusals_of_htmx_requests(browser, tmp_path):
    # A refused test (here: the rate limit, 429) is announced in the page's alert region, and the stored tests
    # and the panel stay as they were.
    study = write_study(tmp_path / "s.toml", practice=False)
    with Server(f"sqlite:///{tmp_path / 'r.db'}", "nexiom", 0, None, "--rate", "0.01", "--burst", "4",
                "--study", str(study)) as srv:
        page = browser.new_context().new_page()
        begin(page, srv.url, "RL1")  # the check is request 1 of the burst of 4
        for k in (1, 2, 3):
            run_one(page, k, (0,))
        assert page.locator("#htmx-problem").inner_text() == ""
        page.check("#obj-1")
        page.click("#test-button")
        page.locator("#htmx-problem").get_by_text("Too many requests").wait_for()
        assert page.locator("#last-result").inner_text().startswith("Test 3:")
        assert page.get_by_role("heading", name="Your tests: 3 of 16").is_visible()
