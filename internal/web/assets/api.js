// The API client: every call carries the per-process token the server put
// in the page, and a failed call throws an Error with the server's message.
const token = document.querySelector('meta[name="knee-token"]').content;

export async function api(path, body) {
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
