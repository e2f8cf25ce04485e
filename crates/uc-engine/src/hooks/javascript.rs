//! JavaScript hooks run in-process by QuickJS (rquickjs), off the async runtime's workers after their
//! first milliseconds (`js_threads`), with a wall-clock deadline (an uncatchable interrupt), a memory
//! limit and a stack limit. Scripts get the bare language — no file system, no network, no timers —
//! and `console.log/info/warn/error/debug`, which write to uc's log naming the controller and the
//! parent (at most `CONSOLE_LINES` lines per `CONSOLE_WINDOW` per hook; what is over is counted and
//! said).
//!
//! Two forms are accepted: `function sync(request) { return response }` (and `finalize`,
//! `customize`), or the kubeless form of the thesis, `module.exports = { handler: (event, context) =>
//! ... }` with the request in `event.data`.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use rquickjs::{Context, Function, Runtime};
use serde_json::Value;
use uc_api::controller::{JavaScript, parse_duration};
use uc_api::hook::SyncRequest;

use super::js_threads::{Threads, leave_worker_if_due};
use super::js_values::{json_request, to_json, typed_request};
use super::protocol::{HookError, HookKind};

/// Limits of one script.
#[derive(Clone, Copy, Debug)]
pub struct JsLimits {
    /// Wall-clock limit per call.
    pub timeout: Duration,
    /// Heap limit.
    pub memory_bytes: usize,
    /// Stack limit.
    pub stack_bytes: usize,
}

impl Default for JsLimits {
    fn default() -> Self {
        Self { timeout: Duration::from_secs(2), memory_bytes: 64 << 20, stack_bytes: 1 << 20 }
    }
}

impl JsLimits {
    /// From the hook spec.
    pub fn from_spec(js: &JavaScript) -> Result<Self, HookError> {
        let mut l = Self::default();
        if let Some(t) = &js.timeout {
            l.timeout = parse_duration(t).map_err(|e| HookError::Config(e.to_string()))?;
        }
        if let Some(m) = js.memory_limit_mi_b {
            l.memory_bytes = (m as usize).saturating_mul(1 << 20);
        }
        Ok(l)
    }
}

const PRELUDE: &str = r#"var module = {exports: {}}; var exports = module.exports;
globalThis.console = (function () {
  var fmt = function (a) {
    if (typeof a === 'string') return a;
    try { var j = JSON.stringify(a); return j === undefined ? String(a) : j; } catch (e) { return String(a); }
  };
  var at = function (level) {
    return function () {
      __uc_log(level, Array.prototype.map.call(arguments, fmt).join(' '));
    };
  };
  return {log: at('info'), info: at('info'), warn: at('warn'), error: at('error'), debug: at('debug')};
})();"#;

/// Console lines a hook may write per window; the rest are counted and dropped.
const CONSOLE_LINES: u32 = 50;
const CONSOLE_WINDOW: Duration = Duration::from_secs(10);
/// The longest console line kept.
const CONSOLE_LINE_BYTES: usize = 4096;

/// Where a hook's console lines go: uc's log, rate-limited.
struct Console {
    label: String,
    window: Mutex<(Instant, u32, u32)>,
}

