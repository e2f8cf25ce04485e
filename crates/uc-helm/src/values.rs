//! A release's values as Helm computes them (chartutil's `CoalesceValues`): the user's values over the
//! chart's `values.yaml`, a `null` removing a default, each subchart's defaults under its name, and
//! `global` handed down to every subchart.

use std::collections::BTreeMap;

use crate::chart::Chart;
use crate::gotemplate::{Dict, Value};
use crate::sprig::deep_copy;

const GLOBAL: &str = "global";

fn table(v: &Value) -> Option<Dict> {
    match v {
        Value::Map(m) => Some(m.clone()),
        _ => None,
    }
}

fn new_table() -> Value {
    Value::from(BTreeMap::new())
}

/// The chart's defaults as templates see them: every number of a values file is a float64.
pub fn chart_defaults(chart: &Chart) -> Value {
    Value::from_json(&chart.values, false)
}

/// `CoalesceValues(chart, user)`: a new tree, the user's values winning.
pub fn coalesce(chart: &Chart, user: &Value) -> Value {
    let dest = match user {
        Value::Map(_) => deep_copy(user),
        _ => new_table(),
    };
    coalesce_chart(chart, &dest);
    dest
}

fn coalesce_chart(chart: &Chart, dest: &Value) {
    let Some(d) = table(dest) else { return };
    if let Some(defaults) = table(&chart_defaults(chart)) {
        coalesce_values(&d, &defaults);
    }
    for sub in &chart.dependencies {
        let name = sub.name().to_string();
        let existing = d.borrow().get(&name).cloned();
        let sub_values = match existing {
            Some(v @ Value::Map(_)) => v,
            Some(_) => continue,
            None => {
                let t = new_table();
                d.borrow_mut().insert(name.clone(), t.clone());
                t
            }
        };
        if let Some(sv) = table(&sub_values) {
            coalesce_globals(&sv, &d);
        }
        coalesce_chart(sub, &sub_values);
    }
}

/// The chart's defaults into the values: missing keys copied, tables merged, a user's `null` removing
/// the default.
fn coalesce_values(dest: &Dict, defaults: &Dict) {
    let defaults = defaults.borrow().clone();
    for (key, default) in defaults {
        let given = dest.borrow().get(&key).cloned();
        match given {
            Some(Value::Nil) => {
                dest.borrow_mut().remove(&key);
            }
            Some(Value::Map(d)) => {
                if let Some(s) = table(&default) {
                    coalesce_tables(&d, &s, false);
                }
            }
            Some(_) => {}
            None => {
                dest.borrow_mut().insert(key, deep_copy(&default));
            }
        }
    }
}

/// `coalesceTablesFullKey`: `src` under `dst`; coalescing (not `merge`), a `null` in `dst` removes the key.
fn coalesce_tables(dst: &Dict, src: &Dict, merge: bool) {
    let src = src.borrow().clone();
    for (key, val) in src {
        let existing = dst.borrow().get(&key).cloned();
        match existing {
            Some(Value::Nil) if !merge => {
                dst.borrow_mut().remove(&key);
            }
            None => {
                dst.borrow_mut().insert(key, deep_copy(&val));
            }
            Some(Value::Map(d)) => {
                if let Some(s) = table(&val) {
                    coalesce_tables(&d, &s, merge);
                }
            }
            Some(_) => {}
        }
    }
}

/// The parent's `global` into the subchart's: the parent's win.
fn coalesce_globals(dest: &Dict, parent: &Dict) {
    let parent_globals = parent.borrow().get(GLOBAL).and_then(table);
    let Some(pg) = parent_globals else {
        if !dest.borrow().contains_key(GLOBAL) {
            dest.borrow_mut().insert(GLOBAL.into(), new_table());
        }
        return;
    };
    let dg = match dest.borrow().get(GLOBAL).and_then(table) {
        Some(t) => t,
        None => match table(&new_table()) {
            Some(t) => t,
            None => return,
        },
    };
    let entries = pg.borrow().clone();
    for (key, val) in entries {
        let current = dg.borrow().get(&key).cloned();
        match (&val, current) {
            (Value::Map(pv), Some(Value::Map(cv))) => {
                let merged = deep_copy(&Value::Map(pv.clone()));
                if let Some(m) = table(&merged) {
                    coalesce_tables(&m, &cv, true);
                }
                dg.borrow_mut().insert(key, merged);
            }
            (Value::Map(_), Some(_)) => {}
            (_, Some(Value::Map(_))) => {}
            _ => {
                dg.borrow_mut().insert(key, deep_copy(&val));
            }
        }
    }
    dest.borrow_mut().insert(GLOBAL.into(), Value::Map(dg));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chart::File;

    fn chart(values: &str, subs: Vec<Chart>) -> Chart {
        let mut c = Chart::from_files(
            "c",
            vec![
                File { name: "Chart.yaml".into(), data: b"name: parent\nversion: 1.0.0\n".to_vec() },
                File { name: "values.yaml".into(), data: values.as_bytes().to_vec() },
            ],
        )
        .unwrap();
        c.dependencies = subs;
        c
    }

    fn sub(name: &str, values: &str) -> Chart {
        Chart::from_files(
            name,
            vec![
                File { name: "Chart.yaml".into(), data: format!("name: {name}\nversion: 1.0.0\n").into_bytes() },
                File { name: "values.yaml".into(), data: values.as_bytes().to_vec() },
            ],
        )
        .unwrap()
    }

    #[test]
    fn user_values_win_nulls_remove_and_tables_merge() {
        let c = chart("a: 1\nb: {x: 1, y: 2}\nc: keep\nd: gone\n", vec![]);
        let user = Value::from_json(&serde_json::json!({"a": 5, "b": {"y": 9}, "d": null}), true);
        let v = coalesce(&c, &user).to_json();
        assert_eq!(v, serde_json::json!({"a": 5, "b": {"x": 1.0, "y": 9}, "c": "keep"}));
    }

    #[test]
    fn subcharts_get_their_defaults_and_the_parents_globals() {
        let c = chart(
            "global: {env: prod}\nsub: {port: 81}\n",
            vec![sub("sub", "port: 80\nname: s\nglobal: {env: dev, team: x}\n")],
        );
        let v = coalesce(&c, &Value::Nil).to_json();
        assert_eq!(v["sub"], serde_json::json!({"port": 81.0, "name": "s", "global": {"env": "prod", "team": "x"}}));
    }
}
