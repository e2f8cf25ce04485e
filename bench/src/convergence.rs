//! Convergence of N Foo parents into Deployments + status (compare-bench's second part): uc with the
//! JavaScript hook, uc with a loopback webhook, the hand-written kube-rs controller and kopf, against the
//! write-bound limit measured in the same run; then uc alone at 1,000 → 10,000 → 100,000 parents, and
//! on 1, 2, 4 … cores (taskset).

use crate::report::verdict;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use kube::Client;
use kube::api::{Api, DynamicObject, ListParams};
use serde_json::json;
use uc_bench::cluster::{self, Uc};
use uc_bench::foos;

use super::webhook::start_webhook;
use super::{Args, Proc, ar, client, crd_resource, create, pinned, start_uc, uc_resource, uc_run_args, yaml_file};

/// The sample-controller written four ways.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, clap::ValueEnum)]
pub enum Impl {
    UcJs,
    UcWebhook,
    KubeRs,
    Kopf,
}

/// The Foo hook (the thesis's listing 5.2 computing the status as the other controllers do: see the file).
const SAMPLE_JS: &str = include_str!("../foo-sync.js");

/// One converged run: its time, the peak RSS (`VmHWM`) of `uc up` and of the controller, and the CPU
/// time each had used by then (seconds; `uc up`'s includes the creates).
pub struct Run {
    pub time: Duration,
    pub peak_up: u64,
    pub peak_controller: u64,
    pub cpu_up: f64,
    pub cpu_controller: f64,
    /// Backlog: how long a Foo created once the controller was at work (its first parent converged)
    /// took to converge, from its create.
    pub late: Option<Duration>,
}

impl Run {
    /// Microseconds of CPU per parent: `uc up`'s and the controller's.
    fn cpu_per_parent(&self, n: usize) -> (f64, f64) {
        (self.cpu_up * 1e6 / n as f64, self.cpu_controller * 1e6 / n as f64)
    }
}

