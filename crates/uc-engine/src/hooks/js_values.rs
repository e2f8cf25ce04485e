//! Values between JSON and a QuickJS heap: a request (typed, or given as JSON) built in the heap as
//! `JSON.parse` would build it from the request's JSON (without writing and parsing that text), and a
//! script's answer read back as `JSON.stringify` would write it (without building the string).

use rquickjs::Function;
use serde_json::Value;
use uc_api::hook::{ObjectMap, SyncRequest};

use super::js_threads::leave_worker_if_due;
use super::protocol::HookError;

/// A sync request built in the script's heap as `JSON.parse` would build it from the request's JSON
/// (the controller null, in its place).
pub(super) fn typed_request<'js>(
    ctx: &rquickjs::Ctx<'js>,
    r: &SyncRequest,
    names: (&'static str, &'static str),
) -> rquickjs::Result<rquickjs::Value<'js>> {
    let groups = |m: &std::collections::BTreeMap<String, ObjectMap>| -> rquickjs::Result<rquickjs::Value<'js>> {
        let out = rquickjs::Object::new(ctx.clone())?;
        for (k, objects) in m {
            let inner = rquickjs::Object::new(ctx.clone())?;
            for (name, o) in objects {
                // A request of many objects takes a while to build: off the worker once it has.
                leave_worker_if_due();
                define(&inner, name.as_str(), to_js(ctx, o)?)?;
            }
            define(&out, k.as_str(), inner.into_value())?;
        }
        Ok(out.into_value())
    };
    let out = rquickjs::Object::new(ctx.clone())?;
    // In the key order of the JSON form (see `RequestJson`).
    define(&out, names.1, groups(&r.children)?)?;
    define(&out, "controller", rquickjs::Value::new_null(ctx.clone()))?;
    define(&out, "finalizing", rquickjs::Value::new_bool(ctx.clone(), r.finalizing))?;
    define(&out, names.0, to_js(ctx, &r.parent)?)?;
    define(&out, "related", groups(&r.related)?)?;
    Ok(out.into_value())
}

/// A request given as JSON, built in the script's heap; its `controller` (handed over apart, see
/// `JsHook::call`) null in its place.
pub(super) fn json_request<'js>(ctx: &rquickjs::Ctx<'js>, r: &Value) -> rquickjs::Result<rquickjs::Value<'js>> {
    let Value::Object(members) = r else { return to_js(ctx, r) };
    let out = rquickjs::Object::new(ctx.clone())?;
    for (k, v) in members {
        // Its objects lie three levels down (`children`, a type, a name): off the worker once building
        // them has taken a while.
        let v = if k == "controller" { rquickjs::Value::new_null(ctx.clone()) } else { to_js_leaving(ctx, v, 3)? };
        define(&out, k.as_str(), v)?;
    }
    Ok(out.into_value())
}

/// An own property as `JSON.parse` makes one: writable, enumerable, configurable.
fn define<'js>(
    o: &rquickjs::Object<'js>,
    key: impl rquickjs::IntoAtom<'js>,
    v: rquickjs::Value<'js>,
) -> rquickjs::Result<()> {
    o.prop(key, rquickjs::object::Property::from(v).writable().enumerable().configurable())
}

/// A JSON value built in the script's heap as `JSON.parse` builds it.
fn to_js<'js>(ctx: &rquickjs::Ctx<'js>, v: &Value) -> rquickjs::Result<rquickjs::Value<'js>> {
    to_js_leaving(ctx, v, 0)
}

/// As [`to_js`], looking whether the call is due to leave its worker ([`leave_worker_if_due`]) at each
/// object and array of its first `levels` levels.
fn to_js_leaving<'js>(ctx: &rquickjs::Ctx<'js>, v: &Value, levels: u8) -> rquickjs::Result<rquickjs::Value<'js>> {
    if levels > 0 && (v.is_object() || v.is_array()) {
        leave_worker_if_due();
    }
    let below = levels.saturating_sub(1);
    Ok(match v {
        Value::Null => rquickjs::Value::new_null(ctx.clone()),
        Value::Bool(b) => rquickjs::Value::new_bool(ctx.clone(), *b),
        Value::Number(n) => match n.as_i64().and_then(|i| i32::try_from(i).ok()) {
            Some(i) => rquickjs::Value::new_int(ctx.clone(), i),
            None => rquickjs::Value::new_float(ctx.clone(), n.as_f64().unwrap_or(f64::NAN)),
        },
        Value::String(s) => rquickjs::String::from_str(ctx.clone(), s)?.into_value(),
        Value::Array(items) => {
            let a = rquickjs::Array::new(ctx.clone())?;
            for (i, item) in items.iter().enumerate() {
                define(a.as_object(), i as u32, to_js_leaving(ctx, item, below)?)?;
            }
            a.into_value()
        }
        Value::Object(m) => {
            let o = rquickjs::Object::new(ctx.clone())?;
            for (k, item) in m {
                define(&o, k.as_str(), to_js_leaving(ctx, item, below)?)?;
            }
            o.into_value()
        }
    })
}

/// A returned value that is not JSON.
fn invalid(e: impl std::fmt::Display) -> HookError {
    HookError::InvalidResponse(e.to_string())
}

/// Converts a returned JavaScript value to JSON the way `JSON.stringify` would (functions and
/// `undefined` members dropped, non-finite numbers as null), without building a string.
pub(super) fn to_json<'js>(
    v: &rquickjs::Value<'js>,
    to_json_name: &rquickjs::Atom<'js>,
    depth: usize,
) -> Result<Value, HookError> {
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
            if depth < 2 {
                // An answer of many children (`children` is at depth 1) takes a while to read.
                leave_worker_if_due();
            }
            let item = item.map_err(invalid)?;
            out.push(to_json(&item, to_json_name, depth + 1)?);
        }
        return Ok(Value::Array(out));
    }
    if let Some(o) = v.as_object() {
        if let Ok(to_json_fn) = o.get::<_, Function>(to_json_name.clone()) {
            let r: rquickjs::Value = to_json_fn.call((rquickjs::function::This(o.clone()),)).map_err(invalid)?;
            return to_json(&r, to_json_name, depth + 1);
        }
        // Gathered, then made into the map at once (sorted and built bottom-up: cheaper than inserting
        // each member into a growing tree).
        let mut members = Vec::new();
        for prop in o.props::<String, rquickjs::Value>() {
            let (k, val) = prop.map_err(invalid)?;
            if val.is_undefined() || val.is_function() {
                continue;
            }
            members.push((k, to_json(&val, to_json_name, depth + 1)?));
        }
        return Ok(Value::Object(members.into_iter().collect()));
    }
    Err(invalid(format!("the script returned a value JSON cannot represent ({})", v.type_name())))
}
