// The API client: every call carries the per-process token the server put
// in the page, and a failed call throws an Error with the server's message.
// In a static copy (knee ui --export) the same API answers from knee's
// handlers compiled to WebAssembly, loaded on the first call.
const token = document.querySelector('meta[name="knee-token"]').content;
export const staticCopy = document.querySelector('meta[name="knee-static"]') !== null;

let wasm;
function loadWasm() {
  wasm ??= (async () => {
    const res = await fetch('static/knee.wasm.gz');
    if (!res.ok) throw new Error('loading the simulator (static/knee.wasm.gz): ' + res.status);
    let bytes = new Uint8Array(await res.arrayBuffer());
    // A server that already undid the gzip (Content-Encoding) hands the
    // module itself over.
    if (bytes[0] === 0x1f && bytes[1] === 0x8b) {
      bytes = await new Response(new Blob([bytes]).stream().pipeThrough(new DecompressionStream('gzip'))).arrayBuffer();
    }
    const go = new Go();
    const {instance} = await WebAssembly.instantiate(bytes, go.importObject);
    const ready = new Promise(resolve => window.addEventListener('knee-wasm-ready', resolve, {once: true}));
    go.run(instance);
    await ready;
  })();
  return wasm;
}

export async function api(path, body) {
  if (staticCopy) {
    await loadWasm();
    const r = await globalThis.kneeAPI(body === undefined ? 'GET' : 'POST', path, body === undefined ? '' : JSON.stringify(body));
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