/// Converges `n` parents with `which`, everything pinned to `cpus` if given; None if not in time.
async fn converge(
    args: &Args,
    n: usize,
    which: Impl,
    webhook: std::net::SocketAddr,
    backlog: bool,
    cpus: Option<&str>,
) -> Result<Option<Run>> {
    let (uc, c, foos) = foo_cluster(args, cpus).await?;
    if matches!(which, Impl::UcJs | Impl::UcWebhook) {
        {
            for crd in [uc_api::crds::universal_controller_crd(), uc_api::crds::controller_revision_crd()] {
                create(&c, &crd_resource(), None, uc_api::meta::json_of(&crd)).await?;
            }
            let hook = match which {
                Impl::UcWebhook => json!({"webhook": {"url": format!("http://{webhook}/")}}),
                _ => json!({"javascript": {"source": SAMPLE_JS}}),
            };
            create(&c, &uc_resource(), None, json!({
                "apiVersion": "universalcontroller.njuics.cn/v1alpha1", "kind": "UniversalController", "metadata": {"name": "sample-controller"},
                "spec": {"generateSelector": true, "parentResource": {"apiVersion": "njuics.cn/v1alpha1", "resource": "foos"},
                         "childResources": [{"apiVersion": "apps/v1", "resource": "deployments", "updateStrategy": {"method": "InPlace"}}],
                         "hooks": {"sync": hook}}})).await?;
        }
    }
    let spawn = || -> Result<Proc> {
        Ok(match which {
            Impl::UcJs | Impl::UcWebhook => {
                Proc::quiet(pinned(args.uc.as_os_str(), cpus).args(uc_run_args(&uc.kubeconfig)))?
            }
            Impl::KubeRs => Proc::quiet(pinned(args.controller.as_os_str(), cpus).args([
                "foo",
                "--kubeconfig",
                &uc.kubeconfig,
                "--name",
                "kube-rs-foo",
            ]))?,
            Impl::Kopf => Proc::quiet(
                pinned(std::ffi::OsStr::new(&args.python), cpus)
                    .args(["-m", "kopf", "run", "--standalone", "--all-namespaces", "--quiet", "bench/kopf/foo.py"])
                    .env("KUBECONFIG", &uc.kubeconfig),
            )?,
        })
    };
    // Live: the controller runs while the parents are created. Backlog: it starts once they all exist.
    let mut proc = if backlog { None } else { Some(spawn()?) };
    let progress = foos::Progress::start(&c, &foos).await?;
    let mut started = Instant::now();
    foos::create(&foos, n, 8).await?;
    if proc.is_none() {
        started = Instant::now();
        proc = Some(spawn()?);
    }
    let proc = proc.context("the controller")?;
    let deadline = started + Duration::from_secs(args.timeout);
    // Backlog: one more Foo, created once the controller is at work, is served how soon?
    let (mut late_created, mut late) = (None::<Instant>, None);
    loop {
        let (done_foos, deps) = progress.counts();
        if backlog && late_created.is_none() && done_foos > 0 {
            foos::create_one(&foos, LATE).await?;
            late_created = Some(Instant::now());
        }
        if let Some(at) = late_created
            && late.is_none()
            && progress.converged(LATE)
        {
            late = Some(at.elapsed());
        }
        let all = n + usize::from(late_created.is_some());
        if done_foos == all && deps == all {
            let time = started.elapsed();
            let (peak_up, peak_controller) = (cluster::status_bytes(uc.pid(), "VmHWM"), proc.status_bytes("VmHWM"));
            let (cpu_up, cpu_controller) = (cluster::cpu_seconds(uc.pid()), proc.cpu_seconds());
            return Ok(Some(Run { time, peak_up, peak_controller, cpu_up, cpu_controller, late }));
        }
        if Instant::now() > deadline {
            println!(
                "{which:?}: not converged after {} s: {done_foos}/{n} statuses, {deps}/{n} deployments",
                args.timeout
            );
            return Ok(None);
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The Foo a backlog run creates once the controller is at work.
const LATE: &str = "foo-late";

/// A cluster for the convergence runs (`uc up --no-engine --no-node`, in memory) with the Foo CRD served.
async fn foo_cluster(args: &Args, cpus: Option<&str>) -> Result<(Uc, Client, Api<DynamicObject>)> {
    let uc = start_uc(&args.uc, &["--no-node"], cpus)?;
    let c = client(&uc.kubeconfig).await?;
    create(&c, &crd_resource(), None, yaml_file("examples/sample-controller/crd.yaml")?).await?;
    let foos: Api<DynamicObject> =
        Api::namespaced_with(c.clone(), "default", &ar("njuics.cn", "v1alpha1", "Foo", "foos"));
    for _ in 0..100 {
        if foos.list(&ListParams::default().limit(1)).await.is_ok() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok((uc, c, foos))
}

/// The write-bound limit in parents/s: the Foos such a cluster takes per second from the 8 creating
/// clients with no controller running, over the 3 writes a converged parent costs (its create, its
/// Deployment's, its status); and `uc up`'s CPU per create, in microseconds.
async fn write_bound(args: &Args, n: usize) -> Result<(f64, f64)> {
    let (uc, _c, foos) = foo_cluster(args, None).await?;
    let start = Instant::now();
    foos::create(&foos, n, 8).await?;
    Ok((n as f64 / start.elapsed().as_secs_f64() / 3.0, cluster::cpu_seconds(uc.pid()) * 1e6 / n as f64))
}

/// How many times the figures the ratio compares are measured (the limit, and uc at the largest count):
/// each is a second or two on a shared machine, and one run moved them by a quarter.
const REPEATS: usize = 3;

/// The median of `xs` and the figures it is the median of, as the report shows them.
fn median(mut xs: Vec<f64>, show: impl Fn(f64) -> String) -> (f64, String) {
    xs.sort_by(f64::total_cmp);
    let all = xs.iter().map(|x| show(*x)).collect::<Vec<_>>().join(", ");
    (xs[xs.len() / 2], all)
}

/// One row of the convergence table, for its verdicts.
struct Row<'a> {
    n: usize,
    mode: &'a str,
    largest: usize,
    limit: f64,
    repeats: &'a str,
    timeout: u64,
}

impl Row<'_> {
    /// The verdicts a row gives: uc against the write-bound limit (at the largest count), ≤ 30 s at
    /// 10,000 and more, and uc against kube-rs and kopf (when all three ran).
    fn verdicts(&self, times: &std::collections::HashMap<Impl, Option<Duration>>) -> String {
        let Row { n, mode, largest, limit, repeats, timeout } = *self;
        let fmt = |t: Option<Duration>| match t {
            Some(t) => format!("{:.2} s ({:.0}/s)", t.as_secs_f64(), n as f64 / t.as_secs_f64()),
            None => format!("> {timeout} s"),
        };
        let mut out = String::new();
        if n == largest
            && let Some(Some(t)) = times.get(&Impl::UcJs)
        {
            let ratio = n as f64 / t.as_secs_f64() / limit;
            out.push_str(&format!(
            "| {n}, {mode}: uc (JS) ≥ 0.5 × the write-bound limit ({limit:.0} parents/s) | {ratio:.2} ×{repeats} | {} |\n",
            verdict(ratio >= 0.5)
        ));
        }
        if !(times.contains_key(&Impl::UcJs) && times.contains_key(&Impl::KubeRs) && times.contains_key(&Impl::Kopf)) {
            return out;
        }
        let (js, kube, kopf) = (times[&Impl::UcJs], times[&Impl::KubeRs], times[&Impl::Kopf]);
        let rate = |t: Option<Duration>| t.map(|t| n as f64 / t.as_secs_f64());
        if n >= 10_000 {
            let js_ok = js.is_some_and(|t| t.as_secs_f64() <= 30.0);
            out.push_str(&format!(
                "| {n} parents converged ≤ 30 s (uc, JS, {mode}) | {} | {} |\n",
                fmt(js),
                verdict(js_ok)
            ));
        }
        let vs_kube = rate(js).zip(rate(kube)).map(|(a, b)| a / b);
        // kopf that did not finish in time ran at most n/timeout parents/s.
        let vs_kopf = rate(js).map(|a| a / rate(kopf).unwrap_or(n as f64 / timeout as f64));
        out.push_str(&format!(
            "| {n}, {mode}: uc (JS) ≥ 1.0 × kube-rs | {} | {} |\n| {n}, {mode}: uc (JS) ≥ 10 × kopf | {}{} | {} |\n",
            vs_kube.map(|r| format!("{r:.2} ×")).unwrap_or("—".into()),
            verdict(vs_kube.is_some_and(|r| r >= 1.0)),
            vs_kopf.map(|r| format!("{r:.1} ×")).unwrap_or("—".into()),
            if kopf.is_none() { " (at least)" } else { "" },
            verdict(vs_kopf.is_some_and(|r| r >= 10.0)),
        ));
        out
    }
}

/// What the convergence report says beside its table: the limit's runs, CPU per create and per parent,
/// and how late a parent created during a backlog was served.
struct Notes {
    limits: String,
    create_cpu: String,
    cpu: String,
    late: String,
}

/// The convergence section of the report.
fn report(largest: usize, limit: f64, notes: &Notes, rows: &str, verdicts: &str) -> String {
    format!(
        "### Convergence: N Foos → Deployments + status\n\n\
         Parents created by 8 concurrent clients; time until every Foo has its Deployment and a status with a current\n\
         `observedGeneration`. *Live*: the controller runs while the parents are created, timed from the first\n\
         create (the creating clients bound this: about as fast as the API server takes the creates); *backlog*:\n\
         the controller starts once every parent exists, timed from its start (its own throughput). Every controller is its own process against `uc up --no-engine --no-node` (nothing\n\
         else works on the cluster): uc is `uc run` (its JavaScript hook `bench/foo-sync.js`, the thesis's listing 5.2\n\
         with `availableReplicas` defaulting to 0 as every other controller here computes it; the webhook\n\
         the same in Rust); kube-rs is `bench-controller foo` (kube-runtime `Controller`,\n\
         reads the child with a GET, as kube-rs's examples do); kopf is `bench/kopf/foo.py`. Progress is counted by\n\
         two watches (the Foos' names, generations and observed generations; the Deployments' metadata), not by\n\
         lists. The write-bound limit is measured first, in the same run: {largest} Foos created by the same 8\n\
         clients with no controller running, in creates/s over the 3 writes a converged parent costs, the median\n\
         of {REPEATS} runs ({limits} parents/s): **{limit:.0} parents/s** ({creates:.0} creates/s). uc's time at\n\
         {largest} parents, in the table and the verdicts, is the median of {REPEATS} runs too. CPU time per\n\
         parent over those runs (read from `/proc` at convergence; `uc up`'s includes the parents' creates): {cpu};\n\
         at the limit `uc up` took {create_cpu} µs per create. In each backlog run one more Foo is created once the\n\
         controller's first parent has converged; from its create to its status, at {largest} parents: {late}.\n\n\
         | parents | uc, JavaScript hook | uc, loopback webhook | kube-rs | kopf |\n| --- | --- | --- | --- | --- |\n{rows}\n\
         | target | measured | verdict |\n| --- | --- | --- |\n{verdicts}\n",
        creates = limit * 3.0,
        limits = notes.limits,
        create_cpu = notes.create_cpu,
        cpu = notes.cpu,
        late = if notes.late.is_empty() { "—" } else { &notes.late },
    )
}

pub async fn convergence(args: &Args) -> Result<String> {
    let webhook = start_webhook().await?;
    let mut rows = String::new();
    let mut verdicts = String::new();
    let fmt = |t: Option<Duration>, n: usize| match t {
        Some(t) => format!("{:.2} s ({:.0}/s)", t.as_secs_f64(), n as f64 / t.as_secs_f64()),
        None => format!("> {} s", args.timeout),
    };
    let largest = args.parents.iter().copied().max().unwrap_or(0);
    let mut limits = Vec::new();
    let mut create_cpu = Vec::new();
    for _ in 0..REPEATS {
        let (limit, cpu) = write_bound(args, largest).await?;
        limits.push(limit);
        create_cpu.push(cpu);
    }
    let (limit, limits) = median(limits, |l| format!("{l:.0}"));
    let create_cpu = span(&create_cpu);
    // CPU per parent of uc's runs at the largest count, per mode: what the ratio is made of.
    let mut cpu_notes = Vec::new();
    // Backlog at the largest count: how soon each controller served a parent created meanwhile.
    let mut late_notes = Vec::new();
    println!("write-bound limit: {limit:.0} parents/s ({:.0} creates/s of {largest} Foos; runs {limits})", limit * 3.0);
    for backlog in [false, true] {
        let mode = if backlog { "backlog" } else { "live" };
        for &n in &args.parents {
            let mut times = std::collections::HashMap::new();
            let mut repeats = String::new();
            for &which in &args.impls {
                let run = converge(args, n, which, webhook, backlog, None).await?;
                let t = run.as_ref().map(|r| r.time);
                println!("{n} parents ({mode}), {which:?}: {}{}", fmt(t, n), cpu_text(run.as_ref(), n));
                let mut lates: Vec<f64> = run.iter().filter_map(|r| r.late).map(|l| l.as_secs_f64()).collect();
                // uc against the limit: its median of REPEATS runs, as the limit's.
                let t = match (t, run) {
                    (Some(first), Some(run)) if which == Impl::UcJs && n == largest => {
                        let mut runs = vec![first.as_secs_f64()];
                        let mut cpu = vec![run.cpu_per_parent(n)];
                        for _ in 1..REPEATS {
                            let again = converge(args, n, which, webhook, backlog, None).await?;
                            let t = again.as_ref().map(|r| r.time);
                            println!(
                                "{n} parents ({mode}), {which:?}, again: {}{}",
                                fmt(t, n),
                                cpu_text(again.as_ref(), n)
                            );
                            runs.push(t.map_or(args.timeout as f64, |t| t.as_secs_f64()));
                            lates.extend(again.as_ref().and_then(|r| r.late).map(|l| l.as_secs_f64()));
                            cpu.extend(again.map(|r| r.cpu_per_parent(n)));
                        }
                        let (t, all) = median(runs, |t| format!("{t:.2}"));
                        repeats = format!(" (median of {all} s)");
                        let (up, run): (Vec<f64>, Vec<f64>) = cpu.into_iter().unzip();
                        cpu_notes.push(format!("{mode} `uc run` {} µs and `uc up` {} µs", span(&run), span(&up)));
                        Some(Duration::from_secs_f64(t))
                    }
                    (t, _) => t,
                };
                if backlog && n == largest && !lates.is_empty() {
                    let (late, _) = median(lates, |l| format!("{l:.2}"));
                    let whole = t.map_or_else(
                        || format!("more than {} s", args.timeout),
                        |t| format!("{:.2} s", t.as_secs_f64()),
                    );
                    late_notes.push(format!("{} {late:.2} s (its backlog {whole})", impl_name(which)));
                }
                times.insert(which, t);
            }
            // A controller not run (`--impls`) is a dash; one that did not finish, the timeout.
            let cell = |which: Impl| times.get(&which).map(|t| fmt(*t, n)).unwrap_or_else(|| "—".into());
            rows.push_str(&format!(
                "| {n}, {mode} | {} | {} | {} | {} |\n",
                cell(Impl::UcJs),
                cell(Impl::UcWebhook),
                cell(Impl::KubeRs),
                cell(Impl::Kopf)
            ));
            let row = Row { n, mode, largest, limit, repeats: &repeats, timeout: args.timeout };
            verdicts.push_str(&row.verdicts(&times));
        }
    }
    let notes = Notes { limits, create_cpu, cpu: cpu_notes.join("; "), late: late_notes.join(", ") };
    Ok(report(largest, limit, &notes, &rows, &verdicts))
}

/// A controller as the report names it.
fn impl_name(which: Impl) -> &'static str {
    match which {
        Impl::UcJs => "uc (JavaScript hook)",
        Impl::UcWebhook => "uc (loopback webhook)",
        Impl::KubeRs => "kube-rs",
        Impl::Kopf => "kopf",
    }
}

/// A run's CPU per parent, as the progress lines print it.
fn cpu_text(run: Option<&Run>, n: usize) -> String {
    let late =
        run.and_then(|r| r.late).map(|l| format!("; a Foo created meanwhile converged in {:.2} s", l.as_secs_f64()));
    run.map(|r| r.cpu_per_parent(n))
        .map(|(up, c)| format!("; CPU per parent: controller {c:.0} µs, uc up {up:.0} µs{}", late.unwrap_or_default()))
        .unwrap_or_default()
}

/// The range of some figures, as `a–b` (one figure alone when they agree to the unit).
fn span(xs: &[f64]) -> String {
    let lo = xs.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if xs.is_empty() {
        "—".into()
    } else if lo.round() == hi.round() {
        format!("{lo:.0}")
    } else {
        format!("{lo:.0}–{hi:.0}")
    }
}

/// The time a live run of `n` parents should converge in: issue 58's goals (100,000 in a minute,
/// 1,000,000 in six); none below 100,000.
fn scaling_goal(n: usize) -> Option<Duration> {
    match n {
        0..100_000 => None,
        100_000..1_000_000 => Some(Duration::from_secs(60)),
        _ => Some(Duration::from_secs(360)),
    }
}

/// Parents/s of a run.
fn rate(n: usize, t: Duration) -> f64 {
    n as f64 / t.as_secs_f64()
}

/// uc (JavaScript hook, live) at each `--scale` count, with each process's peak RSS, and at
/// `--cores-parents` on 1, 2, 4 … of the machine's cores.
pub async fn scaling(args: &Args) -> Result<String> {
    let webhook = start_webhook().await?;
    let mb = |b: u64| b as f64 / 1e6;
    let mut rows = String::new();
    let mut last: Option<(usize, Run)> = None;
    let mut verdicts = String::new();
    for &n in &args.scale {
        let Some(run) = converge(args, n, Impl::UcJs, webhook, false, None).await? else {
            rows.push_str(&format!("| {n} | > {} s | | | | | | |\n", args.timeout));
            continue;
        };
        println!("scaling: {n} parents in {:.2} s", run.time.as_secs_f64());
        // The log-log slope of time over parents: 1.0 is a flat cost per parent.
        let slope = last
            .as_ref()
            .map(|(m, r)| (run.time.as_secs_f64() / r.time.as_secs_f64()).ln() / (n as f64 / *m as f64).ln());
        let (cpu_up, cpu_run) = run.cpu_per_parent(n);
        rows.push_str(&format!(
            "| {n} | {:.2} s | {:.0}/s | {:.0} µs | {} | {cpu_up:.0} µs · {cpu_run:.0} µs | {:.1} MB | {:.1} MB |\n",
            run.time.as_secs_f64(),
            rate(n, run.time),
            run.time.as_secs_f64() * 1e6 / n as f64,
            slope.map(|s| format!("{s:.2}")).unwrap_or("—".into()),
            mb(run.peak_up),
            mb(run.peak_controller),
        ));
        if let Some(goal) = scaling_goal(n) {
            verdicts.push_str(&format!(
                "| {n} parents converged (live) ≤ {} s | {:.2} s | {} |\n",
                goal.as_secs(),
                run.time.as_secs_f64(),
                verdict(run.time <= goal)
            ));
        }
        if let (Some(s), true) = (slope, n >= 1_000_000) {
            verdicts
                .push_str(&format!("| log-log slope up to {n} parents ≤ 1.05 | {s:.2} | {} |\n", verdict(s <= 1.05)));
        }
        last = Some((n, run));
    }
    let all = crate::report::cores();
    let mut counts: Vec<usize> =
        std::iter::successors(Some(1usize), |c| Some(c * 2)).take_while(|c| *c < all).collect();
    counts.push(all);
    let n = args.cores_parents;
    let mut core_rows = String::new();
    let mut one = None;
    for cores in counts {
        let cpus = format!("0-{}", cores - 1);
        let run = converge(args, n, Impl::UcJs, webhook, false, Some(&cpus)).await?;
        let Some(run) = run else {
            core_rows.push_str(&format!("| {cores} | > {} s | | |\n", args.timeout));
            continue;
        };
        println!("cores: {n} parents on {cores} cores in {:.2} s", run.time.as_secs_f64());
        let r = rate(n, run.time);
        let base = *one.get_or_insert(r);
        core_rows.push_str(&format!("| {cores} | {:.2} s | {r:.0}/s | {:.2} × |\n", run.time.as_secs_f64(), r / base));
    }
    if !verdicts.is_empty() {
        verdicts = format!("| target | measured | verdict |\n| --- | --- | --- |\n{verdicts}\n");
    }
    Ok(format!(
        "### Scaling: parents (uc, JavaScript hook, live)\n\n\
         The same convergence run as above at each size; *slope* is the log-log slope of time over parents\n\
         from the row above (1.0: the cost per parent stays flat); CPU per parent is the CPU time `uc up` and\n\
         `uc run` used by convergence over the parents (less shaken than the time by what else the machine\n\
         runs: compare builds by it); peak RSS is `VmHWM` of `uc up` (the API server holding every Foo and\n\
         Deployment) and of `uc run` (its caches of both), read at convergence.\n\n\
         | parents | time | parents/s | wall time per parent | slope | CPU per parent `uc up` · `uc run` | peak RSS `uc up` | peak RSS `uc run` |\n\
         | --- | --- | --- | --- | --- | --- | --- | --- |\n{rows}\n\
         {verdicts}\
         ### Cores: {n} parents (uc, JavaScript hook, live), everything pinned with `taskset`\n\n\
         `uc up` and `uc run` on cores `0-(k-1)`; the benchmark's own clients are not pinned. This machine\n\
         has {all} cores; a larger one extends the table.\n\n\
         | cores | time | parents/s | × of 1 core |\n| --- | --- | --- | --- |\n{core_rows}\n"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_are_reported_as_their_range() {
        assert_eq!(span(&[212.4, 198.6, 205.0]), "199–212");
        assert_eq!(span(&[170.2, 169.8]), "170", "equal to the unit");
        assert_eq!(span(&[]), "—");
        let run = Run {
            time: Duration::from_secs(2),
            peak_up: 0,
            peak_controller: 0,
            cpu_up: 1.7,
            cpu_controller: 2.0,
            late: None,
        };
        assert_eq!(run.cpu_per_parent(10_000), (170.0, 200.0));
        assert_eq!(cpu_text(Some(&run), 10_000), "; CPU per parent: controller 200 µs, uc up 170 µs");
        let run = Run { late: Some(Duration::from_millis(40)), ..run };
        assert_eq!(
            cpu_text(Some(&run), 10_000),
            "; CPU per parent: controller 200 µs, uc up 170 µs; a Foo created meanwhile converged in 0.04 s"
        );
        assert_eq!(cpu_text(None, 10_000), "");
    }

    #[test]
    fn a_scaling_run_is_judged_by_the_goal_of_its_size() {
        assert_eq!(scaling_goal(10_000), None);
        assert_eq!(scaling_goal(100_000), Some(Duration::from_secs(60)));
        assert_eq!(scaling_goal(999_999), Some(Duration::from_secs(60)));
        assert_eq!(scaling_goal(1_000_000), Some(Duration::from_secs(360)));
    }
}
