// The journey page: each pod's steps through the cluster as a sequence
// diagram, and the nodes with their pods. It loads the journeys the server
// keeps (journeys), then follows each new step as a Server-Sent Event
// (events); when the stream reconnects it loads them again. Paths are
// relative, so the page works behind `kubectl proxy` too.

const LANES = ["kubectl", "API server", "etcd", "scheduler", "controllers", "agent", "containerd"];

// The lanes each step goes between (from, to), as in the figures of the
// pod creation flow; a step not named here stays on its component's lane.
const ARROWS = {
  "apiserver.create": ["kubectl", "API server"],
  "apiserver.delete": ["kubectl", "API server"],
  "apiserver.admission": ["API server", "API server"],
  "apiserver.validation": ["API server", "API server"],
  "etcd.write": ["API server", "etcd"],
  "scheduler.queue": ["API server", "scheduler"],
  "scheduler.schedule": ["scheduler", "scheduler"],
  "scheduler.bind": ["scheduler", "API server"],
  "endpoints.updated": ["controllers", "API server"],
  "agent.queue": ["API server", "agent"],
  "agent.volumes": ["agent", "agent"],
  "agent.sandbox": ["agent", "containerd"],
  "agent.network": ["agent", "agent"],
  "agent.image": ["agent", "containerd"],
  "agent.container": ["agent", "containerd"],
  "agent.init.run": ["containerd", "agent"],
  "agent.poststart": ["agent", "containerd"],
  "agent.ready": ["agent", "API server"],
  "agent.prestop": ["agent", "containerd"],
  "agent.stop": ["agent", "containerd"],
  "agent.teardown": ["agent", "agent"],
  "agent.deleted": ["agent", "API server"],
  "proxy.synced": ["agent", "agent"],
};

const COMPONENT_LANES = {
  apiserver: "API server",
  etcd: "etcd",
  scheduler: "scheduler",
  "endpointslice-controller": "controllers",
  agent: "agent",
  proxy: "agent",
};

// What the page knows: journeys by pod UID, the nodes, and the pod shown
// ("" follows the newest).
const state = { journeys: new Map(), nodes: new Set(), selected: "" };

const $ = (id) => document.getElementById(id);
const SVG = "http://www.w3.org/2000/svg";

function svg(name, attrs, text) {
  const el = document.createElementNS(SVG, name);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, v);
  if (text !== undefined) el.textContent = text;
  return el;
}

function ms(d) {
  return d < 1 ? `${(d * 1000).toFixed(0)} µs` : d < 1000 ? `${d.toFixed(d < 10 ? 1 : 0)} ms` : `${(d / 1000).toFixed(2)} s`;
}

// time is t (RFC 3339 with nanoseconds) in milliseconds, to the
// nanosecond: Date keeps only milliseconds, and most steps take less.
function time(t) {
  const fraction = /\.(\d+)/.exec(t);
  const seconds = Math.floor(Date.parse(t) / 1000) * 1000;
  return fraction ? seconds + Number("0." + fraction[1]) * 1000 : seconds;
}

const stepKey = (s) => `${s.name}|${s.component}|${s.node || ""}|${s.start}`;

// addStep puts a step into its pod's journey, in order of start, once.
function addStep(uid, namespace, name, step) {
  let j = state.journeys.get(uid);
  if (!j) {
    j = { uid, namespace, name, steps: [], keys: new Set() };
    state.journeys.set(uid, j);
  }
  if (!j.name && name) Object.assign(j, { namespace, name });
  const key = stepKey(step);
  if (j.keys.has(key)) return;
  if (step.error) j.steps = j.steps.filter((s) => !(s.name === step.name && s.error));
  j.keys.add(key);
  j.steps.push(step);
  j.steps.sort((a, b) => time(a.start) - time(b.start));
  if (step.node) state.nodes.add(step.node);
}

function loadJourneys(list) {
  for (const j of list) for (const s of j.steps) addStep(j.uid, j.namespace, j.name, s);
}

const firstStart = (j) => (j.steps.length ? time(j.steps[0].start) : 0);
const newest = () => [...state.journeys.values()].sort((a, b) => firstStart(b) - firstStart(a))[0];
const shown = () => (state.selected ? state.journeys.get(state.selected) : newest());

// where says on which node a journey's pod is: the agent's steps say, or
// else the node the scheduler chose.
function where(j) {
  const agent = j.steps.findLast((s) => s.node);
  if (agent) return agent.node;
  const scheduled = j.steps.findLast((s) => s.name === "scheduler.schedule" && !s.error);
  return scheduled?.attributes?.node || "";
}

function render() {
  renderPicker();
  renderFlow(shown());
  renderCluster();
}

// renderSoon draws once for the steps that arrive together.
let drawing = null;
function renderSoon() {
  drawing ??= setTimeout(() => {
    drawing = null;
    render();
  }, 50);
}

function renderPicker() {
  const select = $("pod");
  const journeys = [...state.journeys.values()].sort((a, b) => firstStart(b) - firstStart(a));
  const options = [select.options[0]];
  for (const j of journeys) {
    const o = document.createElement("option");
    o.value = j.uid;
    o.textContent = `${j.namespace}/${j.name}`;
    o.selected = j.uid === state.selected;
    options.push(o);
  }
  select.replaceChildren(...options);
}

// The diagram: a column per lane, a row per step, an arrow between the
// lanes the step joins (a box on one lane for a step inside a component).
const LANE_WIDTH = 125, ROW = 30, TOP = 40, LEFT = 75;

