"""The console's views as its users know them from OpenShift's console and Headlamp, driven in headless
Chromium by clicking and typing: package icons and filter counts, breadcrumbs and the keyboard; a user
with one namespaced Role working in that namespace and told what is forbidden elsewhere; a pod's page
(containers, environment sources, volumes, events, logs with timestamps, wrapping, search, pause and
download); an operator's Subscription and its uninstall; and on every main page no failed request, no
script error and no serious or critical axe-core violation.

The tests share one cluster (`--operators none`: operators are subscribed to by the tests)."""

import json
import re

import pytest

from conftest import wait_for
from console_browser import ROOT, By, browser, browser_errors, click, click_editor_line, cluster, editor_text, find, get, login, shot, shows, texts  # noqa: F401 (fixtures)

from selenium.webdriver.common.keys import Keys  # noqa: E402

# The topology's limit of siblings of one kind drawn each, as the page has it.
MAX_SIBLINGS = int(re.search(r"MAX_SIBLINGS = (\d+)", (ROOT / "crates/uc-console/assets/instance.js").read_text()).group(1))

TALKER = {
    "apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "talk", "namespace": "default"},
         "data": {"greeting": "hello", "LANGUAGE": "en"}},
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "talk-secret", "namespace": "default"},
         "stringData": {"password": "hunter2"}},
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "talker", "namespace": "default"}, "spec": {
            "containers": [{
                "name": "main", "image": "busybox",
                "command": ["sh", "-c", 'i=0; while true; do i=$((i+1)); echo "line $i $GREETING"; sleep 0.2; done'],
                "env": [{"name": "GREETING", "valueFrom": {"configMapKeyRef": {"name": "talk", "key": "greeting"}}},
                        {"name": "PASSWORD", "valueFrom": {"secretKeyRef": {"name": "talk-secret", "key": "password"}}},
                        {"name": "MY_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
                        {"name": "PLAIN", "value": "just-a-value"}],
                "envFrom": [{"configMapRef": {"name": "talk"}}],
                "volumeMounts": [{"name": "config", "mountPath": "/etc/talk", "readOnly": True},
                                 {"name": "scratch", "mountPath": "/scratch"}]}],
            "volumes": [{"name": "config", "configMap": {"name": "talk"}}, {"name": "scratch", "emptyDir": {}}]}},
    ]}


def subscribe(cluster, package):
    cluster.kubectl("apply", "-f", "-", input=json.dumps({
        "apiVersion": "operators.coreos.com/v1alpha1", "kind": "Subscription",
        "metadata": {"name": package, "namespace": "operators"},
        "spec": {"name": package, "channel": "alpha", "source": "uc-operators", "sourceNamespace": "olm"}}))
    wait_for(lambda: any(c["metadata"]["name"].startswith(f"{package}.v") and c.get("status", {}).get("phase") == "Succeeded"
                         for c in (get(cluster, "-n", "operators", "csv") or {"items": []})["items"]),
             timeout=120, message=f"{package}'s CSV Succeeded")


def talker(cluster):
    """The pod `talker` (logging a line every 0.2 s; environment from a ConfigMap, a Secret and its own
    fields; two volumes), Ready."""
    if get(cluster, "pod", "talker") is None:
        cluster.kubectl("apply", "-f", "-", input=json.dumps(TALKER))
    cluster.kubectl("wait", "pod/talker", "--for=condition=Ready", "--timeout=90s")


