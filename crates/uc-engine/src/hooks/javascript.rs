//! JavaScript hooks run in-process by QuickJS (rquickjs), on the calling thread, with a
//! wall-clock deadline (an uncatchable interrupt), a memory limit and a stack limit. Scripts get the
//! bare language: no file system, no network, no timers.
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

const PRELUDE: &str = "var module = {exports: {}}; var exports = module.exports;";
const ENTRY: &str = r#"
globalThis.__uc_call = function (kind, req) {
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

struct Job<'a> {
    kind: HookKind,
    request: &'a str,
}

/// A JavaScript hook: a small pool of QuickJS runtimes (one call at a time each), called on the
/// caller's thread so a call costs no thread hand-off.
pub struct JsHook {
    source: String,
    limits: JsLimits,
    pool: Vec<Mutex<Slot>>,
    next: std::sync::atomic::AtomicUsize,
}

struct Slot {
    engine: Option<Engine>,
    deadline: Arc<AtomicU64>,
    base: Instant,
}

struct Engine {
    _runtime: Runtime,
    context: Context,
}

fn now_ms(base: Instant) -> u64 {
    base.elapsed().as_millis() as u64
}

fn load(source: &str, limits: JsLimits, deadline: Arc<AtomicU64>, base: Instant) -> Result<Engine, HookError> {
    let runtime = Runtime::new().map_err(|e| HookError::Script(e.to_string()))?;
    runtime.set_memory_limit(limits.memory_bytes);
    runtime.set_max_stack_size(limits.stack_bytes);
    runtime.set_interrupt_handler(Some(Box::new(move || now_ms(base) > deadline.load(Ordering::Relaxed))));
    let context = Context::full(&runtime).map_err(|e| HookError::Script(e.to_string()))?;
    context.with(|ctx| -> Result<(), HookError> {
        for (name, code) in [("prelude", PRELUDE), ("hook", source), ("entry", ENTRY)] {
            ctx.eval::<(), _>(code)
                .map_err(|e| HookError::Script(format!("loading the {name}: {}", describe(&ctx, e))))?;
        }
        Ok(())
    })?;
    Ok(Engine { _runtime: runtime, context })
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

impl JsHook {
    /// Loads the script; fails if it does not load.
    pub fn new(source: String, limits: JsLimits) -> Result<Self, HookError> {
        let size = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2).clamp(1, 4);
        let mut pool = Vec::with_capacity(size);
        for i in 0..size {
            let deadline = Arc::new(AtomicU64::new(u64::MAX));
            let base = Instant::now();
            // Load the first engine now so a broken script is reported at once; the rest on first use.
            let engine = if i == 0 { Some(load(&source, limits, deadline.clone(), base)?) } else { None };
            pool.push(Mutex::new(Slot { engine, deadline, base }));
        }
        Ok(Self { source, limits, pool, next: Default::default() })
    }

    /// Calls the script.
    pub async fn call(&self, kind: HookKind, request: &Value) -> Result<Value, HookError> {
        let text = serde_json::to_string(request).map_err(|e| HookError::InvalidResponse(e.to_string()))?;
        let job = Job { kind, request: &text };
        let work = || self.call_blocking(&job);
        // A call is short but may spin until its deadline: let the runtime move other tasks away.
        match tokio::runtime::Handle::try_current().map(|h| h.runtime_flavor()) {
            Ok(tokio::runtime::RuntimeFlavor::MultiThread) => tokio::task::block_in_place(work),
            _ => work(),
        }
    }

    fn call_blocking(&self, job: &Job<'_>) -> Result<Value, HookError> {
        // The lowest free slot: a second runtime is only loaded (and its memory spent) when calls
        // overlap. When every slot is busy, wait for one, taking turns.
        let n = self.pool.len();
        let mut slot = (0..n).find_map(|i| self.pool[i].try_lock()).unwrap_or_else(|| {
            let start = self.next.fetch_add(1, Ordering::Relaxed);
            self.pool[start % n].lock()
        });
        if slot.engine.is_none() {
            slot.engine = Some(load(&self.source, self.limits, slot.deadline.clone(), slot.base)?);
        }
        let Some(engine) = slot.engine.as_ref() else {
            return Err(HookError::Script("the script does not load".into()));
        };
        slot.deadline.store(now_ms(slot.base) + self.limits.timeout.as_millis() as u64, Ordering::Relaxed);
        let result = run(engine, job);
        slot.deadline.store(u64::MAX, Ordering::Relaxed);
        let result = match result {
            Err(HookError::Script(m)) if m.contains("interrupted") => Err(HookError::Timeout(self.limits.timeout)),
            other => other,
        };
        if result.is_err() {
            // A script stopped mid-way (deadline, memory) may have left its heap broken: start afresh.
            slot.engine = None;
        }
        result
    }
}

fn run(engine: &Engine, job: &Job<'_>) -> Result<Value, HookError> {
    engine.context.with(|ctx| {
        let script = |e| HookError::Script(describe(&ctx, e));
        let f: Function = ctx.globals().get("__uc_call").map_err(|e| HookError::Script(e.to_string()))?;
        let request = ctx.json_parse(job.request).map_err(script)?;
        let out: rquickjs::Value = f.call((job.kind.as_str(), request)).map_err(script)?;
        to_json(&out, 0)
    })
}

/// A returned value that is not JSON.
fn invalid(e: impl std::fmt::Display) -> HookError {
    HookError::InvalidResponse(e.to_string())
}

