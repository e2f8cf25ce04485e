// The console's YAML editor: CodeMirror 6 with YAML highlighting, line numbers, search, bracket and
// indentation help, and a linter fed by `diagnose` — the YAML parser's errors and the caller's schema
// findings, each at the text of the field it is about.
import { EditorView, basicSetup } from "codemirror";
import { EditorState } from "@codemirror/state";
import { yaml } from "@codemirror/lang-yaml";
import { linter, lintGutter, forceLinting } from "@codemirror/lint";
import { parseDocument, isMap, isSeq, isPair } from "yaml";

// The text range of the node at `path` (keys and indexes) in a parsed document: the pair's key to its
// value's end; for a path that is not there, the nearest enclosing node's key.
export function rangeOf(doc, path) {
  let node = doc.contents;
  let range = node?.range ? [node.range[0], node.range[1]] : [0, 0];
  for (const key of path) {
    if (isMap(node)) {
      const pair = node.items.find((p) => isPair(p) && (p.key?.value ?? p.key) === key);
      if (!pair) break;
      const start = pair.key?.range?.[0] ?? range[0];
      const end = pair.value?.range?.[1] ?? pair.key?.range?.[1] ?? start;
      range = [start, end];
      node = pair.value;
    } else if (isSeq(node) && typeof key === "number" && node.items[key]) {
      node = node.items[key];
      range = node.range ? [node.range[0], node.range[1]] : range;
    } else {
      break;
    }
  }
  return range;
}

// What is wrong with `text`: { object (when it parses), diagnostics: [{ from, to, severity, message }] }.
// `findings(object)` is the schema check: [{ path, message, level, label }].
export function diagnose(text, findings) {
  const doc = parseDocument(text, { prettyErrors: false, uniqueKeys: true });
  const problems = [...doc.errors, ...doc.warnings];
  if (doc.errors.length) {
    return { object: null, diagnostics: problems.map((e) => ({ from: e.pos[0], to: Math.max(e.pos[1], e.pos[0] + 1),
      severity: doc.errors.includes(e) ? "error" : "warning", message: e.message.split("\n")[0] })) };
  }
  const object = doc.toJS();
  const diagnostics = (findings ? findings(object) : []).map((f) => {
    const [from, to] = rangeOf(doc, f.path);
    return { from, to: Math.max(to, from + 1), severity: f.level === "warning" ? "warning" : "error", message: f.label || f.message };
  });
  return { object, diagnostics };
}

// An editor in `parent`: `label` names it for assistive technology; `findings` (optional) checks the
// parsed object. Returns { view, text(), setText(t), check() → diagnostics }.
export function yamlEditor(parent, { text = "", label = "YAML", findings = null, onChange = null } = {}) {
  let last = [];
  const lint = linter((view) => {
    const end = view.state.doc.length;
    last = diagnose(view.state.doc.toString(), findings).diagnostics.map((d) => ({ ...d, from: Math.min(d.from, end), to: Math.min(d.to, end) }));
    return last;
  }, { delay: 300 });
  const view = new EditorView({
    parent,
    state: EditorState.create({
      doc: text,
      extensions: [basicSetup, yaml(), lint, lintGutter(), EditorView.lineWrapping,
        EditorView.contentAttributes.of({ "aria-label": label }),
        EditorView.updateListener.of((u) => { if (u.docChanged && onChange) onChange(u.state.doc.toString()); })],
    }),
  });
  // The scroller is reachable by the keyboard too (CodeMirror makes it tabindex -1): arrows scroll it,
  // as WCAG asks of a scrollable region.
  view.scrollDOM.tabIndex = 0;
  return {
    view,
    text: () => view.state.doc.toString(),
    setText: (t) => view.dispatch({ changes: { from: 0, to: view.state.doc.length, insert: t } }),
    check: () => { forceLinting(view); return diagnose(view.state.doc.toString(), findings).diagnostics; },
    diagnostics: () => last,
  };
}
