"use strict";
// Headless check of the reports' page scripts (run by host/src/report/
// viewer_check.rs with node): loads a generated HTML page, runs its inline
// script against a small stand-in DOM (elements by id, canvas contexts that
// draw nothing, synchronous timers), plays the scenario named on the command
// line and prints what the page shows as JSON. It checks the scripts' logic
// (which element says what after which click), not pixels: the screenshots
// are `cargo xtask browser-check`'s.
//
// usage: node harness.js PAGE.html profile|rejection|memory

const fs = require("fs");
const vm = require("vm");

const [page, scenario] = process.argv.slice(2);
const html = fs.readFileSync(page, "utf8");
const data = /<script type="application\/json" id="data">([\s\S]*?)<\/script>/.exec(html);
const scripts = [...html.matchAll(/<script>\n([\s\S]*?)<\/script>/g)].map((m) => m[1]);
if (!data || !scripts.length) throw new Error(`${page}: no embedded data or no script`);

const WIDTH = 1200, HEIGHT = 700;

class Element {
  constructor(id, tag) {
    this.id = id; this.tagName = tag || "DIV";
    this._html = ""; this.textContent = ""; this.value = "";
    this.style = {}; this.dataset = {}; this.listeners = {};
    this.offsetWidth = 200; this.offsetHeight = 80; this.width = 0; this.height = 0;
    const cls = new Set();
    this.classList = { add: (c) => cls.add(c), remove: (c) => cls.delete(c), contains: (c) => cls.has(c) };
    this._rows = new Map();
  }
  get innerHTML() { return this._html; }
  set innerHTML(h) { this._html = String(h); }
  insertAdjacentHTML(_, h) { this._html += h; }
  addEventListener(type, fn) { (this.listeners[type] = this.listeners[type] || []).push(fn); }
  fire(type, ev) {
    const e = Object.assign({ preventDefault() {}, target: this, clientX: 0, clientY: 0, deltaY: 0 }, ev || {});
    if (this["on" + type]) this["on" + type](e);
    (this.listeners[type] || []).forEach((fn) => fn(e));
  }
  getBoundingClientRect() { return { left: 0, top: 0, width: WIDTH, height: HEIGHT }; }
  getContext() { return context(); }
  // Only what the scripts ask for: table rows by their data-op.
  querySelectorAll(sel) {
    if (sel !== "tr[data-op]") return [];
    return [...this._html.matchAll(/<tr data-op="(-?\d+)"/g)].map((m) => {
      if (!this._rows.has(m[1])) {
        const tr = new Element("", "TR");
        tr.dataset.op = m[1];
        this._rows.set(m[1], tr);
      }
      return this._rows.get(m[1]);
    });
  }
}

function context() {
  const noop = () => {};
  return new Proxy({
    measureText: (t) => ({ width: String(t).length * 6 }),
    createImageData: (w, h) => ({ data: new Uint8ClampedArray(w * h * 4) }),
    putImageData: noop,
  }, {
    get: (t, k) => (k in t ? t[k] : typeof k === "string" && /^[a-z]/.test(k) && !["font", "fillStyle", "strokeStyle", "lineWidth", "textAlign", "textBaseline", "globalAlpha"].includes(k) ? noop : t[k]),
    set: (t, k, v) => { t[k] = v; return true; },
  });
}

const byId = new Map();
const body = new Element("body", "BODY");
const document = {
  body,
  getElementById(id) {
    if (id === "data") return { textContent: data[1] };
    if (!byId.has(id)) {
      const tag = /search|^r?tile$|^mode$|^group$|^zoom|^reuse$/.test(id) ? (id === "search" || id === "reuse" ? "INPUT" : "SELECT") : "DIV";
      byId.set(id, new Element(id, tag));
    }
    return byId.get(id);
  },
  querySelectorAll(sel) {
    const m = /^#(\w+) (.*)$/.exec(sel);
    return m ? document.getElementById(m[1]).querySelectorAll(m[2]) : [];
  },
  querySelector() { return null; },
};
const location = { hash: "" };
const windowListeners = {};
const window = {
  devicePixelRatio: 1, innerWidth: WIDTH, innerHeight: HEIGHT,
  addEventListener: (type, fn) => { (windowListeners[type] = windowListeners[type] || []).push(fn); },
};
const sandbox = {
  document, window, location,
  history: { replaceState: (_a, _b, h) => { location.hash = h; } },
  requestAnimationFrame: (fn) => fn(),
  setTimeout: (fn) => { fn(); return 0; }, clearTimeout: () => {},
  performance: { now: () => 1 },
  URLSearchParams, Math, JSON, Number, String, Array, Map, Set, Object,
  Float64Array, Float32Array, Int32Array, Int8Array, Uint8Array, Uint32Array, Uint8ClampedArray,
  console,
};
vm.createContext(sandbox);
scripts.forEach((s) => vm.runInContext(s, sandbox, { filename: page }));

