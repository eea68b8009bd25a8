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

// tradeoffChart draws one curve of throughput (x) against p95 TTFT (y, log
// scale), a point per load labelled with it: the knee is where the curve
// turns up, the objective one horizontal line. Plain SVG: uPlot wants x in
// order, and past the knee throughput may step back as the load grows.
// points: [{x, y, label, mark}] in load order (mark: 'knee', 'safe',
// 'current' or ''); yLine: {y, label} or null.
export function tradeoffChart(el, {title, xLabel, yLabel, points, yLine}) {
  const svgNS = 'http://www.w3.org/2000/svg';
  const mk = (tag, attrs, text) => {
    const e = document.createElementNS(svgNS, tag);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
    if (text !== undefined) e.textContent = text;
    return e;
  };
  el.replaceChildren();
  el.classList.add('chart');
  const pts = points.filter(p => p.x > 0 && p.y > 0);
  if (!pts.length) return;
  // Drawn at the box's own width, so its 12 px type stays 12 px on a phone.
  const W = Math.max(300, Math.min((el.clientWidth || 640) - 8, 900)), H = 300, L = 64, R = 16, T = 28, B = 44;
  const ys = pts.map(p => p.y).concat(yLine && yLine.y > 0 ? [yLine.y] : []);
  const y0 = Math.floor(Math.log10(Math.min(...ys))), y1 = Math.ceil(Math.log10(Math.max(...ys)));
  // Round ticks: a step of 1, 2 or 5 times a power of ten, four or so.
  const xMax = Math.max(...pts.map(p => p.x)), raw = xMax / 4, mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map(k => k * mag).find(v => v >= raw);
  const x1 = step * Math.ceil(xMax * 1.04 / step);
  const px = x => L + (W - L - R) * x / x1;
  const py = y => T + (H - T - B) * (1 - (Math.log10(y) - y0) / Math.max(1, y1 - y0));
  const svg = mk('svg', {viewBox: `0 0 ${W} ${H}`, width: W, height: H, role: 'img', 'aria-label': title, class: 'tradeoff'});
  svg.append(mk('text', {x: W / 2, y: 16, 'text-anchor': 'middle', class: 't-title'}, title));
  for (let d = y0; d <= y1; d++) {
    const y = py(10 ** d);
    svg.append(mk('line', {x1: L, x2: W - R, y1: y, y2: y, class: 't-grid'}), mk('text', {x: L - 6, y: y + 4, 'text-anchor': 'end', class: 't-tick'}, fmtTick(10 ** d)));
  }
  for (let v = 0; v <= x1 + step / 2; v += step) {
    svg.append(mk('text', {x: px(v), y: H - B + 16, 'text-anchor': 'middle', class: 't-tick'}, v.toLocaleString('en-US', {maximumFractionDigits: 2})));
  }
  svg.append(mk('text', {x: (L + W - R) / 2, y: H - 8, 'text-anchor': 'middle', class: 't-axis'}, xLabel),
    mk('text', {x: 14, y: (T + H - B) / 2, 'text-anchor': 'middle', transform: `rotate(-90 14 ${(T + H - B) / 2})`, class: 't-axis'}, yLabel));
  if (yLine && yLine.y > 0) {
    const y = py(yLine.y);
    svg.append(mk('line', {x1: L, x2: W - R, y1: y, y2: y, class: 't-objective', 'data-y': String(yLine.y)}),
      mk('text', {x: L + 4, y: y - 4, class: 't-objective-label'}, yLine.label));
  }
  svg.append(mk('polyline', {points: pts.map(p => `${px(p.x)},${py(p.y)}`).join(' '), class: 't-curve'}));
  // Each label beside its point where it overlaps no other label or point:
  // the marked ones first, then the rest in load order; a plain label with
  // no free place is left out (its point still carries data-label).
  const boxes = pts.map(p => ({left: px(p.x) - 7, right: px(p.x) + 7, top: py(p.y) - 7, bottom: py(p.y) + 7}));
  const hit = (a, b) => a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
  for (const p of pts) {
    const cx = px(p.x), cy = py(p.y);
    svg.append(mk('circle', {cx, cy, r: p.mark ? 6 : 3.5, class: 't-point' + (p.mark ? ' t-' + p.mark : ''), 'data-x': String(p.x), 'data-y': String(p.y), 'data-label': p.label}));
  }
  const order = [...pts.filter(p => p.mark), ...pts.filter(p => !p.mark)];
  for (const p of order) {
    const cx = px(p.x), cy = py(p.y);
    const text = p.label + (p.mark === 'knee' ? ' knee' : p.mark === 'safe' ? ' SLO-safe' : p.mark === 'current' ? ' (current)' : '');
    const w = 7.2 * text.length * (p.mark ? 1.1 : 1), h = 13;
    const spots = [[cx - 8 - w, cy - 8 - h], [cx + 8, cy - 8 - h], [cx + 8, cy + 6], [cx - 8 - w, cy + 6], [cx - w / 2, cy - 10 - h], [cx - w / 2, cy + 10]];
    const fits = ([x, y]) => x >= L && x + w <= W - R && y >= T - 4 && y + h <= H - B;
    const free = ([x, y]) => { const b = {left: x, right: x + w, top: y, bottom: y + h}; return !boxes.some(o => hit(o, b)); };
    const spot = spots.find(s => fits(s) && free(s)) || (p.mark ? spots.find(fits) || spots[0] : null);
    if (!spot) continue;
    boxes.push({left: spot[0], right: spot[0] + w, top: spot[1], bottom: spot[1] + h});
    svg.append(mk('text', {x: spot[0], y: spot[1] + h - 2, class: 't-label' + (p.mark ? ' t-' + p.mark : ''), 'data-for': p.label}, text));
  }
  el.append(svg);
  el.dataset.scale = JSON.stringify({L, W: W - L - R, x1, T, H: H - T - B, y0, y1: Math.max(y0 + 1, y1)});
}

function fmtTick(v) {
  if (v >= 1000) return (v / 1000).toLocaleString('en-US') + ' s';
  return v.toLocaleString('en-US') + ' ms';
}