impl Console {
    fn write(&self, level: &str, parent: &str, line: &str) {
        let dropped = {
            let mut w = self.window.lock();
            if w.0.elapsed() >= CONSOLE_WINDOW {
                let dropped = w.2;
                *w = (Instant::now(), 0, 0);
                if dropped > 0 {
                    tracing::warn!(controller = %self.label, dropped, "console lines over the limit were dropped");
                }
            }
            w.1 += 1;
            if w.1 > CONSOLE_LINES {
                w.2 += 1;
                true
            } else {
                false
            }
        };
        if dropped {
            return;
        }
        let mut end = line.len().min(CONSOLE_LINE_BYTES);
        while !line.is_char_boundary(end) {
            end -= 1;
        }
        let text = &line[..end];
        let c = self.label.as_str();
        match level {
            "error" => tracing::error!(target: "uc_engine::hook", controller = c, parent, "{text}"),
            "warn" => tracing::warn!(target: "uc_engine::hook", controller = c, parent, "{text}"),
            "debug" => tracing::debug!(target: "uc_engine::hook", controller = c, parent, "{text}"),
            _ => tracing::info!(target: "uc_engine::hook", controller = c, parent, "{text}"),
        }
    }
}
const ENTRY: &str = r#"
// The request's `controller` (the whole UniversalController, the same in every call) is parsed when the
// hook first reads it: most hooks never do, and parsing it was a third of a call's time. The request
// comes with `controller: null` in its place, which the accessor replaces (a property redefined keeps
// its place in the key order).
var __uc_with_controller = function (req, text) {
  var parsed, done = false;
  Object.defineProperty(req, 'controller', {
    enumerable: true, configurable: true,
    get: function () { if (!done) { parsed = JSON.parse(text); done = true; } return parsed; },
    set: function (v) { parsed = v; done = true; }
  });
  return req;
};
globalThis.__uc_call = function (kind, req, controller) {
  if (typeof controller === 'string') req = __uc_with_controller(req, controller);
  var m = (typeof module === 'object' && module) ? module.exports : undefined;
  var pick = function (name) {
    if (typeof globalThis[name] === 'function') return globalThis[name];
    if (m && typeof m[name] === 'function') return m[name];
    return null;
  };
  var fn = pick(kind) || pick('sync');
  var res;
  if (fn) {
    res = fn(req);
  } else if (m && typeof m.handler === 'function') {
    res = m.handler({data: req}, {});
  } else {
    throw new Error('the script defines neither sync(request) nor module.exports.handler');
  }
  return res === undefined ? null : res;
};
"#;

struct Job {
    kind: HookKind,
    /// The parent the call is about (`<namespace>/<name>`), which its console lines name.
    parent: String,
    /// The request, its `controller` null.
    request: Request,
    /// The request's `controller`, parsed only when the script reads it.
    controller: Option<Arc<str>>,
}

/// A request, built in the script's heap: given as JSON, or typed.
enum Request {
    Json(Value),
    Typed(SyncRequest, (&'static str, &'static str)),
}

/// A JavaScript hook: scripts run on one QuickJS runtime per call under way, never on the async
/// runtime's workers — on the caller's thread once its worker's queue has moved to another thread, or
/// on a thread of the hook's own ([`Threads`]). At most [`JsHook::concurrency`] calls of one hook run at
/// once; the others wait without holding their callers' workers.
pub struct JsHook {
    shared: Arc<Shared>,
    threads: Threads<Slot>,
}

/// What every thread of a hook reads.
struct Shared {
    /// The source and its version (bumped by each reload; an engine of an older one is reloaded).
    source: parking_lot::RwLock<(Arc<str>, u64)>,
    limits: JsLimits,
    console: Arc<Console>,
    /// The last request's controller and its JSON (see `call_sync`).
    controller: Mutex<Option<(Arc<Value>, Arc<str>)>>,
}

/// How long a hook's thread waits for work before it ends, and a runtime is kept unused before it is
/// dropped (its memory freed).
const THREAD_IDLE: Duration = Duration::from_secs(60);

/// A thread's own runtime.
struct Slot {
    engine: Option<Engine>,
    /// The source version the engine was loaded from.
    version: u64,
    deadline: Arc<AtomicU64>,
    base: Instant,
    /// The parent of the call under way, for the engine's console lines.
    parent: Arc<Mutex<String>>,
}

impl Slot {
    fn new() -> Self {
        Slot {
            engine: None,
            version: 0,
            deadline: Arc::new(AtomicU64::new(u64::MAX)),
            base: Instant::now(),
            parent: Default::default(),
        }
    }
}

struct Engine {
    _runtime: Runtime,
    context: Context,
}

fn now_ms(base: Instant) -> u64 {
    base.elapsed().as_millis() as u64
}

