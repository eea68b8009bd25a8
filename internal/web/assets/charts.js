// Charts drawn with the vendored uPlot (window.uPlot, static/vendor/uplot).
// lineChart draws series over x and marks points of interest: vertical
// lines (knee, SLO-safe), a horizontal line (the SLO) and a dot (the
// current setting), each named in the legend below the chart.

const palette = ['#2563eb', '#dc2626', '#16a34a', '#9333ea', '#ea580c'];

function widthOf(el) {
  return Math.max(240, Math.min(el.clientWidth || 600, 900));
}

// yMax caps the y axis (a latency that runs away past the knee would
// otherwise flatten the objective's line); the points above leave the chart.
export function lineChart(el, {title, xLabel, yLabel, x, series, logX = false, marks = {}, height = 220, yMax}) {
  el.replaceChildren();
  el.classList.add('chart');
  const opts = {
    title, width: widthOf(el), height,
    // The scales reach the marked points too, so the current setting is
    // drawn even where it lies beyond the swept range.
    scales: {
      // A log axis ends at the data, not the next power of ten (a slider that
      // stops at 1,024 users drew an axis to 10,000).
      x: {time: false, distr: logX ? 3 : 1, range: logX ? (u, lo, hi) => [lo, hi] : (u, lo, hi) => span(lo, hi, marks, 'x')},
      y: {range: (u, lo, hi) => { const r = span(Math.min(0, lo), hi, marks, 'y'); if (yMax && r[1] > yMax) r[1] = yMax; return r; }},
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
  el.dataset.points = String(x.length);
  return u;
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

function drawMarks(u, marks) {
  const c = u.ctx;
  c.save();
  const top = u.bbox.top, bottom = u.bbox.top + u.bbox.height;
  c.font = `${12 * devicePixelRatio}px sans-serif`;
  for (const m of marks.vlines || []) {
    if (m.x === null || m.x === undefined) continue;
    const px = u.valToPos(m.x, 'x', true);
    c.strokeStyle = m.color; c.lineWidth = 2 * devicePixelRatio; c.setLineDash(m.dash || []);
    c.beginPath(); c.moveTo(px, top); c.lineTo(px, bottom); c.stroke();
    // Labels on the side a mark names (left: knee, right: SLO-safe), so two
    // marks on one step stay readable.
    c.fillStyle = m.color; c.textAlign = m.side === 'left' ? 'right' : 'left';
    c.fillText(m.label, px + (m.side === 'left' ? -4 : 4) * devicePixelRatio, top + 14 * devicePixelRatio);
    c.textAlign = 'left';
  }
  c.setLineDash([]);
  for (const m of marks.hlines || []) {
    if (m.y === null || m.y === undefined) continue;
    const py = u.valToPos(m.y, 'y', true);
    if (py < top || py > bottom) continue;
    c.strokeStyle = m.color; c.lineWidth = 1.5 * devicePixelRatio; c.setLineDash([6, 4]);
    c.beginPath(); c.moveTo(u.bbox.left, py); c.lineTo(u.bbox.left + u.bbox.width, py); c.stroke();
    c.fillStyle = m.color; c.textAlign = 'right';
    c.fillText(m.label, u.bbox.left + u.bbox.width - 4 * devicePixelRatio, py - 4 * devicePixelRatio);
    c.textAlign = 'left';
  }
  c.setLineDash([]);
  for (const m of marks.points || []) {
    if (m.x === null || m.y === null || m.y === undefined) continue;
    const px = u.valToPos(m.x, 'x', true), py = u.valToPos(m.y, 'y', true);
    c.fillStyle = m.color; c.strokeStyle = '#fff'; c.lineWidth = 2 * devicePixelRatio;
    c.beginPath(); c.arc(px, py, 7 * devicePixelRatio, 0, 2 * Math.PI); c.fill(); c.stroke();
  }
  c.restore();
}
