"""The web console in a real headless Chromium (Selenium): log in with the kubeconfig's token, install etcd
from OperatorHub with Manual approval and approve it in the page, create an EtcdCluster through the form
generated from its CRD, watch its Resources tree reach 3 Ready pods, read a pod's logs; edit a CatSet's
template in the YAML view and watch its pods move to the new revision one at a time; a wrong token gets the
login page. Each page's screenshot is written to target/console-screenshots/ (docs/console.md shows them).

The tests share one cluster (`--operators none`: the tests install through the console)."""

import json
import os
import shutil
import tempfile
import time
from pathlib import Path

import pytest

from conftest import Cluster, wait_for

webdriver = pytest.importorskip("selenium.webdriver")
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import Select  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
SHOTS = Path(os.environ.get("UC_SCREENSHOTS", ROOT / "target" / "console-screenshots"))
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
DRIVER = shutil.which("chromedriver")
if not (CHROMIUM and DRIVER):
    pytest.skip("the console's browser tests need chromium and chromedriver", allow_module_level=True)


@pytest.fixture(scope="module")
def cluster():
    with tempfile.TemporaryDirectory(prefix="uc-e2e-") as d:
        c = Cluster(d, ["--operators", "none"]).start()
        try:
            c.console = "http://" + Path(d, "console-address").read_text().strip()
            c.token = c.kubectl("config", "view", "--raw", "-o", "jsonpath={.users[0].user.token}").stdout.strip()
            yield c
        finally:
            assert c.stop() == 0


@pytest.fixture(scope="module")
def browser():
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1400,1000", "--disable-gpu"]:
        options.add_argument(arg)
    b = webdriver.Chrome(service=webdriver.ChromeService(executable_path=DRIVER), options=options)
    b.implicitly_wait(0)
    SHOTS.mkdir(parents=True, exist_ok=True)
    yield b
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
            except Exception:  # went stale while the page redrew
                pass
        return None
    return wait_for(found, timeout=timeout, message=f"{css} {text or ''} on {b.current_url}")


def login(b, cluster, token=None):
    b.get(cluster.console + "/login")
    find(b, "#token").send_keys(token or cluster.token)
    find(b, "#login").click()


def get(c, *args):
    r = c.kubectl("get", *args, "-o", "json", check=False)
    return json.loads(r.stdout) if r.returncode == 0 else None


def test_a_wrong_token_gets_the_login_page_not_data(cluster, browser):
    browser.delete_all_cookies()
    login(browser, cluster, token="not-a-token")
    error = find(browser, "#login-error")
    assert "does not accept" in error.text
    shot(browser, "login")
    browser.get(cluster.console + "/")
    wait_for(lambda: browser.current_url.endswith("/login"), message="sent back to the login page")
    browser.get(cluster.console + "/api/v1/namespaces")
    body = browser.find_element(By.TAG_NAME, "body").text
    assert '"code":401' in body.replace(" ", "") and "items" not in body, body


def test_install_etcd_from_operatorhub_with_manual_approval(cluster, browser):
    login(browser, cluster)
    browser.get(cluster.console + "/#/hub")
    find(browser, ".tile[data-package=zookeeper]")
    find(browser, "#hub-search").send_keys("etcd")
    wait_for(lambda: [t.get_attribute("data-package") for t in browser.find_elements(By.CSS_SELECTOR, ".tile")] == ["etcd"],
             message="only etcd's tile left")
    shot(browser, "operatorhub")
    find(browser, ".tile[data-package=etcd]").click()
    find(browser, "#package-description", text="etcd")
    assert "EtcdCluster" in find(browser, "#alm-examples").text
    shot(browser, "package")
    find(browser, "#install").click()
    Select(find(browser, "#install-channel")).select_by_value("alpha")
    find(browser, "#mode-all").click()
    find(browser, "#approval-manual").click()
    shot(browser, "install-form")
    find(browser, "#install-submit").click()
    approve = find(browser, "#approve", timeout=60)
    assert "RequiresApproval" in find(browser, "#plan-phase").text
    assert get(cluster, "-n", "operators", "csv")["items"] == [], "nothing installed before approval"
    shot(browser, "install-plan")
    approve.click()
    find(browser, "#csv-phase", text="Succeeded", timeout=60)
    shot(browser, "installed-progress")
    sub = get(cluster, "-n", "operators", "subscription", "etcd")
    assert sub["spec"]["installPlanApproval"] == "Manual" and sub["status"]["state"] == "AtLatestKnown"


