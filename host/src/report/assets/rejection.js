"use strict";
// ipuc memory-rejection report: pick a tile, see its live bytes over the
// moments against the budget, pick a moment (or its peak), see what is live.
(function () {
  const D = JSON.parse(document.getElementById("data").textContent);
  const [BUDGET, RESERVE] = D.budget;
  const M = Math.max(1, D.moments.length);
  const dpr = window.devicePixelRatio || 1;
  const fmt = (n) => Math.round(n).toLocaleString("en-US");
  const esc = (s) => String(s).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]);
  const tip = document.getElementById("tip");
  const tiles = D.tiles.map((t) => {
    const allocs = [];
    for (let k = 0; k < t.allocs.length; k += 5)
      allocs.push({ name: D.names[t.allocs[k]], cls: t.allocs[k + 1], size: t.allocs[k + 2], first: t.allocs[k + 3], last: t.allocs[k + 4] });
    const live = new Array(M).fill(0);
    allocs.forEach((a) => { for (let m = a.first; m <= a.last && m < M; m++) live[m] += a.size; });
    let peak = 0;
    live.forEach((v, m) => { if (v > live[peak]) peak = m; });
    return { tile: t.tile, physical: t.physical, allocs, live, peak };
  });
  if (!tiles.length) return;
  const tileSel = document.getElementById("rtile");
  const refused = new Set(D.refused || []);
  const order = tiles.map((_, i) => i).sort((a, b) => tiles[b].live[tiles[b].peak] - tiles[a].live[tiles[a].peak] || a - b);
  order.forEach((i) => {
    const t = tiles[i], total = t.live[t.peak] + RESERVE;
    tileSel.insertAdjacentHTML("beforeend",
      `<option value="${i}">tile ${t.tile} (phys ${t.physical}) — ${fmt(total)} B${total > BUDGET ? " (over)" : ""}${refused.has(t.tile) ? " (refused)" : ""}${i === 0 ? " ★ reported" : ""}</option>`);
  });
  let sel = 0, moment = tiles[0].peak;
  function select(i, m) {
    sel = Math.max(0, Math.min(tiles.length - 1, i));
    moment = m === undefined ? tiles[sel].peak : m;
    tileSel.value = String(sel);
    draw();
  }
  tileSel.onchange = () => select(+tileSel.value);
  document.getElementById("rprev").onclick = () => select(order[Math.max(0, order.indexOf(sel) - 1)]);
  document.getElementById("rnext").onclick = () => select(order[Math.min(order.length - 1, order.indexOf(sel) + 1)]);
  document.getElementById("rpeak").onclick = () => select(sel);
  document.getElementById("rworst").onclick = () => select(order[0]);

  const cv = document.getElementById("timeline");
  const LEFT = 76 * dpr, TOP = 8 * dpr, BOTTOM = 22 * dpr;
  function geometry() {
    const t = tiles[sel];
    const mx = Math.max(BUDGET, ...t.live.map((v) => v + RESERVE)) * 1.08;
    return { t, mx };
  }
  // A moment's column width: the plot's width over the moments, at most 60
  // CSS pixels (a planner report has one moment: a bar, not a red wall).
  const colW = (W) => Math.min((W - LEFT) / M, 60 * dpr);
  function drawTimeline() {
    const r = cv.getBoundingClientRect();
    cv.width = Math.max(200, Math.round(r.width * dpr)); cv.height = Math.max(80, Math.round(r.height * dpr));
    const ctx = cv.getContext("2d"), W = cv.width, H = cv.height, { t, mx } = geometry();
    ctx.font = `${Math.round(11 * dpr)}px system-ui, sans-serif`; ctx.textBaseline = "middle";
    const ph = H - TOP - BOTTOM, yv = (v) => TOP + ph - (v / mx) * ph, cw = colW(W);
    ctx.fillStyle = "#fafbfc"; ctx.fillRect(LEFT, TOP, W - LEFT, ph);
    for (let m = 0; m < M; m++) {
      const v = t.live[m] + RESERVE;
      const bw = Math.max(1, cw - (cw > 3 ? 1 : 0));
      ctx.fillStyle = v > BUDGET ? "#e15759" : "#3b7dd8";
      ctx.fillRect(LEFT + m * cw, yv(v), bw, yv(0) - yv(v));
      if (m === moment) {
        // The selected moment keeps its colour (red = over) with a dark frame.
        ctx.strokeStyle = "#1d2330"; ctx.lineWidth = 2 * dpr;
        ctx.strokeRect(LEFT + m * cw + dpr, yv(v) + dpr, Math.max(1, bw - 2 * dpr), yv(0) - yv(v) - 2 * dpr);
        ctx.lineWidth = 1;
      }
    }
    ctx.fillStyle = "#c9ced6"; ctx.fillRect(LEFT, yv(RESERVE), W - LEFT, yv(0) - yv(RESERVE));
    ctx.strokeStyle = "#d62728"; ctx.setLineDash([6 * dpr, 3 * dpr]); ctx.beginPath();
    ctx.moveTo(LEFT, yv(BUDGET)); ctx.lineTo(W, yv(BUDGET)); ctx.stroke(); ctx.setLineDash([]);
    // The budget's label sits on its line at the right (the left margin is
    // too narrow for it).
    ctx.fillStyle = "#d62728"; ctx.textAlign = "right"; ctx.textBaseline = "bottom";
    ctx.fillText(`budget ${fmt(BUDGET)}`, W - 4 * dpr, yv(BUDGET) - 2 * dpr); ctx.textBaseline = "middle";
    ctx.fillStyle = "#5f6b7a"; ctx.fillText("0", LEFT - 4 * dpr, yv(0));
    ctx.textAlign = "center";
    const every = Math.max(1, Math.ceil(M / ((W - LEFT) / (40 * dpr))));
    for (let m = 0; m < M; m += every) ctx.fillText(String(m), LEFT + (m + 0.5) * cw, H - BOTTOM / 2);
  }
  const momentAt = (ev) => {
    const r = cv.getBoundingClientRect(), x = (ev.clientX - r.left) * dpr;
    const m = Math.floor((x - LEFT) / colW(cv.width));
    return m >= 0 && m < M ? m : -1;
  };
  cv.onclick = (ev) => { const m = momentAt(ev); if (m >= 0) { moment = m; draw(); } };
  cv.onmousemove = (ev) => {
    const m = momentAt(ev);
    if (m < 0) { tip.style.display = "none"; return; }
    const t = tiles[sel], v = t.live[m] + RESERVE;
    showTip(ev, `moment ${m}: ${D.moments[m] || ""}\nlive    ${fmt(t.live[m])} B\nreserve ${fmt(RESERVE)} B\ntotal   ${fmt(v)} B of ${fmt(BUDGET)}${v > BUDGET ? `\nover by ${fmt(v - BUDGET)} B` : ""}`);
  };
  cv.onmouseleave = () => { tip.style.display = "none"; };

  // The top panel follows the picked tile and moment: its stacked bar
  // (largest allocation first, then the support reserve, against the
  // budget line) and its bytes by class.
  const BAR_W = 1100;
  function drawBar(t, list, live) {
    const total = live + RESERVE, full = Math.max(total, BUDGET) * 1.04, px = (b) => (b / full) * BAR_W;
    let x = 0, h = `<defs><pattern id="hatch" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="6" height="6" fill="#e4e7eb"/><line x1="0" y1="0" x2="0" y2="6" stroke="#9aa3ad" stroke-width="2"/></pattern></defs>`;
    list.forEach((a) => {
      const w = px(a.size);
      h += `<rect x="${x.toFixed(2)}" y="8" width="${w.toFixed(2)}" height="30" fill="${D.colors[a.cls]}" stroke="#fff" stroke-width="0.5"><title>${esc(a.name)} (${D.classes[a.cls]}): ${fmt(a.size)} B</title></rect>`;
      if (w > a.name.length * 6.6 + 8) h += `<text x="${(x + 4).toFixed(2)}" y="23" font-size="12" fill="#fff" dominant-baseline="middle" pointer-events="none">${esc(a.name)}</text>`;
      x += w;
    });
    if (RESERVE) h += `<rect x="${x.toFixed(2)}" y="8" width="${px(RESERVE).toFixed(2)}" height="30" fill="url(#hatch)" stroke="#9aa3ad"><title>support reserve: ${fmt(RESERVE)} B</title></rect>`;
    const bx = px(BUDGET), ex = Math.max(Math.min(px(total) + 4, BAR_W - 60), bx + 6);
    h += `<line x1="${bx.toFixed(2)}" y1="2" x2="${bx.toFixed(2)}" y2="44" stroke="#d62728" stroke-width="2"/>` +
      `<text x="${(bx - 4).toFixed(2)}" y="58" fill="#d62728" font-size="12" text-anchor="end">budget ${fmt(BUDGET)} B</text>` +
      `<text x="${ex.toFixed(2)}" y="58" font-size="12" text-anchor="start" fill="#1d2330">${fmt(total)} B</text>`;
    document.getElementById("rbar").innerHTML = h;
    const where = moment === t.peak ? "at its peak" : `at moment ${moment}`;
    document.getElementById("rbartitle").innerHTML =
      `Tile ${t.tile} (physical ${t.physical}) ${where} “${esc(D.moments[moment] || "")}”: ${fmt(total)} B` +
      `${total > BUDGET ? `, over the budget by ${fmt(total - BUDGET)} B` : ", fits"} <span class="muted">(largest allocation first; hover for names)</span>`;
    const byClass = new Array(D.classes.length).fill(0);
    list.forEach((a) => { byClass[a.cls] += a.size; });
    let rows = "";
    byClass.forEach((v, c) => {
      if (v) rows += `<tr><td class="l"><span class="swatch" style="background:${D.colors[c]}"></span>${D.classes[c]}</td><td>${fmt(v)}</td><td>${(100 * v / BUDGET).toFixed(1)}</td></tr>`;
    });
    if (RESERVE) rows += `<tr><td class="l"><span class="swatch" style="background:#e4e7eb"></span>support reserve</td><td>${fmt(RESERVE)}</td><td>${(100 * RESERVE / BUDGET).toFixed(1)}</td></tr>`;
    document.getElementById("rclasses").innerHTML = rows;
    document.getElementById("rclasstitle").textContent = `By class (tile ${t.tile}, moment ${moment})`;
  }

  function drawLive() {
    const t = tiles[sel];
    const list = t.allocs.filter((a) => a.first <= moment && moment <= a.last).sort((a, b) => b.size - a.size || (a.name < b.name ? -1 : 1));
    const live = list.reduce((s, a) => s + a.size, 0), total = live + RESERVE;
    drawBar(t, list, live);
    document.getElementById("rlivetitle").textContent =
      `Tile ${t.tile} (physical ${t.physical})${moment === t.peak ? " at its peak" : ""}, moment ${moment} “${D.moments[moment] || ""}”: ${list.length} live allocations, ${RESERVE ? `${fmt(live)} B + ${fmt(RESERVE)} B reserve = ` : ""}${fmt(total)} B` +
      (total > BUDGET ? ` — over the ${fmt(BUDGET)} B budget by ${fmt(total - BUDGET)} B` : ` — fits the ${fmt(BUDGET)} B budget`);
    let cum = RESERVE;
    let h = `<table><thead><tr><th class="l">allocation</th><th class="l">class</th><th>bytes</th><th>% of budget</th><th>cumulative</th><th class="l">live</th></tr></thead><tbody>`;
    list.forEach((a) => {
      cum += a.size;
      h += `<tr${cum > BUDGET ? ' class="hl"' : ""}><td class="l">${esc(a.name)}</td><td class="l"><span class="swatch" style="background:${D.colors[a.cls]}"></span>${D.classes[a.cls]}</td>` +
        `<td>${fmt(a.size)}</td><td>${(100 * a.size / BUDGET).toFixed(1)}</td><td>${fmt(cum)}</td><td class="l">#${a.first} → #${a.last}</td></tr>`;
    });
    document.getElementById("rlive").innerHTML = h + "</tbody></table>";
    document.getElementById("rtimelinetitle").textContent = M > 1
      ? `Tile ${t.tile}: live bytes${RESERVE ? " + reserve" : " (support ranges included)"} at each of ${M} moments (red = over budget, dark frame = selected; click a bar)`
      : `Tile ${t.tile}: the planner checks each candidate at the moment it is applied; this report has that one moment`;
  }
  function showTip(ev, text) {
    tip.textContent = text; tip.style.display = "block";
    tip.style.left = Math.min(ev.clientX + 14, window.innerWidth - tip.offsetWidth - 8) + "px";
    tip.style.top = Math.min(ev.clientY + 14, window.innerHeight - tip.offsetHeight - 8) + "px";
  }
  function draw() { drawTimeline(); drawLive(); }
  window.addEventListener("resize", draw);
  select(0);
  // Marks a complete render (checked by `cargo xtask browser-check`).
  // Milliseconds from navigation start to a complete render (printed by
  // `cargo xtask browser-check`).
  document.body.dataset.renderMs = String(Math.round(performance.now()));
  document.body.dataset.rendered = "rejection";
})();