fn load(source: &str, limits: JsLimits, console: Arc<Console>, slot: &Slot) -> Result<Engine, HookError> {
    let (deadline, base, parent) = (slot.deadline.clone(), slot.base, slot.parent.clone());
    let runtime = Runtime::new().map_err(|e| HookError::Script(e.to_string()))?;
    runtime.set_memory_limit(limits.memory_bytes);
    runtime.set_max_stack_size(limits.stack_bytes);
    runtime.set_interrupt_handler(Some(Box::new(move || {
        leave_worker_if_due();
        now_ms(base) > deadline.load(Ordering::Relaxed)
    })));
    let context = Context::full(&runtime).map_err(|e| HookError::Script(e.to_string()))?;
    context.with(|ctx| -> Result<(), HookError> {
        let log =
            Function::new(ctx.clone(), move |level: String, line: String| console.write(&level, &parent.lock(), &line))
                .map_err(|e| HookError::Script(e.to_string()))?;
        ctx.globals().set("__uc_log", log).map_err(|e| HookError::Script(e.to_string()))?;
        for (name, code) in [("prelude", PRELUDE), ("hook", source), ("entry", ENTRY)] {
            ctx.eval::<(), _>(code)
                .map_err(|e| HookError::Script(format!("loading the {name}: {}", describe(&ctx, e))))?;
        }
        Ok(())
    })?;
    Ok(Engine { _runtime: runtime, context })
}

/// Loads `source` into a fresh runtime under the deadline, to see whether it loads.
fn probe(source: &str, limits: JsLimits, console: Arc<Console>) -> Result<(), HookError> {
    let slot = Slot::new();
    slot.deadline.store(now_ms(slot.base) + limits.timeout.as_millis() as u64, Ordering::Relaxed);
    load(source, limits, console, &slot).map(drop).map_err(|e| match e {
        HookError::Script(m) if m.contains("interrupted") => HookError::Timeout(limits.timeout),
        other => other,
    })
}

fn describe(ctx: &rquickjs::Ctx<'_>, e: rquickjs::Error) -> String {
    if matches!(e, rquickjs::Error::Exception) {
        let ex = ctx.catch();
        if let Some(obj) = ex.as_object() {
            let msg: String = obj.get("message").unwrap_or_default();
            let stack: String = obj.get("stack").unwrap_or_default();
            return if stack.is_empty() { msg } else { format!("{msg}\n{stack}") };
        }
        if let Some(s) = ex.as_string().and_then(|s| s.to_string().ok()) {
            return s;
        }
        return "exception".into();
    }
    e.to_string()
}

fn lost(_: super::js_threads::Lost) -> HookError {
    HookError::Script("the hook's thread stopped during the call".into())
}

impl JsHook {
    /// Loads the script; fails if it does not load.
    pub fn new(source: String, limits: JsLimits) -> Result<Self, HookError> {
        Self::labelled(source, limits, "javascript")
    }

    /// Loads the script of controller `label` (its console lines name it), blocking until it has
    /// loaded on the hook's thread (for callers outside async code; see [`JsHook::start`]).
    pub fn labelled(source: String, limits: JsLimits, label: &str) -> Result<Self, HookError> {
        let hook = Self::unchecked(source, limits, label);
        let (src, console) = (hook.shared.source.read().0.clone(), hook.shared.console.clone());
        hook.threads.run_blocking(move |_| probe(&src, limits, console)).map_err(lost)??;
        Ok(hook)
    }

    /// Loads the script of controller `label` as a call is made (`js_threads`): a script whose top
    /// level spins holds its caller's worker for its first milliseconds only, then its own thread.
    pub async fn start(source: String, limits: JsLimits, label: &str) -> Result<Self, HookError> {
        let hook = Self::unchecked(source, limits, label);
        let (src, console) = (hook.shared.source.read().0.clone(), hook.shared.console.clone());
        hook.threads.run(move |_| probe(&src, limits, console)).await.map_err(lost)??;
        Ok(hook)
    }

    fn unchecked(source: String, limits: JsLimits, label: &str) -> Self {
        let console = Arc::new(Console { label: label.to_string(), window: Mutex::new((Instant::now(), 0, 0)) });
        let shared = Shared {
            source: parking_lot::RwLock::new((Arc::from(source), 0)),
            limits,
            console,
            controller: Mutex::new(None),
        };
        let threads = Threads::new(Self::concurrency(), THREAD_IDLE, "uc-js", Slot::new);
        JsHook { shared: Arc::new(shared), threads }
    }

