"""seam-web against a real seamd, a real seam-web role and a real browser (Debian's chromium,
driven by PyPI's selenium). Screenshots go to $SEAM_SCREENSHOTS (default .build/screenshots).

    SEAM_BIN=.build/debug python -m unittest discover -s Plugins/seam-web/tests
"""
from __future__ import annotations

import json
import os
import pathlib
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.error
import urllib.request

ROOT = pathlib.Path(__file__).resolve().parents[3]
BIN = pathlib.Path(os.environ.get("SEAM_BIN", ROOT / ".build" / "debug")).resolve()
WEB = ROOT / "Plugins" / "seam-web"
SCREENSHOTS = pathlib.Path(os.environ.get("SEAM_SCREENSHOTS", ROOT / ".build" / "screenshots"))
sys.path.insert(0, str(WEB))
import timerforms  # noqa: E402


def message(rule, *args) -> str:
    """What one of the page's rules says of `args` (empty when it takes them)."""
    try:
        rule(*args)
    except timerforms.FormError as e:
        return str(e)
    return ""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(what: str, condition, timeout: float = 10.0, step: float = 0.05):
    deadline = time.monotonic() + timeout
    while True:
        try:
            value = condition()
        except Exception as e:  # an element the page replaced while it was read: read again
            if type(e).__name__ != "StaleElementReferenceException":
                raise
            value = None
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"waited {timeout} s for {what}")
        time.sleep(step)