function renderFlow(j) {
  const diagram = $("diagram");
  diagram.replaceChildren();
  if (!j) return;
  const t0 = firstStart(j);
  const end = Math.max(...j.steps.map((s) => time(s.end)));
  $("title").textContent = `${j.namespace}/${j.name} · ${j.steps.length} steps · ${ms(end - t0)}`;
  const width = LEFT + LANES.length * LANE_WIDTH, height = TOP + j.steps.length * ROW + 20;
  diagram.setAttribute("viewBox", `0 0 ${width} ${height}`);
  diagram.setAttribute("width", width);
  diagram.setAttribute("height", height);
  for (const lane of LANES) {
    const x = laneX(lane);
    diagram.append(svg("text", { x, y: 18, class: "lane" }, lane));
    diagram.append(svg("line", { x1: x, y1: 26, x2: x, y2: height, class: "lifeline" }));
  }
  j.steps.forEach((s, i) => diagram.append(stepRow(s, i, t0)));
}

const laneX = (lane) => LEFT + LANES.indexOf(lane) * LANE_WIDTH + LANE_WIDTH / 2;

function lanesOf(s) {
  const own = COMPONENT_LANES[s.component] || "API server";
  return ARROWS[s.name] || [own, own];
}

function stepRow(s, i, t0) {
  const y = TOP + i * ROW + ROW / 2;
  const [from, to] = lanesOf(s);
  const x1 = laneX(from), x2 = laneX(to);
  const took = time(s.end) - time(s.start);
  const g = svg("g", { class: s.error ? "step failed" : "step", "data-step": s.name, tabindex: 0 });
  g.append(svg("text", { x: 8, y: y + 4, class: "offset" }, `+${ms(time(s.start) - t0)}`));
  if (x1 === x2) {
    g.append(svg("rect", { x: x1 - 6, y: y - 9, width: 12, height: 18, rx: 3, class: "self" }));
  } else {
    const dir = x2 > x1 ? 1 : -1;
    g.append(svg("line", { x1, y1: y, x2: x2 - dir * 6, y2: y, class: "arrow" }));
    g.append(svg("path", { d: `M${x2} ${y} l${-dir * 8} -5 v10 z`, class: "head" }));
  }
  const labelX = x1 === x2 ? x1 + 12 : Math.min(x1, x2) + 8;
  g.append(svg("text", { x: labelX, y: y - 4, class: "label" }, `${s.name} · ${ms(took)}`));
  g.append(svg("title", {}, describe(s)));
  for (const event of ["mouseenter", "focus", "click"]) g.addEventListener(event, () => showDetails(s));
  return g;
}

function describe(s) {
  const lines = [`${s.name} (${s.component}${s.node ? " on " + s.node : ""})`, `took ${ms(time(s.end) - time(s.start))}`];
  if (s.error) lines.push(`error: ${s.error}`);
  for (const [k, v] of Object.entries(s.attributes || {})) {
    if (!k.startsWith("k8s.") && k !== "skiff.component") lines.push(`${k}: ${v}`);
  }
  return lines.join("\n");
}

function showDetails(s) {
  const box = $("details");
  box.hidden = false;
  box.textContent = describe(s);
}

// The cluster: each node with its pods and the step each is at; pods no
// node holds yet are Pending. Pods whose deletion finished are left out.
function renderCluster() {
  const byNode = new Map([...state.nodes].sort().map((n) => [n, []]));
  byNode.set("", []);
  for (const j of state.journeys.values()) {
    const last = j.steps[j.steps.length - 1];
    if (!last || last.name === "agent.deleted") continue;
    const node = where(j);
    if (!byNode.has(node)) byNode.set(node, []);
    byNode.get(node).push(j);
  }
  const cards = [];
  for (const [node, journeys] of byNode) {
    if (node === "" && journeys.length === 0) continue;
    const card = document.createElement("div");
    card.className = "node";
    card.dataset.node = node;
    const h = document.createElement("h3");
    h.textContent = node || "not on a node yet";
    const list = document.createElement("ul");
    for (const j of journeys.sort((a, b) => firstStart(b) - firstStart(a))) list.append(podItem(j));
    card.append(h, list);
    cards.push(card);
  }
  $("nodes").replaceChildren(...cards);
}

function podItem(j) {
  const last = j.steps[j.steps.length - 1];
  const li = document.createElement("li");
  li.dataset.pod = `${j.namespace}/${j.name}`;
  li.className = last.error ? "failed" : last.name === "agent.ready" ? "ready" : "";
  li.textContent = `${j.namespace}/${j.name} — ${last.name}${last.error ? ": " + last.error : ""}`;
  li.addEventListener("click", () => select(j.uid));
  return li;
}

function select(uid) {
  state.selected = uid;
  render();
}

function setStatus(text, ok) {
  const el = $("status");
  el.textContent = text;
  el.className = ok ? "status live" : "status";
}

async function reload() {
  const journeys = await fetch("journeys", { credentials: "same-origin" });
  if (!journeys.ok) throw new Error(`journeys: ${journeys.status} ${journeys.statusText}`);
  loadJourneys(await journeys.json());
  const nodes = await fetch("../api/v1/nodes", { credentials: "same-origin" });
  if (nodes.ok) for (const n of (await nodes.json()).items || []) state.nodes.add(n.metadata.name);
  render();
}

function follow() {
  const events = new EventSource("events");
  events.addEventListener("open", () => {
    setStatus("live", true);
    reload().catch((err) => setStatus(String(err), false));
  });
  events.addEventListener("step", (e) => {
    const ev = JSON.parse(e.data);
    addStep(ev.uid, ev.namespace, ev.name, ev.step);
    renderSoon();
  });
  events.addEventListener("error", () => setStatus("reconnecting…", false));
}

$("pod").addEventListener("change", (e) => select(e.target.value));
follow();
