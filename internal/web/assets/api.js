// The API client: every call carries the per-process token the server put
// in the page, and a failed call throws an Error with the server's message.
// In a static copy (knee ui --export) the same API answers from knee's
// handlers compiled to WebAssembly, in a Web Worker started on the first
// call.
const token = document.querySelector('meta[name="knee-token"]').content;
export const staticCopy = document.querySelector('meta[name="knee-static"]') !== null;

// The static copy's API runs in a Web Worker (wasmworker.js), so the
// simulator never holds the page's thread; each call waits for the answer
// with its id.
let worker = null, lastID = 0;
const pending = new Map();
function workerCall(method, path, body, onChunk) {
  if (!worker) {
    worker = new Worker('static/wasmworker.js');
    worker.onmessage = e => {
      const p = pending.get(e.data.id);
      if (p && e.data.chunk !== undefined) { p.onChunk(e.data.chunk); return; }
      pending.delete(e.data.id);
      if (p) p.resolve(e.data);
    };
    worker.onerror = e => {
      // A worker that failed to start answers nothing: every call waiting
      // fails with its message, and the next call starts a new one.
      for (const p of pending.values()) p.reject(new Error('the simulator failed: ' + (e.message || 'its worker did not start')));
      pending.clear();
      worker = null;
    };
  }
  return new Promise((resolve, reject) => {
    const id = ++lastID;
    pending.set(id, {resolve, reject, onChunk});
    worker.postMessage({id, method, path, body, stream: !!onChunk});
  });
}

export async function api(path, body) {
  if (staticCopy) {
    const r = await workerCall(body === undefined ? 'GET' : 'POST', path, body === undefined ? '' : JSON.stringify(body));
    let data;
    try { data = JSON.parse(r.body); } catch { data = {error: r.body}; }
    if (r.status >= 400) throw new Error(data.error || 'status ' + r.status);
    return data;
  }
  const opts = body === undefined ? {} : {
    method: 'POST',
    headers: {'Content-Type': 'application/json', 'X-Knee-Token': token},
    body: JSON.stringify(body),
  };
  const res = await fetch(path, opts);
  const text = await res.text();
  let data;
  try { data = JSON.parse(text); } catch { data = {error: text}; }
  if (!res.ok) throw new Error(data.error || res.statusText);
  return data;
}

// apiSteps asks for a sweep with its steps streamed (?stream=1): onStep
// sees each step as the simulator finishes it ({step, index, of}), and
// the promise resolves with the whole answer. The page draws each point
// when it is computed instead of all of them at the end.
export async function apiSteps(path, body, onStep) {
  const url = path + (path.includes('?') ? '&' : '?') + 'stream=1';
  let buf = '', result, failure = null;
  const take = text => {
    buf += text;
    let nl;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, nl).trim();
      buf = buf.slice(nl + 1);
      if (!line) continue;
      const m = JSON.parse(line);
      if (m.error) failure = new Error(m.error);
      else if (m.step) onStep(m);
      else if (m.result !== undefined) result = m.result;
    }
  };
  if (staticCopy) {
    const r = await workerCall('POST', url, JSON.stringify(body), take);
    if (r.status >= 400) {
      let data;
      try { data = JSON.parse(r.body); } catch { data = {error: r.body}; }
      throw new Error(data.error || 'status ' + r.status);
    }
    take(r.body + '\n');
  } else {
    const res = await fetch(url, {method: 'POST', headers: {'Content-Type': 'application/json', 'X-Knee-Token': token}, body: JSON.stringify(body)});
    if (!res.ok) {
      const text = await res.text();
      let data;
      try { data = JSON.parse(text); } catch { data = {error: text}; }
      throw new Error(data.error || res.statusText);
    }
    const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
    for (;;) {
      const {value, done} = await reader.read();
      if (done) break;
      take(value);
    }
    take('\n');
  }
  if (failure) throw failure;
  if (result === undefined) throw new Error('the sweep ended without its answer');
  return result;
}

// sweepSoFar is a streamed sweep's steps so far, shaped as the answer is
// (steps in load order, the throughput the knee is placed on chosen as
// sweep.Analyze does) with no knee or SLO-safe point yet: partial says how
// many of the planned steps are in.
export function sweepSoFar(steps, line) {
  const sorted = [...steps].sort((a, b) => a.load - b.load);
  const metric = sorted.every(s => s.output_tps > 0) ? 'output_tps' : 'throughput_rps';
  return {load_kind: line.step.load_kind, knee_metric: metric, steps: sorted, knee: {}, slo_safe: {}, partial: {index: line.index, of: line.of}};
}

// h builds an element: h('div', {class: 'x', onclick: f}, child, 'text').
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else el.setAttribute(k, v === true ? '' : v);
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : String(c));
  }
  return el;
}

// fmt shows a number with a sensible precision and its unit.
export function fmt(v, unit = '') {
  if (v === null || v === undefined || Number.isNaN(v)) return '–';
  let s;
  const a = Math.abs(v);
  if (unit === 'ms' && a >= 1000) return (v / 1000).toFixed(a >= 10000 ? 1 : 2) + ' s';
  if (unit === '%') return (100 * v).toFixed(1) + '%';
  if (a >= 100) s = v.toFixed(0);
  else if (a >= 10) s = v.toFixed(1);
  else s = v.toFixed(2);
  return unit ? s + ' ' + unit : s;
}

export const reducedMotion = () => window.matchMedia('(prefers-reduced-motion: reduce)').matches;

// debounce runs f once calls have paused for ms.
export function debounce(f, ms) {
  let t;
  return (...a) => { clearTimeout(t); t = setTimeout(() => f(...a), ms); };
}

// stacked marks a table to stack on a phone (style.css, table.stack): one
// card per row, each cell under its column's name, taken from the head.
export function stacked(table) {
  const names = [...table.querySelectorAll('thead th')].map(th => th.textContent);
  for (const tr of table.querySelectorAll('tbody tr')) [...tr.cells].forEach((td, i) => { td.dataset.label = names[i] || ''; });
  table.classList.add('stack');
  // A row of more than four cells stacks two cells a line.
  if (names.length > 4) table.classList.add('pairs');
  return table;
}
