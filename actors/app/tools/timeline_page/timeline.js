// The trace timeline page: lanes, spans and message arrows drawn on a canvas.
//
// The data (actors/app/tools/page_data.py) is column arrays; only what lies in the
// visible time window and the visible rows is drawn, so a trace of 100,000 messages pans
// and zooms at once. A message's causal chain (its cause links) and what it caused are
// looked up when it is clicked, not before.
"use strict";
(function () {
  const t0 = performance.now();
  const D = JSON.parse(document.getElementById("timeline-data").textContent);
  const S = D.strings;
  const LANE_H = 20, AXIS_H = 24, LABEL_W = 230;
  const KIND_COLORS = { handler: "#5b8def", call: "#2bb3a3", send: "#9aa5b8", backoff: "#f0a33a" };
  const MARK_COLORS = { fault: "#d93025", supervision: "#a142f4", dead_letter: "#d93025" };
  const GROUP_COLORS = ["#8792a8", "#5b8def", "#2bb3a3", "#f0a33a", "#a142f4", "#d9a400"];

  // --- columns -------------------------------------------------------------------------
  const lanes = D.lanes, L = lanes.name.length;
  const laneGroup = Int32Array.from(lanes.group), lanePod = Int32Array.from(lanes.pod);
  const M = D.msgs, N = M.id.length;
  const mTs = Float64Array.from(M.ts), mTe = Float64Array.from(M.te);
  const mFrom = Int32Array.from(M.from), mTo = Int32Array.from(M.to);
  const mCause = Int32Array.from(M.cause), mPods = Int32Array.from(M.pods);
  const mType = Int32Array.from(M.type), mDead = Uint8Array.from(M.dead);
  const SP = D.spans, SN = SP.lane.length;
  const sLane = Int32Array.from(SP.lane), sTs = Float64Array.from(SP.ts);
  const sDur = Float64Array.from(SP.dur), sKind = Int32Array.from(SP.kind);
  const sName = Int32Array.from(SP.name), sMsg = Int32Array.from(SP.msg);
  const MK = D.marks;
  const duration = Math.max(D.duration, 1);

  // Spans are sorted by lane, then start: each lane's slice, and its longest span (how far
  // back a search for the spans overlapping a window starts).
  const laneFirst = new Int32Array(L + 1), laneMaxDur = new Float64Array(L);
  for (let i = 0, lane = 0; lane <= L; lane++) {
    while (i < SN && sLane[i] < lane) i++;
    laneFirst[lane] = i;
  }
  for (let i = 0; i < SN; i++) if (sDur[i] > laneMaxDur[sLane[i]]) laneMaxDur[sLane[i]] = sDur[i];
  let maxLatency = 0;
  for (let i = 0; i < N; i++) if (mTe[i] - mTs[i] > maxLatency) maxLatency = mTe[i] - mTs[i];
  const typeColor = new Map();
  function colorOfType(t) {
    let c = typeColor.get(t);
    if (c === undefined) {
      let h = 0;
      for (const ch of S[t]) h = (h * 31 + ch.charCodeAt(0)) >>> 0;
      c = "hsl(" + (h % 360) + ",55%,42%)";
      typeColor.set(t, c);
    }
    return c;
  }

  // --- state ---------------------------------------------------------------------------
  const canvas = document.getElementById("canvas"), ctx = canvas.getContext("2d");
  const view = document.getElementById("view"), labelsBox = document.getElementById("labels");
  const podSelect = document.getElementById("pod"), searchBox = document.getElementById("search");
  const statusLine = document.getElementById("status");
  let width = 0, height = 0, dpr = 1;
  let winStart = 0, winEnd = duration; // the visible time window, microseconds
  let scrollRow = 0;                    // the first visible row (fractional)
  let pod = -1;                         // the pod filter (-1: every pod)
  let rows = [];                        // the lanes shown, in order
  const rowOf = new Int32Array(L).fill(-1);
  let selected = -1, chain = new Set(), matches = null, matchList = [];
  let shownMessages = 0;

  function podSetHas(set, p) { return D.podSets[set].length === 0 || D.podSets[set].indexOf(p) >= 0; }
  function laneShown(l) { return l >= 0 && rowOf[l] >= 0; }
  function msgShown(i) {
    if (pod >= 0 && !podSetHas(mPods[i], pod)) return false;
    return laneShown(mFrom[i]) || laneShown(mTo[i]);
  }

  function applyFilter() {
    rows = [];
    rowOf.fill(-1);
    for (let l = 0; l < L; l++) {
      if (pod >= 0 && lanePod[l] >= 0 && lanePod[l] !== pod) continue;
      rowOf[l] = rows.length;
      rows.push(l);
    }
    shownMessages = 0;
    for (let i = 0; i < N; i++) if (msgShown(i)) shownMessages++;
    scrollRow = Math.min(scrollRow, Math.max(0, rows.length - 1));
    if (matches !== null) runSearch();
    updateStatus();
    renderLabels();
    draw();
  }

  function updateStatus() {
    statusLine.textContent = shownMessages + " of " + N + " messages · " + rows.length + " of " +
      L + " lanes · " + fmtTime(winEnd - winStart) + " shown of " + fmtTime(duration);
  }

  // --- geometry ------------------------------------------------------------------------
  function x(t) { return (t - winStart) / (winEnd - winStart) * width; }
  function tAt(px) { return winStart + px / width * (winEnd - winStart); }
  function rowY(r) { return AXIS_H + (r - scrollRow) * LANE_H; }
  function laneMid(l) { return rowY(rowOf[l]) + LANE_H / 2; }
  function fmtTime(us) {
    const a = Math.abs(us);
    if (a >= 1e6) return (us / 1e6).toFixed(a >= 1e7 ? 1 : 3) + "s";
    if (a >= 1e3) return (us / 1e3).toFixed(a >= 1e4 ? 1 : 2) + "ms";
    return us.toFixed(1) + "µs";
  }
  function lowerBound(arr, lo, hi, value) {
    while (lo < hi) { const mid = (lo + hi) >>> 1; if (arr[mid] < value) lo = mid + 1; else hi = mid; }
    return lo;
  }

  function resize() {
    dpr = window.devicePixelRatio || 1;
    width = Math.max(50, view.clientWidth - LABEL_W);
    height = Math.max(50, view.clientHeight);
    canvas.style.width = width + "px";
    canvas.style.height = height + "px";
    canvas.width = Math.round(width * dpr);
    canvas.height = Math.round(height * dpr);
    renderLabels();
    draw();
  }

  // --- labels: a DOM element per visible row only ------------------------------------------
  function renderLabels() {
    const first = Math.max(0, Math.floor(scrollRow));
    const last = Math.min(rows.length, first + Math.ceil(height / LANE_H) + 1);
    const frag = document.createDocumentFragment();
    for (let r = first; r < last; r++) {
      const l = rows[r];
      const y = rowY(r);
      if (y + LANE_H < AXIS_H) continue;
      const div = document.createElement("div");
      const sub = l > 0 && lanes.actor[l] === lanes.actor[l - 1];
      div.className = sub ? "lane sub" : "lane";
      div.style.top = y + "px";
      div.style.height = LANE_H + "px";
      div.style.lineHeight = LANE_H + "px";
      div.style.borderLeftColor = GROUP_COLORS[laneGroup[l] % GROUP_COLORS.length];
      div.textContent = lanes.name[l];
      div.title = lanes.name[l] + (S[laneGroup[l]] ? " (" + S[laneGroup[l]] + ")" : "");
      div.dataset.lane = String(l);
      frag.appendChild(div);
    }
    labelsBox.replaceChildren(frag);
  }

  // --- drawing -------------------------------------------------------------------------------
  let drawPending = false;
  function draw() {
    if (drawPending) return;
    drawPending = true;
    requestAnimationFrame(() => { drawPending = false; drawNow(); });
  }

  const drawTimes = { spans: 0, arrows: 0 }; // the last frame's, in ms (for the benchmark)
  function drawNow() {
    const began = performance.now();
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, width, height);
    const first = Math.max(0, Math.floor(scrollRow));
    const last = Math.min(rows.length, first + Math.ceil(height / LANE_H) + 1);
    // Row stripes.
    for (let r = first; r < last; r++) {
      if (r % 2) { ctx.fillStyle = "#f5f7fa"; ctx.fillRect(0, rowY(r), width, LANE_H); }
    }
    // Spans, per visible lane; spans narrower than a pixel merge into one.
    ctx.font = "11px system-ui, sans-serif";
    ctx.textBaseline = "middle";
    for (let r = first; r < last; r++) {
      const l = rows[r], y = rowY(r);
      let i = lowerBound(sTs, laneFirst[l], laneFirst[l + 1], winStart - laneMaxDur[l]);
      const end = laneFirst[l + 1];
      let runX0 = -1, runX1 = -1, runColor = "";
      for (; i < end && sTs[i] <= winEnd; i++) {
        const e = sTs[i] + sDur[i];
        if (e < winStart) continue;
        const kind = D.spanKinds[sKind[i]];
        if (pod >= 0 && sMsg[i] >= 0 && !podSetHas(mPods[sMsg[i]], pod) && kind !== "backoff") continue;
        const x0 = Math.max(x(sTs[i]), -1), x1 = Math.min(Math.max(x(e), x0 + 1), width + 1);
        const color = KIND_COLORS[kind] || "#888";
        const inset = kind === "call" ? 6 : (kind === "backoff" ? 4 : 2);
        if (x1 - x0 < 2 && color === runColor && x0 <= runX1 + 1) { runX1 = Math.max(runX1, x1); continue; }
        if (runX0 >= 0) { ctx.fillStyle = runColor; ctx.fillRect(runX0, y + 3, runX1 - runX0, LANE_H - 6); }
        runX0 = -1;
        if (x1 - x0 < 2) { runX0 = x0; runX1 = x1; runColor = color; continue; }
        ctx.fillStyle = color;
        ctx.globalAlpha = kind === "backoff" ? 0.55 : 0.85;
        ctx.fillRect(x0, y + inset, x1 - x0, LANE_H - 2 * inset);
        ctx.globalAlpha = 1;
        if (sMsg[i] === selected && selected >= 0 && kind === "handler") {
          ctx.strokeStyle = "#111"; ctx.lineWidth = 2; ctx.strokeRect(x0, y + 2, x1 - x0, LANE_H - 4);
        }
        if (x1 - x0 > 40) {
          ctx.fillStyle = "#fff";
          ctx.save(); ctx.beginPath(); ctx.rect(x0, y, x1 - x0, LANE_H); ctx.clip();
          ctx.fillText(S[sName[i]], Math.max(x0, 0) + 3, y + LANE_H / 2);
          ctx.restore();
        }
      }
      if (runX0 >= 0) { ctx.fillStyle = runColor; ctx.fillRect(runX0, y + 3, runX1 - runX0, LANE_H - 6); }
    }
    // Marks: faults, supervision, dead letters.
    for (let i = 0; i < MK.lane.length; i++) {
      const l = MK.lane[i];
      if (!laneShown(l) || MK.ts[i] < winStart || MK.ts[i] > winEnd) continue;
      const r = rowOf[l];
      if (r < first || r >= last) continue;
      const px = x(MK.ts[i]), y = rowY(r);
      ctx.fillStyle = MARK_COLORS[D.markKinds[MK.kind[i]]] || "#000";
      ctx.beginPath(); ctx.moveTo(px, y + 2); ctx.lineTo(px + 5, y + LANE_H / 2);
      ctx.lineTo(px, y + LANE_H - 2); ctx.lineTo(px - 5, y + LANE_H / 2); ctx.fill();
    }
    const arrowsBegan = performance.now();
    drawArrows();
    drawAxis();
    drawTimes.spans = arrowsBegan - began;
    drawTimes.arrows = performance.now() - arrowsBegan;
  }

  function drawArrows() {
    const lo = lowerBound(mTs, 0, N, winStart - maxLatency);
    const hi = lowerBound(mTs, lo, N, winEnd + 1);
    const last = new Map(); // (from, to) -> the last pixel column drawn: one arrow a pixel
    const span = winEnd - winStart;
    const heads = span / width < 2000; // arrowheads once zoomed in enough to see them
    const dense = hi - lo > 3000;        // a wall of arrows: fainter, so spans show through
    const bucket = hi - lo > 20000 ? 4 : 1; // pixels per drawn arrow of one (from, to) pair
    const plain = new Map();             // colour -> one path of all its plain arrows
    const marked = [];                   // selected, chain and search hits: drawn on top
    for (let i = lo; i < hi; i++) {
      const te = mTe[i] >= 0 ? mTe[i] : mTs[i];
      if (te < winStart || !msgShown(i)) continue;
      const f = mFrom[i], t = mTo[i];
      const x0 = x(mTs[i]), x1 = x(te);
      const special = i === selected || chain.has(i) || (matches !== null && matches.has(i));
      const key = f * 65536 + t;
      const col = (x0 / bucket) | 0;
      if (!special && last.get(key) === col) continue;
      last.set(key, col);
      const y0 = laneShown(f) ? laneMid(f) : -LANE_H, y1 = laneShown(t) ? laneMid(t) : height + LANE_H;
      if ((y0 < AXIS_H && y1 < AXIS_H) || (y0 > height && y1 > height)) continue;
      if (special) { marked.push(i, x0, y0, x1, y1); continue; }
      const color = mDead[i] ? "#d93025" : colorOfType(mType[i]);
      if (heads) { arrow(x0, y0, x1, y1, color, 1); continue; }
      let path = plain.get(color);
      if (path === undefined) { path = new Path2D(); plain.set(color, path); }
      path.moveTo(x0, y0); path.lineTo(x1, y1);
    }
    ctx.lineWidth = 1;
    ctx.globalAlpha = dense ? 0.25 : 1;
    for (const [color, path] of plain) { ctx.strokeStyle = color; ctx.stroke(path); }
    ctx.globalAlpha = 1;
    for (let k = 0; k < marked.length; k += 5) {
      const i = marked[k];
      let color = "#e37400", lw = 2;
      if (chain.has(i)) color = "#111";
      if (i === selected) { color = "#000"; lw = 3; }
      arrow(marked[k + 1], marked[k + 2], marked[k + 3], marked[k + 4], color, lw);
    }
    ctx.lineWidth = 1;
  }

  function arrow(x0, y0, x1, y1, color, lw) {
    ctx.strokeStyle = color; ctx.lineWidth = lw;
    ctx.beginPath(); ctx.moveTo(x0, y0); ctx.lineTo(x1, y1); ctx.stroke();
    const a = Math.atan2(y1 - y0, x1 - x0), h = 5 + lw;
    ctx.fillStyle = color;
    ctx.beginPath(); ctx.moveTo(x1, y1);
    ctx.lineTo(x1 - h * Math.cos(a - 0.4), y1 - h * Math.sin(a - 0.4));
    ctx.lineTo(x1 - h * Math.cos(a + 0.4), y1 - h * Math.sin(a + 0.4));
    ctx.fill();
  }

  function drawAxis() {
    ctx.fillStyle = "#fff"; ctx.fillRect(0, 0, width, AXIS_H);
    ctx.strokeStyle = "#d6dbe3"; ctx.beginPath(); ctx.moveTo(0, AXIS_H - 0.5); ctx.lineTo(width, AXIS_H - 0.5); ctx.stroke();
    const span = winEnd - winStart;
    let step = Math.pow(10, Math.floor(Math.log10(span / 8)));
    if (span / step > 16) step *= 5; else if (span / step > 8) step *= 2;
    ctx.fillStyle = "#4a5468"; ctx.font = "11px system-ui, sans-serif"; ctx.textBaseline = "middle";
    for (let t = Math.ceil(winStart / step) * step; t <= winEnd; t += step) {
      const px = x(t);
      ctx.fillRect(px, AXIS_H - 6, 1, 6);
      ctx.fillText(fmtTime(t), px + 3, AXIS_H / 2 - 2);
    }
  }

  // --- hit testing ---------------------------------------------------------------------------
  function messageAt(px, py) {
    const lo = lowerBound(mTs, 0, N, tAt(px - 6) - maxLatency);
    const hi = lowerBound(mTs, lo, N, tAt(px + 6));
    let best = -1, bestD = 6;
    for (let i = lo; i < hi; i++) {
      const te = mTe[i] >= 0 ? mTe[i] : mTs[i];
      if (!msgShown(i) || !laneShown(mFrom[i]) || !laneShown(mTo[i])) continue;
      const x0 = x(mTs[i]), x1 = x(te), y0 = laneMid(mFrom[i]), y1 = laneMid(mTo[i]);
      const dx = x1 - x0, dy = y1 - y0, len = dx * dx + dy * dy;
      const u = len > 0 ? Math.max(0, Math.min(1, ((px - x0) * dx + (py - y0) * dy) / len)) : 0;
      const ex = x0 + u * dx - px, ey = y0 + u * dy - py, d = Math.sqrt(ex * ex + ey * ey);
      if (d < bestD) { bestD = d; best = i; }
    }
    return best;
  }

  function spanAt(px, py) {
    const r = Math.floor((py - AXIS_H) / LANE_H + scrollRow);
    if (r < 0 || r >= rows.length) return -1;
    const l = rows[r], t = tAt(px), slack = (winEnd - winStart) / width * 2;
    let found = -1;
    for (let i = lowerBound(sTs, laneFirst[l], laneFirst[l + 1], t - laneMaxDur[l] - slack);
      i < laneFirst[l + 1] && sTs[i] <= t + slack; i++) {
      if (sTs[i] + sDur[i] + slack >= t && sMsg[i] >= 0) found = i;
    }
    return found;
  }

  // --- details: fields, the causal chain and what it caused (found on click) -----------------
  function laneName(l) { return l >= 0 ? lanes.name[l] : "?"; }
  function el(tag, text, cls) {
    const e = document.createElement(tag);
    if (text !== undefined) e.textContent = text;
    if (cls) e.className = cls;
    return e;
  }
  function linkItem(i, current) {
    const li = el("li", "#" + M.id[i] + " " + S[mType[i]] + " " + laneName(mFrom[i]) + " → " +
      laneName(mTo[i]) + (S[M.summary[i]] ? " · " + S[M.summary[i]] : ""), current ? "link current" : "link");
    li.dataset.msg = String(i);
    li.addEventListener("click", () => select(i, true));
    return li;
  }

  function causalChain(i) {
    const links = [];
    const seen = new Set();
    for (let c = i; c >= 0 && !seen.has(c); c = mCause[c]) { seen.add(c); links.push(c); }
    return links.reverse();
  }

  function select(i, center) {
    selected = i;
    chain = new Set(i >= 0 ? causalChain(i) : []);
    const box = document.getElementById("details");
    box.replaceChildren();
    if (i < 0) { box.appendChild(el("p", "click a message arrow (or a span, or a search result)", "hint")); draw(); return; }
    box.appendChild(el("div", S[mType[i]] + "  #" + M.id[i], "type"));
    const table = el("table");
    const row = (k, v, cls) => { const tr = el("tr"); tr.appendChild(el("td", k)); tr.appendChild(el("td", v, cls)); table.appendChild(tr); };
    row("from", laneName(mFrom[i]));
    row("to", laneName(mTo[i]) + (mDead[i] ? " (dead letter: no such actor)" : ""), mDead[i] ? "dead" : "");
    row("sent", fmtTime(mTs[i]));
    row("handled", mTe[i] >= 0 ? fmtTime(mTe[i]) + " (queued " + fmtTime(mTe[i] - mTs[i]) + ")" : "never");
    if (S[M.summary[i]]) row("summary", S[M.summary[i]]);
    const podsOf = D.podSets[mPods[i]].map((p) => D.pods.name[p] || D.pods.uid[p]);
    if (podsOf.length) row("pods", podsOf.join(", "));
    box.appendChild(table);
    box.appendChild(el("h3", "Fields"));
    box.appendChild(el("pre", JSON.stringify(D.bodies[M.body[i]], null, 2), "fields"));
    const handled = [];
    for (let s = 0; s < SN; s++) if (sMsg[s] === i) handled.push(s);
    if (handled.length) {
      box.appendChild(el("h3", "Handler and calls"));
      const ol = el("ol");
      for (const s of handled) {
        const detail = S[SP.detail[s]];
        ol.appendChild(el("li", D.spanKinds[sKind[s]] + " " + S[sName[s]] + " on " + laneName(sLane[s]) +
          " " + fmtTime(sDur[s]) + (detail ? " · " + detail : "")));
      }
      box.appendChild(ol);
    }
    box.appendChild(el("h3", "Causal chain (from the input that began it)"));
    const ol = el("ol", undefined, "chain");
    for (const c of causalChain(i)) ol.appendChild(linkItem(c, c === i));
    box.appendChild(ol);
    const caused = [];
    for (let c = 0; c < N && caused.length < 200; c++) if (mCause[c] === i) caused.push(c);
    box.appendChild(el("h3", "Caused (" + caused.length + (caused.length === 200 ? "+" : "") + ")"));
    const ul = el("ol", undefined, "caused");
    for (const c of caused) ul.appendChild(linkItem(c, false));
    box.appendChild(ul);
    if (center) centerOn(i);
    draw();
  }

  function centerOn(i) {
    const te = mTe[i] >= 0 ? mTe[i] : mTs[i];
    // Zoomed in far enough to tell the message from its neighbours, out far enough to see
    // it whole.
    const span = Math.min(Math.max(winEnd - winStart, 1), Math.max((te - mTs[i]) * 8, 50000));
    const mid = (mTs[i] + te) / 2;
    const half = Math.max(span, (te - mTs[i]) * 1.5) / 2;
    winStart = mid - half; winEnd = mid + half;
    const visibleRows = (height - AXIS_H) / LANE_H;
    for (const l of [mFrom[i], mTo[i]]) {
      if (!laneShown(l)) continue;
      const r = rowOf[l];
      if (r < scrollRow || r >= scrollRow + visibleRows - 1) scrollRow = Math.max(0, r - visibleRows / 2);
    }
    renderLabels();
    updateStatus();
  }

  // --- search --------------------------------------------------------------------------------
  let bodyText = null;
  function runSearch() {
    const q = searchBox.value.trim().toLowerCase();
    const list = document.getElementById("results");
    const count = document.getElementById("results-count");
    list.replaceChildren();
    if (!q) { matches = null; matchList = []; count.textContent = "type to search messages"; draw(); return; }
    if (bodyText === null) bodyText = D.bodies.map((b) => JSON.stringify(b).toLowerCase());
    const typeHit = S.map((s) => s.toLowerCase().indexOf(q) >= 0);
    matches = new Set(); matchList = [];
    for (let i = 0; i < N; i++) {
      if (!msgShown(i)) continue;
      if (typeHit[mType[i]] || typeHit[M.summary[i]] || bodyText[M.body[i]].indexOf(q) >= 0) {
        matches.add(i); matchList.push(i);
      }
    }
    count.textContent = matchList.length + " message" + (matchList.length === 1 ? "" : "s") + " match" +
      (matchList.length > 200 ? " (the first 200 listed)" : "");
    const frag = document.createDocumentFragment();
    for (const i of matchList.slice(0, 200)) {
      const li = el("li", fmtTime(mTs[i]) + " " + S[mType[i]] + " " + laneName(mFrom[i]) + " → " +
        laneName(mTo[i]) + (S[M.summary[i]] ? " · " + S[M.summary[i]] : ""));
      li.dataset.msg = String(i);
      li.addEventListener("click", () => select(i, true));
      frag.appendChild(li);
    }
    list.appendChild(frag);
    draw();
  }
  let searchTimer = 0;
  searchBox.addEventListener("input", () => { clearTimeout(searchTimer); searchTimer = setTimeout(runSearch, 150); });
  searchBox.addEventListener("keydown", (e) => { if (e.key === "Enter") { clearTimeout(searchTimer); runSearch(); if (matchList.length) select(matchList[0], true); } });

  // --- the pod filter ------------------------------------------------------------------------
  const podOrder = D.pods.uid.map((_, p) => p).sort((a, b) => (D.pods.name[a] || D.pods.uid[a]).localeCompare(D.pods.name[b] || D.pods.uid[b]));
  for (const p of podOrder) {
    const opt = el("option", (D.pods.name[p] ? D.pods.name[p] + " " : "") + "(" + D.pods.uid[p].slice(0, 8) + ")");
    opt.value = String(p);
    podSelect.appendChild(opt);
  }
  podSelect.addEventListener("change", () => {
    pod = Number(podSelect.value);
    if (selected >= 0 && !msgShown(selected)) select(-1, false);
    applyFilter();
  });

  // --- zoom and pan --------------------------------------------------------------------------
  function zoom(factor, px) {
    const t = tAt(px);
    const span = Math.min(Math.max((winEnd - winStart) * factor, 1), duration * 4);
    winStart = t - (px / width) * span; winEnd = winStart + span;
    updateStatus(); draw();
  }
  function scrollRows(delta) {
    scrollRow = Math.min(Math.max(0, scrollRow + delta), Math.max(0, rows.length - 2));
    renderLabels(); draw();
  }
  canvas.addEventListener("wheel", (e) => {
    e.preventDefault();
    if (e.shiftKey) scrollRows(e.deltaY / LANE_H);
    else zoom(Math.pow(1.0015, e.deltaY), e.offsetX);
  }, { passive: false });
  labelsBox.addEventListener("wheel", (e) => { e.preventDefault(); scrollRows(e.deltaY / LANE_H); }, { passive: false });
  let drag = null;
  canvas.addEventListener("mousedown", (e) => { drag = { x: e.clientX, y: e.clientY, s: winStart, e: winEnd, r: scrollRow, moved: false }; });
  window.addEventListener("mousemove", (e) => {
    if (!drag) return;
    const dx = e.clientX - drag.x, dy = e.clientY - drag.y;
    if (!drag.moved && Math.abs(dx) + Math.abs(dy) < 4) return;
    drag.moved = true; canvas.classList.add("dragging");
    const per = (drag.e - drag.s) / width;
    winStart = drag.s - dx * per; winEnd = drag.e - dx * per;
    scrollRow = Math.min(Math.max(0, drag.r - dy / LANE_H), Math.max(0, rows.length - 2));
    renderLabels(); updateStatus(); draw();
  });
  window.addEventListener("mouseup", (e) => {
    if (!drag) return;
    const moved = drag.moved;
    drag = null; canvas.classList.remove("dragging");
    if (moved || e.target !== canvas) return;
    const rect = canvas.getBoundingClientRect();
    const px = e.clientX - rect.left, py = e.clientY - rect.top;
    let i = messageAt(px, py);
    if (i < 0) { const s = spanAt(px, py); if (s >= 0) i = sMsg[s]; }
    if (i >= 0 && !msgShown(i)) i = -1;
    select(i, false);
  });
  // Hovering over an arrow names the message.
  const tip = document.getElementById("tip");
  let hoverPending = false, hoverAt = null;
  canvas.addEventListener("mousemove", (e) => {
    hoverAt = e;
    if (hoverPending || drag) return;
    hoverPending = true;
    requestAnimationFrame(() => {
      hoverPending = false;
      const ev = hoverAt, rect = canvas.getBoundingClientRect();
      const i = messageAt(ev.clientX - rect.left, ev.clientY - rect.top);
      if (i < 0) { tip.hidden = true; return; }
      tip.textContent = S[mType[i]] + " #" + M.id[i] + " · " + laneName(mFrom[i]) + " → " + laneName(mTo[i]) +
        (S[M.summary[i]] ? " · " + S[M.summary[i]] : "");
      tip.style.left = (ev.clientX - view.getBoundingClientRect().left + 12) + "px";
      tip.style.top = (ev.clientY - view.getBoundingClientRect().top + 12) + "px";
      tip.hidden = false;
    });
  });
  canvas.addEventListener("mouseleave", () => { tip.hidden = true; });

  function fit() { winStart = -duration * 0.01; winEnd = duration * 1.01; scrollRow = 0; renderLabels(); updateStatus(); draw(); }
  document.getElementById("fit").addEventListener("click", fit);
  document.getElementById("zoom-in").addEventListener("click", () => zoom(0.5, width / 2));
  document.getElementById("zoom-out").addEventListener("click", () => zoom(2, width / 2));
  window.addEventListener("resize", resize);

  // --- for scripts (and tests): where a message is drawn, and what is shown -----------------
  window.timeline = {
    // Bring the message with delivery ``id`` into view; its arrow's midpoint, in page coordinates.
    locate(id) {
      const i = M.id.indexOf(id);
      if (i < 0 || !msgShown(i) || !laneShown(mFrom[i]) || !laneShown(mTo[i])) return null;
      centerOn(i); drawNow();
      const rect = canvas.getBoundingClientRect();
      const te = mTe[i] >= 0 ? mTe[i] : mTs[i];
      return { x: rect.left + (x(mTs[i]) + x(te)) / 2, y: rect.top + (laneMid(mFrom[i]) + laneMid(mTo[i])) / 2 };
    },
    shownLanes() { return rows.map((l) => lanes.name[l]); },
    shownMessages() { return shownMessages; },
    drawTimes() { return Object.assign({}, drawTimes); },
    messages: N,
  };

  document.getElementById("title").textContent = "Trace timeline: " + D.title + " (" + N + " messages, " + D.records + " records)";
  for (const w of D.warnings) console.warn(w);
  applyFilter();
  fit();
  resize();
  requestAnimationFrame(() => {
    const parsed = performance.now();
    document.body.dataset.loadMs = String(Math.round(parsed));
    document.body.dataset.scriptMs = String(Math.round(parsed - t0));
    document.body.dataset.ready = "1";
  });
})();
