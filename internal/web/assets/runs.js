// The runs page: stored runs (the filters of knee runs), a run's report,
// two runs compared, and the live view of a run another process is
// storing right now (a knee bench started from the command line).
//   #runs                 the list
//   #runs/report/ID       the HTML report in a sandboxed frame
//   #runs/compare/A/B     knee compare A B
//   #runs/live/ID         time series and lifecycle as records arrive
import {api, h, fmt, stacked} from './api.js';
import {lineChart} from './charts.js';
import {LifecycleView} from './lifecycle.js';
import {guidedPanel} from './guided.js';

let timer = 0, source = null, live = null;

export async function mount(el, ctx, rest) {
  const [view, a, b] = rest;
  if (view === 'report' && a) return showReport(el, a);
  if (view === 'compare' && a && b) return showCompare(el, a, b);
  if (view === 'live' && a) return showLive(el, a);
  return showList(el, ctx);
}

export function unmount() {
  clearInterval(timer); timer = 0;
  if (source) source.close();
  source = null;
  if (live) live.pause();
  live = null;
}

const sinceChoices = [['', 'any time'], ['1', 'last hour'], ['24', 'last 24 hours'], ['168', 'last 7 days'], ['720', 'last 30 days']];

async function showList(el, ctx) {
  const f = ctx.runFilters || (ctx.runFilters = {kind: '', label: '', target: '', model: '', since: '', limit: '50'});
  const input = (id, label, type = 'text') => {
    const i = h('input', {id: 'f-' + id, type, value: f[id], autocomplete: 'off'});
    i.addEventListener('input', () => { f[id] = i.value; refresh(); });
    return h('div', {class: 'field'}, h('label', {for: 'f-' + id}, label), i);
  };
  const select = (id, label, opts) => {
    const s = h('select', {id: 'f-' + id}, opts.map(([v, t]) => h('option', {value: v}, t)));
    s.value = f[id];
    s.addEventListener('change', () => { f[id] = s.value; refresh(); });
    return h('div', {class: 'field'}, h('label', {for: 'f-' + id}, label), s);
  };
  const table = h('div', {class: 'table-wrap', id: 'runs-table'});
  const cmp = h('button', {type: 'button', id: 'compare-btn', disabled: true, onclick: () => {
    const ids = [...document.querySelectorAll('input.pick:checked')].map(c => c.value).sort((x, y) => x - y);
    location.hash = '#runs/compare/' + ids[0] + '/' + ids[1];
  }}, 'Compare the two selected');
  const status = h('p', {class: 'notes', id: 'runs-status', 'aria-live': 'polite'});
  el.append(h('h1', {}, 'Runs'),
    h('p', {class: 'lede'}, 'Every run knee stored: benches, sweeps, simulations, lab scenarios and imports. A bench started from the command line while this page is open appears here as it runs.'),
    h('form', {class: 'filters', 'aria-label': 'Filters', onsubmit: e => e.preventDefault()},
      select('kind', 'Kind', [['', 'any'], ['bench', 'bench'], ['sweep', 'sweep'], ['sim', 'sim'], ['lab', 'lab'], ['import', 'import']]),
      input('label', 'Label contains'), input('target', 'Target contains'), input('model', 'Model contains'),
      select('since', 'Started', sinceChoices), input('limit', 'At most', 'number')),
    h('p', {}, cmp), status, table);
  const presets = await api('/api/presets');
  if (presets.bench_url) el.append(benchForm(presets.bench_url));
  const picked = new Set();
  async function refresh() {
    const q = new URLSearchParams();
    for (const k of ['kind', 'label', 'target', 'model', 'limit']) if (f[k]) q.set(k, f[k]);
    if (f.since) q.set('since', new Date(Date.now() - Number(f.since) * 3600e3).toISOString().replace(/\.\d+Z$/, 'Z'));
    let rows;
    try { rows = await api('/api/runs?' + q); } catch (e) { status.textContent = e.message; status.className = 'error'; return; }
    // Redraw only when something changed, and keep the keyboard focus on
    // the same control across a redraw.
    const key = JSON.stringify(rows);
    if (key === lastRows) return;
    lastRows = key;
    const focused = document.activeElement && document.activeElement.id;
    status.className = 'notes';
    status.textContent = `${rows.length} runs` + (rows.some(r => r.status === 'running') ? '; refreshing while one runs' : '');
    const cols = ['', 'id', 'started', 'kind', 'status', 'label', 'target', 'model', 'requests', 'req/s', 'TTFT p95', ''];
    // Each cell names its column, for the stacked rows a phone shows.
    const named = (cells) => { cells.forEach((td, i) => td.dataset.label = cols[i] || (i ? 'open' : 'select')); return cells; };
    table.replaceChildren(h('table', {class: 'stack'},
      h('thead', {}, h('tr', {}, cols.map(x => h('th', {}, x)))),
      h('tbody', {}, rows.map(r => {
        const pick = h('input', {type: 'checkbox', class: 'pick', id: 'pick-' + r.id, value: String(r.id), 'aria-label': 'select run ' + r.id, checked: picked.has(String(r.id))});
        pick.addEventListener('change', () => {
          pick.checked ? picked.add(pick.value) : picked.delete(pick.value);
          cmp.disabled = picked.size !== 2;
        });
        return h('tr', {id: 'run-' + r.id, dataset: {status: r.status, records: String(r.records)}}, ...named([
          h('td', {}, pick), h('td', {}, r.id), h('td', {}, new Date(r.start).toLocaleString()), h('td', {}, r.kind),
          h('td', {class: 'status-' + r.status}, r.status), h('td', {}, r.label || '–'), h('td', {}, r.target || '–'), h('td', {}, r.model || '–'),
          h('td', {class: 'records'}, r.requests), h('td', {}, fmt(r.throughput_rps)), h('td', {}, fmt(r.ttft_p95_ms, 'ms')),
          h('td', {}, h('a', {href: '#runs/report/' + r.id, id: 'report-' + r.id}, 'report'), ' ',
            h('a', {href: '#runs/live/' + r.id, id: 'live-' + r.id, class: r.status === 'running' ? 'live-link' : null}, r.status === 'running' ? 'watch live' : 'replay'))]));
      }))));
    cmp.disabled = picked.size !== 2;
    if (focused) document.getElementById(focused)?.focus();
  }
  let lastRows = '';
  await refresh();
  timer = setInterval(refresh, 1000);
}