def test_tiles_have_their_packages_icons_filters_count_and_the_keyboard_opens_a_package(cluster, browser):
    login(browser, cluster)
    browser.get(cluster.console + "/#/hub")
    wait_for(lambda: len(browser.find_elements(By.CSS_SELECTOR, ".tile")) == 5, message="the catalog's five packages")
    icons = browser.execute_script(
        "return Object.fromEntries([...document.querySelectorAll('.tile')].map(t => [t.dataset.package, t.querySelector('img').src]))")
    assert len(set(icons.values())) == 5, "each package has its own icon (its CSV's spec.icon)"
    # Counts: the packages each filter would show, the other groups' choices kept.
    count = lambda css: int(shows(browser, f"{css} ~ .count")["data"]["count"])
    assert count("#filter-category-database") == 2 and count("#filter-install-not-installed") == 5
    click(browser, "#filter-category-database")
    wait_for(lambda: count("#filter-level-full-lifecycle") == 1 and count("#filter-level-basic-install") == 0,
             message="the capability counts among databases")
    click(browser, "#filter-category-database")
    shot(browser, "operatorhub-counts")
    # The keyboard alone: type in the search, Tab to the tile, Enter.
    search = find(browser, "#hub-search")
    search.click()
    search.send_keys("zookeeper")
    wait_for(lambda: len(browser.find_elements(By.CSS_SELECTOR, ".tile")) == 1, message="one tile left")
    for _ in range(40):
        browser.switch_to.active_element.send_keys(Keys.TAB)
        if browser.execute_script("return document.activeElement.dataset.package") == "zookeeper":
            break
    else:
        pytest.fail("Tab never reached the tile")
    browser.switch_to.active_element.send_keys(Keys.ENTER)
    find(browser, "#package-description", text="ZooKeeper")
    # The package page: its icon at 64 px, the name and Install on the first screen.
    page = browser.execute_script("""const r = (e) => e.getBoundingClientRect();
        return {icon: r(document.querySelector('.toolbar .icon')).width, install: r(document.getElementById('install')).bottom,
                screen: window.innerHeight}""")
    assert page["icon"] <= 64 and page["install"] < page["screen"], page
    shot(browser, "package-keyboard")
    click(browser, ".crumbs a[href='#/hub']")
    find(browser, "#hub-tiles")


def test_install_plan_steps_are_coloured_by_meaning(cluster, browser):
    login(browser, cluster)
    cluster.kubectl("apply", "-f", "-", input=json.dumps({
        "apiVersion": "operators.coreos.com/v1alpha1", "kind": "Subscription", "metadata": {"name": "tfjob", "namespace": "operators"},
        "spec": {"name": "tfjob", "channel": "alpha", "source": "uc-operators", "sourceNamespace": "olm",
                 "installPlanApproval": "Manual"}}))
    browser.get(cluster.console + "/#/plan/operators/tfjob")
    find(browser, "#approve", timeout=60)
    steps = lambda: browser.execute_script(
        "return [...document.querySelectorAll('tr[data-step] .phase')].map(s => [s.dataset.status, s.className, s.textContent])")
    before = wait_for(lambda: steps() or None, message="the plan's steps")
    assert all(status == "Unknown" and "idle" in cls and text == "Waiting for approval" for status, cls, text in before), before
    shot(browser, "install-plan-steps")
    click(browser, "#approve")
    find(browser, "#csv-phase", text="Succeeded", timeout=90)
    after = steps()
    assert after and all(status in ("Created", "Present") and "ok" in cls for status, cls, _ in after), after


