"""What the console's browser tests share: a uc cluster with its console, a headless Chromium driven by
Selenium (its console log kept, downloads allowed into a directory), and the steps a user takes — log in,
find, click — each waiting for the page, which redraws live. Screenshots go to target/console-screenshots/
(docs/console.md shows them)."""

import contextlib
import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest

from conftest import Cluster, wait_for

webdriver = pytest.importorskip("selenium.webdriver")
from selenium.common.exceptions import StaleElementReferenceException, WebDriverException  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
SHOTS = Path(os.environ.get("UC_SCREENSHOTS", ROOT / "target" / "console-screenshots"))
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
DRIVER = shutil.which("chromedriver")
if not (CHROMIUM and DRIVER):
    pytest.skip("the console's browser tests need chromium and chromedriver", allow_module_level=True)


@contextlib.contextmanager
def console_cluster(extra_args=("--operators", "none")):
    """`uc up` with its console; `.console` is its address, `.token` the kubeconfig's token."""
    with tempfile.TemporaryDirectory(prefix="uc-e2e-") as d:
        c = Cluster(d, list(extra_args)).start()
        try:
            c.console = "http://" + Path(d, "console-address").read_text().strip()
            c.token = c.kubectl("config", "view", "--raw", "-o", "jsonpath={.users[0].user.token}").stdout.strip()
            yield c
        finally:
            assert c.stop() == 0


@contextlib.contextmanager
def chromium():
    """A headless Chromium whose console log the tests read (`browser_errors`) and whose downloads go to
    `.downloads`."""
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1400,1000", "--disable-gpu"]:
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    with tempfile.TemporaryDirectory(prefix="uc-downloads-") as downloads:
        b = webdriver.Chrome(service=webdriver.ChromeService(executable_path=DRIVER), options=options)
        try:
            b.implicitly_wait(0)
            b.execute_cdp_cmd("Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": downloads})
            b.downloads = Path(downloads)
            SHOTS.mkdir(parents=True, exist_ok=True)
            yield b
        finally:
            b.quit()


def shot(b, name):
    b.save_screenshot(str(SHOTS / f"{name}.png"))


def find(b, css, timeout=30, text=None):
    """The first element matching `css` (containing `text`), waiting for it to appear."""
    def found():
        for e in b.find_elements(By.CSS_SELECTOR, css):
            try:
                if text is None or text in e.text:
                    return e
            except StaleElementReferenceException:  # went stale while the page redrew
                pass
        return None
    return wait_until(b, found, timeout, f"{css} {text or ''}")


def wait_until(b, predicate, timeout, what):
    """`wait_for` in the browser: a timeout says what the page showed and what the browser logged."""
    try:
        return wait_for(predicate, timeout=timeout, message=f"{what} on {b.current_url}")
    except AssertionError as e:
        page = b.execute_script("return document.getElementById('page')?.innerText ?? document.body.innerText")
        logged = [x["message"] for x in b.get_log("browser") if x["level"] in ("SEVERE", "WARNING")]
        raise AssertionError(f"{e}\nthe page showed: {page[:2000]!r}\nthe browser logged: {logged}") from None


def login(b, cluster, token=None, refused=False):
    """Logs in through the login page (with the kubeconfig's token unless given one); unless the token is to
    be `refused`, until the console's pages are served, the namespace an earlier test chose and what the
    browser logged before (`browser_errors`) forgotten. A navigation the network cut (a pod's interface
    appearing makes Chromium cut what is in flight: net::ERR_NETWORK_CHANGED) leaves Chromium's error page,
    whose fields are missing and whose storage may not be touched: the login is then tried again."""
    for _ in range(3):
        try:
            b.get(cluster.console + "/login")
            find(b, "#token", timeout=10).send_keys(token or cluster.token)
            find(b, "#login", timeout=10).click()
            if refused:
                return
            wait_for(lambda: not b.current_url.endswith("/login"), message="logged in")
            b.get(cluster.console + "/")
            if b.current_url.endswith("/login"):
                continue
            # The pages read the namespace once, when they load: forgotten, then the page loaded again.
            b.execute_script("localStorage.clear()")
            b.refresh()
            find(b, "#namespace", timeout=10)
        except (WebDriverException, AssertionError):
            continue
        browser_errors(b)
        return
    pytest.fail("the console did not keep the login")


def click(b, css, timeout=30):
    """Clicks what matches `css`, again if the page redrew it meanwhile."""
    def clicked():
        try:
            find(b, css, timeout=timeout).click()
            return True
        except StaleElementReferenceException:
            return False
    wait_for(clicked, timeout=timeout, message=f"clicked {css}")


def texts(b, selector):
    """The text of what `selector` finds now; nothing while the page draws it again."""
    try:
        return " ".join(e.text for e in b.find_elements(By.CSS_SELECTOR, selector))
    except StaleElementReferenceException:
        return ""


def get(c, *args):
    r = c.kubectl("get", *args, "-o", "json", check=False)
    return json.loads(r.stdout) if r.returncode == 0 else None


def browser_errors(b):
    """What the browser's console logged as errors since last asked: scripts that threw, and requests that
    failed (a 404, a 409 ...), each naming its URL. Not the requests Chromium itself cut when the machine's
    network interfaces changed (`net::ERR_NETWORK_CHANGED`: each pod's network namespace adds an interface
    to the host) — the environment's, not the console's."""
    return [e["message"] for e in b.get_log("browser") if e["level"] == "SEVERE" and "ERR_NETWORK_CHANGED" not in e["message"]]


def editor_text(b, css):
    """The text of the YAML editor at `css`."""
    return b.execute_script("const e = document.querySelector(arguments[0]); return e && e.ucEditor ? e.ucEditor.text() : null", css)


def click_editor_line(b, editor, text, timeout=30):
    """Clicks the line of the YAML editor at `editor` that holds `text`, scrolling the editor down to it as
    a user would (the editor draws only the lines in view), again if the editor redrew it meanwhile."""
    def clicked():
        for line in b.find_elements(By.CSS_SELECTOR, f"{editor} .cm-line"):
            try:
                if text in line.text:
                    line.click()
                    return True
            except StaleElementReferenceException:
                return False
        b.execute_script("const s = document.querySelector(arguments[0] + ' .cm-scroller');"
                         "if (s) s.scrollTop = s.scrollTop + s.clientHeight / 2 >= s.scrollHeight - s.clientHeight"
                         " ? 0 : s.scrollTop + s.clientHeight / 2;", editor)
        return False
    wait_for(clicked, timeout=timeout, interval=0.2, message=f"the line with {text!r} in {editor}")


@pytest.fixture(scope="module")
def cluster():
    """One console cluster per test module (imported by the modules that use it)."""
    with console_cluster() as c:
        yield c


@pytest.fixture(scope="module")
def browser():
    """One browser per test module (imported by the modules that use it)."""
    with chromium() as b:
        yield b


def snapshot(b, css):
    """What the first element matching `css` shows now, read in one go (the pages redraw live, so an element
    found may be replaced before it is read): its text, data attributes, class and whether it is disabled;
    None when there is none."""
    return b.execute_script(
        "const e = document.querySelector(arguments[0]);"
        "return e && {text: e.innerText ?? e.textContent, data: {...e.dataset}, cls: e.getAttribute('class') || '', disabled: !!e.disabled}",
        css)


def shows(b, css, text=None, timeout=30):
    """The snapshot of the element matching `css` once there is one (holding `text`)."""
    return wait_until(b, lambda: (s := snapshot(b, css)) and (text is None or text in s["text"]) and s, timeout,
                      f"{css} {text or ''}")
