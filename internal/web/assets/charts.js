// Charts drawn with the vendored uPlot (window.uPlot, static/vendor/uplot).
// lineChart draws series over x and marks points of interest: vertical
// lines (knee, SLO-safe), a horizontal line (the SLO) and a dot (the
// current setting); the marks' names are HTML labels placed over the plot.

const palette = ['#2563eb', '#dc2626', '#16a34a', '#9333ea', '#ea580c'];

function widthOf(el) {
  return Math.max(240, Math.min(el.clientWidth || 600, 900));
}

// yMax caps the y axis (a latency that runs away past the knee would
// otherwise flatten the objective's line); the points above leave the chart.
// logY draws y on a log scale (a TTFT that runs from tens of ms to tens of
// seconds, with the objective's line in between, stays readable).
export function lineChart(el, {title, xLabel, yLabel, x, series, logX = false, logY = false, marks = {}, height = 220, yMax}) {
  // A chart drawn again replaces the last one: its resize observer goes too.
  if (el.chartResize) el.chartResize.disconnect();
  el.replaceChildren();
  el.classList.add('chart');
  const opts = {
    title, width: widthOf(el), height,
    // The scales reach the marked points too, so the current setting is
    // drawn even where it lies beyond the swept range.
    scales: {
      // A log axis ends at the data or the marked setting, whichever is
      // further, not the next power of ten (a slider that stops at 1,024
      // users drew an axis to 10,000).
      x: {time: false, distr: logX ? 3 : 1, range: logX ? (u, lo, hi) => logSpan(lo, hi, marks) : (u, lo, hi) => span(lo, hi, marks, 'x')},
      y: logY ? {distr: 3, log: 10, range: (u, lo, hi) => logYSpan(lo, hi, marks)}
        : {range: (u, lo, hi) => { const r = span(Math.min(0, lo), hi, marks, 'y'); if (yMax && r[1] > yMax) r[1] = yMax; return r; }},
    },
    axes: [{label: xLabel}, {label: yLabel, size: 60}],
    series: [{label: xLabel}, ...series.map((s, i) => ({label: s.label, stroke: s.color || palette[i], width: 2,
      points: {show: true, size: 5}}))],
    legend: {show: series.length > 1, live: false},
    cursor: {drag: {x: false, y: false}},
    hooks: {draw: [u => drawMarks(u, marks)]},
  };
  const data = [x, ...series.map(s => s.values)];
  const u = new window.uPlot(opts, data, el);
  const ro = new ResizeObserver(() => u.setSize({width: widthOf(el), height}));
  ro.observe(el);
  el.chartResize = ro;
  el.dataset.points = String(x.length);
  // The curves in page coordinates, for the browser tests to check that no
  // label sits on one.
  el.chartCurves = () => {
    const r = u.over.getBoundingClientRect();
    return curveOf(u).map(pts => pts.map(p => p && [p[0] + r.left, p[1] + r.top]));
  };
  return u;
}

function logSpan(lo, hi, marks) {
  for (const m of [...(marks.points || []), ...(marks.vlines || [])]) {
    if (m.x > 0 && Number.isFinite(m.x)) { lo = Math.min(lo, m.x); hi = Math.max(hi, m.x); }
  }
  return [lo, hi];
}

// logYSpan reaches the positive data, the marked points and the
// horizontal lines, out to the decades around them.
function logYSpan(lo, hi, marks) {
  for (const m of [...(marks.points || []), ...(marks.hlines || [])]) {
    if (m.y > 0 && Number.isFinite(m.y)) { lo = lo > 0 ? Math.min(lo, m.y) : m.y; hi = hi > 0 ? Math.max(hi, m.y) : m.y; }
  }
  if (!(lo > 0) || !(hi > 0)) return [1, 10];
  // Whole decades, so the ticks read 10, 100, 1,000 rather than 18.5, 108.
  return [10 ** Math.floor(Math.log10(lo)), 10 ** Math.ceil(Math.log10(hi))];
}

function span(lo, hi, marks, axis) {
  for (const m of marks.points || []) {
    const v = m[axis];
    if (v === null || v === undefined || !Number.isFinite(v)) continue;
    lo = Math.min(lo, v); hi = Math.max(hi, v);
  }
  if (lo === hi) hi = lo + 1;
  return [lo, hi + (hi - lo) * 0.05];
}

// drawMarks draws the marks' lines and dots on the canvas; their labels are
// HTML elements placed over it (placeLabels), so a label can be measured
// and moved clear of the other labels and of the curve.
function drawMarks(u, marks) {
  const c = u.ctx;
  c.save();
  const top = u.bbox.top, bottom = u.bbox.top + u.bbox.height;
  for (const m of marks.vlines || []) {
    if (m.x === null || m.x === undefined) continue;
    const px = u.valToPos(m.x, 'x', true);
    c.strokeStyle = m.color; c.lineWidth = 2 * devicePixelRatio; c.setLineDash(m.dash || []);
    c.beginPath(); c.moveTo(px, top); c.lineTo(px, bottom); c.stroke();
  }
  c.setLineDash([]);
  for (const m of marks.hlines || []) {
    if (m.y === null || m.y === undefined) continue;
    const py = u.valToPos(m.y, 'y', true);
    if (py < top || py > bottom) continue;
    c.strokeStyle = m.color; c.lineWidth = 1.5 * devicePixelRatio; c.setLineDash([6, 4]);
    c.beginPath(); c.moveTo(u.bbox.left, py); c.lineTo(u.bbox.left + u.bbox.width, py); c.stroke();
  }
  c.setLineDash([]);
  for (const m of marks.points || []) {
    if (m.x === null || m.y === null || m.y === undefined) continue;
    const px = u.valToPos(m.x, 'x', true), py = u.valToPos(m.y, 'y', true);
    c.fillStyle = m.color; c.strokeStyle = '#fff'; c.lineWidth = 2 * devicePixelRatio;
    c.beginPath(); c.arc(px, py, 7 * devicePixelRatio, 0, 2 * Math.PI); c.fill(); c.stroke();
  }
  c.restore();
  placeLabels(u, marks);
}