function benchForm(url) {
  const c = h('input', {id: 'b-conc', type: 'number', min: 1, max: 256, value: 4});
  const n = h('input', {id: 'b-reqs', type: 'number', min: 1, max: 10000, value: 50});
  const msg = h('span', {id: 'b-msg', 'aria-live': 'polite'});
  return h('section', {class: 'card'}, h('h2', {}, 'Bench ' + url),
    h('p', {class: 'notes'}, 'knee ui was started with --url, so it may load that one target (and only that one).'),
    h('div', {class: 'filters'}, h('div', {class: 'field'}, h('label', {for: 'b-conc'}, 'Concurrency'), c),
      h('div', {class: 'field'}, h('label', {for: 'b-reqs'}, 'Requests'), n),
      h('button', {type: 'button', onclick: async () => {
        try { await api('/api/bench', {concurrency: Number(c.value), requests: Number(n.value)}); msg.textContent = 'started'; } catch (e) { msg.textContent = e.message; }
      }}, 'Start bench'), msg));
}

function back() { return h('p', {}, h('a', {href: '#runs'}, '← all runs')); }

async function showReport(el, id) {
  const shards = h('div', {id: 'shards'}), gpu = h('div', {id: 'gpu-holder'}), guided = h('div', {id: 'guided-holder'});
  el.append(back(), h('h1', {}, 'Run ' + id), shards, guided, gpu,
    h('iframe', {class: 'report', id: 'report-frame', title: 'report of run ' + id, sandbox: 'allow-scripts', src: '/api/runs/' + encodeURIComponent(id) + '/report'}));
  api('/api/runs/' + encodeURIComponent(id) + '/guided').then(v => { const p = guidedPanel(v); if (p) guided.append(p); guided.dataset.ready = '1'; })
    .catch(e => guided.append(h('p', {class: 'error'}, 'guided sweep: ' + e.message)));
  api('/api/runs/' + encodeURIComponent(id) + '/gpu').then(g => { const p = gpuPanel(g); if (p) gpu.append(p); })
    .catch(e => gpu.append(h('p', {class: 'error'}, 'GPU panel: ' + e.message)));
  let v;
  try { v = await api('/api/runs/' + encodeURIComponent(id) + '/shards'); } catch (e) { return; }
  if (v.count > 0) shards.append(...shardView(v));
}