def test_an_etcd_cluster_from_the_generated_form_runs_and_its_tree_goes_ready(cluster, browser):
    if shutil.which("etcd") is None:
        pytest.skip("the members need etcd")
    browser.get(cluster.console + "/#/installed")
    find(browser, "tr[data-csv^='etcd.v'] a").click()
    find(browser, "#csv-phase", text="Succeeded")
    shot(browser, "installed-operator")
    find(browser, "#create-EtcdCluster").click()
    name = find(browser, "#field-metadata-name")
    name.clear()
    name.send_keys("web")
    size = find(browser, "#field-spec-size")
    size.clear()
    size.send_keys("3")
    wait_for(lambda: "size: 3" in find(browser, "#create-yaml").get_attribute("value"), message="the YAML follows the form")
    shot(browser, "create-form")
    find(browser, "#create-submit").click()
    find(browser, "#resource-tree", timeout=30)
    assert get(cluster, "etcdcluster", "web")["spec"]["size"] == 3

    def ready_pods():
        nodes = browser.find_elements(By.CSS_SELECTOR, "#resource-tree li[data-kind=Pod] .ready")
        return len(nodes) == 3
    wait_for(ready_pods, timeout=120, message="3 Ready pods in the tree")
    shot(browser, "instance-resources")
    find(browser, "#resource-tree li[data-kind=Pod] .logs-link").click()
    find(browser, "#logs", text="etcd", timeout=30)
    shot(browser, "pod-logs")


def test_a_catset_template_change_moves_pods_to_the_new_revision_one_at_a_time(cluster, browser):
    cluster.kubectl("apply", "-f", "-", input=json.dumps({
        "apiVersion": "operators.coreos.com/v1alpha1", "kind": "Subscription", "metadata": {"name": "catset", "namespace": "operators"},
        "spec": {"name": "catset", "channel": "alpha", "source": "uc-operators", "sourceNamespace": "olm"}}))
    wait_for(lambda: cluster.kubectl("get", "crd", "catsets.mlhub.njuics.cn", check=False).returncode == 0, timeout=60,
             message="the CatSet operator installed")
    wait_for(lambda: (get(cluster, "universalcontroller", "catset-controller") or {}).get("status", {}).get("conditions"),
             timeout=30, message="the CatSet controller running")
    cluster.kubectl("apply", "-f", str(ROOT / "examples" / "catset" / "catset.yaml"))
    browser.get(cluster.console + "/#/instance/mlhub.njuics.cn%2Fv1alpha1/CatSet/default/nginx-backend/resources")

    def pods_on(rev=None):
        out = []
        for li in browser.find_elements(By.CSS_SELECTOR, "#resource-tree li[data-kind=Pod]"):
            try:
                out.append((li.get_attribute("data-name"), li.get_attribute("data-revision"),
                            bool(li.find_elements(By.CSS_SELECTOR, ".ready"))))
            except Exception:
                pass
        return out
    wait_for(lambda: len(pods_on()) == 3 and all(r for _, _, r in pods_on()), timeout=90, message="3 Ready pods")
    first = {rev for _, rev, _ in pods_on()}
    assert len(first) == 1, first
    # Edit the template in the YAML view: a new annotation makes a new revision.
    browser.get(cluster.console + "/#/instance/mlhub.njuics.cn%2Fv1alpha1/CatSet/default/nginx-backend/yaml")
    area = find(browser, "#instance-yaml")
    wait_for(lambda: "nginx-slim" in area.get_attribute("value"), message="the YAML loaded")
    text = area.get_attribute("value")
    edited = text.replace("uc.njuics.cn/ready-delay-seconds:", "console-edit: \"1\"\n        uc.njuics.cn/ready-delay-seconds:", 1)
    assert edited != text
    browser.execute_script("arguments[0].value = arguments[1];", area, edited)
    shot(browser, "instance-yaml")
    find(browser, "#yaml-save").click()
    find(browser, "#yaml-message", text="Saved")
    browser.get(cluster.console + "/#/instance/mlhub.njuics.cn%2Fv1alpha1/CatSet/default/nginx-backend/resources")
    find(browser, "#resource-tree li[data-kind=Pod]")
    old = first.pop()
    # Watch the tree: pods on the new revision go 0 → 1 → 2 → 3, one at a time.
    seen = []
    deadline = time.time() + 120
    while time.time() < deadline:
        pods = pods_on()
        moved = sum(1 for _, rev, _ in pods if rev and rev != old)
        if not seen or seen[-1] != moved:
            seen.append(moved)
            if moved == 1:
                shot(browser, "instance-rollout")
        if moved == 3 and len(pods) == 3 and all(r for _, _, r in pods):
            break
        time.sleep(0.1)
    assert seen and seen[-1] == 3, f"every pod on the new revision: {seen}"
    assert all(b - a == 1 for a, b in zip(seen, seen[1:])), f"one pod at a time: {seen}"
    assert "Rollout" in find(browser, "#rollout").text


def test_controllers_and_cluster_pages(cluster, browser):
    browser.get(cluster.console + "/#/controllers")
    row = find(browser, "tr[data-controller=builtin-deployment]")
    assert "True" in row.text
    wait_for(lambda: any("ms" in r.text or "µs" in r.text for r in browser.find_elements(By.CSS_SELECTOR, "#controller-rows tr")),
             timeout=15, message="hook latencies from the engine's metrics")
    shot(browser, "controllers")
    browser.get(cluster.console + "/#/cluster")
    find(browser, "#nodes tr", text="True")
    shot(browser, "cluster")
