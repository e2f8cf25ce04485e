"""The web console in a real headless Chromium (Selenium): log in with the kubeconfig's token, install etcd
from OperatorHub with Manual approval and approve it in the page, create an EtcdCluster through the form
generated from its CRD, watch its Resources tree reach 3 Ready pods, read a pod's logs; edit a CatSet's
template in the YAML view and watch its pods move to the new revision one at a time; a wrong token gets the
login page. Each page's screenshot is written to target/console-screenshots/ (docs/console.md shows them).

The tests share one cluster (`--operators none`: the tests install through the console)."""

import json
import shutil

import pytest

from conftest import wait_for
from console_browser import ROOT, By, browser, browser_errors, click, click_editor_line, cluster, editor_text, find, get, login, shot, texts  # noqa: F401 (fixtures)

from selenium.webdriver.common.keys import Keys  # noqa: E402
from selenium.webdriver.support.ui import Select  # noqa: E402


def pods_in_tree(b):
    """The pods of the Resources tree as (name, revision, ready), read at once (the tree redraws live)."""
    return [tuple(p) for p in b.execute_script(
        "return [...document.querySelectorAll('#resource-tree li[data-kind=Pod]')]"
        ".map(li => [li.dataset.name, li.dataset.revision, !!li.querySelector(':scope > .node .ready')])")]


class PodHistory:
    """Every version of the pods named `prefix*` the server stores from now on (a watch from a list's
    resourceVersion, in a thread): their state (name -> (uid, Ready)), which were replaced (a new uid),
    and the most of the first ones that were ever missing or not Ready at once."""

    def __init__(self, cluster, prefix):
        import threading
        from kubernetes import client, watch
        self.core = client.CoreV1Api(cluster.api_client())
        listed = self.core.list_namespaced_pod("default")
        ready = lambda p: any(c.type == "Ready" and c.status == "True" for c in p.status.conditions or [])
        self.state = {p.metadata.name: (p.metadata.uid, ready(p)) for p in listed.items if p.metadata.name.startswith(prefix)}
        self.first = dict(self.state)
        self.events, self.most_down, self.lock = [], 0, threading.Condition()
        self.watch, self.error = watch.Watch(), None

        def follow():
            try:
                watched()
            except Exception as e:  # noqa: BLE001 - a failure before `until` returns fails it; after, the cluster is going
                with self.lock:
                    self.error = e
                    self.lock.notify_all()

        def watched():
            for ev in self.watch.stream(self.core.list_namespaced_pod, "default", resource_version=listed.metadata.resource_version,
                                        timeout_seconds=300):
                p = ev["object"]
                if not p.metadata.name.startswith(prefix):
                    continue
                with self.lock:
                    if ev["type"] == "DELETED":
                        self.state.pop(p.metadata.name, None)
                    else:
                        self.state[p.metadata.name] = (p.metadata.uid, ready(p))
                    self.events.append((ev["type"], p.metadata.name, p.metadata.uid[-6:], ready(p)))
                    down = sum(1 for n in self.first if not self.state.get(n, (None, False))[1])
                    self.most_down = max(self.most_down, down)
                    self.lock.notify_all()

        threading.Thread(target=follow, daemon=True).start()

    def replaced(self):
        return {n for n, (uid, _) in self.state.items() if n in self.first and uid != self.first[n][0]}

    def until(self, done, timeout):
        with self.lock:
            if not self.lock.wait_for(lambda: done(self.state) or self.error, timeout=timeout) or not done(self.state):
                raise AssertionError(f"the pods' history did not get there ({self.error!r}): {self.events}")
            self.watch.stop()
            return list(self.events)


def watch_pods(cluster, prefix):
    return PodHistory(cluster, prefix)