def test_a_user_with_one_namespaced_role_works_there_and_is_told_what_is_forbidden(cluster, browser):
    k = cluster.kubectl
    k("create", "namespace", "team-a")
    k("-n", "team-a", "create", "serviceaccount", "alice")
    k("-n", "team-a", "create", "role", "reader", "--verb=get,list,watch", "--resource=pods,pods/log,events,deployments,replicasets")
    k("-n", "team-a", "create", "rolebinding", "alice-reads", "--role=reader", "--serviceaccount=team-a:alice")
    # She may read the catalog's packages (the install form) and an installed operator's CSV and CRDs (the
    # Create form), not install from them nor create what they provide.
    k("-n", "olm", "create", "role", "catalog-reader", "--verb=get,list,watch", "--resource=packagemanifests.packages.operators.coreos.com")
    k("-n", "olm", "create", "rolebinding", "alice-browses", "--role=catalog-reader", "--serviceaccount=team-a:alice")
    k("-n", "operators", "create", "role", "csv-reader", "--verb=get", "--resource=clusterserviceversions.operators.coreos.com")
    k("-n", "operators", "create", "rolebinding", "alice-reads-csvs", "--role=csv-reader", "--serviceaccount=team-a:alice")
    k("create", "clusterrole", "crd-reader", "--verb=get", "--resource=customresourcedefinitions.apiextensions.k8s.io")
    k("create", "clusterrolebinding", "alice-reads-crds", "--clusterrole=crd-reader", "--serviceaccount=team-a:alice")
    subscribe(cluster, "etcd")
    etcd = next(c["metadata"]["name"] for c in get(cluster, "-n", "operators", "csv")["items"] if c["metadata"]["name"].startswith("etcd.v"))
    k("-n", "team-a", "run", "worker", "--image=busybox", "--", "sh", "-c", "echo working; sleep 3600")
    k("run", "elsewhere", "--image=busybox", "--", "sleep", "3600")
    k("-n", "team-a", "create", "deployment", "team-web", "--image=busybox", "--", "sleep", "3600")
    # Running before the browser loads anything: a pod's network interface appearing makes Chromium cut the
    # requests it has in flight (net::ERR_NETWORK_CHANGED), a module of the page among them.
    k("-n", "team-a", "wait", "--for=condition=Ready", "pod/worker", "--timeout=90s")
    k("wait", "--for=condition=Ready", "pod/elsewhere", "--timeout=90s")
    k("-n", "team-a", "rollout", "status", "deployment/team-web", "--timeout=90s")
    token = k("-n", "team-a", "create", "token", "alice").stdout.strip()
    browser.delete_all_cookies()
    login(browser, cluster, token=token)
    browser.get(cluster.console + "/#/cluster")
    nodes = shows(browser, "#nodes .forbidden")
    assert nodes["data"]["forbidden"] == "list nodes" and "cannot list" in nodes["text"], nodes
    pods = shows(browser, "#pods .forbidden")
    assert pods["data"]["forbidden"] == "list pods" and "all namespaces" in pods["text"], pods
    shot(browser, "forbidden")
    assert axe_violations(browser) == [], "the refusals are accessible too"
    chooser = find(browser, "#namespace")
    chooser.clear()
    chooser.send_keys("team-a", Keys.ENTER)
    find(browser, "#pods tr[data-pod=worker]")
    assert "elsewhere" not in texts(browser, "#pods"), "only the chosen namespace's pods"
    shot(browser, "namespaced")
    click(browser, "#pods tr[data-pod=worker] a")
    find(browser, "#pod-summary", text="Running")
    click(browser, "#tab-logs")
    find(browser, "#logs", text="working")
    # An instance page in the namespace: its topology from what the Role lets the user list.
    browser.get(cluster.console + "/#/instance/apps%2Fv1/Deployment/team-a/team-web/topology")
    find(browser, "#topology g.topo-node[data-kind=Pod]")
    assert find(browser, "#topology g.topo-node[data-kind=ReplicaSet]")
    # An action the Role does not give is greyed out, saying so (a SelfSubjectAccessReview, as kubectl auth can-i).
    browser.get(cluster.console + "/#/instance/apps%2Fv1/Deployment/team-a/team-web/yaml")
    save = find(browser, "#yaml-save[data-forbidden]")
    assert save.get_attribute("data-forbidden") == "update deployments" and not save.is_enabled()
    assert "You may not update deployments in team-a." in texts(browser, ".denied")
    # Installing is creating a Subscription in the target namespace: denied in `operators` and in her own.
    browser.get(cluster.console + "/#/install/olm/etcd")
    install = shows(browser, "#install-submit[data-forbidden]")
    assert install["disabled"] and install["data"]["forbidden"] == "create subscriptions", install
    assert "You may not create subscriptions in operators." in texts(browser, ".denied")
    shot(browser, "install-denied")
    click(browser, "#mode-single")
    namespace = find(browser, "#install-namespace")
    assert namespace.get_attribute("value") == "team-a", "the namespace the header chose"
    namespace.clear()
    namespace.send_keys("team-a", Keys.TAB)
    wait_for(lambda: "You may not create subscriptions in team-a." == texts(browser, ".denied").strip(),
             message="the form asked again for the namespace typed")
    browser.get(cluster.console + f"/#/create/operators/{etcd}/etcdclusters.etcd.database.coreos.com")
    create = shows(browser, "#create-submit[data-forbidden]")
    assert create["disabled"] and create["data"]["forbidden"] == "create etcdclusters", create
    assert "You may not create etcdclusters in team-a." in texts(browser, ".denied")
    # What the Role does not give is refused with what was refused: the pods of another namespace.
    browser.get(cluster.console + "/#/pod/default/elsewhere")
    refused = shows(browser, ".forbidden")
    assert refused["data"]["forbidden"] == "list pods" and "in the namespace default" in refused["text"], refused
    errors = browser_errors(browser)
    assert errors == [], f"a forbidden list is said on the page, not a failed request: {errors}"
    browser.delete_all_cookies()