// curveOf is each series' points in CSS pixels of the plotting area (null
// where a value is missing or outside the axes).
function curveOf(u) {
  const out = [];
  for (let s = 1; s < u.data.length; s++) {
    out.push(u.data[0].map((x, i) => {
      const y = u.data[s][i];
      if (y === null || y === undefined || !Number.isFinite(y)) return null;
      return [u.valToPos(x, 'x'), u.valToPos(y, 'y')];
    }));
  }
  return out;
}

const overlaps = (a, b, pad = 2) => a.left < b.right + pad && b.left < a.right + pad && a.top < b.bottom + pad && b.top < a.bottom + pad;

// crossesCurve: does any segment of the curves pass through the box? Each
// segment is sampled finely enough (every 2 px) not to step over a label.
function crossesCurve(box, curves) {
  for (const pts of curves) {
    for (let i = 0; i < pts.length; i++) {
      const a = pts[i], b = pts[i + 1] || a;
      if (!a) continue;
      const q = pts[i + 1] ? b : a;
      const n = Math.max(1, Math.ceil(Math.hypot(q[0] - a[0], q[1] - a[1]) / 2));
      for (let k = 0; k <= n; k++) {
        const x = a[0] + (q[0] - a[0]) * k / n, y = a[1] + (q[1] - a[1]) * k / n;
        if (x >= box.left - 3 && x <= box.right + 3 && y >= box.top - 3 && y <= box.bottom + 3) return true;
      }
    }
  }
  return false;
}

// placeLabels puts each mark's label (knee, SLO-safe, the objective's line)
// as an element over the plot, at the first of its candidate places that
// stays inside the plot and clear of the labels already placed and of the
// curve; failing that, the first place clear of the other labels.
function placeLabels(u, marks) {
  // uPlot draws once before its root is in the page: nothing to measure yet.
  const host = u.root.parentElement;
  if (!host || !u.root.isConnected) return;
  let layer = host.querySelector(':scope > .chart-labels');
  if (!layer) { layer = document.createElement('div'); layer.className = 'chart-labels'; host.append(layer); }
  layer.replaceChildren();
  const hr = host.getBoundingClientRect(), or = u.over.getBoundingClientRect();
  const ox = or.left - hr.left, oy = or.top - hr.top, W = or.width, H = or.height;
  const curves = curveOf(u);
  // The current-setting dots count as placed: no label covers one.
  const placed = (marks.points || []).filter(m => m.x !== null && m.x !== undefined && m.y !== null && m.y !== undefined)
    .map(m => { const x = u.valToPos(m.x, 'x'), y = u.valToPos(m.y, 'y'); return {left: x - 8, right: x + 8, top: y - 8, bottom: y + 8}; });
  const put = (m, kind, candidates) => {
    const el = document.createElement('span');
    el.className = 'chart-label'; el.textContent = m.label; el.style.color = m.color;
    el.dataset.mark = kind;
    layer.append(el);
    const w = el.offsetWidth, h = el.offsetHeight;
    const boxes = candidates(w, h).map(([left, top]) => ({left, top, right: left + w, bottom: top + h}))
      .filter(b => b.left >= 0 && b.right <= W && b.top >= 0 && b.bottom <= H);
    const free = b => !placed.some(p => overlaps(p, b));
    const box = boxes.find(b => free(b) && !crossesCurve(b, curves)) || boxes.find(free) || boxes[0];
    if (!box) { el.remove(); return; }
    placed.push(box);
    el.style.left = (ox + box.left) + 'px'; el.style.top = (oy + box.top) + 'px';
  };
  const vlines = (marks.vlines || []).filter(m => m.x !== null && m.x !== undefined && m.label);
  const xs = vlines.map(m => m.x);
  for (const m of vlines) {
    const px = u.valToPos(m.x, 'x');
    if (px < 0 || px > W) continue;
    // Beside the line, outside the pair when there are two lines apart (the
    // left line's label on its left, the right one's on its right), else on
    // the mark's own side; then the other side; each from the top down.
    let left = m.side === 'left';
    if (new Set(xs).size > 1) left = m.x === Math.min(...xs);
    const sides = left ? [-1, 1] : [1, -1];
    put(m, 'vline', (w, h) => {
      const c = [];
      for (const s of sides) for (let y = 4; y + h <= H; y += h + 2) c.push([s < 0 ? px - 4 - w : px + 4, y]);
      return c;
    });
  }
  for (const m of marks.hlines || []) {
    if (m.y === null || m.y === undefined || !m.label) continue;
    const py = u.valToPos(m.y, 'y');
    if (py < 0 || py > H) continue;
    // Just above or below the line, at the right end, the left end or in
    // between: wherever the curve is not.
    put(m, 'hline', (w, h) => {
      const c = [];
      for (const x of [W - 4 - w, 4, (W - w) / 2, W * 0.25, W * 0.65]) c.push([x, py - 3 - h], [x, py + 3]);
      return c;
    });
  }
}
