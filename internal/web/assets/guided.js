// A guided sweep's model on the runs pages (issue 42), as the HTML report
// draws it: the curve the latest refit drew over the grid, shaded as a
// band (its range) around a dashed line between the measured steps; each
// step's prediction made before it as a range bar beside its measured
// point. Predictions are never drawn as measured points: those are the
// filled dots, the only marks taken from the measurements.
import {h, fmt} from './api.js';

const svgNS = 'http://www.w3.org/2000/svg';
function s(tag, attrs, ...children) {
  const el = document.createElementNS(svgNS, tag);
  for (const [k, v] of Object.entries(attrs || {})) if (v != null) el.setAttribute(k, String(v));
  for (const c of children) if (c != null) el.append(c);
  return el;
}

// guidedPanel is the view's section, or null when no step is guided.
export function guidedPanel(v) {
  if (!v || !v.steps || !v.steps.length) return null;
  const steps = v.steps;
  const refits = steps.filter(x => x.curve && x.curve.length);
  const last = refits[refits.length - 1];
  const metric = v.metric === 'throughput_rps' ? 'req/s' : 'output tok/s';
  const ttftSLO = steps.find(x => x.predicted)?.predicted.slos?.findIndex(f => f.name.replace(/ /g, '').startsWith('p95(ttft)')) ?? -1;
  const pred = (x, f) => f && {x: x.load.value, lo: f.low, v: f.value, hi: f.high, order: x.order};
  const tput = chart('guided-throughput', `Throughput (${metric})`, v.load_kind, {
    band: last && last.curve.map(c => ({x: c.load, lo: c.throughput.low, v: c.throughput.value, hi: c.throughput.high})),
    measured: steps.map(x => ({x: x.load.value, y: x.measured.throughput, order: x.order})),
    predicted: steps.filter(x => x.predicted).map(x => pred(x, x.predicted.throughput)),
  });
  const ttft = chart('guided-ttft', 'TTFT p95 (ms)', v.load_kind, {
    band: last && last.curve.filter(c => c.ttft_p95_ms.value > 0).map(c => ({x: c.load, lo: c.ttft_p95_ms.low, v: c.ttft_p95_ms.value, hi: c.ttft_p95_ms.high})),
    measured: steps.filter(x => x.measured_ttft_p95_ms > 0).map(x => ({x: x.load.value, y: x.measured_ttft_p95_ms, order: x.order})),
    predicted: ttftSLO < 0 ? [] : steps.filter(x => x.predicted && x.predicted.slos && x.predicted.slos[ttftSLO]).map(x => pred(x, x.predicted.slos[ttftSLO])),
  });
  // How wide each refit's band was: the mean of (high - low) / value over
  // the grid, so whether it narrowed as steps landed reads as figures.
  const width = (c, k) => { const ok = c.filter(p => p[k].value > 0); return ok.length ? ok.reduce((a, p) => a + (p[k].high - p[k].low) / p[k].value, 0) / ok.length : 0; };
  const widths = h('ul', {id: 'guided-widths', class: 'notes'}, refits.map(x => h('li', {dataset: {order: String(x.order), width: String(width(x.curve, 'throughput')), ttftWidth: String(width(x.curve, 'ttft_p95_ms'))}},
    `band after step ${x.order} (${v.load_kind} ${fmt(x.load.value)}): throughput ${fmt(100 * width(x.curve, 'throughput'))}%, TTFT p95 ${fmt(100 * width(x.curve, 'ttft_p95_ms'))}% of the curve wide on average`)));
  const fig = (f) => [h('td', {}, fmt(f.low)), h('td', {}, fmt(f.value)), h('td', {}, fmt(f.high))];
  const table = last && h('details', {}, h('summary', {}, `The band's figures: the model refitted after step ${last.order}, at each grid load`),
    h('div', {class: 'table-wrap'}, h('table', {id: 'guided-band-table', dataset: {after: String(last.order)}},
      h('thead', {}, h('tr', {}, [v.load_kind, `${metric} low`, metric, `${metric} high`, 'TTFT p95 low', 'TTFT p95 (ms)', 'TTFT p95 high'].map(t => h('th', {}, t)))),
      h('tbody', {}, last.curve.map(c => h('tr', {dataset: {load: String(c.load), tl: String(c.throughput.low), tv: String(c.throughput.value), th: String(c.throughput.high),
        fl: String(c.ttft_p95_ms.low), fv: String(c.ttft_p95_ms.value), fh: String(c.ttft_p95_ms.high)}},
      h('td', {}, fmt(c.load)), ...fig(c.throughput), ...fig(c.ttft_p95_ms)))))));
  const head = last
    ? `${steps.length} guided steps measured. The shaded band is the model refitted after step ${last.order} (a prediction with its range, never a measurement); each refit takes in one more step, and the list below says how wide each refit's band was. Filled dots: measured steps. Bars beside them: the prediction made before each step.`
    : `${steps.length} guided steps measured; no refit has drawn a curve (a bisection on measured points, or none yet). Filled dots: measured steps. Bars beside them: the prediction made before each step.`;
  return h('section', {class: 'card', id: 'guided', dataset: {steps: String(steps.length), after: last ? String(last.order) : ''}},
    h('h2', {}, 'Guided sweep: the model between the measured steps'), h('p', {class: 'notes', id: 'guided-head'}, head),
    h('div', {class: 'curves'}, tput, ttft), widths, table);
}

