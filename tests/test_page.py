"""The history page (`playbook timeline --html`, `playbook serve`) in a real headless Chromium.

The browser is the distribution's Chromium driven through its chromedriver by Selenium (no
driver download). Screenshots of each view go to $PLAYBOOK_PAGE_ARTIFACTS (default: a
temporary directory); `docs/timeline.png` is one of them.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import shutil
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from eventlog.commands import ModelCall, RecordModelCalls
from eventlog.decide import ApplyOperations, Evaluate
from eventlog.domain import PlaybookState
from eventlog.events import Cause, Event, KeyPointAdded, ModelCallRecorded
from eventlog.evolve import apply_transaction
from eventlog.registry import touched_names
from eventlog.store import LogReader
from playbook.commands.audit import revert
from playbook.commands.cli import main
from playbook.rendering.page import write_page
from playbook.commands.serve import make_server
from projections.pagedata import build, safe_json
from projections.prices import estimate
from projections.repository import PlaybookRepository
from projections.timeline import Timeline

from .pagelog import HOSTILE, build_history

CHROMIUM, CHROMEDRIVER = shutil.which("chromium"), shutil.which("chromedriver")
webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed (pip install -e '.[test]')")
from selenium.webdriver.chrome.options import Options  # noqa: E402
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not (CHROMIUM and CHROMEDRIVER),
                                reason="chromium and chromedriver are not installed (apt-get install chromium chromium-driver)")]
SMALL_CHUNKS = 12
"""Events per chunk in these tests: the history spans several chunks, so keyframes and paging are exercised."""


# --- the browser and the project -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def browser() -> Iterator[webdriver.Chrome]:
    options = Options()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--window-size=1400,1000", "--hide-scrollbars"):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_script_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory) -> Path:
    target = os.environ.get("PLAYBOOK_PAGE_ARTIFACTS")
    path = Path(target) if target else tmp_path_factory.mktemp("page-screenshots")
    path.mkdir(parents=True, exist_ok=True)
    return path


class Project:
    def __init__(self, root: Path, repo: PlaybookRepository, tx: dict[str, str], page: Path) -> None:
        self.root, self.repo, self.tx, self.page = root, repo, tx, page

    def index_of(self, label: str) -> int:
        """The global index of the transaction `label` (0 = the first)."""
        return [ref.commit.tx for ref in Timeline(self.repo).refs].index(self.tx[label])


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Project:
    root = tmp_path_factory.mktemp("page-project") / "demo"
    repo = PlaybookRepository(root / ".claude")
    with pytest.MonkeyPatch.context() as patch:
        tx = build_history(repo, patch)
        tx["revert"] = revert(repo, tx["delete"]).committed.commit.tx
    page = root / "history.html"
    write_page(repo, page, chunk_events=SMALL_CHUNKS)
    return Project(root, repo, tx, page)


def console_problems(driver) -> list[dict]:
    return [entry for entry in driver.get_log("browser") if entry["level"] not in ("INFO", "DEBUG")]


def open_page(driver, url: str) -> None:
    driver.get_log("browser")  # drop what earlier pages said
    driver.get(url)
    deadline = time.monotonic() + 20
    while not driver.execute_script("return document.body && document.body.getAttribute('data-ready')"):
        assert time.monotonic() < deadline, f"the page never got ready; console: {driver.get_log('browser')}"
        time.sleep(0.02)


def playbook_shown(driver) -> dict[str, list[tuple[str, str, int, int]]]:
    """What the playbook panel shows: per section, its key points in order."""
    return driver.execute_script("""
        const out = {};
        for (const sec of document.querySelectorAll('#playbook .sec')) {
          out[sec.getAttribute('data-section')] = Array.from(sec.querySelectorAll('.kp'), (row) => {
            const [h, x] = Array.from(row.querySelectorAll('.cnt span'), (s) => Number(s.textContent.split('=')[1]));
            return [row.getAttribute('data-name'), row.querySelector('.kp-text').textContent, h, x];
          });
        }
        return out;""")


def as_shown(state: PlaybookState) -> dict[str, list[list]]:
    return {section: [[kp.name, kp.text, kp.helpful, kp.harmful] for kp in entries.values()]
            for section, entries in state.sections.items() if entries}


def prefix_states(repo: PlaybookRepository) -> list[list[list[list]]]:
    """The playbook after each number of transactions, by the real fold (0: before any)."""
    state, states = PlaybookState(), []
    states.append([[] for _ in state.sections])
    for transaction in LogReader(repo.log_path):
        apply_transaction(state, transaction.events, transaction.commit.seq, transaction.commit.at)
        states.append([[[kp.name, kp.text, kp.helpful, kp.harmful] for kp in entries.values()]
                       for entries in state.sections.values()])
    return states


def click(driver, element) -> None:
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", element)
    element.click()


def shoot(driver, artifacts: Path, name: str) -> Path:
    path = artifacts / f"{name}.png"
    assert driver.save_screenshot(str(path)), f"no screenshot {path}"
    return path


# --- the page as a file --------------------------------------------------------------------------------------


def test_the_page_loads_from_file_with_no_console_error_and_no_request(browser, project, artifacts):
    open_page(browser, project.page.as_uri())
    assert console_problems(browser) == []
    # Nothing left the page: no resource was fetched, and the policy forbids it.
    assert browser.execute_script("return performance.getEntriesByType('resource').length") == 0
    html = project.page.read_text(encoding="utf-8")
    assert "connect-src 'none'" in html and "default-src 'none'" in html
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html)
    cards = browser.find_elements(By.CSS_SELECTOR, "#txlist .tx")
    newest = [ref.commit.tx for ref in Timeline(project.repo).refs][::-1]
    assert [card.get_attribute("data-tx") for card in cards] == newest[: len(cards)]
    assert "revert" in cards[0].text.lower()
    assert playbook_shown(browser) == as_shown(project.repo.state())
    shoot(browser, artifacts, "timeline")


def test_moving_to_an_old_point_shows_that_points_key_points(browser, project, artifacts):
    open_page(browser, project.page.as_uri())
    timeline = Timeline(project.repo)
    point = project.index_of("merge") + 1  # just after the merge
    browser.execute_script("const s = document.getElementById('slider'); s.value = arguments[0];"
                           "s.dispatchEvent(new Event('input'));", str(point))
    expected = as_shown(timeline.state_at(timeline.resolve(project.tx["merge"])))
    deadline = time.monotonic() + 10
    while playbook_shown(browser) != expected:
        assert time.monotonic() < deadline, (playbook_shown(browser), expected)
        time.sleep(0.05)
    assert "pref-001" in str(expected) and "ctx-001" not in str(expected)  # before the cycles, before the delete
    label = browser.find_element(By.ID, "point-label").text
    assert f"{point} of" in label and "s-3" in label
    shoot(browser, artifacts, "old-point")
    # Clicking a transaction in the list moves there too: the delete's card shows the playbook without pref-001.
    click(browser, browser.find_element(By.CSS_SELECTOR, f".tx[data-tx='{project.tx['delete']}']"))
    deadline = time.monotonic() + 10
    while "pref-001" in str(playbook_shown(browser)):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert playbook_shown(browser) == as_shown(timeline.state_at(timeline.resolve(project.tx["delete"])))
    assert console_problems(browser) == []


def test_the_playbook_at_every_point_equals_the_fold(browser, project):
    open_page(browser, project.page.as_uri())
    shown = browser.execute_async_script("""
        const done = arguments[arguments.length - 1], page = window.playbookPage, out = [];
        (async () => { for (let p = 0; p <= page.transactions; p++) out.push(await page.stateAt(p)); return out; })()
          .then(done, (e) => done(String(e)));""")
    assert shown == prefix_states(project.repo)
    assert json.loads(project.page.read_text().split('id="pb-head">')[1].split("</script>")[0])["chunks"][1:], \
        "the history must span several chunks for this test to mean anything"


def test_a_key_points_history_lists_its_events_in_order(browser, project, artifacts):
    open_page(browser, project.page.as_uri())
    browser.find_element(By.CSS_SELECTOR, "#playbook a.kp-name[data-name='pat-003']").click()
    deadline = time.monotonic() + 10
    while not browser.find_elements(By.CSS_SELECTOR, "#history .hist-item"):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    items = browser.execute_script("""return Array.from(document.querySelectorAll('#history .hist-item'),
        (li) => [li.getAttribute('data-entry'), li.getAttribute('data-kind'), li.querySelector('.when').textContent]);""")
    shown = [(entry, kind) for entry, kind, _ in items]
    kinds = {"KeyPointAdded": "a", "KeyPointImported": "i", "KeyPointUpdated": "u", "KeyPointsMerged": "m",
             "KeyPointDeleted": "d", "KeyPointPruned": "p", "KeyPointEvaluated": "e", "CountersSet": "c",
             "KeyPointMoved": "v"}
    expected = [(item.entry, kinds[type(item.event).__name__]) for item in Timeline(project.repo).history("pat-003")
                if isinstance(item.event, Event) and touched_names(item.event)]
    assert shown == expected
    # the merge's sources come first, then the merge, then the ratings in time order
    assert shown[:7] == [("pat-001", "a"), ("pat-001", "e"), ("pat-001", "u"), ("pat-001", "m"),
                         ("pat-002", "a"), ("pat-002", "m"), ("pat-003", "m")]
    text = browser.find_element(By.ID, "history").text
    assert "created by merging pat-001, pat-002" in text
    assert browser.find_elements(By.CSS_SELECTOR, "#history svg.counters path")  # the counters chart
    assert browser.find_element(By.CSS_SELECTOR, "#history .diff ins").text  # the re-wording as a diff
    for entry in ("pat-001", "pat-002", "pat-003"):  # each entry's own events in time order
        times = [at for name, _, at in items if name == entry]
        assert times == sorted(times) and times
    shoot(browser, artifacts, "history")
    # who deleted pref-001 and why
    browser.execute_script("document.querySelector('#history .back').click()")
    browser.find_element(By.CSS_SELECTOR, "#playbook a.kp-name[data-name='pref-001']").click()
    deadline = time.monotonic() + 10
    while "deleted by" not in browser.find_element(By.ID, "history").text:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    text = browser.find_element(By.ID, "history").text
    assert "deleted by learning (session s-late): the user writes US English" in text
    assert console_problems(browser) == []


def test_filters_and_search_find_transactions_across_chunks(browser, project):
    open_page(browser, project.page.as_uri())

    def listed() -> list[str]:
        deadline = time.monotonic() + 10
        while True:
            status = browser.find_element(By.ID, "status").text
            if "searching" not in status:
                return [card.get_attribute("data-tx") for card in browser.find_elements(By.CSS_SELECTOR, "#txlist .tx")]
            assert time.monotonic() < deadline
            time.sleep(0.05)

    def set_value(element_id: str, value: str, event: str) -> None:
        browser.execute_script("const e = document.getElementById(arguments[0]); e.value = arguments[1];"
                               "e.dispatchEvent(new Event(arguments[2]));", element_id, value, event)
        time.sleep(0.4)

    set_value("search", "us english", "input")
    assert listed() == [project.tx["delete"]]
    set_value("search", "", "input")
    set_value("f-cause", "import", "change")
    assert listed() == [project.tx["import"]]
    set_value("f-cause", "manual", "change")
    assert listed() == [project.tx["manual"]]
    set_value("f-cause", "", "change")
    set_value("f-session", "s-2", "input")
    assert listed() == [project.tx["second"], project.tx["request"]]
    set_value("f-session", "", "input")
    set_value("f-section", "2", "change")  # USER PREFERENCES: added, deleted, restored by the revert
    assert listed() == [project.tx["revert"], project.tx["delete"], project.tx["first"]]
    assert console_problems(browser) == []


def test_the_summary_shows_sections_and_ratings_over_time(browser, project, artifacts):
    open_page(browser, project.page.as_uri())
    browser.find_element(By.ID, "tab-summary").click()
    summary = browser.find_element(By.ID, "summary")
    assert "Key points per section over time" in summary.text and "Helpful and harmful" in summary.text
    assert len(summary.find_elements(By.CSS_SELECTOR, "svg.sections path")) == 5
    assert not browser.find_elements(By.ID, "cost")  # no usage recorded: no cost section
    shoot(browser, artifacts, "summary")
    assert console_problems(browser) == []


def test_texts_from_the_log_are_only_ever_text(browser, project, artifacts):
    open_page(browser, project.page.as_uri())
    browser.execute_script("const e = document.getElementById('search'); e.value = 'script';"
                           "e.dispatchEvent(new Event('input'));")
    hostile = project.index_of("hostile") + 1
    browser.execute_script("const s = document.getElementById('slider'); s.value = arguments[0];"
                           "s.dispatchEvent(new Event('input'));", str(hostile))
    time.sleep(0.5)
    assert HOSTILE in browser.find_element(By.ID, "playbook").text.replace("\n", "")
    browser.find_element(By.CSS_SELECTOR, "#playbook a.kp-name[data-name='oth-001']").click()
    time.sleep(0.5)
    assert browser.execute_script("return window.__pwned") is None
    assert browser.execute_script("return document.querySelectorAll('img').length") == 0
    # exactly the page's own script element ran; the data's are JSON
    assert browser.execute_script(
        "return Array.from(document.scripts).filter((s) => s.type !== 'application/json').length") == 1
    assert HOSTILE in browser.find_element(By.ID, "txlist").text
    assert HOSTILE in browser.find_element(By.ID, "history").text.replace("\n", "")
    shoot(browser, artifacts, "hostile-text")
    assert console_problems(browser) == []


def test_embedded_json_cannot_close_its_script_element():
    text = '</script><script>alert(1)</script><!-- & \u2028'
    encoded = safe_json({"t": text})
    assert b"<" not in encoded and b">" not in encoded and b"&" not in encoded and "\u2028".encode() not in encoded
    assert json.loads(encoded) == {"t": text}


# --- serve ------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def served(project) -> Iterator[str]:
    server = make_server(project.repo, 0, chunk_events=SMALL_CHUNKS)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        host, port = server.server_address[:2]
        assert host == "127.0.0.1"
        yield f"http://127.0.0.1:{port}/"
    finally:
        server.shutdown()
        server.server_close()


def request(url: str, method: str = "GET", host: str | None = None) -> tuple[int, bytes]:
    address = url.split("//")[1].split("/")[0]
    connection = http.client.HTTPConnection(address, timeout=10)
    headers = {"Host": host} if host else {}
    path = "/" + url.split("//")[1].split("/", 1)[1]
    connection.request(method, path, headers=headers)
    reply = connection.getresponse()
    return reply.status, reply.read()


def test_serve_answers_the_page_and_its_chunks_read_only_on_loopback(served, project):
    status, page = request(served)
    assert status == 200 and b'data-source="server"' in page
    assert b"connect-src 'self'" in page
    head = json.loads(page.split(b'id="pb-head">')[1].split(b"</script>")[0])
    assert len(head["chunks"]) > 1
    assert page.count(b'type="application/json" id="pb-chunk-') == 1  # the newest; the rest on demand
    status, chunk = request(served + "data/chunk/0")
    assert status == 200 and json.loads(chunk)["first"] == 0
    assert request(served + "data/chunk/999")[0] == 404
    assert request(served + "data/chunk/0", "HEAD") == (200, b"")
    assert request(served, "POST")[0] == 501
    assert request(served, "DELETE")[0] == 501
    assert request(served, host="evil.example")[0] == 403  # DNS rebinding
    assert request(served + "../.claude/playbook.events.jsonl")[0] == 404


def test_the_served_page_fetches_older_chunks_and_agrees_with_the_file(browser, served, project, artifacts):
    open_page(browser, served)
    assert console_problems(browser) == []
    shown = browser.execute_async_script("""
        const done = arguments[arguments.length - 1], page = window.playbookPage;
        Promise.all([page.stateAt(0), page.stateAt(3), page.stateAt(page.transactions)]).then(done, (e) => done(String(e)));""")
    states = prefix_states(project.repo)
    assert shown == [states[0], states[3], states[-1]]
    history = browser.execute_async_script(
        "const done = arguments[arguments.length - 1]; window.playbookPage.history('pat-003').then(done);")
    assert [entry for entry, _, _ in history][:5] == ["pat-001", "pat-001", "pat-001", "pat-001", "pat-002"]
    assert browser.execute_script("return performance.getEntriesByType('resource').length") > 0
    assert console_problems(browser) == []


def test_serve_picks_up_new_transactions(project, tmp_path):
    shutil.copytree(project.root / ".claude", tmp_path / ".claude")
    repo = PlaybookRepository(tmp_path / ".claude")
    server = make_server(repo, 0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/"
        before = request(url)[1]
        repo.append([Evaluate([{"name": "pat-003", "rating": "helpful"}])], Cause(source="hook:SessionEnd", session="s-new"))
        after = request(url)[1]
    finally:
        server.shutdown()
        server.server_close()
    count = lambda page: json.loads(page.split(b'id="pb-head">')[1].split(b"</script>")[0])["transactions"]  # noqa: E731
    assert count(after) == count(before) + 1 and b"s-new" in after


# --- the command line ------------------------------------------------------------------------------------


def test_timeline_html_writes_the_page_and_reports_bad_targets(project, tmp_path, capsys):
    target = tmp_path / "page.html"
    assert main(["timeline", "--project", str(project.root), "--html", str(target)]) == 0
    assert "wrote" in capsys.readouterr().out
    html = target.read_text(encoding="utf-8")
    assert html.startswith("<!doctype html>") and 'id="pb-head"' in html
    assert main(["timeline", "--project", str(project.root), "--html", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("playbook: ") and err.count("\n") == 1 and "directory" in err
    assert main(["timeline", "--project", str(project.root), "--html", str(tmp_path / "no" / "such" / "p.html")]) == 1
    assert capsys.readouterr().err.count("\n") == 1


def test_serve_rejects_a_bad_port(capsys):
    with pytest.raises(SystemExit) as exit:
        main(["serve", "--port", "70000"])
    assert exit.value.code == 2
    assert "not a port number" in capsys.readouterr().err


def test_an_empty_log_gives_a_page_with_an_empty_playbook(browser, tmp_path):
    repo = PlaybookRepository(tmp_path / "empty" / ".claude")
    page = tmp_path / "empty.html"
    write_page(repo, page)
    open_page(browser, page.as_uri())
    assert "empty" in browser.find_element(By.ID, "playbook").text
    assert console_problems(browser) == []


def test_page_data_comes_from_one_pass_in_chunks(project):
    data = build(project.repo.log_path, chunk_events=SMALL_CHUNKS)
    refs = Timeline(project.repo).refs
    assert data.head.transactions == len(refs)
    assert sum(chunk.count for chunk in data.head.chunks) == len(refs)
    assert [chunk.first for chunk in data.head.chunks] == sorted({chunk.first for chunk in data.head.chunks})
    states = prefix_states(project.repo)
    assert len(data.head.summary) == len(refs)  # a short log: every transaction is a sample
    for point in data.head.summary:  # the running sums and counts equal the fold's, after every transaction
        state = states[point.tx + 1]
        assert point.per_section == [len(entries) for entries in state]
        assert (point.helpful, point.harmful) == (sum(e[2] for entries in state for e in entries),
                                                  sum(e[3] for entries in state for e in entries))
    assert data.head.usage == []
    added = [e for ref in refs for e in Timeline(project.repo).transaction(ref.commit.tx).events
             if isinstance(e, KeyPointAdded)]
    assert added  # the log has the changes the page shows


def test_usage_events_give_a_cost_per_day_and_the_page_shows_it(browser, project, tmp_path):
    shutil.copytree(project.root / ".claude", tmp_path / "used" / ".claude")
    repo = PlaybookRepository(tmp_path / "used" / ".claude")
    # One call whose backend reported its cost, one priced by the table: sonnet, 800 + 200 cache read in, 100 out.
    calls = [ModelCall(role="reflector", model="claude-opus-5-5", backend="api", attempt=1, outcome="ok",
                       input_tokens=1200, output_tokens=300, cost_usd=0.0081),
             ModelCall(role="curator", model="claude-sonnet-5-5", backend="api", attempt=1, outcome="ok",
                       input_tokens=800, output_tokens=100, cache_read_input_tokens=200)]
    committed = repo.append([RecordModelCalls(calls)], Cause(source="hook:SessionEnd", session="s-used"))
    assert committed is not None and [type(e) for e in committed.events] == [ModelCallRecorded] * 2
    day = committed.commit.at[:10]
    page = tmp_path / "usage.html"
    write_page(repo, page)
    head = json.loads(page.read_text().split('id="pb-head">')[1].split("</script>")[0])
    table = estimate("claude-sonnet-5-5", 800, 100, cache_read=200)
    assert table == (800 * 3.00 + 100 * 15.00 + 200 * 0.30) / 1e6
    assert head["usage"] == [[day, 2, 2200, 400, pytest.approx(0.0081 + table)]]
    open_page(browser, page.as_uri())
    browser.find_element(By.ID, "tab-summary").click()
    cost = browser.find_element(By.ID, "cost").text
    assert day in cost and "2,200" in cost and f"{0.0081 + table:.4f}" in cost
    assert console_problems(browser) == []


def test_the_summary_keeps_a_bounded_evenly_spaced_sample_ending_at_the_last_transaction(project, monkeypatch):
    from projections import pagedata

    monkeypatch.setattr(pagedata, "SUMMARY_POINTS", 4)
    summary = build(project.repo.log_path).head.summary
    indexes = [point.tx for point in summary]
    transactions = len(Timeline(project.repo).refs)
    assert len(summary) <= 2 * 4 + 1 and indexes[-1] == transactions - 1 and indexes[0] == 0
    steps = {b - a for a, b in zip(indexes[:-2], indexes[1:-1])}
    assert len(steps) == 1  # evenly spaced, but for the last


def test_the_list_shows_the_newest_first_and_pages_in_older_ones(browser, tmp_path):
    repo = PlaybookRepository(tmp_path / "long" / ".claude")
    repo.append([ApplyOperations([{"type": "ADD", "section": "OTHERS", "text": "Keep it short"}])],
                Cause(source="hook:SessionEnd", session="s-0"))
    for k in range(1, 95):
        repo.append([Evaluate([{"name": "oth-001", "rating": "helpful", "rationale": f"round {k}"}])],
                    Cause(source="hook:SessionEnd", session=f"s-{k}"))
    page = tmp_path / "long.html"
    write_page(repo, page, chunk_events=SMALL_CHUNKS)
    open_page(browser, page.as_uri())
    sessions = lambda: browser.execute_script(  # noqa: E731
        "return Array.from(document.querySelectorAll('#txlist .tx .meta'), (m) => m.textContent)"
        ".filter((t) => t.startsWith('session '))")
    first = sessions()
    assert first[0] == "session s-94" and 0 < len(first) < 95
    for _ in range(10):
        if not browser.find_element(By.ID, "more").is_displayed():
            break
        click(browser, browser.find_element(By.ID, "more"))
        time.sleep(0.3)
    assert not browser.find_element(By.ID, "more").is_displayed()  # nothing older left
    assert sessions() == [f"session s-{k}" for k in range(94, -1, -1)]
    assert console_problems(browser) == []


def test_value_measurements_give_the_page_a_table_of_the_playbooks_worth(browser, project, tmp_path):
    from eventlog.decide import RecordValue

    shutil.copytree(project.root / ".claude", tmp_path / "valued" / ".claude")
    repo = PlaybookRepository(tmp_path / "valued" / ".claude")
    for with_score, without in ((0.6, 0.5), (0.85, 0.4)):
        repo.append([RecordValue({"cases": 15, "runs": 1, "with_score": with_score, "without_score": without,
                                  "cost_usd": 3.1})], Cause(source="cli:eval"))
    page = tmp_path / "value.html"
    write_page(repo, page)
    open_page(browser, page.as_uri())
    browser.find_element(By.ID, "tab-summary").click()
    rows = [row.text for row in browser.find_element(By.ID, "value").find_elements(By.TAG_NAME, "tr")]
    assert len(rows) == 3 and rows[1].endswith("15 0.60 0.50 +0.10 3.10") and rows[2].endswith("+0.45 3.10"), rows
    assert console_problems(browser) == []
