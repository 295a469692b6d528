"use strict";
// ipuc memory map: per-tile allocations (address × liveness) with a tile
// selector, an overview of every tile's peak and the live set at a moment.
(function () {
  const D = JSON.parse(document.getElementById("data").textContent);
  const [BUDGET, RESERVE, BASE, END] = D.budget;
  const T = D.tiles.length, M = Math.max(1, D.moments.length);
  // Tile ids are logical; D.phys maps each to its physical C600 id.
  const P = (id) => (D.phys && D.phys[id] !== undefined ? D.phys[id] : "?");
  const dpr = window.devicePixelRatio || 1;
  const fmt = (n) => Math.round(n).toLocaleString("en-US");
  const hex = (n) => "0x" + n.toString(16);
  const esc = (s) => String(s).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]);
  const tip = document.getElementById("tip");

  let peakIdx = 0;
  D.peaks.forEach((p, i) => { if (p[0] > D.peaks[peakIdx][0]) peakIdx = i; });
  let sel = peakIdx, moment = D.peaks[peakIdx] ? D.peaks[peakIdx][1] : 0;
  const mode = document.getElementById("mode");
  const anyPlaced = D.allocs.some((a) => { for (let k = 2; k < a.length; k += 6) if (a[k] >= 0) return true; return false; });
  mode.value = anyPlaced ? "addr" : "live";

  // ---- header ----------------------------------------------------------------
  const legend = document.getElementById("legend");
  D.classes.forEach((c, i) => legend.insertAdjacentHTML("beforeend",
    `<span><span class="swatch" style="background:${D.colors[i]}"></span>${c}</span>`));
  const over = D.peaks.filter((p) => p[0] + RESERVE > BUDGET).length;
  const verdict = document.getElementById("verdict");
  if (T) {
    const pk = D.peaks[peakIdx][0] + RESERVE;
    verdict.textContent = over ? `${over} tile${over === 1 ? "" : "s"} over budget` : "all tiles fit";
    if (over) verdict.classList.add("bad");
    document.getElementById("stats").innerHTML =
      `<span><b>${T}</b> tiles</span><span><b>${D.moments.length}</b> moments</span>` +
      `<span>peak tile <b>${D.tiles[peakIdx]}</b> (physical ${P(D.tiles[peakIdx])}): <b>${fmt(pk)}</b> B${RESERVE ? ` incl. ${fmt(RESERVE)} B support reserve` : ""}, ` +
      `budget <b>${fmt(BUDGET)}</b> B (${(100 * pk / BUDGET).toFixed(1)}%) at “${esc(D.moments[D.peaks[peakIdx][1]] || "")}”</span>` +
      `<span>SRAM ${hex(BASE)}–${hex(END)}</span>`;
  }
  const tileSel = document.getElementById("tile");
  const order = D.tiles.map((_, i) => i).sort((a, b) => D.peaks[b][0] - D.peaks[a][0] || a - b);
  order.forEach((i) => tileSel.insertAdjacentHTML("beforeend",
    `<option value="${i}">tile ${D.tiles[i]} (phys ${P(D.tiles[i])}) — ${fmt(D.peaks[i][0] + RESERVE)} B${i === peakIdx ? " ★ peak" : ""}</option>`));

  function select(i, keepMoment) {
    sel = Math.max(0, Math.min(T - 1, i));
    if (!keepMoment) moment = D.peaks[sel] ? D.peaks[sel][1] : 0;
    tileSel.value = String(sel);
    drawAll();
  }
  tileSel.onchange = () => select(+tileSel.value);
  document.getElementById("prev").onclick = () => select(sel - 1);
  document.getElementById("next").onclick = () => select(sel + 1);
  document.getElementById("peak").onclick = () => select(peakIdx);
  document.getElementById("peakmoment").onclick = () => select(sel);
  mode.onchange = () => drawAll();
  const reuse = document.getElementById("reuse");
  reuse.onchange = () => drawTiles();

  // ---- canvases --------------------------------------------------------------
  function setup(cv) {
    const r = cv.getBoundingClientRect();
    cv.width = Math.max(200, Math.round(r.width * dpr)); cv.height = Math.max(60, Math.round(r.height * dpr));
    const ctx = cv.getContext("2d");
    ctx.font = `${Math.round(11 * dpr)}px system-ui, sans-serif`; ctx.textBaseline = "middle";
    return ctx;
  }
  const ov = document.getElementById("overview"), mp = document.getElementById("map");
  const OV_LEFT = 70 * dpr, LEFT = 80 * dpr, TOP = 8 * dpr, BOTTOM = 26 * dpr;
  const ovMax = () => Math.max(BUDGET, ...D.peaks.map((p) => p[0] + RESERVE)) * 1.08;

  function drawOverview() {
    const ctx = setup(ov), W = ov.width, H = ov.height, pw = W - OV_LEFT, mx = ovMax();
    ctx.fillStyle = "#5f6b7a"; ctx.textAlign = "right";
    ctx.fillText(fmt(BUDGET), OV_LEFT - 6 * dpr, H - (BUDGET / mx) * (H - 4 * dpr));
    const bw = pw / Math.max(1, T);
    for (let i = 0; i < T; i++) {
      const v = D.peaks[i][0] + RESERVE, h = (v / mx) * (H - 4 * dpr);
      ctx.fillStyle = i === peakIdx ? "#8b0000" : v > BUDGET ? "#e15759" : "#3b7dd8";
      ctx.fillRect(OV_LEFT + i * bw, H - h, Math.max(1, bw - (bw > 3 ? 1 : 0)), h);
    }
    const by = H - (BUDGET / mx) * (H - 4 * dpr);
    ctx.strokeStyle = "#d62728"; ctx.setLineDash([6 * dpr, 3 * dpr]); ctx.beginPath();
    ctx.moveTo(OV_LEFT, by); ctx.lineTo(W, by); ctx.stroke(); ctx.setLineDash([]);
    const sx = OV_LEFT + (sel + 0.5) * bw;
    ctx.fillStyle = "#1d2330"; ctx.beginPath();
    ctx.moveTo(sx - 5 * dpr, 0); ctx.lineTo(sx + 5 * dpr, 0); ctx.lineTo(sx, 7 * dpr); ctx.fill();
  }
  ov.onclick = (ev) => {
    const r = ov.getBoundingClientRect(), x = (ev.clientX - r.left) * dpr;
    const i = Math.floor((x - OV_LEFT) / ((ov.width - OV_LEFT) / Math.max(1, T)));
    if (i >= 0 && i < T) select(i);
  };
  ov.onmousemove = (ev) => {
    const r = ov.getBoundingClientRect(), x = (ev.clientX - r.left) * dpr;
    const i = Math.floor((x - OV_LEFT) / ((ov.width - OV_LEFT) / Math.max(1, T)));
    if (i < 0 || i >= T) { tip.style.display = "none"; return; }
    const p = D.peaks[i];
    showTip(ev, `tile ${D.tiles[i]} (physical ${P(D.tiles[i])})${i === peakIdx ? "  ★ peak tile" : ""}\npeak    ${fmt(p[0] + RESERVE)} B${RESERVE ? " (incl. reserve)" : ""}\nbudget  ${fmt(BUDGET)} B\nmoment  ${D.moments[p[1]] || ""}`);
  };
  ov.onmouseleave = mp.onmouseleave = () => { tip.style.display = "none"; };

  function allocsOf(i) {
    const a = D.allocs[i], out = [];
    for (let k = 0; k < a.length; k += 6)
      out.push({ name: D.names[a[k]], cls: a[k + 1], addr: a[k + 2], size: a[k + 3], first: a[k + 4], last: a[k + 5] });
    return out;
  }
  const xOf = (m, W) => LEFT + (m / M) * (W - LEFT);
  const yOf = (addr, H) => TOP + ((addr - BASE) / (END - BASE)) * (H - TOP - BOTTOM);

  function drawMap() {
    const ctx = setup(mp), W = mp.width, H = mp.height;
    const list = T ? allocsOf(sel) : [];
    ctx.fillStyle = "#fafbfc"; ctx.fillRect(LEFT, TOP, W - LEFT, H - TOP - BOTTOM);
    ctx.fillStyle = "#5f6b7a"; ctx.textAlign = "right";
    if (mode.value === "addr") {
      for (let a = BASE; a <= END; a += 0x10000) {
        const y = yOf(a, H); ctx.fillText(hex(a), LEFT - 6 * dpr, y);
        ctx.strokeStyle = "#eceff3"; ctx.beginPath(); ctx.moveTo(LEFT, y); ctx.lineTo(W, y); ctx.stroke();
      }
      list.forEach((a) => {
        if (a.addr < 0) return;
        const x0 = xOf(a.first, W), x1 = xOf(a.last + 1, W), y0 = yOf(a.addr, H), y1 = yOf(a.addr + a.size, H);
        ctx.fillStyle = D.colors[a.cls];
        ctx.globalAlpha = a.first <= moment && moment <= a.last ? 0.95 : 0.55;
        ctx.fillRect(x0, y0, Math.max(1, x1 - x0 - 1), Math.max(1, y1 - y0 - (y1 - y0 > 4 * dpr ? 1 : 0)));
        ctx.globalAlpha = 1;
        if (y1 - y0 > 12 * dpr && ctx.measureText(a.name).width < x1 - x0 - 6 * dpr) {
          ctx.fillStyle = "#fff"; ctx.textAlign = "left"; ctx.fillText(a.name, x0 + 3 * dpr, (y0 + y1) / 2);
        }
      });
    } else {
      const mx = ovMax(), byClass = liveByClass(list), ph = H - TOP - BOTTOM;
      const yv = (v) => TOP + ph - (v / mx) * ph;
      for (let v = 0; v <= mx; v += 100000) {
        ctx.textAlign = "right"; ctx.fillStyle = "#5f6b7a"; ctx.fillText(fmt(v), LEFT - 6 * dpr, yv(v));
      }
      const cw = (W - LEFT) / M;
      for (let m = 0; m < M; m++) {
        let acc = RESERVE;
        ctx.fillStyle = "#c9ced6"; ctx.fillRect(LEFT + m * cw, yv(acc), Math.max(1, cw - 1), yv(0) - yv(acc));
        byClass[m].forEach((v, c) => {
          if (!v) return;
          ctx.fillStyle = D.colors[c]; ctx.fillRect(LEFT + m * cw, yv(acc + v), Math.max(1, cw - 1), yv(acc) - yv(acc + v));
          acc += v;
        });
      }
      ctx.strokeStyle = "#d62728"; ctx.setLineDash([6 * dpr, 3 * dpr]); ctx.beginPath();
      ctx.moveTo(LEFT, yv(BUDGET)); ctx.lineTo(W, yv(BUDGET)); ctx.stroke(); ctx.setLineDash([]);
    }
    // Moment axis and the selected moment.
    ctx.fillStyle = "#5f6b7a"; ctx.textAlign = "center";
    // Moment names when every name fits its column, else sparse indices.
    const cw = (W - LEFT) / M;
    const named = D.moments.every((n) => ctx.measureText(`${n}`).width + 8 * dpr < cw);
    const every = named ? 1 : Math.max(1, Math.ceil(M / ((W - LEFT) / (60 * dpr))));
    for (let m = 0; m < M; m += every)
      ctx.fillText(named ? `${m} ${D.moments[m]}`.length * 6 * dpr < cw ? `${m} ${D.moments[m]}` : D.moments[m] : String(m),
        xOf(m + 0.5, W), H - BOTTOM / 2);
    const x = xOf(moment + 0.5, W);
    ctx.strokeStyle = "#1d2330"; ctx.lineWidth = 1.5 * dpr; ctx.beginPath(); ctx.moveTo(x, TOP); ctx.lineTo(x, H - BOTTOM); ctx.stroke();
    ctx.lineWidth = 1;
  }

  function liveByClass(list) {
    const out = [];
    for (let m = 0; m < M; m++) out.push(new Array(D.classes.length).fill(0));
    list.forEach((a) => { for (let m = a.first; m <= a.last && m < M; m++) out[m][a.cls] += a.size; });
    return out;
  }

  function hitAt(ev) {
    const r = mp.getBoundingClientRect(), x = (ev.clientX - r.left) * dpr, y = (ev.clientY - r.top) * dpr;
    const W = mp.width, H = mp.height;
    const m = Math.floor(((x - LEFT) / (W - LEFT)) * M);
    const addr = BASE + ((y - TOP) / (H - TOP - BOTTOM)) * (END - BASE);
    return { m, addr, inside: x >= LEFT && m >= 0 && m < M };
  }
  mp.onclick = (ev) => { const h = hitAt(ev); if (h.inside) { moment = h.m; drawMap(); drawTable(); } };
  mp.onmousemove = (ev) => {
    const h = hitAt(ev);
    if (!h.inside || !T) { tip.style.display = "none"; return; }
    const list = allocsOf(sel);
    if (mode.value === "addr") {
      const a = list.find((a) => a.addr >= 0 && a.first <= h.m && h.m <= a.last && a.addr <= h.addr && h.addr < a.addr + a.size);
      if (!a) { showTip(ev, `moment ${h.m}: ${D.moments[h.m] || ""}\naddress ${hex(Math.floor(h.addr))}\nfree`); return; }
      showTip(ev, `${a.name}\nclass   ${D.classes[a.cls]}\nrange   ${hex(a.addr)}–${hex(a.addr + a.size)}\nsize    ${fmt(a.size)} B\nlive    #${a.first} ${D.moments[a.first] || ""}\n     →  #${a.last} ${D.moments[a.last] || ""}`);
    } else {
      const row = liveByClass(list)[h.m];
      const total = row.reduce((s, v) => s + v, 0) + RESERVE;
      showTip(ev, `moment ${h.m}: ${D.moments[h.m] || ""}\n` + row.map((v, c) => v ? `${D.classes[c].padEnd(17)}${fmt(v)} B\n` : "").join("") +
        (RESERVE ? `${"reserve".padEnd(17)}${fmt(RESERVE)} B\n` : "") + `${"total".padEnd(17)}${fmt(total)} B of ${fmt(BUDGET)}`);
    }
  };

  function drawTable() {
    if (!T) return;
    const list = allocsOf(sel).filter((a) => a.first <= moment && moment <= a.last)
      .sort((a, b) => (a.addr < 0) - (b.addr < 0) || a.addr - b.addr || b.size - a.size);
    const live = list.reduce((s, a) => s + a.size, 0);
    document.getElementById("livetitle").textContent =
      `Live on tile ${D.tiles[sel]} at moment ${moment} “${D.moments[moment] || ""}”: ${list.length} allocations, ${RESERVE ? `${fmt(live)} B + ${fmt(RESERVE)} B reserve = ` : ""}${fmt(live + RESERVE)} B`;
    let h = `<table><thead><tr><th class="l">allocation</th><th class="l">class</th><th class="l">address</th><th>bytes</th><th class="l">live</th></tr></thead><tbody>`;
    list.forEach((a) => {
      h += `<tr><td class="l">${esc(a.name)}</td><td class="l"><span class="swatch" style="background:${D.colors[a.cls]}"></span>${D.classes[a.cls]}</td>` +
        `<td class="l">${a.addr >= 0 ? hex(a.addr) + "–" + hex(a.addr + a.size) : "unplaced"}</td><td>${fmt(a.size)}</td>` +
        `<td class="l">#${a.first} ${esc(D.moments[a.first] || "")} → #${a.last} ${esc(D.moments[a.last] || "")}</td></tr>`;
    });
    document.getElementById("live").innerHTML = h + "</tbody></table>";
  }

  function showTip(ev, text) {
    tip.textContent = text; tip.style.display = "block";
    tip.style.left = Math.min(ev.clientX + 14, window.innerWidth - tip.offsetWidth - 8) + "px";
    tip.style.top = Math.min(ev.clientY + 14, window.innerHeight - tip.offsetHeight - 8) + "px";
  }

  // ---- all-tiles overview ------------------------------------------------------
  // Every tile of the device in id order (unused ones too); per tile its
  // allocations in "lanes": lane 0 holds each address's first occupant, a
  // later allocation overlapping an occupied range goes to the next lane
  // (drawn below, only with "Reused allocations").
  const UNUSED = D.unused || [];
  const ALL = D.tiles.map((t, i) => ({ id: t, i })).concat(UNUSED.map((t) => ({ id: t, i: -1 })))
    .sort((a, b) => a.id - b.id);
  document.getElementById("alltitle").textContent =
    `All ${ALL.length} tiles: ${T} used, ${UNUSED.length} unused`;
  const lanesOf = new Array(T);
  function lanes(i) {
    if (lanesOf[i]) return lanesOf[i];
    const list = allocsOf(i).filter((a) => a.addr >= 0).sort((a, b) => a.first - b.first || a.addr - b.addr);
    const lanes = []; // per lane: sorted disjoint [start, end) pairs
    const overlaps = (iv, s, e) => {
      let lo = 0, hi = iv.length;
      while (lo < hi) { const mid = (lo + hi) >> 1; if (iv[mid][1] <= s) lo = mid + 1; else hi = mid; }
      return lo < iv.length && iv[lo][0] < e;
    };
    const insert = (iv, s, e) => {
      let lo = 0, hi = iv.length;
      while (lo < hi) { const mid = (lo + hi) >> 1; if (iv[mid][0] < s) lo = mid + 1; else hi = mid; }
      iv.splice(lo, 0, [s, e]);
    };
    list.forEach((a) => {
      let k = 0;
      while (k < lanes.length && overlaps(lanes[k].iv, a.addr, a.addr + a.size)) k++;
      if (k === lanes.length) lanes.push({ iv: [], allocs: [] });
      insert(lanes[k].iv, a.addr, a.addr + a.size); lanes[k].allocs.push(a);
    });
    return (lanesOf[i] = lanes);
  }
  const tilesCv = document.getElementById("tiles");
  const MAX_LANES = 3;
  // Region 1 (interleaved) starts here: a faint line across every column.
  const REGION1 = 0x80000;
  // Runs of at least GAP_RUN unused tiles collapse into one labelled gap,
  // so a 20-tile run is 20 wide columns, not 20 slivers among 1472.
  const GAP_RUN = 8;
  const COLS = [];
  for (let k = 0; k < ALL.length;) {
    let e = k;
    while (e < ALL.length && ALL[e].i < 0) e++;
    if (e - k >= GAP_RUN) { COLS.push({ gap: true, from: ALL[k].id, to: ALL[e - 1].id, n: e - k }); k = e; continue; }
    if (e === k) e = k + 1;
    for (; k < e; k++) COLS.push({ gap: false, t: ALL[k] });
  }
  // Zoom: the address axis stretched ×1…×32 and the tiles widened, the map
  // scrolling inside its box (a canvas taller than MAX_CANVAS is not drawn
  // by browsers, so the zoom is capped there and the page says so).
  const zoomSel = document.getElementById("zoom"), colSel = document.getElementById("colw");
  const MAX_CANVAS = 30000;
  [1, 2, 4, 8, 16, 32].forEach((z) => zoomSel.insertAdjacentHTML("beforeend", `<option value="${z}">×${z}</option>`));
  colSel.insertAdjacentHTML("beforeend", `<option value="0">fit</option>`);
  [4, 8, 16, 32].forEach((w) => colSel.insertAdjacentHTML("beforeend", `<option value="${w}">${w} px</option>`));
  zoomSel.value = "1"; colSel.value = "0";
  zoomSel.onchange = colSel.onchange = () => { drawTiles(); writeHash(); };
  const wrap = document.getElementById("tileswrap");
  wrap.addEventListener("wheel", (ev) => {
    if (!ev.ctrlKey) return;
    ev.preventDefault();
    const zs = [1, 2, 4, 8, 16, 32], k = zs.indexOf(+zoomSel.value);
    const n = Math.max(0, Math.min(zs.length - 1, k + (ev.deltaY < 0 ? 1 : -1)));
    if (n !== k) { zoomSel.value = String(zs[n]); drawTiles(); writeHash(); }
  }, { passive: false });
  function writeHash() {
    const h = new URLSearchParams(location.hash.slice(1));
    h.set("zoom", zoomSel.value); h.set("colw", colSel.value);
    history.replaceState(null, "", "#" + h.toString());
  }
  let tilesGeom = null;
  function drawTiles() {
    const boxW = Math.max(200, Math.round((wrap.getBoundingClientRect().width - 2) * dpr));
    const left = 64 * dpr, gapW = 64 * dpr, nGaps = COLS.filter((c) => c.gap).length, nCols = COLS.length - nGaps;
    const zoom = +zoomSel.value || 1, fixed = +colSel.value * dpr;
    // Column width: the plot shared out, between 2 and 48 CSS pixels, or
    // the width picked; wide columns make the map wider than its box.
    const fitW = Math.max(2 * dpr, Math.min(48 * dpr, (boxW - left - 4 * dpr - nGaps * gapW) / Math.max(1, nCols)));
    const colW = fixed || fitW;
    const W = fixed ? Math.max(boxW, Math.min(Math.round(left + 4 * dpr + nCols * colW + nGaps * gapW), boxW * 4)) : boxW;
    const pw = W - left - 4 * dpr;
    tilesCv.style.width = W / dpr + "px";
    // Flow the columns into rows.
    const place = []; let x = 0, row = 0;
    COLS.forEach((c) => {
      const w = c.gap ? gapW : colW;
      if (x + w > pw + 0.5 && x > 0) { row++; x = 0; }
      place.push({ x: left + x, w, row }); x += w;
    });
    const rows = row + 1;
    let laneCount = 1;
    if (reuse.checked) for (let i = 0; i < T; i++) laneCount = Math.max(laneCount, Math.min(MAX_LANES, lanes(i).length));
    // One row of wide columns gets a tall band; wrapped rows of slivers a
    // short one; the zoom stretches either, up to what a canvas holds.
    const baseH = (rows === 1 ? 220 : 60) * dpr / (rows === 1 ? Math.min(laneCount, 2) : 1);
    const extra = (laneCount > 1 ? 8 * dpr : 0) + 18 * dpr + (colW >= 14 * dpr ? 14 : 0) * dpr;
    const capH = (MAX_CANVAS / rows - extra) / laneCount;
    const bandH = Math.max(baseH, Math.min(baseH * zoom, capH));
    const capped = baseH * zoom > capH;
    const wide = colW >= 14 * dpr, labelH = (wide ? 14 : 0) * dpr;
    // Lanes of reused addresses sit below the first, a small gap apart.
    const laneGap = laneCount > 1 ? 8 * dpr : 0, laneH = bandH + laneGap;
    const rowH = laneH * laneCount - laneGap + 18 * dpr + labelH;
    tilesCv.style.height = (rows * rowH) / dpr + "px";
    tilesCv.width = W; tilesCv.height = Math.round(rows * rowH);
    const ctx = tilesCv.getContext("2d");
    ctx.font = `${Math.round(10 * dpr)}px system-ui, sans-serif`; ctx.textBaseline = "middle";
    const span = Math.max(1, END - BASE), yAt = (a) => ((a - BASE) / span) * bandH;
    // Address axis of every row (and lane): start, region 1, end.
    for (let r = 0; r < rows; r++) {
      const top = r * rowH + 12 * dpr;
      ctx.fillStyle = "#5f6b7a"; ctx.textAlign = "right";
      for (let l = 0; l < laneCount; l++) {
        const lt = top + l * laneH;
        if (l > 0) { ctx.fillText(`reuse ${l}`, left - 4 * dpr, lt + Math.min(bandH / 2, 10 * dpr)); continue; }
        ctx.fillText(hex(BASE), left - 4 * dpr, lt + 5 * dpr);
        if (REGION1 > BASE && REGION1 < END && bandH >= 40 * dpr) ctx.fillText(hex(REGION1), left - 4 * dpr, lt + yAt(REGION1));
        if (bandH >= 100 * dpr) ctx.fillText(hex(END), left - 4 * dpr, lt + bandH - 5 * dpr);
      }
    }
    // Labels: every tile's id when columns are wide, else every ~50 px.
    const every = wide ? Math.max(1, Math.ceil((26 * dpr) / colW)) : Math.max(1, Math.ceil((50 * dpr) / colW));
    let sinceLabel = every;
    COLS.forEach((c, k) => {
      const g = place[k], top = g.row * rowH + 12 * dpr, h = laneH * laneCount - laneGap;
      const cw = Math.max(1, g.w - (g.w > 2.5 * dpr ? 1 : 0));
      if (c.gap) {
        ctx.fillStyle = "#eef0f3"; ctx.fillRect(g.x + 2 * dpr, top, g.w - 4 * dpr, h);
        ctx.fillStyle = "#5f6b7a"; ctx.textAlign = "center";
        const cx = g.x + g.w / 2, cy = top + Math.min(h / 2, 40 * dpr);
        ctx.fillText(`${c.n} unused`, cx, cy - 7 * dpr);
        ctx.fillText(`${c.from}–${c.to}`, cx, cy + 7 * dpr);
        sinceLabel = every;
        return;
      }
      const t = c.t;
      if (sinceLabel >= every || g.x === left) {
        ctx.fillStyle = "#5f6b7a"; ctx.textAlign = wide ? "center" : "left";
        if (wide) ctx.fillText(String(t.id), g.x + g.w / 2, top + h + 8 * dpr);
        else ctx.fillText(String(t.id), g.x, top - 6 * dpr);
        sinceLabel = 0;
      }
      sinceLabel++;
      if (t.i < 0) { ctx.fillStyle = "#e4e7eb"; ctx.fillRect(g.x, top, cw, h); return; }
      ctx.fillStyle = "#fafbfc"; ctx.fillRect(g.x, top, cw, bandH);
      const ls = reuse.checked ? lanes(t.i).slice(0, laneCount) : [lanes(t.i)[0] || { allocs: [] }];
      ls.forEach((lane, li) => {
        if (li > 0) { ctx.fillStyle = "#fafbfc"; ctx.fillRect(g.x, top + li * laneH, cw, bandH); }
        if (REGION1 > BASE && REGION1 < END) { ctx.fillStyle = "#c9ced6"; ctx.fillRect(g.x, top + li * laneH + yAt(REGION1), cw, Math.max(1, dpr)); }
        lane.allocs.forEach((a) => {
          const y0 = top + li * laneH + yAt(a.addr);
          const hh = Math.max(0.5 * dpr, (a.size / span) * bandH);
          ctx.fillStyle = D.colors[a.cls]; ctx.fillRect(g.x, y0, cw, hh);
        });
      });
      if (D.peaks[t.i][0] + RESERVE > BUDGET) { ctx.fillStyle = "#d62728"; ctx.fillRect(g.x, top - 5 * dpr, cw, 3 * dpr); }
      if (t.i === sel) { ctx.strokeStyle = "#1d2330"; ctx.lineWidth = 1.5 * dpr; ctx.strokeRect(g.x - 1, top - 1, cw + 2, h + 2); ctx.lineWidth = 1; }
    });
    tilesGeom = { place, rowH, bandH, laneH, laneCount, top: 12 * dpr };
    const perPx = (END - BASE) / (bandH / dpr);
    document.getElementById("zoominfo").textContent =
      `${fmt(perPx)} B of SRAM per pixel of a column, ${fmt(colW / dpr)} px per tile` + (capped ? " (address zoom capped: the map would exceed the tallest canvas a browser draws)" : "");
    document.body.dataset.bandPx = String(Math.round(bandH / dpr));
    document.body.dataset.bytesPerPx = String(Math.round(perPx));
  }
  function tileAt(ev) {
    if (!tilesGeom) return null;
    const r = tilesCv.getBoundingClientRect(), x = (ev.clientX - r.left) * dpr, y = (ev.clientY - r.top) * dpr;
    const g = tilesGeom, row = Math.floor(y / g.rowH);
    const k = g.place.findIndex((p) => p.row === row && p.x <= x && x < p.x + p.w);
    if (k < 0) return null;
    const yIn = y - row * g.rowH - g.top, lane = Math.floor(yIn / g.laneH);
    const addr = BASE + ((yIn - lane * g.laneH) / g.bandH) * (END - BASE);
    const c = COLS[k];
    return c.gap ? { gap: c } : { t: c.t, lane, addr };
  }
  tilesCv.onclick = (ev) => { const h = tileAt(ev); if (h && h.t && h.t.i >= 0) select(h.t.i); };
  tilesCv.onmousemove = (ev) => {
    const h = tileAt(ev);
    if (!h) { tip.style.display = "none"; return; }
    if (h.gap) { showTip(ev, `tiles ${h.gap.from}–${h.gap.to}: ${h.gap.n} unused tiles (no program, no buffer)`); return; }
    if (h.t.i < 0) { showTip(ev, `tile ${h.t.id} (physical ${P(h.t.id)})\nunused (no program, no buffer)`); return; }
    const p = D.peaks[h.t.i];
    let text = `tile ${h.t.id} (physical ${P(h.t.id)})${h.t.i === peakIdx ? "  ★ peak tile" : ""}\npeak    ${fmt(p[0] + RESERVE)} B of ${fmt(BUDGET)}\nat      ${D.moments[p[1]] || ""}`;
    const ls = reuse.checked ? lanes(h.t.i) : lanes(h.t.i).slice(0, 1);
    const lane = ls[h.lane];
    const a = lane && lane.allocs.find((a) => a.addr <= h.addr && h.addr < a.addr + a.size);
    if (a) text += `\n\n${a.name}\nclass   ${D.classes[a.cls]}${h.lane ? ` (reuses the address, lane ${h.lane})` : ""}\nrange   ${hex(a.addr)}–${hex(a.addr + a.size)}\nsize    ${fmt(a.size)} B\nlive    #${a.first} ${D.moments[a.first] || ""}\n     →  #${a.last} ${D.moments[a.last] || ""}`;
    showTip(ev, text);
  };
  tilesCv.onmouseleave = () => { tip.style.display = "none"; };

  function drawAll() {
    if (T) {
      const p = D.peaks[sel];
      document.getElementById("maptitle").textContent =
        `Tile ${D.tiles[sel]} (physical ${P(D.tiles[sel])})${sel === peakIdx ? " (peak tile)" : ""}: peak ${fmt(p[0] + RESERVE)} B at moment ${p[1]} — ` +
        (mode.value === "addr" ? "address (down) × moment (across); click to pick a moment" : "live bytes by class per moment; grey = support reserve");
    }
    drawTiles(); drawOverview(); drawMap(); drawTable();
  }
  // #tile=<logical id>&mode=live|addr&moment=<index> selects a view.
  const h = new URLSearchParams(location.hash.slice(1));
  if (h.has("tile")) { const i = D.tiles.indexOf(+h.get("tile")); if (i >= 0) { sel = i; moment = D.peaks[i][1]; } }
  if (h.get("mode") === "live" || h.get("mode") === "addr") mode.value = h.get("mode");
  if (h.has("moment")) moment = Math.max(0, Math.min(M - 1, +h.get("moment") || 0));
  if (h.has("zoom") && [1, 2, 4, 8, 16, 32].includes(+h.get("zoom"))) zoomSel.value = String(+h.get("zoom"));
  if (h.has("colw") && [0, 4, 8, 16, 32].includes(+h.get("colw"))) colSel.value = String(+h.get("colw"));
  window.addEventListener("resize", drawAll);
  tileSel.value = String(sel);
  drawAll();
  // Marks a complete render (checked by `cargo xtask browser-check`).
  // Milliseconds from navigation start to a complete render (printed by
  // `cargo xtask browser-check`).
  document.body.dataset.renderMs = String(Math.round(performance.now()));
  document.body.dataset.rendered = "memory";
})();