class Seamd:
    """A seamd with its ticker and the web role, on a temporary directory."""

    def __init__(self, directory: pathlib.Path, port: int):
        self.directory = directory
        self.port = port
        self.config = directory / "config" / "seam"
        self.config.mkdir(parents=True, exist_ok=True)
        (self.config / "seamd.json").write_text(json.dumps({"roles": {"web": {
            "enabled": True, "port": port, "command": [sys.executable, str(WEB / "seam-web")]}}}))
        self.socket = str(pathlib.Path(tempfile.mkdtemp(prefix="seam-web-", dir="/tmp")) / "seamd.sock")
        self.env = dict(os.environ, XDG_CONFIG_HOME=str(directory / "config"), SEAM_SOCKET=self.socket)
        self.env.pop("SEAM_FD", None)
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        with open(self.directory / "seamd.log", "ab") as log:
            self.process = subprocess.Popen([str(BIN / "seamd"), "--data-dir", str(self.directory / "data"), "--socket", self.socket,
                                             "--config", str(self.config / "seamd.json")], env=self.env, stdout=log, stderr=log)
        wait_for("seamd's socket", lambda: os.path.exists(self.socket))
        wait_for("the web role", lambda: self.answers(), timeout=20)

    def answers(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                return True
        except OSError:
            return False

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=15)
        self.process = None

    def seam(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        r = subprocess.run([str(BIN / "seam"), *args], env=self.env, capture_output=True, text=True, timeout=30)
        if check and r.returncode != 0:
            raise AssertionError(f"seam {' '.join(args)}: {r.returncode} {r.stderr}")
        return r

    def rows(self, entity: str) -> list[dict]:
        return json.loads(self.seam("query", entity, "--json").stdout)

    def web_pid(self) -> int:
        status = json.loads(self.seam("status", "--json").stdout)
        return next(r["pid"] for r in status["roles"] if r["role"] == "web")


def request(url: str, method: str = "GET", headers: dict | None = None, body: dict | None = None):
    data = json.dumps(body).encode() if body is not None else None
    r = urllib.request.Request(url, data=data, method=method, headers=dict(headers or {}))
    if body is not None:
        r.add_header("Content-Type", "application/json")
    opener = urllib.request.build_opener(NoRedirect)
    try:
        with opener.open(r, timeout=10) as response:
            return response.status, response.read().decode(), response.headers
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(), e.headers


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


class WebTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.temp = pathlib.Path(tempfile.mkdtemp(prefix="seam-web-tests-"))
        cls.port = free_port()
        cls.seamd = Seamd(cls.temp, cls.port)
        cls.seamd.start()
        cls.url = cls.seamd.seam("web", "--config-dir", str(cls.seamd.config)).stdout.strip()
        cls.token = cls.url.split("token=", 1)[1]
        cls.base = f"http://127.0.0.1:{cls.port}"
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        cls.browser = None

    @classmethod
    def tearDownClass(cls):
        if cls.browser:
            cls.browser.quit()
        cls.seamd.stop()
        shutil.rmtree(cls.temp, ignore_errors=True)

    def open_browser(self):
        if type(self).browser is None:
            from selenium import webdriver
            from selenium.webdriver.chrome.service import Service
            options = webdriver.ChromeOptions()
            options.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
            for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1100,900",
                         "--js-flags=--expose-gc"):
                options.add_argument(flag)
            type(self).browser = webdriver.Chrome(service=Service(shutil.which("chromedriver") or "/usr/bin/chromedriver"), options=options)
            self.browser.get(self.url)
            wait_for("the page live", lambda: self.browser.find_element("id", "status").text == "live")
        return self.browser

    def shot(self, name: str) -> None:
        self.browser.save_screenshot(str(SCREENSHOTS / f"seam-web-{name}.png"))

    # The page re-renders a session's card on every change, so an element found by one call may be
    # gone by the next: what the tests read of a card, and each click, is one script in the page.

    def card(self, uuid: str) -> dict | None:
        """A session's card as the page shows it now: its classes, text and countdown."""
        return self.browser.execute_script("""
            const card = document.querySelector(`.session[data-uuid="${arguments[0]}"]`);
            return card && {classes: card.className, text: card.innerText,
                            countdown: card.querySelector(".countdown").textContent};""", uuid)

    def card_has(self, uuid: str, state: str) -> bool:
        card = self.card(uuid)
        return bool(card) and state in card["classes"].split()

    def click(self, uuid: str, action: str) -> None:
        """Clicks a card's button, waiting for the card to show it."""
        wait_for(f"the {action} button", lambda: self.browser.execute_script("""
            const button = document.querySelector(`.session[data-uuid="${arguments[0]}"] button[data-action="${arguments[1]}"]`);
            if (button) button.click();
            return Boolean(button);""", uuid, action))

    # MARK: - Who may use it

    def test_requests_without_the_token_or_from_elsewhere_are_refused(self):
        self.assertEqual(request(self.base + "/")[0], 401, "no token")
        self.assertEqual(request(self.base + "/events")[0], 401)
        self.assertEqual(request(self.base + "/?token=" + "A" * 43)[0], 401, "a wrong token")
        status, _, headers = request(self.url)
        self.assertEqual(status, 303, "the right token: a cookie, and the address without it")
        self.assertIn("HttpOnly", headers["Set-Cookie"])
        self.assertIn("SameSite=Strict", headers["Set-Cookie"])
        bearer = {"Authorization": f"Bearer {self.token}"}
        self.assertEqual(request(self.base + "/", headers=bearer)[0], 200)
        self.assertEqual(request(self.base + "/", headers={**bearer, "Host": f"rebound.example:{self.port}"})[0], 421, "DNS rebinding")
        status, body, _ = request(self.base + "/api/action", "POST", {**bearer, "Origin": "http://evil.example"}, {"action": "flash", "duration": "5m"})
        self.assertEqual(status, 403, "another origin")
        status, body, _ = request(self.base + "/api/action", "POST", {**bearer, "Sec-Fetch-Site": "cross-site"}, {"action": "flash", "duration": "5m"})
        self.assertEqual(status, 403, "a cross-site request without an Origin")
        self.assertEqual(request(self.base + "/static/../seam-web", headers=bearer)[0], 404)
        # The token file is the user's alone.
        mode = (self.seamd.config / "web-token").stat().st_mode & 0o777
        self.assertEqual(mode, 0o600)

    def test_in_the_browser_a_page_without_the_token_or_of_another_origin_is_refused(self):
        """The same refusals as a browser meets them: the page without its cookie, and a page of
        another origin (another port on this machine) that tries to start a timer, by a script's
        fetch and by a form's plain POST."""
        import functools
        import http.server
        import threading
        browser = self.open_browser()
        other = free_port()
        site = self.temp / "elsewhere"
        site.mkdir(exist_ok=True)
        target = f"{self.base}/api/action"
        (site / "fetch.html").write_text(f"""<!doctype html><title>waiting</title><script>
            fetch("{target}", {{method: "POST", credentials: "include", headers: {{"Content-Type": "application/json"}},
                   body: JSON.stringify({{action: "flash", duration: "7m", name: "Evil fetch"}})}})
              .then(r => document.title = "status " + r.status, e => document.title = "blocked");
            </script>""")
        (site / "form.html").write_text(f"""<!doctype html><title>form</title>
            <form method="POST" action="{target}" enctype="text/plain"><input name='{{"action":"flash","duration":"7m","name":"Evil form","x":"' value='"}}'></form>
            <script>document.forms[0].submit()</script>""")
        class Quiet(http.server.SimpleHTTPRequestHandler):
            def log_message(self, *args):
                pass

        server = http.server.ThreadingHTTPServer(("127.0.0.1", other), functools.partial(Quiet, directory=str(site)))
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            browser.get(f"http://127.0.0.1:{other}/fetch.html")
            wait_for("the cross-origin fetch to end", lambda: browser.title != "waiting")
            self.assertEqual(browser.title, "blocked", "the preflight is refused, so the fetch never happens")
            browser.get(f"http://127.0.0.1:{other}/form.html")
            wait_for("the form's answer", lambda: "refused" in browser.page_source or "token" in browser.page_source)
            self.shot("cross-origin")
            time.sleep(0.5)
            self.assertFalse([s for s in self.seamd.rows("Session") if s["name"].startswith("Evil")])
            # Without its cookie, the page asks for its token.
            browser.get(self.base + "/")
            browser.delete_all_cookies()
            browser.get(self.base + "/")
            self.assertIn("needs its token", browser.page_source)
        finally:
            server.shutdown()
            server.server_close()
            browser.get(self.url)
            wait_for("the page live", lambda: browser.find_element("id", "status").text == "live")

    # MARK: - The page, live

    def test_a_started_timer_appears_within_a_second_and_pause_reaches_the_store(self):
        browser = self.open_browser()
        self.seamd.seam("timer", "add", "Tea", "--step", "Steep=3m", "--step", "Rest=1m")
        started = time.monotonic()
        self.seamd.seam("start", "tea")
        session = next(s for s in self.seamd.rows("Session") if s["name"] == "Tea" and s["state"] == "running")
        wait_for("the session on the page", lambda: self.card(session["uuid"]), timeout=5, step=0.02)
        shown_after = time.monotonic() - started
        self.assertLess(shown_after, 1.0, f"the session appeared {shown_after:.2f} s after seam start")
        self.assertIn("Steep · step 1 of 2", self.card(session["uuid"])["text"])
        self.shot("running")
        self.click(session["uuid"], "pause")
        wait_for("the pause in the store", lambda: any(s["uuid"] == session["uuid"] and s["state"] == "paused" for s in self.seamd.rows("Session")))
        wait_for("the page showing it paused", lambda: self.card_has(session["uuid"], "paused"))
        self.click(session["uuid"], "resume")
        wait_for("resumed in the store", lambda: any(s["uuid"] == session["uuid"] and s["state"] == "running" for s in self.seamd.rows("Session")))
        self.click(session["uuid"], "skip")
        wait_for("skipped to step 2", lambda: any(s["uuid"] == session["uuid"] and s["stepIndex"] == 1 for s in self.seamd.rows("Session")))
        self.click(session["uuid"], "stop")
        wait_for("stopped", lambda: any(s["uuid"] == session["uuid"] and s["state"] == "finished" for s in self.seamd.rows("Session")))

    def test_a_session_finishing_shows_as_finished_on_time(self):
        self.open_browser()
        self.seamd.seam("flash", "2s", "--name", "Egg")
        session = next(s for s in self.seamd.rows("Session") if s["name"] == "Egg")
        ends = time.time() + 2  # within the time seam flash took
        wait_for("the flash on the page", lambda: self.card(session["uuid"]))
        wait_for("the flash finished", lambda: self.card_has(session["uuid"], "finished"), timeout=10, step=0.02)
        late = time.time() - ends
        self.assertLess(late, 1.0, f"shown finished {late:.2f} s after its end")
        self.assertEqual(self.card(session["uuid"])["countdown"], "done")
        self.shot("finished")

    def test_the_forms_say_what_the_cli_says(self):
        browser = self.open_browser()
        form = browser.find_element("id", "timer-form")

        def submit(name: str, steps: str, repeat: str = "") -> str:
            for field, value in (("name", name), ("steps", steps), ("repeat", repeat)):
                element = form.find_element("name", field)
                element.clear()
                if value:
                    element.send_keys(value)
            browser.execute_script("arguments[0].requestSubmit()", form)
            return wait_for("the form's answer", lambda: browser.find_element("id", "error").text or
                            ("saved" if not browser.find_element("id", "error").is_displayed() and self.has_timer(name) else ""))

        cli = self.seamd.seam("timer", "add", "Bad", "--step", "Work=25x", check=False)
        self.assertEqual(cli.returncode, 64)
        self.assertEqual(submit("Bad", "Work=25x"), message(timerforms.parse_steps, ["Work=25x"]))
        self.assertIn(message(timerforms.parse_steps, ["Work=25x"]), cli.stderr)
        self.assertEqual(submit("   ", "Work=1m"), message(timerforms.check_name, "   ", "a timer"))
        self.assertIn(submit("   ", "Work=1m"), self.seamd.seam("timer", "add", "   ", "--step", "Work=1m", check=False).stderr)
        self.assertEqual(submit("Plank", "Hold=1m"), "saved")
        self.assertTrue(submit("Plank", "Hold=2m").startswith("a timer named 'Plank' exists already"))
        dup = self.seamd.seam("timer", "add", "Plank", "--step", "Hold=2m", check=False)
        self.assertIn(submit("Plank", "Hold=2m"), dup.stderr)
        self.shot("form-error")

    def test_durations_and_names_read_as_the_cli_reads_them(self):
        """Seeded inputs, each given to the CLI and to the page's rules: the same seconds, or
        the same message."""
        seed = int(os.environ.get("SEAM_TEST_SEED") or random.randrange(1, 1 << 32))
        print(f"seed {seed} (SEAM_TEST_SEED replays it)", file=sys.stderr)
        rng = random.Random(seed)
        pieces = ["1", "0", "5", "9", "60", "90", "h", "m", "s", ":", " ", "x", "168h", "00000001", "12345678", "=", "1:30", "-"]
        for i in range(int(os.environ.get("SEAM_WEB_FORM_CASES", "40"))):
            duration = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 5)))
            label = rng.choice(["Work", " ", "", "A b"])
            step = f"{label}={duration}"
            name = f"Case {i}"
            cli = self.seamd.seam("timer", "add", name, "--step", step, check=False)
            try:
                steps = timerforms.parse_steps([step])
            except timerforms.FormError as e:
                self.assertEqual(cli.returncode, 64, f"{step!r}: the page refuses ({e}), the CLI took it")
                self.assertIn(str(e), cli.stderr, f"{step!r}")
                continue
            self.assertEqual(cli.returncode, 0, f"{step!r}: the page takes it ({steps}), the CLI said {cli.stderr}")
            stored = next(t for t in self.seamd.rows("Timer") if t["name"] == name)
            self.assertEqual(stored["steps"], steps, f"{step!r}")

    def test_zz_the_tour(self):
        """The page as README shows it (docs/seam-web.png is this screenshot)."""
        browser = self.open_browser()
        for s in self.seamd.rows("Session"):
            self.seamd.seam("clear", s["uuid"][-8:], check=False)
        self.seamd.seam("group", "add", "Work")
        self.seamd.seam("group", "add", "Kitchen")
        self.seamd.seam("timer", "add", "Pomodoro", "--step", "Focus=25m", "--step", "Break=5m", "--repeat", "4", "--group", "Work")
        self.seamd.seam("timer", "add", "Stand-up", "--step", "Talk=15m", "--group", "Work")
        self.seamd.seam("timer", "add", "Pasta", "--step", "Boil=9m", "--step", "Rest=1m", "--group", "Kitchen")
        self.seamd.seam("start", "pomodoro", "--note", "chapter 3")
        self.seamd.seam("start", "pasta")
        self.seamd.seam("flash", "20m", "--name", "Laundry")
        self.seamd.seam("pause", "laundry")
        wait_for("the three sessions", lambda: len(browser.find_elements("css selector", ".session:not(.finished)")) >= 3)
        time.sleep(2)
        browser.set_window_size(1100, 1000)
        self.shot("tour")

    def has_timer(self, name: str) -> bool:
        return any(t["name"] == name for t in self.seamd.rows("Timer"))

    def test_seamd_stopping_and_starting_while_the_page_is_open(self):
        browser = self.open_browser()
        self.seamd.stop()
        wait_for("the page saying so", lambda: "not answering" in browser.find_element("id", "status").text, timeout=10)
        self.shot("disconnected")
        self.seamd.start()
        wait_for("the page live again", lambda: browser.find_element("id", "status").text == "live", timeout=20)
        self.seamd.seam("flash", "10m", "--name", "After")
        session = next(s for s in self.seamd.rows("Session") if s["name"] == "After")
        wait_for("a session made after the restart", lambda: self.card(session["uuid"]), timeout=5)

    def test_a_tab_left_open_does_not_grow(self):
        """A day of a tab compressed: hundreds of updates; the page's heap (after a collection)
        and seam-web's memory stay where they were after the first ones."""
        browser = self.open_browser()
        self.seamd.seam("timer", "add", "Churn", "--step", "A=1m")
        pid = self.seamd.web_pid()

        def rss() -> int:
            for line in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
            return 0

        def heap() -> int:
            browser.execute_script("window.gc && window.gc()")
            return browser.execute_script("return performance.memory ? performance.memory.usedJSHeapSize : 0")

        def churn(n: int) -> None:
            for i in range(n):
                self.seamd.seam("timer", "edit", "churn", "--step", f"A={random.randint(1, 59)}m")
            wait_for("the page caught up", lambda: browser.execute_script("return state.version") > 0)

        churn(40)
        time.sleep(1)
        rss0, heap0 = rss(), heap()
        churn(200)
        time.sleep(1)
        rss1, heap1 = rss(), heap()
        print(f"seam-web RSS {rss0 / 1e6:.1f} → {rss1 / 1e6:.1f} MB; page heap {heap0 / 1e6:.2f} → {heap1 / 1e6:.2f} MB", file=sys.stderr)
        self.assertLess(rss1 - rss0, 8 * 1024 * 1024, "seam-web's memory grew")
        self.assertLess(heap1 - heap0, 2 * 1024 * 1024, "the page's heap grew")


if __name__ == "__main__":
    unittest.main()