const D = JSON.parse(data[1]);
const el = (id) => document.getElementById(id);
const out = { rendered: body.dataset.rendered };

if (scenario === "profile") {
  const view = () => body.dataset.view.split(",").map(Number);
  out.initial_view = view();
  out.span = D.span;
  out.summarized = D.summarized;
  out.iterations = D.iterations.length;
  // Click the table's first operation row: highlighted and zoomed to it.
  const rows = el("ops").querySelectorAll("tr[data-op]");
  const op = +rows[0].dataset.op;
  rows[0].fire("click");
  out.row_op = D.ops[op];
  out.row_view = view();
  out.row_highlighted = +body.dataset.highlighted;
  out.row_hash = location.hash;
  // The op's extent from the lane, as the page should have zoomed to it.
  const blocks = D.lane.filter((b) => b[0] === op);
  out.row_extent = [Math.min(...blocks.map((b) => b[1])), Math.max(...blocks.map((b) => b[2]))];
  // Search: every matching op highlighted; Enter zooms to the first run.
  const search = el("search");
  search.value = "mlp";
  search.fire("input");
  out.search_highlighted = +body.dataset.highlighted;
  out.search_expected = D.ops.filter((n) => n.toLowerCase().includes("mlp")).length;
  out.search_info = el("searchinfo").textContent;
  search.fire("keydown", { key: "Enter" });
  out.search_view = view();
  out.search_info_after = el("searchinfo").textContent;
  const first = D.lane.find((b) => b[0] >= 0 && D.ops[b[0]].toLowerCase().includes("mlp"));
  out.search_first_run = first ? [first[1], first[2]] : null;
  search.fire("keydown", { key: "Escape" });
  // Reset, then click the op lane in the middle of the span.
  el("reset").fire("click");
  const cv = el("chart"), LEFT = 78, LANE_Y = 22 + 18 + 9;
  const mid = (D.span[0] + D.span[1]) / 2, x = LEFT + ((mid - D.span[0]) / (D.span[1] - D.span[0])) * (WIDTH - LEFT);
  cv.fire("mousemove", { clientX: x, clientY: LANE_Y });
  out.lane_tip = el("tip").textContent;
  cv.fire("click", { clientX: x, clientY: LANE_Y });
  out.lane_view = view();
  out.lane_highlighted = +body.dataset.highlighted;
  // Hover the iteration band over the last iteration: its own split.
  el("reset").fire("click");
  const last = D.iterations[D.iterations.length - 1];
  const lx = LEFT + (((last[1] + last[2]) / 2 - D.span[0]) / (D.span[1] - D.span[0])) * (WIDTH - LEFT);
  cv.fire("mousemove", { clientX: lx, clientY: 22 + 9 });
  out.iteration_tip = el("tip").textContent;
} else if (scenario === "rejection") {
  const sel = el("rtile");
  out.options = [...sel.innerHTML.matchAll(/<option value="(\d+)">([^<]*)</g)].map((m) => m[2]);
  out.picker = el("rpicker").textContent;
  out.initial_bar_title = el("rbartitle").innerHTML;
  out.initial_classes = el("rclasses").innerHTML;
  // Pick the last tile of the picker.
  const last = D.tiles.length - 1;
  sel.value = String(last);
  sel.fire("change");
  out.picked_tile = D.tiles[last].tile;
  out.picked_bar_title = el("rbartitle").innerHTML;
  out.picked_classes = el("rclasses").innerHTML;
  out.picked_class_title = el("rclasstitle").textContent;
  out.picked_live_title = el("rlivetitle").textContent;
  out.picked_bar = el("rbar").innerHTML.length;
} else if (scenario === "memory") {
  const z = el("zoom");
  out.zoom_options = [...z.innerHTML.matchAll(/<option value="([\d.]+)"/g)].map((m) => +m[1]);
  out.initial_height = el("tiles").height;
  out.initial_band = +body.dataset.bandPx;
  z.value = String(out.zoom_options[out.zoom_options.length - 1]);
  z.fire("change");
  out.zoomed_height = el("tiles").height;
  out.zoomed_band = +body.dataset.bandPx;
  out.bytes_per_px = +body.dataset.bytesPerPx;
  out.hash = location.hash;
} else {
  throw new Error(`unknown scenario ${scenario}`);
}
process.stdout.write(JSON.stringify(out));