def log_lines(browser):
    return browser.execute_script("return [...document.querySelectorAll('#logs .line')].map(l => l.textContent)")


def test_a_pods_page_shows_its_containers_environment_volumes_and_logs(cluster, browser):
    talker(cluster)
    login(browser, cluster)
    browser.get(cluster.console + "/#/pod/default/talker")
    card = find(browser, "section.container[data-container=main]", text="Running since").text
    for source in ["key greeting of ConfigMap talk", "key password of Secret talk-secret", "field status.podIP of the pod",
                   "just-a-value", "every key of ConfigMap talk", "/etc/talk"]:
        assert source in card, (source, card)
    assert "hunter2" not in browser.page_source, "a Secret's value is named by its source, never shown"
    volumes = texts(browser, "#pod-volumes")
    assert "ConfigMap talk" in volumes and "emptyDir" in volumes, volumes
    shot(browser, "pod-details")
    click(browser, "#tab-events")
    find(browser, "#pod-events tr", text="Started")
    click(browser, "#tab-logs")
    find(browser, "#logs .line", text="hello")
    assert browser.find_elements(By.CSS_SELECTOR, "#logs .ts"), "timestamps shown"
    number = lambda line: int(line.split()[1])
    # Search: the matching line marked, the others hidden, the count said.
    find(browser, "#log-search").send_keys("line 3 hello")
    find(browser, "#log-count", text="1 of")
    marks = browser.execute_script("return [...document.querySelectorAll('#logs mark')].map(m => m.textContent)")  # at once: it redraws
    assert marks == ["line 3 hello"], marks
    shot(browser, "pod-logs-search")
    find(browser, "#log-search").send_keys(Keys.CONTROL, "a", Keys.DELETE)
    click(browser, "#log-timestamps")
    wait_for(lambda: not browser.find_elements(By.CSS_SELECTOR, "#logs .ts"), message="timestamps hidden")
    click(browser, "#log-wrap")
    assert "nowrap" in find(browser, "#logs").get_attribute("class")
    # Paused, the view stays while the pod writes on (read from the API); resumed, it catches up.
    click(browser, "#log-pause")
    shown = number(log_lines(browser)[-1])
    written = lambda: number(cluster.kubectl("logs", "talker", "--tail=1").stdout.strip())
    wait_for(lambda: written() > shown + 5, timeout=30, message="the pod wrote on")
    assert number(log_lines(browser)[-1]) == shown, "a paused view does not move"
    later = written()
    click(browser, "#log-pause")
    wait_for(lambda: number(log_lines(browser)[-1]) >= later, message="the view caught up")
    # Download: what the view holds, as a file.
    click(browser, "#log-download")
    saved = browser.downloads / "talker-main.log"
    wait_for(lambda: saved.exists() and saved.read_text().endswith("\n"), message="the download")
    numbers = [number(line) for line in saved.read_text().splitlines()]
    assert len(numbers) >= later and numbers == list(range(numbers[0], numbers[0] + len(numbers))), numbers[:10]


def test_details_show_status_as_fields_and_the_create_form_puts_required_fields_first(cluster, browser):
    cluster.kubectl("create", "deployment", "shown", "--image=busybox", "--", "sleep", "3600")
    cluster.kubectl("rollout", "status", "deployment/shown", "--timeout=90s")
    login(browser, cluster)
    browser.get(cluster.console + "/#/instance/apps%2Fv1/Deployment/default/shown/details")
    find(browser, "#instance-conditions tr[data-condition=Available]", text="True")
    status = find(browser, "#instance-status dl", text="Ready replicas")
    assert "{" not in status.text, "fields, not JSON"
    shot(browser, "instance-details")
    subscribe(cluster, "etcd")
    csv = next(c["metadata"]["name"] for c in get(cluster, "-n", "operators", "csv")["items"] if c["metadata"]["name"].startswith("etcd.v"))
    browser.get(cluster.console + f"/#/create/operators/{csv}/etcdclusters.etcd.database.coreos.com")
    find(browser, "#field-spec-size")
    spec_fields = browser.execute_script("return [...document.querySelectorAll('#create-form [id^=field-spec-]')].map(e => e.id)")
    assert spec_fields[0] == "field-spec-size", f"the required size first: {spec_fields}"
    backup = find(browser, "label[for=field-spec-restoreOnQuorumLoss-backupName]")
    assert "required when restoreOnQuorumLoss is given" in backup.text and "*" not in backup.text, backup.text
    assert find(browser, "fieldset[data-section=restoreOnQuorumLoss] legend").text.endswith("optional")
    assert find(browser, "#field-spec-size").get_attribute("required") is not None
    submit = shows(browser, "#create-submit[data-access]")
    assert submit["data"]["access"] == "allowed" and not submit["disabled"], f"the admin may create: {submit}"
    shot(browser, "create-form-required")