def test_a_wrong_token_gets_the_login_page_not_data(cluster, browser):
    browser.delete_all_cookies()
    login(browser, cluster, token="not-a-token", refused=True)
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
    tiles = lambda: sorted(t.get_attribute("data-package") for t in browser.find_elements(By.CSS_SELECTOR, ".tile"))
    # The capability-level filter: only etcd is Full Lifecycle; the install-state filter: nothing installed yet.
    click(browser, "#filter-level-full-lifecycle")
    wait_for(lambda: tiles() == ["etcd"], message="the Full Lifecycle filter")
    click(browser, "#filter-level-full-lifecycle")
    click(browser, "#filter-install-installed")
    wait_for(lambda: tiles() == [], message="nothing installed yet")
    click(browser, "#filter-install-installed")
    wait_for(lambda: len(tiles()) == 5, message="every package again")
    find(browser, "#hub-search").send_keys("etcd")
    wait_for(lambda: [t.get_attribute("data-package") for t in browser.find_elements(By.CSS_SELECTOR, ".tile")] == ["etcd"],
             message="only etcd's tile left")
    shot(browser, "operatorhub")
    click(browser, ".tile[data-package=etcd]")
    find(browser, "#package-description", text="etcd")
    find(browser, "#alm-examples", text="EtcdCluster")  # read again if the page redraws it meanwhile
    shot(browser, "package")
    click(browser, "#install")
    Select(find(browser, "#install-channel")).select_by_value("alpha")
    click(browser, "#mode-all")
    click(browser, "#approval-manual")
    shot(browser, "install-form")
    click(browser, "#install-submit")
    find(browser, "#approve", timeout=60)
    find(browser, "#plan-phase", text="RequiresApproval")  # read again if the page redraws it meanwhile
    assert get(cluster, "-n", "operators", "csv")["items"] == [], "nothing installed before approval"
    shot(browser, "install-plan")
    click(browser, "#approve")
    find(browser, "#csv-phase", text="Succeeded", timeout=60)
    # Installing into `operators`, which exists, asked no request that failed (a 409 on creating it).
    assert browser_errors(browser) == []
    shot(browser, "installed-progress")
    sub = get(cluster, "-n", "operators", "subscription", "etcd")
    assert sub["spec"]["installPlanApproval"] == "Manual" and sub["status"]["state"] == "AtLatestKnown"


def etcd_installed(cluster, browser):
    """The etcd operator installed and the browser logged in. The test that installs it through the
    console comes first, but pytest-xdist may hand a later test of this module to a worker of its own
    (its own cluster and browser): there the later test subscribes itself."""
    if get(cluster, "-n", "operators", "subscription", "etcd") is None:
        cluster.kubectl("apply", "-f", "-", input=json.dumps({
            "apiVersion": "operators.coreos.com/v1alpha1", "kind": "Subscription", "metadata": {"name": "etcd", "namespace": "operators"},
            "spec": {"name": "etcd", "channel": "alpha", "source": "uc-operators", "sourceNamespace": "olm"}}))
    wait_for(lambda: any(c["metadata"]["name"].startswith("etcd.v") and c.get("status", {}).get("phase") == "Succeeded"
                         for c in get(cluster, "-n", "operators", "csv")["items"]), timeout=120, message="etcd's CSV Succeeded")
    login(browser, cluster)