// gpuPanel: what the run's GPUs spent and did (issue 45): energy per
// output token, tokens per joule, power, $ per million output tokens when
// priced; per GPU its dcgm-exporter's power, SM and DRAM activity, memory,
// clock and temperature; the exporters' timelines when the run kept them.
// null for a run with neither energy nor GPU telemetry.
function gpuPanel({energy: e, gpu: g}) {
  if (!e && !g) return null;
  const box = (id, label, v, unit, title) => h('div', {class: 'metric', id: 'gpu-' + id, dataset: {value: v == null ? '' : String(v)}, title},
    h('span', {class: 'label'}, label), h('span', {class: 'value'}, unit === '$' ? (v == null ? '–' : '$' + fmt(v)) : fmt(v, unit)));
  const parts = [h('h2', {}, 'GPUs: power and energy')];
  if (e) {
    const src = e.source + (e.estimate ? ' (a point estimate: the power model has no range yet)' : '');
    parts.push(h('div', {class: 'metrics', id: 'gpu-energy', dataset: {source: e.source}},
      e.j_per_output_token != null ? box('mj-per-token', 'Energy per output token', 1000 * e.j_per_output_token, 'mJ') : null,
      e.output_tokens_per_j != null ? box('tokens-per-j', 'Output per joule', e.output_tokens_per_j, 'tok/J') : null,
      box('power', 'Power per GPU (mean)', e.avg_power_w_per_gpu, 'W'),
      box('energy', 'Energy', e.energy_j / 1000, 'kJ', `over ${fmt(e.span_s)} s on ${e.gpus} GPU(s)`),
      e.j_per_request != null ? box('j-per-request', 'Energy per request', e.j_per_request, 'J') : null,
      e.usd_per_m_output_tokens != null ? box('usd-per-m', '$ per M output tokens', e.usd_per_m_output_tokens, '$', `at $${e.gpu_price_usd_per_hour} per GPU-hour: the GPUs' rental, not their electricity`) : null),
    h('p', {class: 'notes', id: 'gpu-source'}, `Energy from the ${src}, over ${fmt(e.span_s)} s on ${e.gpus} GPU(s), warm-up included; ${e.output_tokens} output tokens, ${e.requests} requests.` +
      (e.usd_per_m_output_tokens == null ? ' Give --gpu-price (per GPU-hour) for the cost per million tokens.' : '')));
  }
  if (g && g.gpus && g.gpus.length) {
    const pct = v => v == null ? '–' : fmt(v, '%');
    const f = (x, field, scale = 1, useMax = false) => { const s = x.fields && x.fields[field]; return s ? (useMax ? s.max : s.mean) * scale : null; };
    const cols = [['host', x => x.host], ['GPU', x => x.gpu], ['model', x => x.model || '–'],
      ['power W (mean)', x => fmt(f(x, 'power_w'))], ['power W (max)', x => fmt(f(x, 'power_w', 1, true))],
      ['SM active', x => pct(f(x, 'sm_active'))], ['DRAM active', x => pct(f(x, 'dram_active'))],
      ['memory MiB (max)', x => fmt(f(x, 'fb_used_mib', 1, true))], ['SM clock MHz', x => fmt(f(x, 'sm_clock_mhz'))],
      ['temp °C (max)', x => fmt(f(x, 'temp_c', 1, true))], ['energy J', x => fmt(x.energy_j)], ['energy from', x => x.energy_source || '–']];
    parts.push(h('div', {class: 'table-wrap'}, stacked(h('table', {id: 'gpu-table'},
      h('thead', {}, h('tr', {}, cols.map(([t]) => h('th', {}, t)))),
      h('tbody', {}, g.gpus.map(x => h('tr', {dataset: {gpu: x.gpu, host: x.host, powerMean: String(f(x, 'power_w') ?? ''), energyJ: String(x.energy_j)}},
        cols.map(([, get]) => h('td', {}, get(x))))))))));
    for (const [i, ex] of (g.exporters || []).entries()) {
      const tl = ex.timeline || [];
      if (tl.length < 2) continue;
      const xs = tl.map(p => p.t_ms / 1000), p = h('div', {id: 'gpu-power-' + i}), a = h('div', {id: 'gpu-activity-' + i});
      const m = h('div', {id: 'gpu-memory-' + i}), c = h('div', {id: 'gpu-clock-' + i});
      // An exporter's URL is one long word: it wraps anywhere rather than widen a phone's page.
      parts.push(h('h3', {style: 'overflow-wrap: anywhere'}, ex.url), h('div', {class: 'curves'}, p, a, m, c));
      queueMicrotask(() => {
        lineChart(m, {title: 'Memory used (all GPUs)', xLabel: 'seconds', yLabel: 'MiB', x: xs, series: [{label: 'MiB', values: tl.map(q => q.fb_used_mib ?? null), color: '#8b5cf6'}], height: 200});
        lineChart(c, {title: 'SM clock (mean)', xLabel: 'seconds', yLabel: 'MHz', x: xs, series: [{label: 'MHz', values: tl.map(q => q.sm_clock_mhz ?? null), color: '#0d9488'}], height: 200});
        lineChart(p, {title: 'Power (all GPUs)', xLabel: 'seconds', yLabel: 'W', x: xs, series: [{label: 'power W', values: tl.map(q => q.power_w ?? null)}], height: 200});
        lineChart(a, {title: 'SM and DRAM activity', xLabel: 'seconds', yLabel: '%', x: xs, height: 200,
          series: [{label: 'SM active %', values: tl.map(q => q.sm_active == null ? null : 100 * q.sm_active)}, {label: 'DRAM active %', values: tl.map(q => q.dram_active == null ? null : 100 * q.dram_active), color: '#dc2626'}]});
      });
    }
    if (!(g.exporters || []).some(ex => (ex.timeline || []).length >= 2)) {
      parts.push(h('p', {class: 'notes', id: 'gpu-timeline-note'}, 'The run database keeps each GPU\'s figures over the run, not the exporters\' timelines; knee bench --out DIR writes every scrape to DIR/gpu_metrics.json.'));
    }
  }
  if (g && g.notes && g.notes.length) parts.push(h('ul', {class: 'warnings', id: 'gpu-notes'}, g.notes.map(n => h('li', {}, n))));
  return h('section', {class: 'card', id: 'gpu-panel'}, ...parts);
}