def type_at_line_end(browser, editor, line_text, *keys):
    """Clicks the editor's line holding `line_text`, goes to its end and types `keys`, as a user would."""
    click_editor_line(browser, editor, line_text)
    browser.switch_to.active_element.send_keys(Keys.END, *keys)


def test_the_yaml_editor_checks_the_schema_and_the_server_before_saving(cluster, browser):
    if get(cluster, "deployment", "edited") is None:
        cluster.kubectl("apply", "-f", "-", input=deployment("edited"))
    # Rolled out, so that no status written meanwhile makes the saves below conflicts.
    cluster.kubectl("rollout", "status", "deployment/edited", "--timeout=90s")
    login(browser, cluster)
    browser.get(cluster.console + "/#/instance/apps%2Fv1/Deployment/default/edited/yaml")
    wait_for(lambda: "replicas: 1" in (editor_text(browser, "#instance-yaml") or ""), message="the YAML loaded")
    assert find(browser, "#instance-yaml .cm-line span"), "highlighted"
    # A string where the schema wants an integer: found as typed (the lint gutter), and Save refuses it,
    # naming the field, without asking the server.
    type_at_line_end(browser, "#instance-yaml", "replicas: 1", Keys.BACKSPACE, '"many"')
    wait_for(lambda: 'replicas: "many"' in editor_text(browser, "#instance-yaml"), message="typed")
    find(browser, "#instance-yaml .cm-lint-marker-error")
    click(browser, "#yaml-save")
    find(browser, "#yaml-message", text="Not saved: 1 problem")
    problem = find(browser, "#yaml-problems li.error").text
    assert "spec.replicas: must be of type integer, not string" in problem and problem.startswith("Line "), problem
    shot(browser, "yaml-editor-schema")
    # What only the server knows (replicas must not be negative): its dry run refuses, nothing is saved.
    type_at_line_end(browser, "#instance-yaml", 'replicas: "many"', *([Keys.BACKSPACE] * 6), "-1")
    wait_for(lambda: "replicas: -1" in editor_text(browser, "#instance-yaml"), message="typed")
    click(browser, "#yaml-save")
    refused = find(browser, "#yaml-message", text="Not saved:").text
    assert "spec.replicas" in refused, refused
    assert get(cluster, "deployment", "edited")["spec"]["replicas"] == 1, "nothing saved"
    # A good value is saved.
    type_at_line_end(browser, "#instance-yaml", "replicas: -1", Keys.BACKSPACE, Keys.BACKSPACE, "2")
    click(browser, "#yaml-save")
    find(browser, "#yaml-message", text="Saved.")
    assert get(cluster, "deployment", "edited")["spec"]["replicas"] == 2


def deployment(name, replicas=1, ready=True):
    probe = {"exec": {"command": ["true" if ready else "false"]}, "periodSeconds": 1}
    return json.dumps({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": "default"},
                       "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}}, "template": {
                           "metadata": {"labels": {"app": name}},
                           "spec": {"containers": [{"name": "main", "image": "busybox", "command": ["sleep", "3600"],
                                                    "readinessProbe": probe}]}}}})


