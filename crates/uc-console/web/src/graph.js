// The console's graph layout: dagre's layered layout of a directed graph (parents above their children).
import dagre from "@dagrejs/dagre";

// Positions for `nodes` ([{ id, width, height }]) and `edges` ([{ from, to }]): { nodes: Map(id → {x, y}),
// edges: [{ from, to, points: [{x, y}] }], width, height }.
export function layout(nodes, edges, { rankdir = "TB", nodesep = 24, ranksep = 56 } = {}) {
  const g = new dagre.graphlib.Graph();
  g.setGraph({ rankdir, nodesep, ranksep, marginx: 12, marginy: 12 });
  g.setDefaultEdgeLabel(() => ({}));
  for (const n of nodes) g.setNode(n.id, { width: n.width, height: n.height });
  for (const e of edges) if (g.hasNode(e.from) && g.hasNode(e.to)) g.setEdge(e.from, e.to);
  dagre.layout(g);
  const placed = new Map(g.nodes().map((id) => [id, { x: g.node(id).x, y: g.node(id).y }]));
  return { nodes: placed, edges: g.edges().map((e) => ({ from: e.v, to: e.w, points: g.edge(e).points })),
    width: g.graph().width || 0, height: g.graph().height || 0 };
}