// shardView: a sharded run's shards beside its merged figures, so a shard
// that lags, errs or died stands out from the run it is part of.
function shardView(v) {
  const head = v.missing.length
    ? `partial: ${v.complete} of ${v.count} shards complete (not: ${v.missing.join(', ')}); figures merged over the records stored so far`
    : `sharded run: ${v.count} of ${v.count} shards complete; figures merged over all shards' records`;
  const cells = f => [h('td', {}, String(f.records)), h('td', {}, fmt(f.throughput_rps)), h('td', {}, String(f.errors)), h('td', {}, fmt(f.lag_p95_ms))];
  const rows = v.shards.map(s => h('tr', {class: s.status === 'complete' ? '' : 'warnings'},
    h('td', {}, 'shard ' + s.index), h('td', {}, s.status), h('td', {}, String(s.attempt)), ...cells(s),
    h('td', {}, `${s.clock_offset_ms >= 0 ? '+' : ''}${s.clock_offset_ms.toFixed(3)} ± ${s.clock_uncertainty_ms.toFixed(3)}`)));
  return [
    h('p', {id: 'shards-head', class: v.missing.length ? 'warnings' : ''}, head),
    h('table', {id: 'shards-table'},
      h('thead', {}, h('tr', {}, ...['', 'status', 'attempt', 'records', 'req/s', 'errors', 'lag p95 (ms)', 'clock offset (ms)'].map(t => h('th', {}, t)))),
      h('tbody', {}, h('tr', {}, h('th', {}, 'merged'), h('td', {}, ''), h('td', {}, ''), ...cells(v.merged), h('td', {}, '')), ...rows)),
    h('p', {}, `largest clock offset uncertainty ${v.largest_clock_uncertainty_ms.toFixed(3)} ms; ${v.start_spread_ms == null ? "when the shards' processes began is not known yet (fewer than two have begun)" : `shards' processes began within ${fmt(v.start_spread_ms, 'ms')}`} (their schedules' zeros within ${fmt(v.schedule_spread_ms, 'ms')})`),
  ];
}

async function showCompare(el, a, b) {
  el.append(back(), h('h1', {}, `Compare run ${a} (A) and run ${b} (B)`));
  let r;
  try { r = await api(`/api/compare?a=${encodeURIComponent(a)}&b=${encodeURIComponent(b)}`); } catch (e) { el.append(h('p', {class: 'error', role: 'alert'}, e.message)); return; }
  const runs = await Promise.all([a, b].map(id => api('/api/runs/' + id).catch(() => null)));
  el.append(h('div', {class: 'pair-grid', id: 'compare-runs'}, runs.map((x, i) => x && h('div', {class: 'card', dataset: {run: String(x.id)}},
    h('h2', {}, (i ? 'B' : 'A') + ': run ' + x.id), h('p', {}, `${x.kind}, ${x.status}, ${x.target || '–'}, ${x.model || '–'}, ${x.requests} requests, ${new Date(x.start).toLocaleString()}`)))),
  h('div', {class: 'table-wrap compare'}, h('table', {id: 'compare-table'},
    h('thead', {}, h('tr', {}, ['metric', 'A', 'B', 'change', 'verdict'].map(x => h('th', {}, x)))),
    h('tbody', {}, r.metrics.map(m => h('tr', {class: m.effect},
      h('td', {}, `${m.label} (${m.unit})`), h('td', {}, fmt(m.a)), h('td', {}, fmt(m.b)),
      h('td', {}, m.unit === 'ratio' ? (100 * m.diff).toFixed(2) + ' pp' : (m.a ? (100 * m.change).toFixed(1) + '%' : '–')),
      h('td', {}, {worse: 'worse ✗', better: 'better ✓', same: 'within noise', untested: 'not judged'}[m.effect] || m.effect)))))),
  h('p', {id: 'compare-verdict'}, 'Verdict: ' + r.verdict), h('p', {class: 'notes'}, 'Beyond noise: ' + r.method));
  const cls = classCompare(r.classes || [[], []]);
  if (cls) el.append(cls);
}

// classCompare: both runs' traffic classes side by side (a --mix's, or
// probes), in A's order then B's own; null when neither run has classes.
function classCompare([ca, cb]) {
  if (!ca.length && !cb.length) return null;
  const names = [...ca.map(c => c.name), ...cb.map(c => c.name).filter(n => !ca.some(c => c.name === n))];
  const by = (list, n) => list.find(c => c.name === n);
  const slo = c => !c ? '–' : c.slo_met === undefined ? '–' : c.slo_met ? 'met' : 'FAILED ' + (c.failed || []).join(', ');
  const cols = [['requests', c => String(c.requests)], ['req/s', c => fmt(c.throughput_rps)], ['goodput req/s', c => c.goodput_rps === undefined ? '–' : fmt(c.goodput_rps)],
    ['TTFT p95', c => fmt(c.ttft_p95_ms, 'ms')], ['E2E p95', c => fmt(c.e2e_p95_ms, 'ms')], ['SLOs', slo]];
  const cell = (c, f) => h('td', {}, c ? f(c) : '–');
  return h('section', {id: 'compare-classes'}, h('h2', {}, 'Traffic classes'),
    h('div', {class: 'table-wrap'}, h('table', {},
      h('thead', {}, h('tr', {}, h('th', {}, 'class'), ...cols.flatMap(([t]) => [h('th', {}, t + ' A'), h('th', {}, t + ' B')]))),
      h('tbody', {}, names.map(n => h('tr', {dataset: {class: n}}, h('th', {}, n),
        ...cols.flatMap(([, f]) => [cell(by(ca, n), f), cell(by(cb, n), f)])))))));
}

async function showLive(el, id) {
  const counts = h('div', {class: 'metrics', id: 'live-counts'});
  const series = h('div', {class: 'curves'}, h('div', {id: 'live-inflight'}), h('div', {id: 'live-ttft'}), h('div', {id: 'live-items', hidden: true}));
  const holder = h('div', {id: 'live-lifecycle'});
  const state = h('p', {id: 'live-state', 'aria-live': 'polite'}, 'connecting…');
  const stepNote = h('p', {id: 'live-step', class: 'notes'});
  const guided = h('div', {id: 'live-guided'});
  el.append(back(), h('h1', {}, 'Run ' + id + ' live'), state, stepNote, guided, counts, series,
    h('h2', {}, 'Lifecycle of the finished requests'), h('p', {class: 'notes'}, 'A request is stored when it finishes; the newest 300 are replayed here on the run\'s clock.'), holder);
  live = new LifecycleView(holder);
  let reqs = [], guidedDrawn = 'null';
  source = new EventSource('/api/runs/' + encodeURIComponent(id) + '/live');
  source.onmessage = ev => {
    const u = JSON.parse(ev.data), s = u.summary, r = u.run;
    state.textContent = `${r.kind} run ${r.id} against ${r.target || '–'} (${r.model || '–'}): ${r.status}`;
    // A sweep's figures are its latest step's: each step counts its time
    // from its own start, so steps together would overlay.
    stepNote.textContent = u.step === undefined ? '' : `Figures and curves: step ${u.step}, the latest (records stored counts every step).`;
    stepNote.dataset.step = u.step === undefined ? '' : String(u.step);
    state.dataset.status = r.status;
    // A guided sweep's band: redrawn only when a step or refit landed.
    const g = JSON.stringify(u.guided || null);
    if (g !== guidedDrawn) {
      guided.replaceChildren(...[guidedPanel(u.guided)].filter(Boolean));
      guidedDrawn = g;
    }
    const m = (mid, label, v, unit) => h('div', {class: 'metric', id: 'live-' + mid, dataset: {value: String(v ?? '')}}, h('span', {class: 'label'}, label), h('span', {class: 'value'}, unit === undefined ? String(v) : fmt(v, unit)));
    // Embeddings and rerank answers come whole: items/s and E2E, not the
    // TTFT and TPOT they do not have (a mix of both shows both).
    const items = s.items > 0, streamed = (s.ttft_ms?.count || 0) > 0 || !items;
    document.getElementById('live-ttft').hidden = !streamed;
    counts.replaceChildren(m('records', 'Records stored', r.records), m('completed', 'Completed', s.completed), m('errors', 'Errors', s.errors),
      m('rps', 'Throughput', s.request_throughput_rps, 'req/s'),
      ...(items ? [m('items-rate', 'Items', s.item_throughput_ps, 'items/s'), m('e2e-p95', 'E2E p95', s.e2e_ms.p95, 'ms')] : []),
      ...(streamed ? [m('ttft-p95', 'TTFT p95', s.ttft_ms.p95, 'ms'), m('tpot-p50', 'TPOT p50', s.tpot_ms.p50, 'ms')] : []));
    const ts = s.time_series || [];
    if (ts.length) {
      const xs = ts.map(x => x.t_s);
      lineChart(document.getElementById('live-inflight'), {title: 'In flight and completions per second', xLabel: 'seconds', yLabel: 'requests', x: xs,
        series: [{label: 'peak in flight', values: ts.map(x => x.in_flight)}, {label: 'completions/s', values: ts.map(x => x.completions)}], height: 200});
      if (streamed) lineChart(document.getElementById('live-ttft'), {title: 'TTFT per second', xLabel: 'seconds', yLabel: 'ms', x: xs,
        series: [{label: 'TTFT p50', values: ts.map(x => x.ttft_p50_ms || null)}, {label: 'TTFT p95', values: ts.map(x => x.ttft_p95_ms || null), color: '#dc2626'}], height: 200});
    }
    const is = u.items_series || [];
    if (is.length) {
      const holder = document.getElementById('live-items');
      holder.hidden = false;
      lineChart(holder, {title: 'E2E per second (answers of items, given whole)', xLabel: 'seconds', yLabel: 'ms', x: is.map(x => x.t_s),
        series: [{label: 'E2E p50', values: is.map(x => x.e2e_p50_ms)}, {label: 'E2E p95', values: is.map(x => x.e2e_p95_ms), color: '#dc2626'}], height: 200});
      holder.dataset.items = String(is.reduce((a, x) => a + x.items, 0));
    }
    if (u.new && u.new.length) {
      reqs = reqs.concat(u.new).slice(-300);
      live.setRequests(reqs, {keepTime: false});
    }
  };
  source.addEventListener('end', () => { state.textContent += ' (finished)'; state.dataset.finished = '1'; source.close(); });
  source.addEventListener('error', ev => { if (ev.data) state.textContent = 'error: ' + JSON.parse(ev.data); });
}