    /// How many calls of one hook run at once: one per core, at most four.
    pub fn concurrency() -> usize {
        std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2).clamp(1, 4)
    }

    /// Replaces the script with `source` if it loads (tried on the hook's thread); otherwise the old
    /// one stays and the error says why. Calls under way finish with the old one; each thread loads
    /// the new one at its next call.
    pub async fn reload(&self, source: &str) -> Result<bool, HookError> {
        if &*self.shared.source.read().0 == source {
            return Ok(false);
        }
        let (src, limits, console): (Arc<str>, _, _) =
            (Arc::from(source), self.shared.limits, self.shared.console.clone());
        let tried = src.clone();
        self.threads.run(move |_| probe(&tried, limits, console)).await.map_err(lost)??;
        let mut s = self.shared.source.write();
        *s = (src, s.1 + 1);
        Ok(true)
    }

    /// Calls the script.
    pub async fn call(&self, kind: HookKind, request: Value) -> Result<Value, HookError> {
        let bad = |e: serde_json::Error| HookError::InvalidRequest(e.to_string());
        let controller = request.get("controller").map(serde_json::to_string).transpose().map_err(bad)?;
        let parent = request.get("parent").map(parent_label).unwrap_or_default();
        self.dispatch(Job { kind, parent, request: Request::Json(request), controller: controller.map(Arc::from) })
            .await
    }

    /// Calls the script with a sync or finalize request, built in the script's heap straight from the
    /// typed request with the parent and the children under `names` (a dialect's), as
    /// [`super::dialect::Dialect::request`] lays it out. The controller, the same in every call, is
    /// serialized once and kept, and parsed by the script only if it reads it.
    pub async fn call_sync(
        &self,
        kind: HookKind,
        request: SyncRequest,
        names: (&'static str, &'static str),
    ) -> Result<Value, HookError> {
        let bad = |e: serde_json::Error| HookError::InvalidRequest(e.to_string());
        let controller = {
            let mut kept = self.shared.controller.lock();
            match &*kept {
                Some((of, text)) if Arc::ptr_eq(of, &request.controller) => text.clone(),
                _ => {
                    let text: Arc<str> = serde_json::to_string(&*request.controller).map_err(bad)?.into();
                    *kept = Some((request.controller.clone(), text.clone()));
                    text
                }
            }
        };
        let parent = parent_label(&request.parent);
        self.dispatch(Job { kind, parent, request: Request::Typed(request, names), controller: Some(controller) }).await
    }

    async fn dispatch(&self, job: Job) -> Result<Value, HookError> {
        let shared = self.shared.clone();
        self.threads.run(move |slot| call_on(&shared, slot, &job)).await.map_err(lost)?
    }
}

/// One call on a hook's thread, in its runtime (loaded first when missing or of an older source).
fn call_on(shared: &Shared, slot: &mut Slot, job: &Job) -> Result<Value, HookError> {
    let (source, version) = shared.source.read().clone();
    if slot.engine.is_none() || slot.version != version {
        slot.engine = None;
        slot.engine = Some(load(&source, shared.limits, shared.console.clone(), slot)?);
        slot.version = version;
    }
    let Some(engine) = slot.engine.as_ref() else {
        return Err(HookError::Script("the script does not load".into()));
    };
    {
        let mut parent = slot.parent.lock();
        parent.clear();
        parent.push_str(&job.parent);
    }
    slot.deadline.store(now_ms(slot.base) + shared.limits.timeout.as_millis() as u64, Ordering::Relaxed);
    let result = run(engine, job);
    slot.deadline.store(u64::MAX, Ordering::Relaxed);
    let result = match result {
        Err(HookError::Script(m)) if m.contains("interrupted") => Err(HookError::Timeout(shared.limits.timeout)),
        other => other,
    };
    if result.is_err() {
        // A script stopped mid-way (deadline, memory) may have left its heap broken: start afresh.
        slot.engine = None;
    }
    result
}

fn run(engine: &Engine, job: &Job) -> Result<Value, HookError> {
    engine.context.with(|ctx| {
        let script = |e| HookError::Script(describe(&ctx, e));
        let f: Function = ctx.globals().get("__uc_call").map_err(|e| HookError::Script(e.to_string()))?;
        let request = match &job.request {
            Request::Json(r) => json_request(&ctx, r).map_err(script)?,
            Request::Typed(r, names) => typed_request(&ctx, r, *names).map_err(script)?,
        };
        let out: rquickjs::Value = f.call((job.kind.as_str(), request, job.controller.as_deref())).map_err(script)?;
        let to_json_name = rquickjs::Atom::from_str(ctx.clone(), "toJSON").map_err(script)?;
        to_json(&out, &to_json_name, 0)
    })
}