def test_an_etcd_cluster_from_the_generated_form_runs_and_its_tree_goes_ready(cluster, browser):
    if shutil.which("etcd") is None:
        pytest.skip("the members need etcd")
    etcd_installed(cluster, browser)
    browser.get(cluster.console + "/#/installed")
    click(browser, "tr[data-csv^='etcd.v'] a")
    find(browser, "#csv-phase", text="Succeeded")
    shot(browser, "installed-operator")
    click(browser, "#create-EtcdCluster")
    name = find(browser, "#field-metadata-name")
    name.clear()
    name.send_keys("web")
    size = find(browser, "#field-spec-size")
    size.clear()
    size.send_keys("3")
    wait_for(lambda: "size: 3" in (editor_text(browser, "#create-yaml") or ""), message="the YAML follows the form")
    shot(browser, "create-form")
    click(browser, "#create-submit")
    find(browser, "#resource-tree", timeout=30)
    assert get(cluster, "etcdcluster", "web")["spec"]["size"] == 3

    def ready_pods():
        pods = pods_in_tree(browser)
        return len(pods) == 3 and all(ready for _, _, ready in pods)
    wait_for(ready_pods, timeout=120, message="3 Ready pods in the tree")
    shot(browser, "instance-resources")
    click(browser, "#resource-tree li[data-kind=Pod] .logs-link")
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
    login(browser, cluster)
    browser.get(cluster.console + "/#/instance/mlhub.njuics.cn%2Fv1alpha1/CatSet/default/nginx-backend/resources")

    def pods_on():
        return pods_in_tree(browser)
    try:
        wait_for(lambda: len(pods_on()) == 3 and all(r for _, _, r in pods_on()), timeout=90, message="3 Ready pods")
    finally:
        shot(browser, "catset-resources")
    first = {rev for _, rev, _ in pods_on()}
    assert len(first) == 1, first
    # Edit the template in the YAML view: a new image makes a new revision, pods recreated one by one. (Saved with the
    # resourceVersion it was loaded at: a status written meanwhile is a conflict, reloaded and redone.)
    wait_for(lambda: (get(cluster, "catset", "nginx-backend") or {}).get("status", {}).get("readyReplicas") == 3,
             message="the CatSet's status settled")
    # The pods' own history from here on (a watch: every version the server stores), to check the rollout
    # against; the page is checked for showing it.
    history = watch_pods(cluster, "nginx-backend-")
    # A link typed as docs/console.md writes it: the apiVersion's `/` as is.
    browser.get(cluster.console + "/#/instance/mlhub.njuics.cn/v1alpha1/CatSet/default/nginx-backend/yaml")
    for attempt in range(3):
        wait_for(lambda: "nginx-slim:0.8" in (editor_text(browser, "#instance-yaml") or ""), message="the YAML loaded")
        # Typed as a user types: click the image's line, go to its end, replace the tag.
        # (The image's own line: kubectl's last-applied-configuration annotation holds the tag too.)
        click_editor_line(browser, "#instance-yaml", "image: gcr.io/google_containers/nginx-slim:0.8")
        browser.switch_to.active_element.send_keys(Keys.END, Keys.BACKSPACE, Keys.BACKSPACE, Keys.BACKSPACE, "0.9")
        wait_for(lambda: "nginx-slim:0.9" in editor_text(browser, "#instance-yaml"), message="the edit in the editor")
        shot(browser, "instance-yaml")
        click(browser, "#yaml-save")
        message = wait_for(lambda: (m := browser.execute_script("return document.getElementById('yaml-message').textContent"))
                           and m.startswith(("Saved", "Conflict", "Not saved")) and m, message="saved or refused")
        if message.startswith("Saved"):
            break
        assert "Conflict" in message, message
        click(browser, "#yaml-reload")
        wait_for(lambda: find(browser, "#yaml-message").text == "", message="reloaded")
    else:
        pytest.fail("three conflicts in a row")
    image = get(cluster, "catset", "nginx-backend")["spec"]["template"]["spec"]["containers"][0]["image"]
    assert image.endswith("nginx-slim:0.9"), image
    browser.get(cluster.console + "/#/instance/mlhub.njuics.cn%2Fv1alpha1/CatSet/default/nginx-backend/resources")
    find(browser, "#resource-tree li[data-kind=Pod]")
    old = first.pop()
    # The tree follows the rollout live: pods join the new revision, Ready, until all three are on it.
    shot_taken = False
    def all_moved():
        nonlocal shot_taken
        pods = pods_on()
        if not shot_taken and any(rev and rev != old for _, rev, _ in pods):
            shot(browser, "instance-rollout")
            shot_taken = True
        return len(pods) == 3 and all(rev and rev != old and ready for _, rev, ready in pods)
    wait_for(all_moved, timeout=120, message="every pod on the new revision in the tree")
    # What the server stored: one pod replaced at a time, never two of the three down at once.
    events = history.until(lambda state: len(state) == 3 and all(ready for _, ready in state.values())
                           and len(history.replaced()) == 3, timeout=60)
    assert history.replaced() == {"nginx-backend-0", "nginx-backend-1", "nginx-backend-2"}, events
    assert history.most_down <= 1, f"two pods down at once: {events}"
    find(browser, "#rollout", text="Rollout")  # read again if the page redraws it meanwhile


def test_controllers_and_cluster_pages(cluster, browser):
    # uc up installs its built-in controllers after it serves (on a loaded machine, seconds after): the
    # page is asked to show one the API server has, not one still being made.
    wait_for(lambda: get(cluster, "universalcontroller", "builtin-deployment"), timeout=90,
             message="uc up's built-in Deployment controller")
    login(browser, cluster)
    browser.get(cluster.console + "/#/controllers")
    find(browser, "tr[data-controller=builtin-deployment]")
    # The table is drawn again when the engine's hook metrics arrive: read it afresh each time.
    wait_for(lambda: "True" in texts(browser, "tr[data-controller=builtin-deployment]"), timeout=15,
             message="the built-in Deployment controller Ready")
    wait_for(lambda: "ms" in texts(browser, "#controller-rows tr") or "µs" in texts(browser, "#controller-rows tr"),
             timeout=15, message="hook latencies from the engine's metrics")
    shot(browser, "controllers")
    browser.get(cluster.console + "/#/cluster")
    find(browser, "#nodes tr", text="True")
    shot(browser, "cluster")