def test_the_topology_draws_owners_above_their_children_coloured_by_readiness(cluster, browser):
    cluster.kubectl("apply", "-f", "-", input=deployment("topo", replicas=2))
    cluster.kubectl("apply", "-f", "-", input=deployment("never-ready", ready=False))
    cluster.kubectl("rollout", "status", "deployment/topo", "--timeout=90s")
    login(browser, cluster)
    browser.get(cluster.console + "/#/instance/apps%2Fv1/Deployment/default/topo/topology")
    nodes = lambda: browser.execute_script(r"""return [...document.querySelectorAll('#topology g.topo-node')].map(g => {
        const m = /translate\(([-\d.]+),([-\d.]+)\)/.exec(g.getAttribute('transform'));
        return [g.dataset.kind, g.dataset.health, Number(m[2])]; })""")
    drawn = []
    try:
        wait_for(lambda: (drawn.append(sorted((k, hl) for k, hl, _ in nodes())) or drawn[-1])
                 == [("Deployment", "ok"), ("Pod", "ok"), ("Pod", "ok"), ("ReplicaSet", "ok")],
                 timeout=60, message="the Deployment, its ReplicaSet and two Ready pods, green")
    except AssertionError as e:
        raise AssertionError(f"{e}; drawn last: {drawn[-1:]}") from e
    depth = {k: y for k, _, y in nodes()}
    assert depth["Deployment"] < depth["ReplicaSet"] < depth["Pod"], depth
    assert len(browser.find_elements(By.CSS_SELECTOR, "#topology polyline.edge")) == 3
    shot(browser, "instance-topology")
    # A pod Running but not Ready is not green: its readiness probe fails.
    browser.get(cluster.console + "/#/instance/apps%2Fv1/Deployment/default/never-ready/topology")
    pod = shows(browser, "#topology g.topo-node[data-kind=Pod]", text="Running")
    assert pod["data"]["health"] == "pending" and "0/1 ready" in pod["text"], pod
    # Its node is a link to its page (the keyboard reaches it: an SVG link).
    click(browser, "#topology a g.topo-node[data-kind=Pod]")
    find(browser, "#pod-summary", text="Running")
    # More children of one kind than the picture can hold readably are one node counting them.
    cluster.kubectl("create", "configmap", "big")
    uid = get(cluster, "configmap", "big")["metadata"]["uid"]
    owned = lambda kind, name: {"apiVersion": "v1", "kind": kind, "metadata": {"name": name, "namespace": "default",
                                "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "big", "uid": uid}]}}
    children = [owned("ConfigMap", f"part-{i}") for i in range(MAX_SIBLINGS + 2)] + [owned("Secret", "big-secret")]
    cluster.kubectl("apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": children}))
    browser.get(cluster.console + "/#/instance/v1/ConfigMap/default/big/topology")
    group = shows(browser, "#topology g.topo-group[data-kind=ConfigMap]", text=f"{MAX_SIBLINGS + 2} ConfigMaps")
    assert group["data"]["count"] == str(MAX_SIBLINGS + 2) and group["data"]["health"] == "ok", group
    assert find(browser, "#topology g.topo-node[data-kind=Secret][data-name=big-secret]")
    assert not browser.find_elements(By.CSS_SELECTOR, "#topology g.topo-node[data-name=part-0]"), "not each of them"
    shot(browser, "instance-topology-group")


