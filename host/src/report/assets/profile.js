"use strict";
// ipuc profile timeline: canvas renderer for the embedded profile data.
// Rows are tiles (or groups of tiles); each pixel column of a row is coloured
// by the step kind that covers most of it, so zoomed-out views of 1472 tiles
// × thousands of steps stay readable and fast.
(function () {
  const D = JSON.parse(document.getElementById("data").textContent);
  const COLORS = [[59, 125, 216], [242, 142, 43], [154, 163, 173], [89, 161, 79]];
  const DIM = [214, 218, 224];
  const NCAT = 9; // kind × iteration parity, plus "other operation" when some are highlighted
  const dpr = window.devicePixelRatio || 1;
  const LEFT = Math.round(78 * dpr), AXIS = Math.round(22 * dpr), BAND = Math.round(18 * dpr);
  // The op lane: which operation runs when (first start to last end over all tiles).
  const LANE = Math.round(18 * dpr);
  const TOP = AXIS + BAND + LANE;

  // ---- decode samples into typed arrays ------------------------------------
  const T = D.tiles.length;
  const S = [], E = [], EMAX = [], ST = [];
  for (let i = 0; i < T; i++) {
    const f = D.samples[i], n = f.length / 3;
    const s = new Float64Array(n), e = new Float64Array(n), m = new Float64Array(n), st = new Int32Array(n);
    let ps = 0, pe = D.span[0], mx = -Infinity;
    for (let j = 0; j < n; j++) {
      ps += f[3 * j];
      const a = pe + f[3 * j + 1], b = a + f[3 * j + 2];
      st[j] = ps; s[j] = a; e[j] = b; pe = b;
      mx = Math.max(mx, b); m[j] = mx;
    }
    S.push(s); E.push(e); EMAX.push(m); ST.push(st);
  }
  D.samples = null;
  const NS = D.steps.length;
  const stepKind = new Int8Array(NS), stepOp = new Int32Array(NS), stepIter = new Int32Array(NS), stepSummed = new Uint8Array(NS);
  D.steps.forEach((x, i) => { stepKind[i] = x[0]; stepOp[i] = x[1]; stepIter[i] = x[2]; stepSummed[i] = x[3]; });
  // Highlighted operations (a clicked row or lane block, or every search match).
  const hl = new Uint8Array(D.ops.length);
  let hlCount = 0;
  function highlight(ops) {
    hl.fill(0); hlCount = 0;
    ops.forEach((o) => { if (o >= 0 && o < hl.length && !hl[o]) { hl[o] = 1; hlCount++; } });
  }
  // Where each operation ran: its op-lane blocks.
  const opBlocks = new Map();
  D.lane.forEach((b) => { if (b[0] >= 0) { if (!opBlocks.has(b[0])) opBlocks.set(b[0], []); opBlocks.get(b[0]).push(b); } });
  const shortName = (n) => n.replace(/^vision_model\./, "").replace(/^encoder\.layers\./, "L");

  const fmt = (n) => Math.round(n).toLocaleString("en-US");
  // Tick label with just enough decimals to tell neighbouring ticks apart.
  const axisLabel = (t, step) => {
    const [unit, suffix] = t >= 1e9 ? [1e9, "G"] : t >= 1e6 ? [1e6, "M"] : t >= 1e3 ? [1e3, "k"] : [1, ""];
    const decimals = Math.max(0, Math.ceil(-Math.log10(step / unit) - 1e-9));
    return (t / unit).toFixed(Math.min(decimals, 6)) + suffix;
  };
  const rgb = (c) => `rgb(${c[0]},${c[1]},${c[2]})`;

  // ---- header: legend, group choices, iteration statistics -----------------
  const legend = document.getElementById("legend");
  D.kinds.forEach((k, i) => {
    legend.insertAdjacentHTML("beforeend",
      `<span><span class="swatch" style="background:${rgb(COLORS[i])}"></span>${k}</span>`);
  });
  if (D.iterations.length) {
    legend.insertAdjacentHTML("beforeend",
      `<span class="muted">darker shade = odd Repeat iteration</span>`);
    const total = D.iterations.reduce((a, x) => a + (x[2] - x[1]), 0), n = D.iterations.length;
    // The pace per layer, as the run report prints it: iterations 1..n-1
    // from their first start to their last end, over n - 1 (the first is
    // left out); tiles skew, so each iteration's own span is longer.
    const rest = D.iterations.slice(1);
    const pace = rest.length
      ? Math.floor((Math.max(...rest.map((x) => x[2])) - Math.min(...rest.map((x) => x[1]))) / rest.length)
      : total;
    document.getElementById("iterstat").innerHTML =
      `<b>${n}</b> Repeat iterations at <b>${fmt(pace)}</b> cycles per layer` +
      (rest.length ? ` <span class="muted">(the pace of ${rest.length === 1 ? "iteration " + rest[0][0] : `iterations ${rest[0][0]}–${rest[rest.length - 1][0]}`}, as the run report gives it; ` +
        `the iterations' own spans overlap, mean ${fmt(total / n)})</span>` : "") +
      (D.summarized ? ` <span class="muted">(iteration ${D.iterations[0][0]} in detail; iterations ${D.iterations[1][0]}–${D.iterations[n - 1][0]} summarized: ` +
        `per tile each its own span, its compute, exchange, sync and patch cycles laid end to end; --profile-detail full keeps every step)</span>` : "");
  }
  const groupSel = document.getElementById("group");
  const groups = [];
  for (let g = 1; g < T * 2 && g <= 256; g *= 2) groups.push(g);
  groups.forEach((g) => groupSel.insertAdjacentHTML("beforeend", `<option value="${g}">${g}</option>`));

  // ---- view state ----------------------------------------------------------
  const cv = document.getElementById("chart"), ctx = cv.getContext("2d");
  const tip = document.getElementById("tip");
  const spanLen = Math.max(1, D.span[1] - D.span[0]);
  let v0 = D.span[0], v1 = D.span[0] + spanLen, rowsTop = 0, group = 1, query = "";
  let W = 0, H = 0, img = null, buf = null, cov = null;

  const rows = () => Math.ceil(T / group);
  const plotW = () => Math.max(1, W - LEFT);
  const plotH = () => Math.max(1, H - TOP);
  const rowH = () => Math.max(3 * dpr, plotH() / rows());
  const scale = () => plotW() / (v1 - v0);
  function fitGroup() {
    for (const g of groups) if (Math.ceil(T / g) * 3 * dpr <= plotH()) return g;
    return groups[groups.length - 1] || 1;
  }
  function clampView() {
    const w = Math.min(Math.max(v1 - v0, 8), spanLen * 1.5);
    const lo = D.span[0] - spanLen * 0.25, hi = D.span[1] + spanLen * 0.25;
    v0 = Math.min(Math.max(v0, lo), hi - w); v1 = v0 + w;
    const maxTop = Math.max(0, rows() - plotH() / rowH());
    rowsTop = Math.min(Math.max(rowsTop, 0), maxTop);
  }

  function resize() {
    const r = cv.getBoundingClientRect();
    W = Math.max(200, Math.round(r.width * dpr)); H = Math.max(150, Math.round(r.height * dpr));
    cv.width = W; cv.height = H;
    img = ctx.createImageData(W, H); buf = new Uint32Array(img.data.buffer);
    cov = new Float32Array(plotW() * NCAT);
  }

  // First sample whose running-max end exceeds t (samples sorted by start).
  function firstAfter(i, t) {
    const m = EMAX[i]; let lo = 0, hi = m.length;
    while (lo < hi) { const mid = (lo + hi) >> 1; if (m[mid] <= t) lo = mid + 1; else hi = mid; }
    return lo;
  }
  // Sample of tile i covering t, or -1.
  function sampleAt(i, t) {
    const s = S[i]; let lo = 0, hi = s.length;
    while (lo < hi) { const mid = (lo + hi) >> 1; if (s[mid] <= t) lo = mid + 1; else hi = mid; }
    for (let j = lo - 1; j >= 0 && j >= lo - 4; j--) if (E[i][j] > t) return j;
    return -1;
  }
  function category(step) {
    if (hlCount && !hl[stepOp[step]]) return 8;
    const it = stepIter[step];
    return stepKind[step] * 2 + (it >= 0 ? (it & 1) : 0);
  }
  function shade(cat) {
    if (cat === 8) return DIM;
    const c = COLORS[cat >> 1];
    return (cat & 1) ? [c[0] * 0.62, c[1] * 0.62, c[2] * 0.62] : c;
  }

  // ---- drawing -------------------------------------------------------------
  function draw() {
    clampView();
    buf.fill(0xffffffff);
    const pw = plotW(), sc = scale(), rh = rowH(), nrows = rows();
    const first = Math.floor(rowsTop), gap = rh >= 6 * dpr ? 1 : 0;
    for (let r = first; r < nrows; r++) {
      const y0 = TOP + Math.round((r - rowsTop) * rh), y1 = TOP + Math.round((r + 1 - rowsTop) * rh) - gap;
      if (y0 >= H) break;
      if (y1 <= TOP) continue;
      cov.fill(0);
      const t0 = r * group, t1 = Math.min(T, t0 + group);
      for (let i = t0; i < t1; i++) {
        const s = S[i], e = E[i], st = ST[i];
        for (let j = firstAfter(i, v0); j < s.length && s[j] < v1; j++) {
          let x0 = (s[j] - v0) * sc, x1 = (e[j] - v0) * sc;
          if (x1 <= 0 || x0 >= pw || x1 <= x0) continue;
          if (x0 < 0) x0 = 0;
          if (x1 > pw) x1 = pw;
          const c = category(st[j]);
          const p0 = Math.floor(x0), p1 = Math.ceil(x1);
          if (p1 - p0 === 1) { cov[p0 * NCAT + c] += x1 - x0; continue; }
          cov[p0 * NCAT + c] += p0 + 1 - x0;
          for (let p = p0 + 1; p < p1 - 1; p++) cov[p * NCAT + c] += 1;
          cov[(p1 - 1) * NCAT + c] += x1 - (p1 - 1);
        }
      }
      const n = t1 - t0;
      for (let p = 0; p < pw; p++) {
        let best = -1, bv = 0, tot = 0;
        for (let c = 0; c < NCAT; c++) { const v = cov[p * NCAT + c]; tot += v; if (v > bv) { bv = v; best = c; } }
        if (best < 0) continue;
        const a = Math.min(1, Math.max(0.35, tot / n)), col = shade(best);
        const R = 255 - (255 - col[0]) * a, G = 255 - (255 - col[1]) * a, B = 255 - (255 - col[2]) * a;
        const px = 0xff000000 | (B << 16) | (G << 8) | R;
        for (let y = Math.max(y0, TOP); y < Math.min(y1, H); y++) buf[y * W + LEFT + p] = px;
      }
    }
    ctx.putImageData(img, 0, 0);
    overlays(pw, sc, rh, nrows);
    writeHash();
    // The view, for a reader of the page's DOM (and the headless checks).
    document.body.dataset.view = `${Math.round(v0)},${Math.round(v1)}`;
    document.body.dataset.highlighted = String(hlCount);
  }

  function overlays(pw, sc, rh, nrows) {
    const font = Math.round(11 * dpr);
    ctx.font = `${font}px system-ui, sans-serif`;
    ctx.textBaseline = "middle";
    // Iteration band and boundaries.
    ctx.fillStyle = "#f5f7fa"; ctx.fillRect(0, 0, W, TOP);
    D.iterations.forEach((it, k) => {
      const x0 = LEFT + (it[1] - v0) * sc, x1 = LEFT + (it[2] - v0) * sc;
      if (x1 < LEFT || x0 > W) return;
      const a = Math.max(x0, LEFT), b = Math.min(x1, W);
      ctx.fillStyle = k & 1 ? "#b9c9e3" : "#dbe4f3";
      ctx.fillRect(a, AXIS, b - a, BAND - 2 * dpr);
      ctx.strokeStyle = "rgba(30,40,60,0.22)"; ctx.lineWidth = 1;
      if (x0 >= LEFT) { ctx.beginPath(); ctx.moveTo(x0 + 0.5, AXIS); ctx.lineTo(x0 + 0.5, H); ctx.stroke(); }
      const label = "iter " + it[0] + (D.summarized && k > 0 ? " (summed)" : "");
      if (b - a > ctx.measureText(label).width + 6 * dpr) {
        ctx.fillStyle = "#1d2330"; ctx.textAlign = "center";
        ctx.fillText(label, (a + b) / 2, AXIS + (BAND - 2 * dpr) / 2);
      }
    });
    // The op lane: one block per run of an operation's steps.
    const ly = AXIS + BAND;
    ctx.fillStyle = "#fff"; ctx.fillRect(LEFT, ly, W - LEFT, LANE);
    // Blocks overlap in time (tiles skew), so the blocks are drawn first and
    // the labels after them, left to right, each only where it clears the
    // label before it: a label that would overlap another is left out.
    const labels = [];
    D.lane.forEach((b, k) => {
      const x0 = LEFT + (b[1] - v0) * sc, x1 = LEFT + (b[2] - v0) * sc;
      if (x1 < LEFT || x0 > W) return;
      const a = Math.max(x0, LEFT), e = Math.min(x1, W);
      const on = b[0] >= 0 && hl[b[0]];
      const fill = b[0] < 0 ? "#d9cdea" : on ? "#3b7dd8" : k & 1 ? "#c4cbd4" : "#dde2e8";
      ctx.fillStyle = fill;
      ctx.fillRect(a, ly + dpr, Math.max(1, e - a - (e - a > 3 ? 1 : 0)), LANE - 3 * dpr);
      labels.push([b, a, e, on, fill]);
    });
    let labelEnd = -Infinity;
    const drawn = [];
    labels.sort((p, q) => p[1] - q[1]);
    for (const [b, a, e, on, fill] of labels) {
      const x = Math.max(a, labelEnd) + 3 * dpr;
      // The longest label that fits its block from x: the name, else its
      // last part.
      const names = b[0] < 0 ? [`iteration ${-1 - b[0]} (summed)`, `it ${-1 - b[0]} Σ`, `${-1 - b[0]}`]
        : [shortName(D.ops[b[0]]), D.ops[b[0]].split(".").slice(-2).join(".")];
      const name = names.find((n) => x + ctx.measureText(n).width + 3 * dpr < e);
      if (!name) continue;
      const w = ctx.measureText(name).width;
      // Behind the text, the block's own colour: a later block drawn over
      // this part of the lane does not show through it.
      ctx.fillStyle = fill;
      ctx.fillRect(x - 2 * dpr, ly + 3 * dpr, w + 4 * dpr, LANE - 7 * dpr);
      ctx.fillStyle = on ? "#fff" : "#1d2330"; ctx.textAlign = "left";
      ctx.fillText(name, x, ly + LANE / 2);
      labelEnd = x + w + 6 * dpr;
      drawn.push(`${Math.round(x)},${Math.round(x + w)}`);
    }
    // For `cargo xtask browser-check`: the op-lane labels drawn, as
    // `x0,x1` extents in canvas pixels (none may overlap the next).
    document.body.dataset.laneLabels = drawn.join(" ");
    // Time axis (cycles from the start of the cropped span).
    ctx.fillStyle = "#5f6b7a"; ctx.strokeStyle = "#c4cbd4"; ctx.textAlign = "left";
    const target = (v1 - v0) / Math.max(2, pw / (90 * dpr));
    const p10 = Math.pow(10, Math.floor(Math.log10(target)));
    const step = [1, 2, 5, 10].map((m) => m * p10).find((s) => s >= target) || p10 * 10;
    for (let t = Math.ceil((v0 - D.span[0]) / step) * step; D.span[0] + t <= v1; t += step) {
      const x = Math.round(LEFT + (D.span[0] + t - v0) * sc) + 0.5;
      ctx.beginPath(); ctx.moveTo(x, AXIS - 6 * dpr); ctx.lineTo(x, AXIS); ctx.stroke();
      ctx.fillText(axisLabel(t, step), x + 3 * dpr, AXIS / 2);
    }
    // Row labels.
    ctx.fillStyle = "#fff"; ctx.fillRect(0, TOP, LEFT, H - TOP);
    ctx.fillStyle = "#f5f7fa"; ctx.fillRect(0, 0, LEFT, TOP);
    ctx.fillStyle = "#5f6b7a"; ctx.textAlign = "right";
    ctx.fillText("cycles", LEFT - 6 * dpr, AXIS / 2);
    ctx.fillText("Repeat", LEFT - 6 * dpr, AXIS + BAND / 2);
    ctx.fillText("operation", LEFT - 6 * dpr, AXIS + BAND + LANE / 2);
    const every = Math.max(1, Math.ceil((font + 3 * dpr) / rh));
    for (let r = Math.floor(rowsTop); r < nrows; r++) {
      if (r % every) continue;
      const y = TOP + (r - rowsTop + 0.5) * rh;
      if (y > H) break;
      if (y < TOP) continue;
      const a = D.tiles[r * group], b = D.tiles[Math.min(T, (r + 1) * group) - 1];
      ctx.fillText(group === 1 ? "tile " + a : a + "–" + b, LEFT - 6 * dpr, Math.max(y, TOP + font / 2));
    }
    ctx.strokeStyle = "#d9dee5"; ctx.beginPath(); ctx.moveTo(LEFT - 0.5, TOP); ctx.lineTo(LEFT - 0.5, H); ctx.stroke();
  }

  let pending = false;
  function redraw() { if (!pending) { pending = true; requestAnimationFrame(() => { pending = false; draw(); }); } }

  // ---- interaction ---------------------------------------------------------
  function zoomAt(xCss, factor) {
    const x = xCss * dpr - LEFT, t = v0 + Math.max(0, x) / scale();
    v0 = t - (t - v0) * factor; v1 = t + (v1 - t) * factor; redraw();
  }
  cv.addEventListener("wheel", (ev) => {
    ev.preventDefault();
    const r = cv.getBoundingClientRect();
    if (ev.shiftKey) { rowsTop += (ev.deltaY || ev.deltaX) * dpr / rowH(); redraw(); }
    else zoomAt(ev.clientX - r.left, Math.exp(ev.deltaY * 0.0015));
  }, { passive: false });
  let drag = null;
  cv.addEventListener("mousedown", (ev) => { drag = { x: ev.clientX, y: ev.clientY, v0, v1, rowsTop, moved: false }; cv.classList.add("drag"); });
  // The drag ends after the click it may have been (a click handler sees it).
  window.addEventListener("mouseup", () => { setTimeout(() => { drag = null; }, 0); cv.classList.remove("drag"); });
  cv.addEventListener("dblclick", reset);
  cv.addEventListener("mouseleave", () => { tip.style.display = "none"; });
  cv.addEventListener("mousemove", (ev) => {
    if (drag) {
      if (Math.abs(ev.clientX - drag.x) + Math.abs(ev.clientY - drag.y) > 3) drag.moved = true;
      const dt = (ev.clientX - drag.x) * dpr / scale();
      v0 = drag.v0 - dt; v1 = drag.v1 - dt;
      rowsTop = drag.rowsTop - (ev.clientY - drag.y) * dpr / rowH();
      tip.style.display = "none"; redraw(); return;
    }
    hover(ev);
  });
  window.addEventListener("keydown", (ev) => {
    if (ev.target.tagName === "INPUT" || ev.target.tagName === "SELECT") return;
    const w = v1 - v0, mid = (W - LEFT) / 2 / dpr + LEFT / dpr;
    if (ev.key === "+" || ev.key === "=") zoomAt(mid, 0.7);
    else if (ev.key === "-") zoomAt(mid, 1 / 0.7);
    else if (ev.key === "ArrowLeft") { v0 -= w * 0.2; v1 -= w * 0.2; redraw(); }
    else if (ev.key === "ArrowRight") { v0 += w * 0.2; v1 += w * 0.2; redraw(); }
    else if (ev.key === "ArrowUp") { rowsTop -= 5; redraw(); }
    else if (ev.key === "ArrowDown") { rowsTop += 5; redraw(); }
  });
  document.getElementById("zin").onclick = () => zoomAt((W / dpr + LEFT / dpr) / 2, 0.5);
  document.getElementById("zout").onclick = () => zoomAt((W / dpr + LEFT / dpr) / 2, 2);
  document.getElementById("reset").onclick = reset;
  groupSel.onchange = () => { group = +groupSel.value; rowsTop = 0; redraw(); };
  function reset() { v0 = D.span[0]; v1 = D.span[0] + spanLen; rowsTop = 0; redraw(); }

  function hover(ev) {
    const r = cv.getBoundingClientRect();
    const x = (ev.clientX - r.left) * dpr, y = (ev.clientY - r.top) * dpr;
    const t = v0 + (x - LEFT) / scale();
    let text = null;
    if (x >= LEFT && y >= AXIS && y < AXIS + BAND) {
      const it = D.iterations.find((s) => s[1] <= t && t < s[2]);
      if (it) {
        const tot = it[3] + it[4] + it[5] + it[6] || 1;
        text = `Repeat iteration ${it[0]}${D.summarized && it !== D.iterations[0] ? " (summarized)" : ""}\ncycles  ${fmt(it[2] - it[1])}\nspan    ${fmt(it[1])} → ${fmt(it[2])}\ntile-cycles by kind:` +
          D.kinds.map((k, i) => `\n  ${k.padEnd(9)}${fmt(it[3 + i]).padStart(14)}  ${(100 * it[3 + i] / tot).toFixed(1)}%`).join("");
      }
    } else if (x >= LEFT && y >= AXIS + BAND && y < TOP) {
      const b = laneAt(t);
      if (b) text = (b[0] < 0 ? `Repeat iteration ${-1 - b[0]} (summarized: its steps summed per kind)` : `op      ${D.ops[b[0]]}`) +
        `\ncycles  ${fmt(b[2] - b[1])}\nspan    ${fmt(b[1])} → ${fmt(b[2])}` + (b[0] >= 0 ? "\nclick: highlight and zoom to it" : "");
    } else if (x >= LEFT && y >= TOP) {
      const row = Math.floor((y - TOP) / rowH() + rowsTop);
      const t0 = row * group, t1 = Math.min(T, t0 + group);
      let hit = null, busy = 0;
      for (let i = t0; i < t1; i++) {
        const j = sampleAt(i, t);
        if (j >= 0) { busy++; if (!hit) hit = [i, j]; }
      }
      if (t0 < T) {
        const who = group === 1 ? "" : `  (row: tiles ${D.tiles[t0]}–${D.tiles[t1 - 1]}, ${busy} of ${t1 - t0} busy)`;
        if (hit) {
          const [i, j] = hit, st = ST[i][j], it = stepIter[st];
          text = `tile ${D.tiles[i]} (physical ${D.physical[i]})${who}\nop      ${D.ops[stepOp[st]]}\nkind    ${D.kinds[stepKind[st]]}` +
            (it >= 0 ? `   · Repeat iteration ${it}` : "") +
            (stepSummed[st] ? `\nsummed: all ${D.kinds[stepKind[st]]} steps of this iteration on this tile, laid end to end (order inside the iteration not shown)` : "") +
            `\ncycles  ${fmt(E[i][j] - S[i][j])}\nstart   ${fmt(S[i][j])}\nend     ${fmt(E[i][j])}\nstep    ${st}`;
        } else {
          text = `tile ${D.tiles[t0]} (physical ${D.physical[t0]})${who}\nidle at cycle ${fmt(t)}`;
        }
      }
    }
    if (!text) { tip.style.display = "none"; return; }
    tip.textContent = text; tip.style.display = "block";
    const tx = ev.clientX + 14, ty = ev.clientY + 14;
    tip.style.left = Math.min(tx, window.innerWidth - tip.offsetWidth - 8) + "px";
    tip.style.top = Math.min(ty, window.innerHeight - tip.offsetHeight - 8) + "px";
  }

  // ---- operations table ----------------------------------------------------
  (function table() {
    const wall = D.operations.reduce((a, o) => a + o.wall_cycles, 0) || 1;
    let h = `<table><thead><tr><th class="l">operation</th><th>wall cycles</th><th>% wall</th><th>tile-cycles</th>` +
      `<th>samples</th><th>tiles</th><th>min</th><th>max</th><th class="l">kinds (tile-cycles)</th></tr></thead><tbody>`;
    D.operations.forEach((o) => {
      const tot = o.total_cycles || 1;
      const bar = D.kinds.map((k, i) => {
        const v = o.cycles_by_kind[k] || 0;
        return v ? `<span class="swatch" title="${k}: ${fmt(v)}" style="width:${Math.max(2, 90 * v / tot)}px;margin:0;background:${rgb(COLORS[i])}"></span>` : "";
      }).join("");
      const op = D.ops.indexOf(o.operation);
      h += `<tr data-op="${op}" style="cursor:pointer"><td class="l">${o.operation.replace(/[&<>]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;" })[c])}</td>` +
        `<td>${fmt(o.wall_cycles)}</td><td>${(100 * o.wall_cycles / wall).toFixed(1)}</td><td>${fmt(o.total_cycles)}</td>` +
        `<td>${fmt(o.count)}</td><td>${o.tiles}</td><td>${fmt(o.min_cycles)}</td><td>${fmt(o.max_cycles)}</td><td class="l">${bar}</td></tr>`;
    });
    const box = document.getElementById("ops");
    box.innerHTML = h + "</tbody></table><p class=\"muted\">Click a row to highlight that operation and zoom to it; click again to clear the highlight.</p>";
    box.querySelectorAll("tr[data-op]").forEach((tr) => {
      tr.onclick = () => {
        const op = +tr.dataset.op;
        if (hlCount === 1 && hl[op]) { pick(-1); return; }
        pick(op);
        zoomToOp(op);
      };
    });
  })();
  // One highlighted operation (or none), the table rows following.
  function pick(op) {
    highlight(op >= 0 ? [op] : []);
    query = ""; search.value = ""; searchInfo.textContent = "";
    markRows();
    redraw();
  }
  function markRows() {
    document.querySelectorAll("#ops tr[data-op]").forEach((tr) => {
      if (hl[+tr.dataset.op]) tr.classList.add("hl"); else tr.classList.remove("hl");
    });
  }
  // The op-lane block at cycle t, if any (the last one starting at or before t).
  function laneAt(t) {
    let hit = null;
    for (const b of D.lane) { if (b[1] > t) break; if (t < b[2]) hit = b; }
    return hit;
  }
  // Zooms to cycles [a, b) with a margin.
  function zoomTo(a, b) {
    const pad = Math.max(4, (b - a) * 0.05);
    v0 = a - pad; v1 = b + pad; redraw();
  }
  // Zooms to every run of `op` (first start to last end).
  function zoomToOp(op) {
    const bs = opBlocks.get(op);
    if (bs) { zoomTo(Math.min(...bs.map((b) => b[1])), Math.max(...bs.map((b) => b[2]))); return; }
    // A summed step's operation: its iteration.
    for (let st = 0; st < NS; st++) {
      if (stepOp[st] !== op || !stepSummed[st]) continue;
      const it = D.iterations.find((x) => x[0] === stepIter[st]);
      if (it) zoomTo(it[1], it[2]);
      return;
    }
  }
  cv.addEventListener("click", (ev) => {
    const r = cv.getBoundingClientRect(), x = (ev.clientX - r.left) * dpr, y = (ev.clientY - r.top) * dpr;
    if (x < LEFT || y < AXIS + BAND || y >= TOP || (drag && drag.moved)) return;
    const b = laneAt(v0 + (x - LEFT) / scale());
    if (!b) return;
    if (b[0] < 0) { zoomTo(b[1], b[2]); return; }
    pick(b[0]); zoomToOp(b[0]);
  });

  // ---- search: highlight every operation whose name matches; Enter zooms to
  // the next match in time order, Escape clears.
  const search = document.getElementById("search"), searchInfo = document.getElementById("searchinfo");
  let matchBlocks = [], matchAt = -1;
  function runSearch(q) {
    query = q.trim();
    const needle = query.toLowerCase();
    const ops = needle ? D.ops.map((n, i) => (n.toLowerCase().includes(needle) ? i : -1)).filter((i) => i >= 0) : [];
    highlight(ops);
    matchBlocks = D.lane.filter((b) => b[0] >= 0 && hl[b[0]]);
    matchAt = -1;
    searchInfo.textContent = needle ? `${ops.length} operation${ops.length === 1 ? "" : "s"} match, ${matchBlocks.length} run${matchBlocks.length === 1 ? "" : "s"}${matchBlocks.length ? " (Enter: next)" : ""}` : "";
    markRows();
    redraw();
  }
  function nextMatch() {
    if (!matchBlocks.length) return;
    matchAt = (matchAt + 1) % matchBlocks.length;
    const b = matchBlocks[matchAt];
    zoomTo(b[1], b[2]);
    searchInfo.textContent = `match ${matchAt + 1} of ${matchBlocks.length}: ${D.ops[b[0]]}`;
  }
  search.addEventListener("input", () => runSearch(search.value));
  search.addEventListener("keydown", (ev) => {
    if (ev.key === "Enter") { ev.preventDefault(); nextMatch(); }
    else if (ev.key === "Escape") { search.value = ""; runSearch(""); }
  });

  // The view is kept in the URL hash (#view=start,end&group=N&op=name) so a
  // link reproduces what was on screen.
  function readHash() {
    const h = new URLSearchParams(location.hash.slice(1));
    const v = (h.get("view") || "").split(",").map(Number);
    if (v.length === 2 && v.every(Number.isFinite) && v[1] > v[0]) { v0 = v[0]; v1 = v[1]; }
    const g = +h.get("group");
    if (groups.includes(g)) group = g;
    if (h.has("op")) highlight([D.ops.indexOf(h.get("op"))]);
    // A link to an operation alone (#op=name) zooms to it.
    linkedOp = h.has("op") && !h.has("view") ? D.ops.indexOf(h.get("op")) : -1;
    if (h.has("q")) query = h.get("q");
    if (h.has("top")) rowsTop = +h.get("top") || 0;
  }
  let hashTimer = 0, linkedOp = -1;
  function writeHash() {
    clearTimeout(hashTimer);
    hashTimer = setTimeout(() => {
      const h = `view=${Math.round(v0)},${Math.round(v1)}&group=${group}` +
        (query ? "&q=" + encodeURIComponent(query) : hlCount === 1 ? "&op=" + encodeURIComponent(D.ops[hl.indexOf(1)]) : "") +
        (rowsTop > 0 ? "&top=" + Math.round(rowsTop) : "");
      history.replaceState(null, "", "#" + h);
    }, 300);
  }

  // `#sources`: the page opened with its table of cycle sources
  // first, under the header (the timeline, which fills the window,
  // follows it), so the table is on screen without scrolling.
  const sources = document.getElementById("cycle-sources");
  if (sources && new URLSearchParams(location.hash.slice(1)).has("sources")) {
    document.querySelector("header").after(sources);
  }
  window.addEventListener("resize", () => { resize(); redraw(); });
  resize();
  group = fitGroup();
  readHash();
  groupSel.value = String(group);
  if (query) { search.value = query; runSearch(query); }
  markRows();
  if (linkedOp >= 0) zoomToOp(linkedOp);
  draw();
  // Marks a complete render (checked by `cargo xtask browser-check`).
  // Milliseconds from navigation start to a complete render (printed by
  // `cargo xtask browser-check`).
  document.body.dataset.renderMs = String(Math.round(performance.now()));
  document.body.dataset.rendered = "profile";
})();
