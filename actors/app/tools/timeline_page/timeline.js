// The trace timeline page: lanes, spans and message arrows drawn on a canvas.
//
// The data (actors/app/tools/page_data.py) is column arrays; only what lies in the
// visible time window and the visible rows is drawn, so a trace of 100,000 messages pans
// and zooms at once. A message's causal chain (its cause links) and what it caused are
// looked up when it is clicked, not before.
//
// The pods' story comes first: per pod a row for the pod and one per container, with
// labelled spans (runs and how each ended, back-offs, failing probes) and marks (restarts,
// kills, the deletion). Their labels are elements over the canvas, laid out per row so that
// none overlaps another: a label that has no room is left out, and its words show on hover.
// Routine traffic (ticks, relists that found nothing) is folded into a density band under
// the axis unless "routine traffic" is ticked.
"use strict";
(function () {
  const t0 = performance.now();
  const D = JSON.parse(document.getElementById("timeline-data").textContent);
  const S = D.strings;
  const LANE_H = 20, AXIS_H = 24, BAND_H = 14, TOP = AXIS_H + BAND_H, LABEL_W = 230;
  const KIND_COLORS = { handler: "#5b8def", call: "#2bb3a3", send: "#9aa5b8", backoff: "#f0a33a" };
  const MARK_COLORS = { fault: "#d93025", supervision: "#a142f4", dead_letter: "#d93025" };
  const GROUP_COLORS = ["#8792a8", "#5b8def", "#2bb3a3", "#f0a33a", "#a142f4", "#d9a400"];
  // The story's colours, and what the legend says of each.
  const STORY_COLORS = { running: "#34a853", exited: "#9aa5b8", failed: "#d93025", backoff: "#f0a33a",
    probe: "#a142f4", restart: "#188038", kill: "#b3261e", delete: "#111111" };
  const LEGEND = [
    ["span", "running", "a container running"],
    ["span", "exited", "a run that ended with exit code 0"],
    ["span", "failed", "a run that ended otherwise, or was killed (label: its exit code and reason)"],
    ["span", "backoff", "back-off before the next restart (CrashLoopBackOff)"],
    ["span", "probe", "a probe failing (label: the probe's output)"],
    ["mark", "restart", "restart: the container started again"],
    ["mark", "kill", "kill: the kubelet stopped the container (its reason and grace)"],
    ["mark", "delete", "the pod deleted or killed (its grace)"],
    ["lane", "handler", "an actor's handler run"],
    ["lane", "call", "a runtime call"],
    ["lane", "backoffWait", "a wait an actor announced"],
    ["lane", "fault", "a fault, restart or dead letter of an actor"],
    ["lane", "arrow", "a message: from its sender to its receiver"],
    ["lane", "band", "routine traffic, folded (darker: more messages)"],
  ];

  // --- columns -------------------------------------------------------------------------
  const lanes = D.lanes, L = lanes.name.length;
  const laneGroup = Int32Array.from(lanes.group), lanePod = Int32Array.from(lanes.pod);
  const M = D.msgs, N = M.id.length;
  const mTs = Float64Array.from(M.ts), mTe = Float64Array.from(M.te);
  const mFrom = Int32Array.from(M.from), mTo = Int32Array.from(M.to);
  const mCause = Int32Array.from(M.cause), mPods = Int32Array.from(M.pods);
  const mType = Int32Array.from(M.type), mDead = Uint8Array.from(M.dead);
  const mRoutine = Uint8Array.from(M.routine);
  const laneStory = Uint8Array.from(lanes.story);
  const ST = D.story, STS = ST.spans, STM = ST.marks, TN = STS.lane.length;
  const tLane = Int32Array.from(STS.lane), tTs = Float64Array.from(STS.ts), tDur = Float64Array.from(STS.dur);
  const tFirst = new Int32Array(L + 1), tMaxDur = new Float64Array(L);
  for (let i = 0, lane = 0; lane <= L; lane++) {
    while (i < TN && tLane[i] < lane) i++;
    tFirst[lane] = i;
  }
  for (let i = 0; i < TN; i++) if (tDur[i] > tMaxDur[tLane[i]]) tMaxDur[tLane[i]] = tDur[i];
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
  let showRoutine = false;              // routine traffic drawn (else: the density band)
  let factBoxes = [];                   // the story items laid out: {x0, x1, y, kind, i, mark}

  function podSetHas(set, p) { return D.podSets[set].length === 0 || D.podSets[set].indexOf(p) >= 0; }
  function laneShown(l) { return l >= 0 && rowOf[l] >= 0; }
  function msgShown(i) {
    if (mRoutine[i] && !showRoutine) return false;
    if (pod >= 0 && !podSetHas(mPods[i], pod)) return false;
    return laneShown(mFrom[i]) || laneShown(mTo[i]);
  }

  function applyFilter() {
    rows = [];
    rowOf.fill(-1);
    // The pods' story rows first, then the actors' lanes.
    for (const story of [1, 0]) {
      for (let l = 0; l < L; l++) {
        if (laneStory[l] !== story) continue;
        if (pod >= 0 && lanePod[l] >= 0 && lanePod[l] !== pod) continue;
        rowOf[l] = rows.length;
        rows.push(l);
      }
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
  function rowY(r) { return TOP + (r - scrollRow) * LANE_H; }
  function laneMid(l) { return rowY(rowOf[l]) + LANE_H / 2; }
  function fmtTime(us) {
    const a = Math.abs(us);
    if (a >= 1e6) return (us / 1e6).toFixed(a >= 1e7 ? 1 : 3) + "s";
    if (a >= 1e3) return (us / 1e3).toFixed(a >= 1e4 ? 1 : 2) + "ms";
    return us.toFixed(1) + "µs";
  }
  // An axis tick: every tick in the unit of the step and with its decimals (0s, 5s, 10s;
  // 0.25s, 0.50s), so that the labels of one axis read alike.
  function fmtTick(us, step) {
    const [scale, unit] = step >= 1e6 ? [1e6, "s"] : step >= 1e3 ? [1e3, "ms"] : [1, "µs"];
    const decimals = Math.max(0, -Math.floor(Math.log10(step / scale) + 1e-9));
    return (us / scale).toFixed(decimals) + unit;
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
    const band = document.createElement("div");
    band.className = "lane band";
    band.style.top = AXIS_H + "px"; band.style.height = BAND_H + "px"; band.style.lineHeight = BAND_H + "px";
    band.textContent = "routine traffic: " + routineCount + (showRoutine ? " (drawn)" : " (folded)");
    band.title = "timer ticks, relists that found nothing, health checks that stayed healthy: " +
      "tick \"routine traffic\" to draw them";
    frag.appendChild(band);
    for (let r = first; r < last; r++) {
      const l = rows[r];
      const y = rowY(r);
      if (y < TOP || y + LANE_H > height) continue;
      const div = document.createElement("div");
      const sub = l > 0 && lanes.actor[l] === lanes.actor[l - 1];
      div.className = (sub ? "lane sub" : "lane") + (laneStory[l] ? " story" : "");
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
        if (!showRoutine && sMsg[i] >= 0 && mRoutine[sMsg[i]]) continue;
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
    drawStory(first, last);
    const arrowsBegan = performance.now();
    drawArrows();
    drawAxis();
    drawBand();
    layoutFacts(first, last);
    drawTimes.spans = arrowsBegan - began;
    drawTimes.arrows = performance.now() - arrowsBegan;
  }

  // --- the pods' story: spans and marks, their labels laid out per row --------------------------
  function storyRowVisible(r) { const y = rowY(r); return y >= TOP && y + LANE_H <= height; }

  function drawStory(first, last) {
    for (let r = first; r < last; r++) {
      const l = rows[r];
      if (!laneStory[l]) continue;
      const y = rowY(r);
      for (let i = lowerBound(tTs, tFirst[l], tFirst[l + 1], winStart - tMaxDur[l]); i < tFirst[l + 1] && tTs[i] <= winEnd; i++) {
        const e = tTs[i] + tDur[i];
        if (e < winStart) continue;
        const kind = ST.spanKinds[STS.kind[i]];
        const x0 = Math.max(x(tTs[i]), -1), x1 = Math.min(Math.max(x(e), x0 + 2), width + 1);
        ctx.fillStyle = STORY_COLORS[kind];
        ctx.globalAlpha = kind === "backoff" ? 0.45 : (kind === "probe" ? 0.35 : 0.3);
        ctx.fillRect(x0, y + 2, x1 - x0, LANE_H - 4);
        ctx.globalAlpha = 1;
        ctx.fillRect(x0, y + LANE_H - 4, x1 - x0, 2); // a solid edge: where it starts and ends
        if (kind === "failed" || kind === "exited") ctx.fillRect(x1 - 2, y + 2, 2, LANE_H - 4);
      }
    }
    for (let i = 0; i < STM.lane.length; i++) {
      const l = STM.lane[i];
      if (!laneShown(l) || STM.ts[i] < winStart || STM.ts[i] > winEnd) continue;
      const r = rowOf[l];
      if (r < first || r >= last) continue;
      const px = x(STM.ts[i]), y = rowY(r), kind = ST.markKinds[STM.kind[i]];
      drawMark(ctx, kind, px, y);
    }
  }

  function drawMark(c, kind, px, y) {
    c.fillStyle = STORY_COLORS[kind]; c.strokeStyle = STORY_COLORS[kind]; c.lineWidth = 2;
    c.beginPath();
    if (kind === "restart") { // a triangle pointing right: started again
      c.moveTo(px - 3, y + 3); c.lineTo(px + 5, y + LANE_H / 2); c.lineTo(px - 3, y + LANE_H - 3); c.fill();
    } else if (kind === "kill") { // a cross
      c.moveTo(px - 4, y + 5); c.lineTo(px + 4, y + LANE_H - 5); c.moveTo(px + 4, y + 5); c.lineTo(px - 4, y + LANE_H - 5); c.stroke();
    } else { // the deletion: a bar across the row with a square
      c.fillRect(px - 1, y, 2, LANE_H); c.fillRect(px - 4, y + LANE_H / 2 - 4, 8, 8);
    }
    c.lineWidth = 1;
  }

  const factsBox = document.getElementById("facts");
  const measured = new Map();
  function textWidth(text) {
    let w = measured.get(text);
    if (w === undefined) { ctx.font = "11px system-ui, sans-serif"; w = ctx.measureText(text).width; measured.set(text, w); }
    return w;
  }

  // Each visible story row's labels, left to right: a span's label starts within its span
  // (slid right past the label before it), a mark's just right of the mark; one that cannot
  // start where it belongs, or would be narrower than MIN_LABEL, is left out (shown on hover).
  const MIN_LABEL = 48, GAP = 4, PAD = 8;
  function layoutFacts(first, last) {
    const frag = document.createDocumentFragment();
    factBoxes = [];
    for (let r = first; r < last; r++) {
      const l = rows[r];
      if (!laneStory[l] || !storyRowVisible(r)) continue;
      const y = rowY(r), wanted = [];
      for (let i = tFirst[l]; i < tFirst[l + 1]; i++) {
        const x0 = x(tTs[i]), x1 = Math.max(x(tTs[i] + tDur[i]), x0 + 2);
        if (x1 < 0 || x0 > width) continue;
        wanted.push({ at: Math.max(x0, 0) + 2, until: Math.min(x1, width), x0, x1, i, mark: false });
      }
      for (let i = 0; i < STM.lane.length; i++) {
        if (STM.lane[i] !== l) continue;
        const px = x(STM.ts[i]);
        if (px < 0 || px > width) continue;
        wanted.push({ at: px + 7, until: px + 7 + 2 * MIN_LABEL, x0: px - 5, x1: px + 5, i, mark: true });
      }
      wanted.sort((a, b) => a.at - b.at || (a.mark === b.mark ? 0 : (a.mark ? 1 : -1)));
      let cursor = 0;
      for (const w of wanted) {
        factBoxes.push({ x0: w.x0, x1: w.x1, y, i: w.i, mark: w.mark });
        const label = S[(w.mark ? STM : STS).label[w.i]];
        let left = Math.max(w.at, cursor);
        let size = Math.ceil(textWidth(label)) + PAD;
        // A mark with no room on its right (the end of the view) takes its left if free.
        if (w.mark && left + size > width && w.x0 - 2 - size >= cursor) left = w.x0 - 2 - size;
        if (left + size > width) size = Math.floor(width - left);
        if (left > w.until - (w.mark ? 0 : Math.min(MIN_LABEL, w.until - w.at)) || size < Math.min(MIN_LABEL, textWidth(label) + PAD)) continue;
        const div = document.createElement("div");
        const kind = w.mark ? ST.markKinds[STM.kind[w.i]] : ST.spanKinds[STS.kind[w.i]];
        div.className = "fact-label " + (w.mark ? "mark " : "span ") + kind;
        div.style.left = left + "px"; div.style.top = (y + 2) + "px";
        div.style.width = size + "px"; div.style.height = (LANE_H - 4) + "px";
        div.style.lineHeight = (LANE_H - 4) + "px";
        div.textContent = label;
        div.title = S[(w.mark ? STM : STS).detail[w.i]];
        div.dataset.story = (w.mark ? "m" : "s") + w.i;
        frag.appendChild(div);
        cursor = left + size + GAP;
      }
    }
    factsBox.replaceChildren(frag);
  }

  function storyAt(px, py) {
    let best = null;
    for (const b of factBoxes) {
      if (py < b.y || py > b.y + LANE_H || px < b.x0 - 3 || px > b.x1 + 3) continue;
      if (best === null || (b.mark && !best.mark)) best = b;
    }
    return best;
  }

  function storyText(b) {
    const cols = b.mark ? STM : STS;
    return S[cols.label[b.i]] + (S[cols.detail[b.i]] && S[cols.detail[b.i]] !== S[cols.label[b.i]] ? " · " + S[cols.detail[b.i]] : "");
  }

  // The density band: how many routine messages were sent in each few pixels.
  let routineCount = 0;
  const routineTs = [];
  for (let i = 0; i < N; i++) if (mRoutine[i]) { routineCount++; routineTs.push(mTs[i]); }
  function drawBand() {
    ctx.fillStyle = "#fbfbfc"; ctx.fillRect(0, AXIS_H, width, BAND_H);
    const B = 3, cols = Math.ceil(width / B), counts = new Uint32Array(cols);
    let most = 0;
    for (let k = lowerBound(routineTs, 0, routineTs.length, winStart); k < routineTs.length && routineTs[k] <= winEnd; k++) {
      const c = Math.floor(x(routineTs[k]) / B);
      if (c >= 0 && c < cols && ++counts[c] > most) most = counts[c];
    }
    ctx.fillStyle = "#5b6478";
    for (let c = 0; c < cols; c++) {
      if (!counts[c]) continue;
      ctx.globalAlpha = 0.2 + 0.8 * counts[c] / most;
      ctx.fillRect(c * B, AXIS_H + 2, B, BAND_H - 4);
    }
    ctx.globalAlpha = 1;
    ctx.strokeStyle = "#d6dbe3"; ctx.beginPath(); ctx.moveTo(0, TOP - 0.5); ctx.lineTo(width, TOP - 0.5); ctx.stroke();
  }

  function buildLegend() {
    const list = document.getElementById("legend");
    for (const [what, kind, text] of LEGEND) {
      const li = el("li", undefined, "legend-item");
      const swatch = document.createElement("canvas");
      swatch.width = 22; swatch.height = LANE_H; swatch.className = "swatch";
      const c = swatch.getContext("2d");
      if (what === "span") {
        c.fillStyle = STORY_COLORS[kind]; c.globalAlpha = 0.4; c.fillRect(0, 3, 22, LANE_H - 6);
        c.globalAlpha = 1; c.fillRect(0, LANE_H - 5, 22, 2);
      } else if (what === "mark") {
        drawMark(c, kind, 11, 0);
      } else if (kind === "arrow") {
        c.strokeStyle = "#5b6478"; c.beginPath(); c.moveTo(1, 4); c.lineTo(20, LANE_H - 4); c.stroke();
      } else if (kind === "band") {
        for (let k = 0; k < 7; k++) { c.globalAlpha = 0.2 + 0.8 * ((k * 3) % 7) / 6; c.fillStyle = "#5b6478"; c.fillRect(k * 3, 5, 3, LANE_H - 10); }
      } else if (kind === "fault") {
        c.fillStyle = MARK_COLORS.fault; c.beginPath(); c.moveTo(11, 2); c.lineTo(16, LANE_H / 2); c.lineTo(11, LANE_H - 2); c.lineTo(6, LANE_H / 2); c.fill();
      } else {
        c.fillStyle = kind === "backoffWait" ? KIND_COLORS.backoff : KIND_COLORS[kind];
        c.globalAlpha = 0.85; c.fillRect(0, kind === "call" ? 6 : 2, 22, LANE_H - (kind === "call" ? 12 : 4));
      }
      li.appendChild(swatch);
      li.appendChild(el("span", text));
      list.appendChild(li);
    }
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
      // A message to (or from) a lane not shown is a stub of one lane's height, not a line
      // across the page: lines to nowhere are what made the lanes unreadable.
      const y0 = laneShown(f) ? laneMid(f) : laneMid(t) - LANE_H;
      const y1 = laneShown(t) ? laneMid(t) : y0 + LANE_H;
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
    ctx.fillStyle = "#4a5468"; ctx.font = "11px system-ui, sans-serif"; ctx.textBaseline = "middle";
    for (const tick of axisTicks()) {
      const px = x(tick.t);
      ctx.fillRect(px, AXIS_H - 6, 1, 6);
      ctx.fillText(tick.label, px + 3, AXIS_H / 2 - 2);
    }
  }
  // The axis's ticks for the window shown: 8 to 16 of them, a step of 1, 2 or 5 x 10^k µs.
  function axisTicks() {
    const span = winEnd - winStart;
    let step = Math.pow(10, Math.floor(Math.log10(span / 8)));
    if (span / step > 16) step *= 5; else if (span / step > 8) step *= 2;
    const ticks = [];
    for (let t = Math.ceil(winStart / step) * step; t <= winEnd; t += step) {
      ticks.push({ t, label: fmtTick(t, step) });
    }
    return ticks;
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
    const r = Math.floor((py - TOP) / LANE_H + scrollRow);
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
    const visibleRows = (height - TOP) / LANE_H;
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
    const story = storyAt(px, py);
    let i = story !== null ? (story.mark ? STM : STS).msg[story.i] : messageAt(px, py);
    if (i < 0 && story === null) { const s = spanAt(px, py); if (s >= 0) i = sMsg[s]; }
    if (i >= 0 && !msgShown(i) && story === null) i = -1;
    select(i, false);
    if (story !== null) {
      const box = document.getElementById("details");
      const p = el("p", storyText(story), "story");
      box.insertBefore(p, box.firstChild);
    }
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
      const story = storyAt(ev.clientX - rect.left, ev.clientY - rect.top);
      const i = story === null ? messageAt(ev.clientX - rect.left, ev.clientY - rect.top) : -1;
      if (i < 0 && story === null) { tip.hidden = true; return; }
      tip.textContent = story !== null ? storyText(story) : S[mType[i]] + " #" + M.id[i] + " · " + laneName(mFrom[i]) + " → " + laneName(mTo[i]) +
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
  const routineBox = document.getElementById("routine");
  routineBox.addEventListener("change", () => {
    showRoutine = routineBox.checked;
    if (selected >= 0 && !msgShown(selected)) select(-1, false);
    applyFilter();
  });
  buildLegend();

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
    axisLabels() { return axisTicks().map((tick) => tick.label); },
    // The story's labels now shown, and those left out for want of room.
    storyLabels() {
      const shown = Array.from(factsBox.children, (e) => e.textContent);
      return { shown, total: factBoxes.length };
    },
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