def test_an_operator_is_uninstalled_from_its_page(cluster, browser):
    subscribe(cluster, "sample-controller")
    cluster.kubectl("wait", "--for=condition=Established", "crd/foos.njuics.cn", "--timeout=60s")
    cluster.kubectl("apply", "-f", "-", input=json.dumps({"apiVersion": "njuics.cn/v1alpha1", "kind": "Foo",
                                                          "metadata": {"name": "doomed", "namespace": "default"},
                                                          "spec": {"deploymentName": "doomed", "replicas": 1}}))
    csv = next(c["metadata"]["name"] for c in get(cluster, "-n", "operators", "csv")["items"]
               if c["metadata"]["name"].startswith("sample-controller.v"))
    owned = lambda kind: [o["metadata"]["name"] for o in (get(cluster, kind, "-A", "-l", f"olm.owner={csv}") or {"items": []})["items"]]
    assert owned("universalcontrollers"), "the install made the operator's controllers"
    login(browser, cluster)
    browser.get(cluster.console + "/#/installed")
    click(browser, f"tr[data-csv='{csv}'] a")
    find(browser, "#subscription-status", text="AtLatestKnown")
    # Its conditions as `oc describe sub` lists them (seed 001 ch. 7), coloured by meaning: no unhealthy catalog is good.
    # (Read in one go: the table is drawn again as the Subscription's status changes.)
    wait_for(lambda: browser.execute_script(
        "const r = document.querySelector('#subscription-conditions tr[data-condition=CatalogSourcesUnhealthy]');"
        "return r && r.textContent.includes('False') && r.querySelector('.phase').dataset.health") == "ok",
        message="CatalogSourcesUnhealthy False, green")
    shot(browser, "operator-status")
    # First the Subscription alone ("completely" unticked): no more updates, the operator still there.
    click(browser, "#uninstall")
    click(browser, "#uninstall-completely")
    click(browser, "#uninstall-confirm")
    wait_for(lambda: get(cluster, "-n", "operators", "subscription", "sample-controller") is None, message="the Subscription removed")
    assert get(cluster, "-n", "operators", "csv", csv) is not None and owned("universalcontrollers"), "the operator stays"
    # Then completely, its instances too.
    wait_for(lambda: "no Subscription" in browser.execute_script("return document.getElementById('uninstall-dialog')?.textContent || ''"),
             message="the page knows the Subscription is gone")
    click(browser, "#uninstall")
    click(browser, "#uninstall-operands")
    shot(browser, "uninstall")
    click(browser, "#uninstall-confirm")
    wait_for(lambda: browser.current_url.endswith("#/installed"), message="back on the installed operators")
    wait_for(lambda: get(cluster, "-n", "operators", "csv", csv) is None, timeout=30, message="the CSV deleted")
    wait_for(lambda: not owned("universalcontrollers"), timeout=60, message="the operator's controllers removed")
    wait_for(lambda: get(cluster, "foo", "doomed") is None, timeout=60, message="its instance deleted, as asked")
    assert get(cluster, "crd", "foos.njuics.cn") is not None, "the CRD stays, as OLM leaves it"


MAIN_PAGES = ["#/hub", "#/package/olm/etcd", "#/install/olm/etcd", "#/installed", "#/controllers", "#/cluster",
              "#/pod/default/talker", "#/pod/default/talker/logs"]


# axe-core at the version crates/uc-console/web/package-lock.json pins (installed by web/build.sh, which
# .ci/run runs before the tests).
AXE = ROOT / "crates/uc-console/web/node_modules/axe-core/axe.min.js"


def axe_violations(browser):
    """axe-core's serious and critical violations of the page as it is now."""
    if not AXE.exists():
        pytest.skip(f"no {AXE.relative_to(ROOT)}: bash crates/uc-console/web/build.sh installs it")
    browser.execute_script(AXE.read_text())
    found = browser.execute_async_script("""const done = arguments[arguments.length - 1];
        axe.run(document, {resultTypes: ['violations']}).then(r => done(r.violations.map(v =>
            ({id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.slice(0, 3).map(n => n.target.join(' '))}))));""")
    return [v for v in found if v["impact"] in ("serious", "critical")]


def test_main_pages_fail_no_request_and_have_no_serious_accessibility_violation(cluster, browser):
    talker(cluster)
    subscribe(cluster, "etcd")
    if get(cluster, "deployment", "walked") is None:
        cluster.kubectl("apply", "-f", "-", input=deployment("walked"))
    browser.get(cluster.console + "/login")
    assert axe_violations(browser) == [], "the login page"
    login(browser, cluster)
    csv = next(c["metadata"]["name"] for c in get(cluster, "-n", "operators", "csv")["items"] if c["metadata"]["name"].startswith("etcd.v"))
    walked = "#/instance/apps%2Fv1/Deployment/default/walked"
    pages = [*MAIN_PAGES, f"#/csv/operators/{csv}", f"#/create/operators/{csv}/etcdclusters.etcd.database.coreos.com",
             *(f"{walked}/{tab}" for tab in ["details", "resources", "topology", "events", "yaml"])]
    for page in pages:
        browser.get(cluster.console + "/" + page)
        find(browser, "main#page h1")
        find(browser, "main#page table tr td, main#page .tile, main#page form, main#page pre, main#page .cm-line, "
                      "main#page g.topo-node, main#page dl, main#page ul.tree li", timeout=30)
        assert axe_violations(browser) == [], page
        shown = browser.find_element(By.CSS_SELECTOR, "main#page").text
        assert "undefined" not in shown and "[object Object]" not in shown and "NaN" not in shown, (page, shown[:2000])
        # A request that fails is logged when it does, perhaps as the next page draws: each page's log is
        # read after it has drawn what its requests brought, and the whole walk must have none.
        assert browser_errors(browser) == [], page