// chart draws one figure over the load: band [{x, lo, v, hi}] (may be
// absent), measured [{x, y, order}], predicted [{x, lo, v, hi, order}].
function chart(id, title, xLabel, {band, measured, predicted}) {
  const W = 460, H = 240, L = 56, R = 12, T = 24, B = 36;
  const xs = [...(band || []).map(p => p.x), ...measured.map(p => p.x), ...predicted.map(p => p.x)].filter(x => x > 0);
  const holder = h('div', {id, class: 'guided-chart'});
  if (!xs.length) return holder;
  // The y axis reaches the measurements and predictions; a band that runs
  // away past saturation is clipped rather than flattening the rest.
  const ys = [...measured.map(p => p.y), ...predicted.map(p => p.hi), ...(band || []).map(p => p.v)].filter(Number.isFinite);
  const yMax = 1.1 * Math.max(...ys, 1e-9);
  let x0 = Math.min(...xs), x1 = Math.max(...xs);
  if (x1 <= x0) { x0 /= 2; x1 *= 2; }
  const lx = x => L + (W - L - R) * (Math.log(x) - Math.log(x0)) / (Math.log(x1) - Math.log(x0));
  const ly = y => T + (H - T - B) * (1 - Math.min(y, yMax) / yMax);
  const svg = s('svg', {viewBox: `0 0 ${W} ${H}`, width: '100%', role: 'img', 'aria-label': title});
  const clip = id + '-clip';
  svg.append(s('defs', {}, s('clipPath', {id: clip}, s('rect', {x: L, y: T, width: W - L - R, height: H - T - B}))),
    s('text', {x: L, y: 14, 'font-size': 13, 'font-weight': 600}, title),
    s('line', {x1: L, y1: H - B, x2: W - R, y2: H - B, stroke: '#888'}), s('line', {x1: L, y1: T, x2: L, y2: H - B, stroke: '#888'}),
    s('text', {x: (L + W - R) / 2, y: H - 4, 'font-size': 11, 'text-anchor': 'middle'}, xLabel + ' (log scale)'));
  for (const f of [0, 0.5, 1]) {
    svg.append(s('text', {x: L - 4, y: ly(f * yMax / 1.1) + 4, 'font-size': 10, 'text-anchor': 'end'}, fmt(f * yMax / 1.1)));
  }
  for (const x of [x0, Math.sqrt(x0 * x1), x1]) svg.append(s('text', {x: lx(x), y: H - B + 14, 'font-size': 10, 'text-anchor': 'middle'}, fmt(x)));
  if (band && band.length) {
    const pts = band.filter(p => p.x > 0);
    const up = pts.map(p => `${lx(p.x).toFixed(2)},${ly(p.hi).toFixed(2)}`), down = pts.slice().reverse().map(p => `${lx(p.x).toFixed(2)},${ly(p.lo).toFixed(2)}`);
    svg.append(s('g', {'clip-path': `url(#${clip})`},
      s('path', {class: 'guided-band', d: `M${up.join('L')}L${down.join('L')}Z`, fill: '#6b7280', 'fill-opacity': 0.22, stroke: 'none',
        'data-x': pts.map(p => p.x).join(','), 'data-low': pts.map(p => p.lo).join(','), 'data-high': pts.map(p => p.hi).join(',')},
      s('title', {}, 'refitted model: range (a prediction)')),
      s('path', {class: 'guided-curve', d: 'M' + pts.map(p => `${lx(p.x).toFixed(2)},${ly(p.v).toFixed(2)}`).join('L'), fill: 'none', stroke: '#6b7280', 'stroke-width': 1.5, 'stroke-dasharray': '5 4',
        'data-value': pts.map(p => p.v).join(',')}, s('title', {}, 'refitted model (a prediction)'))));
  }
  // A prediction's bar sits 7 px left of its step, so it never hides the
  // measured dot and reads as the model's, not the measurement.
  for (const p of predicted) {
    const x = lx(p.x) - 7;
    svg.append(s('g', {class: 'guided-prediction', 'data-order': p.order, 'data-x': p.x, 'data-low': p.lo, 'data-value': p.v, 'data-high': p.hi},
      s('title', {}, `step ${p.order}: predicted before it ${fmt(p.v)} (${fmt(p.lo)} to ${fmt(p.hi)})`),
      s('line', {x1: x, y1: ly(p.lo), x2: x, y2: ly(p.hi), stroke: '#0d9488', 'stroke-width': 2}),
      s('line', {x1: x - 3, y1: ly(p.lo), x2: x + 3, y2: ly(p.lo), stroke: '#0d9488', 'stroke-width': 2}),
      s('line', {x1: x - 3, y1: ly(p.hi), x2: x + 3, y2: ly(p.hi), stroke: '#0d9488', 'stroke-width': 2}),
      s('rect', {x: x - 3, y: ly(p.v) - 3, width: 6, height: 6, fill: 'white', stroke: '#0d9488', 'stroke-width': 1.5})));
  }
  for (const p of measured) {
    svg.append(s('circle', {class: 'guided-measured', cx: lx(p.x), cy: ly(p.y), r: 4, fill: '#2563eb', 'data-order': p.order, 'data-x': p.x, 'data-y': p.y},
      s('title', {}, `step ${p.order}: measured ${fmt(p.y)} at ${fmt(p.x)}`)));
  }
  holder.append(svg);
  return holder;
}