/// The parent as console lines name it: `<namespace>/<name>`, or `<name>` for a cluster-scoped one.
fn parent_label(parent: &Value) -> String {
    let (ns, name) = (uc_api::meta::meta_str(parent, "namespace"), uc_api::meta::meta_str(parent, "name"));
    if ns.is_empty() { name.to_string() } else { format!("{ns}/{name}") }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[tokio::test]
    async fn a_reload_takes_a_source_that_loads_and_keeps_the_old_one_otherwise() {
        let hook = JsHook::new("function sync(r) { return {children: [], status: {v: 1}}; }".into(), limits()).unwrap();
        let request = json!({"parent": {}});
        let call = || hook.call(HookKind::Sync, request.clone());
        assert_eq!(call().await.unwrap()["status"]["v"], 1);
        assert!(hook.reload("function sync(r) { return {children: [], status: {v: 2}}; }").await.unwrap());
        assert_eq!(call().await.unwrap()["status"]["v"], 2);
        assert!(
            !hook.reload("function sync(r) { return {children: [], status: {v: 2}}; }").await.unwrap(),
            "unchanged"
        );
        assert!(matches!(hook.reload("function sync(r) {").await, Err(HookError::Script(_))));
        assert_eq!(call().await.unwrap()["status"]["v"], 2, "the broken version did not replace the old");
    }

    #[tokio::test]
    async fn console_is_there_and_rate_limited() {
        let src = "function sync(r) { console.log('seen', r.parent.metadata.name, {a: 1}); console.warn(1); console.error(); console.debug(null); return {children: []}; }";
        let hook = JsHook::labelled(src.into(), limits(), "demo").unwrap();
        let out =
            hook.call(HookKind::Sync, json!({"parent": {"metadata": {"name": "p", "namespace": "n"}}})).await.unwrap();
        assert_eq!(out, json!({"children": []}));
        assert_eq!(hook.shared.console.window.lock().1, 4, "four lines written");
        for _ in 0..CONSOLE_LINES {
            hook.shared.console.write("info", "n/p", "more");
        }
        let w = *hook.shared.console.window.lock();
        assert_eq!((w.1, w.2), (CONSOLE_LINES + 4, 4), "the lines over the limit are counted, not written");
    }

    #[test]
    fn console_lines_name_the_parent_by_namespace_and_name() {
        assert_eq!(parent_label(&json!({"metadata": {"name": "p", "namespace": "n"}})), "n/p");
        assert_eq!(parent_label(&json!({"metadata": {"name": "node-1"}})), "node-1", "cluster-scoped");
        assert_eq!(parent_label(&json!({})), "");
    }

    /// The thesis's listing 5.2, as the example ships it.
    const THESIS_5_2: &str = include_str!("../../../../examples/sample-controller/sync.js");

    fn limits() -> JsLimits {
        JsLimits { timeout: Duration::from_millis(300), memory_bytes: 16 << 20, stack_bytes: 256 << 10 }
    }

    #[tokio::test]
    async fn runs_the_thesis_kubeless_handler() {
        let hook = JsHook::new(THESIS_5_2.into(), limits()).unwrap();
        let req = json!({"parent": {"metadata": {"name": "f", "namespace": "ns"}, "spec": {"deploymentName": "d", "replicas": 2}},
                         "children": {"Deployment.apps/v1": {"d": {"status": {"availableReplicas": 1}}}}});
        let out = hook.call(HookKind::Sync, req.clone()).await.unwrap();
        assert_eq!(out["status"], json!({"availableReplicas": 1}));
        assert_eq!(out["children"][0]["spec"]["replicas"], json!(2));
        assert_eq!(out["children"][0]["metadata"]["namespace"], json!("ns"));
    }

    /// The controller is parsed only when read, yet looks to the script like any other member.
    #[tokio::test]
    async fn the_controller_reads_writes_and_lists_like_a_member() {
        let src = "function sync(r) { var first = r.controller.metadata.name; r.controller.spec.x = 1; var kept = r.controller.spec.x;
                    var keys = Object.keys(r).join(','); var text = JSON.stringify(r);
                    r.controller = 'replaced';
                    return {children: [], status: {first: first, kept: kept, keys: keys, text: text, after: r.controller}}; }";
        let hook = JsHook::new(src.into(), limits()).unwrap();
        let req = json!({"controller": {"metadata": {"name": "c"}, "spec": {}}, "parent": {"metadata": {"name": "p"}}, "children": {}});
        let status = hook.call(HookKind::Sync, req.clone()).await.unwrap()["status"].clone();
        assert_eq!(status["first"], "c");
        assert_eq!(status["kept"], 1, "changes to the parsed controller stay for the call");
        assert_eq!(status["keys"], "children,controller,parent", "in the request's order");
        let text: Value = serde_json::from_str(status["text"].as_str().unwrap()).unwrap();
        assert_eq!(text["controller"], json!({"metadata": {"name": "c"}, "spec": {"x": 1}}));
        assert_eq!(status["after"], "replaced");
        // The next call gets the controller as sent, not as the last one left it.
        let again = hook.call(HookKind::Sync, req.clone()).await.unwrap()["status"].clone();
        assert_eq!(again["kept"], 1);
        let untouched =
            JsHook::new("function sync(r) { return {children: [], status: {c: r.controller}}; }".into(), limits())
                .unwrap();
        assert_eq!(untouched.call(HookKind::Sync, req.clone()).await.unwrap()["status"]["c"], req["controller"]);
        let without = untouched.call(HookKind::Sync, json!({"parent": {}, "children": {}})).await.unwrap();
        assert_eq!(without["status"], json!({}), "no controller in the request, none in the script");
    }

    /// A request, typed or given as JSON, reaches the script exactly as `JSON.parse` reads its JSON
    /// form, in either dialect's names, and a controller that changed is sent anew.
    #[tokio::test]
    async fn requests_read_as_json_parse_reads_their_text() {
        use super::super::dialect::Dialect;
        use crate::flavor::Flavor;
        let mut request = super::super::dialect::sample_request();
        // What JSON.parse makes of the text: own `__proto__` members, numbers past 32 and 53 bits,
        // fractions, escapes, empty and nested containers.
        request.parent = Arc::new(json!({"metadata": {"name": "p", "__proto__": {"x": 1}}, "spec": {
            "n": 1.5, "big": 4_294_967_296_i64, "huge": 18_446_744_073_709_551_615_u64, "neg": -7, "zero": 0.0,
            "s": "é \"q\" \n ☃", "list": [[], {}, [1, [2, null]], true, false], "empty": {}, "0": "index-like"}}));
        for flavor in [Flavor::Universal, Flavor::Decorator] {
            let dialect = Dialect { flavor, ..Dialect::UC };
            let tree = dialect.request(request.clone());
            // The script holds what JSON.parse makes of the request's text, and compares.
            let text = serde_json::to_string(&serde_json::to_string(&tree).unwrap()).unwrap();
            let src = format!(
                "var expected = JSON.parse({text});
                 function sync(r) {{
                   return {{children: [], status: {{keys: Object.keys(r).join(','), text: JSON.stringify(r),
                     same: JSON.stringify(r) === JSON.stringify(expected)}}}};
                 }}"
            );
            let hook = JsHook::new(src, limits()).unwrap();
            let typed = hook.call_sync(HookKind::Sync, request.clone(), dialect.request_names()).await.unwrap();
            let json = hook.call(HookKind::Sync, tree.clone()).await.unwrap();
            assert_eq!(typed["status"]["same"], true, "typed, {flavor:?}: {}", typed["status"]["text"]);
            assert_eq!(json["status"]["same"], true, "as JSON, {flavor:?}: {}", json["status"]["text"]);
            let keys = if flavor == Flavor::Decorator {
                "attachments,controller,finalizing,object,related"
            } else {
                "children,controller,finalizing,parent,related"
            };
            assert_eq!(typed["status"]["keys"], keys);
        }
        let src = "function sync(r) { return {children: [], status: {text: JSON.stringify(r)}}; }";
        let hook = JsHook::new(src.into(), limits()).unwrap();
        hook.call_sync(HookKind::Sync, request.clone(), Dialect::UC.request_names()).await.unwrap();
        request.controller = Arc::new(json!({"metadata": {"name": "d"}}));
        let typed = hook.call_sync(HookKind::Sync, request.clone(), Dialect::UC.request_names()).await.unwrap();
        let seen: Value = serde_json::from_str(typed["status"]["text"].as_str().unwrap()).unwrap();
        assert_eq!(seen["controller"], json!({"metadata": {"name": "d"}}), "the new controller, not the kept one");
    }

    #[tokio::test]
    async fn sync_function_form_and_finalize_entry() {
        let src = "function sync(r) { return {children: [], status: {n: r.parent.n}}; }\nfunction finalize(r) { return {children: [], finalized: true}; }";
        let hook = JsHook::new(src.into(), limits()).unwrap();
        assert_eq!(hook.call(HookKind::Sync, json!({"parent": {"n": 3}})).await.unwrap()["status"]["n"], json!(3));
        assert_eq!(hook.call(HookKind::Finalize, json!({})).await.unwrap()["finalized"], json!(true));
    }

    #[tokio::test]
    async fn infinite_loops_time_out_and_the_hook_recovers() {
        let src = "var calls = 0; function sync(r) { calls++; if (r.loop) { while (true) {} } return {children: [], status: {calls: calls}}; }";
        let hook = JsHook::new(src.into(), limits()).unwrap();
        let started = Instant::now();
        let r = hook.call(HookKind::Sync, json!({"loop": true})).await;
        assert!(matches!(r, Err(HookError::Timeout(_))), "{r:?}");
        assert!(started.elapsed() < Duration::from_secs(3));
        let ok = hook.call(HookKind::Sync, json!({})).await.unwrap();
        assert_eq!(ok["status"]["calls"], json!(1), "a fresh engine after the timeout");
    }

    #[tokio::test]
    async fn unbounded_allocation_fails_without_killing_the_process() {
        let src = "function sync(r) { var a = []; while (true) { a.push(new Array(100000).fill(1)); } }";
        let hook = JsHook::new(src.into(), limits()).unwrap();
        let r = hook.call(HookKind::Sync, json!({})).await;
        assert!(
            matches!(r, Err(HookError::Script(ref m)) if m.contains("out of memory"))
                || matches!(r, Err(HookError::Timeout(_))),
            "{r:?}"
        );
    }

    #[tokio::test]
    async fn bad_scripts_are_reported() {
        assert!(matches!(JsHook::new("function (".into(), limits()), Err(HookError::Script(_))));
        let hook = JsHook::new("function sync(r) { throw new Error('boom'); }".into(), limits()).unwrap();
        let r = hook.call(HookKind::Sync, json!({})).await;
        assert!(matches!(r, Err(HookError::Script(ref m)) if m.contains("boom")), "{r:?}");
        let none = JsHook::new("var x = 1;".into(), limits()).unwrap();
        assert!(none.call(HookKind::Sync, json!({})).await.is_err());
        let no_io = JsHook::new(
            "function sync(r) { return {children: [], status: {t: typeof require + typeof fetch + typeof std}}; }"
                .into(),
            limits(),
        )
        .unwrap();
        assert_eq!(
            no_io.call(HookKind::Sync, json!({})).await.unwrap()["status"]["t"],
            json!("undefinedundefinedundefined")
        );
    }

    #[tokio::test]
    async fn results_convert_like_json_stringify() {
        let src = "function sync(r) { return {children: [], status: {a: undefined, f: function () {}, n: 2.5, i: 3, big: 1e300, nan: NaN, d: {toJSON: function () { return 'x'; }}, l: [1, null]}}; }";
        let hook = JsHook::new(src.into(), limits()).unwrap();
        let out = hook.call(HookKind::Sync, json!({})).await.unwrap();
        assert_eq!(out["status"], json!({"n": 2.5, "i": 3, "big": 1e300, "nan": null, "d": "x", "l": [1, null]}));
    }
}