/// Converts a returned JavaScript value to JSON the way `JSON.stringify` would (functions and
/// `undefined` members dropped, non-finite numbers as null), without building a string.
fn to_json(v: &rquickjs::Value<'_>, depth: usize) -> Result<Value, HookError> {
    if depth > 128 {
        return Err(invalid("the returned value nests too deeply (or is cyclic)"));
    }
    if v.is_undefined() || v.is_null() || v.is_function() {
        return Ok(Value::Null);
    }
    if let Some(b) = v.as_bool() {
        return Ok(Value::Bool(b));
    }
    if let Some(i) = v.as_int() {
        return Ok(Value::from(i));
    }
    if let Some(f) = v.as_float() {
        // JavaScript has one number type; integral values print as integers, as JSON.stringify does.
        if f.fract() == 0.0 && f.abs() < 9.0e15 {
            return Ok(Value::from(f as i64));
        }
        return Ok(serde_json::Number::from_f64(f).map(Value::Number).unwrap_or(Value::Null));
    }
    if let Some(s) = v.as_string() {
        return s.to_string().map(Value::String).map_err(invalid);
    }
    if let Some(a) = v.as_array() {
        let mut out = Vec::with_capacity(a.len());
        for item in a.iter::<rquickjs::Value>() {
            let item = item.map_err(invalid)?;
            out.push(to_json(&item, depth + 1)?);
        }
        return Ok(Value::Array(out));
    }
    if let Some(o) = v.as_object() {
        if let Ok(to_json_fn) = o.get::<_, Function>("toJSON") {
            let r: rquickjs::Value = to_json_fn.call((rquickjs::function::This(o.clone()),)).map_err(invalid)?;
            return to_json(&r, depth + 1);
        }
        let mut out = serde_json::Map::new();
        for prop in o.props::<String, rquickjs::Value>() {
            let (k, val) = prop.map_err(invalid)?;
            if val.is_undefined() || val.is_function() {
                continue;
            }
            out.insert(k, to_json(&val, depth + 1)?);
        }
        return Ok(Value::Object(out));
    }
    Err(invalid(format!("the script returned a value JSON cannot represent ({})", v.type_name())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
        let out = hook.call(HookKind::Sync, &req).await.unwrap();
        assert_eq!(out["status"], json!({"availableReplicas": 1}));
        assert_eq!(out["children"][0]["spec"]["replicas"], json!(2));
        assert_eq!(out["children"][0]["metadata"]["namespace"], json!("ns"));
    }

    #[tokio::test]
    async fn sync_function_form_and_finalize_entry() {
        let src = "function sync(r) { return {children: [], status: {n: r.parent.n}}; }\nfunction finalize(r) { return {children: [], finalized: true}; }";
        let hook = JsHook::new(src.into(), limits()).unwrap();
        assert_eq!(hook.call(HookKind::Sync, &json!({"parent": {"n": 3}})).await.unwrap()["status"]["n"], json!(3));
        assert_eq!(hook.call(HookKind::Finalize, &json!({})).await.unwrap()["finalized"], json!(true));
    }

    #[tokio::test]
    async fn infinite_loops_time_out_and_the_hook_recovers() {
        let src = "var calls = 0; function sync(r) { calls++; if (r.loop) { while (true) {} } return {children: [], status: {calls: calls}}; }";
        let hook = JsHook::new(src.into(), limits()).unwrap();
        let started = Instant::now();
        let r = hook.call(HookKind::Sync, &json!({"loop": true})).await;
        assert!(matches!(r, Err(HookError::Timeout(_))), "{r:?}");
        assert!(started.elapsed() < Duration::from_secs(3));
        let ok = hook.call(HookKind::Sync, &json!({})).await.unwrap();
        assert_eq!(ok["status"]["calls"], json!(1), "a fresh engine after the timeout");
    }

    #[tokio::test]
    async fn unbounded_allocation_fails_without_killing_the_process() {
        let src = "function sync(r) { var a = []; while (true) { a.push(new Array(100000).fill(1)); } }";
        let hook = JsHook::new(src.into(), limits()).unwrap();
        let r = hook.call(HookKind::Sync, &json!({})).await;
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
        let r = hook.call(HookKind::Sync, &json!({})).await;
        assert!(matches!(r, Err(HookError::Script(ref m)) if m.contains("boom")), "{r:?}");
        let none = JsHook::new("var x = 1;".into(), limits()).unwrap();
        assert!(none.call(HookKind::Sync, &json!({})).await.is_err());
        let no_io = JsHook::new(
            "function sync(r) { return {children: [], status: {t: typeof require + typeof fetch + typeof std}}; }"
                .into(),
            limits(),
        )
        .unwrap();
        assert_eq!(
            no_io.call(HookKind::Sync, &json!({})).await.unwrap()["status"]["t"],
            json!("undefinedundefinedundefined")
        );
    }

    #[tokio::test]
    async fn results_convert_like_json_stringify() {
        let src = "function sync(r) { return {children: [], status: {a: undefined, f: function () {}, n: 2.5, i: 3, big: 1e300, nan: NaN, d: {toJSON: function () { return 'x'; }}, l: [1, null]}}; }";
        let hook = JsHook::new(src.into(), limits()).unwrap();
        let out = hook.call(HookKind::Sync, &json!({})).await.unwrap();
        assert_eq!(out["status"], json!({"n": 2.5, "i": 3, "big": 1e300, "nan": null, "d": "x", "l": [1, null]}));
    }
}
