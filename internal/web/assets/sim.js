// The simulator page: controls on the left, the simulated run's figures and
// the service-pressure badge beside them, and the sweep curves (throughput
// and p95 TTFT over load) with the current point, the knee and the SLO-safe
// point marked. Every change reruns knee's engine on the server.
import {api, apiSteps, sweepSoFar, h, fmt, debounce} from './api.js';
import {lineChart, tradeoffChart} from './charts.js';
import {EngineView} from './engineview.js';

export const defaults = {
  load_kind: 'concurrency', load: 16, input_tokens: '512', output_tokens: '128',
  gpu: '', model: '', tp: 1, max_num_seqs: 256, max_num_batched_tokens: 0, slo: '',
  replicas: 1, router: 'round-robin',
};

let seq = 0;          // answers older than the newest request are dropped
let sweepKey = '';    // the sweep is rerun only when something but the load changes
let lastSweep = null;
let lastResult = null;
let root = null;
let engine = null;     // the batch gauge and the followed request

function field(label, input, help) {
  const id = input.id;
  return h('div', {class: 'field'}, h('label', {for: id}, label), input, help ? h('small', {id: id + '-help'}, help) : null);
}

function num(id, value, min, max, step = 1) {
  return h('input', {id, name: id, type: 'number', value, min, max, step, inputmode: 'decimal'});
}

export async function mount(el, ctx) {
  root = el;
  const p = ctx.simParams || (ctx.simParams = {...defaults});
  const presets = await api('/api/presets');
  if (!p.gpu) p.gpu = presets.default_gpu;
  if (!p.model) p.model = presets.default_model;
  if (!p.slo) p.slo = presets.default_slo;

  const loadMax = k => (k === 'rate' ? 200 : 1024);
  const loadRange = h('input', {id: 'load', name: 'load', type: 'range', min: 1, max: loadMax(p.load_kind), step: 1, value: p.load,
    'aria-describedby': 'load-help'});
  const loadNum = num('load-num', p.load, 1, loadMax(p.load_kind), 1);
  loadNum.setAttribute('aria-label', 'Load (exact value)');
  const kind = h('select', {id: 'load-kind', name: 'load_kind'},
    h('option', {value: 'concurrency'}, 'Users (closed loop)'),
    h('option', {value: 'rate'}, 'Rate (open loop, Poisson)'));
  kind.value = p.load_kind;
  const sel = (id, list, v) => { const s = h('select', {id, name: id}, list.map(x => h('option', {value: x}, x))); s.value = v; return s; };
  const gpu = sel('gpu', presets.gpus, p.gpu), model = sel('model', presets.models, p.model);
  const tp = sel('tp', ['1', '2', '4', '8'], String(p.tp));
  const replicas = num('replicas', p.replicas || 1, 1, 16);
  const router = sel('router', presets.routers || ['round-robin'], p.router || 'round-robin');
  const text = (id, v, hint) => h('input', {id, name: id, type: 'text', value: v, spellcheck: 'false', autocomplete: 'off', 'aria-describedby': id + '-help', placeholder: hint});
  const inTok = text('input-tokens', p.input_tokens, '512 or 256:1024');
  const outTok = text('output-tokens', p.output_tokens, '128 or 64:256');
  const seqs = num('max-num-seqs', p.max_num_seqs, 0, 4096);
  const budget = num('max-num-batched-tokens', p.max_num_batched_tokens, 0, 1048576, 16);
  const sloIn = text('slo', p.slo, 'p95(ttft)<2s, p95(tpot)<100ms');

  const controls = h('form', {id: 'sim-controls', class: 'controls', 'aria-label': 'Simulator settings', onsubmit: e => e.preventDefault()},
    h('fieldset', {class: 'load'}, h('legend', {}, 'Load'),
      field('Load model', kind),
      field('Load', h('div', {class: 'pair'}, loadRange, loadNum), 'Arrow keys step by one; Page Up/Down by a tenth of the range.'),
      // On a phone the badge and four key figures ride under the pinned
      // slider (style.css shows them there only); the full results follow
      // the settings.
      h('div', {id: 'sim-key', class: 'key-strip', 'aria-hidden': 'true'})),
    h('fieldset', {}, h('legend', {}, 'Requests'),
      field('Prompt tokens', inTok, 'A fixed length (512) or a distribution: 256:1024 uniform, normal:512,128, lognormal:512,256.'),
      field('Output tokens', outTok, 'Same forms as prompt tokens.')),
    h('fieldset', {}, h('legend', {}, 'Deployment'),
      field('Model', model), field('GPU', gpu), field('Tensor parallel GPUs', tp),
      field('Replicas', replicas, 'Engines behind a router (knee sim --replicas); the load is the fleet\'s.'),
      field('Router', router, 'How the gateway picks a replica (knee sim --router).')),
    h('fieldset', {}, h('legend', {}, 'Engine limits'),
      field('Max sequences (max_num_seqs)', seqs, '0: vLLM\'s default for the GPU.'),
      field('Batched-token budget (max_num_batched_tokens)', budget, '0: vLLM\'s default.')),
    h('fieldset', {}, h('legend', {}, 'Service-level objectives'),
      field('SLOs', sloIn, 'Comma-separated, e.g. p95(ttft)<2s, p95(tpot)<100ms. They set the badge, goodput and the SLO-safe point.')));

  const results = h('section', {id: 'sim-results', class: 'results', 'aria-live': 'polite', 'aria-label': 'Simulated results', dataset: {seq: '0'}});
  const engineEl = h('section', {id: 'sim-engine', class: 'card', 'aria-label': 'Inside the engine'});
  engine = new EngineView(engineEl);
  const curves = h('section', {id: 'sim-curves', class: 'curves', 'aria-label': 'Sweep curves'},
    h('div', {id: 'curve-throughput'}), h('div', {id: 'curve-ttft'}), h('div', {id: 'curve-tradeoff', class: 'wide'}), h('p', {id: 'curve-notes', class: 'notes'}));
  el.append(h('h1', {}, 'Simulator'),
    h('p', {class: 'lede'}, 'Change the load, the request shape or the deployment: knee\'s discrete-event engine (a vLLM-like scheduler on a roofline cost model) reruns in virtual time and the figures follow.'),
    h('div', {class: 'sim-layout'}, controls, h('div', {}, results, engineEl, curves)));

  const read = () => {
    p.load_kind = kind.value;
    p.load = Number(loadRange.value);
    p.input_tokens = inTok.value.trim();
    p.output_tokens = outTok.value.trim();
    p.gpu = gpu.value; p.model = model.value; p.tp = Number(tp.value);
    p.replicas = Math.max(1, Math.min(16, Number(replicas.value) || 1)); p.router = router.value;
    p.max_num_seqs = Number(seqs.value) || 0;
    p.max_num_batched_tokens = Number(budget.value) || 0;
    p.slo = sloIn.value;
  };
  const runSoon = debounce(() => run(p), 40);
  const changed = () => { read(); runSoon(); };
  loadRange.addEventListener('input', () => { loadNum.value = loadRange.value; changed(); });
  loadNum.addEventListener('input', () => {
    const v = Number(loadNum.value);
    if (v >= Number(loadRange.min) && v <= Number(loadRange.max)) { loadRange.value = v; changed(); }
  });
  kind.addEventListener('change', () => {
    const m = loadMax(kind.value);
    loadRange.max = m; loadNum.max = m;
    if (Number(loadRange.value) > m) loadRange.value = m;
    loadNum.value = loadRange.value;
    changed();
  });
  for (const c of [inTok, outTok, seqs, budget, sloIn, replicas]) c.addEventListener('input', changed);
  for (const c of [gpu, model, tp, router]) c.addEventListener('change', changed);
  lastSweep = null; sweepKey = '';
  await run(p);
}

export function unmount() { root = null; if (engine) engine.pause(); engine = null; }

async function run(p) {
  const my = ++seq;
  const results = document.getElementById('sim-results');
  if (!results) return;
  let res;
  try {
    // With each request's phases and the engine's batch through the run,
    // for the engine view (the sweep's steps leave them out).
    res = await api('/api/sim', {...p, lifecycle: true});
  } catch (e) {
    if (my !== seq) return;
    results.replaceChildren(h('p', {class: 'error', role: 'alert', id: 'sim-error'}, e.message));
    results.dataset.seq = String(my);
    return;
  }
  if (my !== seq || !root) return;
  lastResult = res;
  renderResults(results, res);
  if (engine) engine.setData(res);
  results.dataset.seq = String(my);
  const key = JSON.stringify({...p, load: undefined});
  if (key !== sweepKey) {
    sweepKey = key;
    runSweep(p, key);
  } else if (lastSweep) {
    renderCurves(lastSweep, res);
  }
}

const runSweep = debounce(async (p, key) => {
  try {
    // Each step is drawn as the simulator finishes it.
    const steps = [];
    const sw = await apiSteps('/api/sweep', p, line => {
      if (key !== sweepKey || !root) return;
      steps.push(line.step);
      renderCurves(sweepSoFar(steps, line), lastResult);
    });
    if (key !== sweepKey || !root) return;
    lastSweep = sw;
    renderCurves(sw, lastResult);
  } catch (e) {
    const n = document.getElementById('curve-notes');
    if (n) n.textContent = 'sweep: ' + e.message;
  }
}, 150);

function metricBox(id, label, value, unit, title, range) {
  return h('div', {class: 'metric', id: 'm-' + id, dataset: {value: value === null || value === undefined ? '' : String(value)}, title},
    h('span', {class: 'label'}, label), h('span', {class: 'value'}, fmt(value, unit)),
    range ? h('small', {class: 'range', id: 'r-' + id, dataset: {low: String(range.low), high: String(range.high)}},
      fmtRange(range.low, range.high, unit) + ' on hosts knee has not seen') : null);
}

// fmtRange reads "290–690 ms" (the unit once when both ends share it).
function fmtRange(lo, hi, unit) {
  const a = fmt(lo, unit), b = fmt(hi, unit);
  const ua = a.slice(a.lastIndexOf(' ')), ub = b.slice(b.lastIndexOf(' '));
  return (ua === ub && a.includes(' ') ? a.slice(0, a.lastIndexOf(' ')) : a) + '–' + b;
}

// The metric boxes a prediction range belongs to (report.PredictionFigure.Metric).
const rangeBox = {'ttft_ms.p50': 'ttft-p50', 'ttft_ms.p95': 'ttft-p95', 'tpot_ms.p50': 'tpot-p50', 'tpot_ms.p95': 'tpot-p95',
  'e2e_ms.p95': 'e2e-p95', output_token_throughput_tps: 'otps', request_throughput_rps: 'rps'};

const levelText = {healthy: 'Healthy', strained: 'Strained', saturated: 'Saturated'};

function renderResults(el, r) {
  const f = r.figures, pr = r.pressure;
  // Each headline figure with the range knee's held-out errors give it.
  const ranges = {};
  for (const x of (r.prediction_ranges && r.prediction_ranges.figures) || []) if (rangeBox[x.metric]) ranges[rangeBox[x.metric]] = x;
  const metric = (id, label, value, unit, title) => metricBox(id, label, value, unit, title, ranges[id]);
  const badge = h('div', {id: 'pressure', class: 'badge ' + pr.level, dataset: {level: pr.level}, role: 'status'},
    h('strong', {}, levelText[pr.level]), h('span', {}, pr.reason));
  el.replaceChildren(...[
    badge,
    h('div', {class: 'metrics'},
      metric('queue-p50', 'Queue p50', f.queue_ms.p50, 'ms', 'waiting to be admitted: client wait + engine queue (what the badge counts as waiting)'),
      metric('queue-p95', 'Queue p95', f.queue_ms.p95, 'ms'),
      metric('front-end-p50', 'Front end p50', f.front_end_ms.p50, 'ms', 'HTTP, chat template and tokenization before the engine sees the request (longer while the API server streams to many users): part of TTFT, not a queue'),
      metric('ttft-p50', 'TTFT p50', f.ttft_ms.p50, 'ms'),
      metric('ttft-p95', 'TTFT p95', f.ttft_ms.p95, 'ms'),
      metric('ttft-p99', 'TTFT p99', f.ttft_ms.p99, 'ms'),
      metric('tpot-p50', 'TPOT p50', f.tpot_ms.p50, 'ms', 'time per output token after the first'),
      metric('tpot-p95', 'TPOT p95', f.tpot_ms.p95, 'ms'),
      metric('decode-rate', 'Decode rate', f.decode_rate_tps, 'tok/s', 'per request: 1 / mean TPOT'),
      metric('e2e-p50', 'E2E p50', f.e2e_ms.p50, 'ms'),
      metric('e2e-p95', 'E2E p95', f.e2e_ms.p95, 'ms'),
      metric('rps', 'Throughput', f.throughput_rps, 'req/s'),
      metric('otps', 'Output', f.output_tps, 'tok/s'),
      metric('itps', 'Input', f.input_tps, 'tok/s'),
      metric('kv-mean', 'KV cache (mean)', f.kv_usage_mean, '%'),
      metric('kv-peak', 'KV cache (peak)', f.kv_usage_peak, '%'),
      metric('attainment', 'SLO attainment', pr.slo_attainment, '%'),
      ...energyBoxes(r.energy)),
    Object.keys(ranges).length ? h('p', {class: 'notes', id: 'ranges-note'}, 'The range under a figure is where measured values have fallen around knee\'s predictions ' + r.prediction_ranges.basis + '.') : null,
    h('ul', {class: 'slos'}, r.slos.map(s => h('li', {class: s.met ? 'met' : 'unmet'}, (s.met ? '✓ ' : '✗ ') + s.text))),
    h('p', {class: 'notes'}, `${r.requests} requests simulated (${fmt(r.simulated_s, 's')} of virtual time) on ${r.engine.name}: `,
      `max ${r.engine.max_num_seqs} sequences, ${r.engine.max_num_batched_tokens} batched tokens per step, KV cache ${r.engine.kv_capacity_tokens} tokens. `,
      r.params.load_kind === 'concurrency' ? h('span', {id: 'out-of-step'}, spreadText(f, pr.level) + ' ') : null,
      h('span', {id: 'compute-ms'}, `Computed in ${fmt(r.compute_ms, 'ms')}.`)),
    r.warnings && r.warnings.length ? h('ul', {class: 'warnings'}, r.warnings.map(w => h('li', {}, w))) : null].filter(Boolean));
  const key = document.getElementById('sim-key');
  if (key) {
    const kf = (id, label, v, unit) => h('span', {id: 'key-' + id, dataset: {value: String(v)}}, label + ' ', h('b', {}, fmt(v, unit)));
    key.replaceChildren(h('strong', {class: 'badge-word ' + pr.level, id: 'key-level', dataset: {level: pr.level}}, levelText[pr.level]),
      kf('ttft-p95', 'TTFT p95', f.ttft_ms.p95, 'ms'), kf('tpot-p50', 'TPOT p50', f.tpot_ms.p50, 'ms'),
      kf('rps', '', f.throughput_rps, 'req/s'), kf('queue-p50', 'queue p50', f.queue_ms.p50, 'ms'));
  }
  el.dataset.inputTokens = r.params.input_tokens;
  el.dataset.outputTokens = r.params.output_tokens;
  el.dataset.load = String(r.params.load);
}

// energyBoxes are the run's energy figures from the GPU preset's power
// model (none for a GPU without one): joules per output token, output
// tokens per joule and the mean draw per GPU, over the whole run.
function energyBoxes(e) {
  if (!e || e.j_per_output_token == null) return [];
  const why = `from knee's power model of the GPU over the whole run (${fmt(e.energy_j / 1000)} kJ for ${e.output_tokens} output tokens in ${fmt(e.span_s)} s of virtual time); a point estimate, not yet scored against measurements`;
  return [
    metricBox('mj-per-token', 'Energy per output token', 1000 * e.j_per_output_token, 'mJ', why),
    metricBox('tokens-per-j', 'Output per joule', e.output_tokens_per_j, 'tok/J', why),
    metricBox('power', 'Power per GPU (mean)', e.avg_power_w_per_gpu, 'W', why),
  ];
}

// spreadText says what the TTFT percentiles show, from the figures
// themselves: a fixed sentence ("p95 sits above p50") was false at
// saturation, where every request waits about as long as the others.
export function spreadText(f, level) {
  const p50 = f.ttft_ms.p50, p95 = f.ttft_ms.p95;
  const start = 'The users start one by one over the first 2 s and then keep their own pace, as real clients do, so they fall out of step';
  if (p95 > 1.05 * p50) {
    return `${start}: each request meets a different batch, and p95 TTFT (${fmt(p95, 'ms')}) sits above p50 (${fmt(p50, 'ms')}). (Started in the same millisecond with the same lengths they would stay in lockstep for ever, every percentile equal.)`;
  }
  const why = level === 'healthy'
    ? 'every request meets about the same batch, so they take about as long as each other'
    : 'the batch is full and every request waits its turn behind about as many others, so the wait, not the batch it meets, sets its time';
  return `${start}, yet here p95 TTFT (${fmt(p95, 'ms')}) is within 5% of p50 (${fmt(p50, 'ms')}): ${why}.`;
}

function renderCurves(sw, cur) {
  const tEl = document.getElementById('curve-throughput'), lEl = document.getElementById('curve-ttft');
  if (!tEl || !sw.steps) return;
  const xs = sw.steps.map(s => s.load);
  const unit = sw.load_kind === 'rate' ? 'offered rate (req/s)' : 'concurrency (users)';
  const tput = sw.knee_metric === 'throughput_rps' ? 'throughput_rps' : 'output_tps';
  const kneeX = sw.knee && sw.knee.load, safeX = sw.slo_safe && sw.slo_safe.load;
  const curX = cur ? cur.params.load : null;
  const curT = cur ? (tput === 'output_tps' ? cur.figures.output_tps : cur.figures.throughput_rps) : null;
  const vlines = [{x: kneeX, label: 'knee', color: '#9333ea', dash: [4, 3], side: 'left'}, {x: safeX, label: 'SLO-safe', color: '#16a34a'}];
  lineChart(tEl, {title: 'Throughput over load', xLabel: unit, yLabel: tput === 'output_tps' ? 'output tok/s' : 'req/s',
    x: xs, logX: sw.load_kind === 'concurrency', series: [{label: tput === 'output_tps' ? 'output tok/s' : 'req/s', values: sw.steps.map(s => s[tput])}],
    marks: {vlines, points: [{x: curX, y: curT, color: '#ea580c'}]}});
  const ttftSLO = cur && cur.slos.find(s => s.metric === 'ttft' && s.stat === 'p95');
  lineChart(lEl, {title: 'p95 TTFT over load', xLabel: unit, yLabel: 'ms (log scale)', x: xs, logX: sw.load_kind === 'concurrency', logY: true,
    series: [{label: 'p95 TTFT (ms)', values: sw.steps.map(s => s.ttft_p95_ms ?? null), color: '#dc2626'}],
    marks: {vlines, hlines: ttftSLO ? [{y: ttftSLO.threshold, label: 'SLO ' + ttftSLO.objective, color: '#64748b'}] : [],
      points: [{x: curX, y: cur ? cur.figures.ttft_ms.p95 : null, color: '#ea580c'}]}});
  // The same steps as one curve: throughput against p95 TTFT, each point
  // its load; the knee is where it turns up, the objective one line.
  const tEl2 = document.getElementById('curve-tradeoff');
  if (tEl2) {
    tradeoffChart(tEl2, {title: 'p95 TTFT against throughput, one point a load', xLabel: tput === 'output_tps' ? 'output tok/s' : 'req/s', yLabel: 'p95 TTFT (log scale)',
      points: sw.steps.map(s => ({x: s[tput], y: s.ttft_p95_ms, label: String(s.load), mark: s.load === kneeX ? 'knee' : s.load === safeX ? 'safe' : s.load === curX ? 'current' : ''})),
      yLine: ttftSLO ? {y: ttftSLO.threshold, label: 'SLO ' + ttftSLO.objective} : null});
  }
  const notes = document.getElementById('curve-notes');
  tEl.dataset.computed = sw.partial ? `${sw.partial.index}/${sw.partial.of}` : `${sw.steps.length}/${sw.steps.length}`;
  if (sw.partial) {
    notes.replaceChildren(h('span', {id: 'sweep-progress'}, `Sweeping: ${sw.partial.index} of ${sw.partial.of} loads computed; the knee and the SLO-safe point follow the last.`));
  } else notes.replaceChildren(
    h('span', {class: 'key current'}, '● current setting'), ' The p95 TTFT axis is logarithmic, so the objective\'s line and the low loads stay readable beside the seconds of a queue.',
    h('p', {id: 'knee-verdict', class: 'verdict-line'}, plainVerdict(sw, kneeX, safeX)),
    energyVerdict(sw, kneeX, safeX),
    h('details', {id: 'knee-detail'}, h('summary', {}, 'How knee found the knee and the SLO-safe point'),
      h('p', {id: 'knee-text'}, h('strong', {}, kneeX != null ? `Knee at ${kneeX}: ` : 'No knee: '), sw.knee.reason),
      h('p', {id: 'safe-text'}, h('strong', {}, safeX != null ? `SLO-safe point at ${safeX}: ` : 'No SLO-safe point: '), sw.slo_safe.reason)));
  tEl.dataset.knee = kneeX ?? ''; tEl.dataset.safe = safeX ?? '';
  // The curves and the dot as drawn, for a reader (and the browser test)
  // to compare: the dot is a sweep step's own run at a swept load.
  tEl.dataset.loads = xs.join(','); tEl.dataset.rps = sw.steps.map(s => s[tput].toFixed(2)).join(',');
  lEl.dataset.ttft = sw.steps.map(s => s.ttft_p95_ms ?? '').join(',');
  tEl.dataset.dot = curT == null ? '' : String(curT); lEl.dataset.dot = cur ? String(cur.figures.ttft_ms.p95) : '';
  lEl.dataset.at = curX == null ? '' : String(curX);
  // The figures as drawn are the whole sweep's: a reader waits for them.
  if (sw.partial) tEl.dataset.loads = tEl.dataset.rps = lEl.dataset.ttft = '';
}

// energyVerdict names the sweep's most energy-efficient load (fewest
// joules per output token, from the power model) beside the knee and the
// SLO-safe point, and the energy per token at each; null without energy.
function energyVerdict(sw, kneeX, safeX) {
  const steps = sw.steps.filter(s => s.energy && s.energy.j_per_output_token != null);
  if (!steps.length) return null;
  const mj = s => 1000 * s.energy.j_per_output_token;
  const best = steps.reduce((a, s) => (mj(s) < mj(a) ? s : a), steps[0]);
  const what = sw.load_kind === 'rate' ? 'req/s offered' : 'users';
  const at = x => { const s = steps.find(s => s.load === x); return s ? ` (${fmt(mj(s), 'mJ')})` : ''; };
  let t = `Fewest joules per output token at ${best.load} ${what}: ${fmt(mj(best), 'mJ')}, ${best.slo_met ? 'within' : 'outside'} the objectives.`;
  if (kneeX != null) t += ` At the knee, ${kneeX}${at(kneeX)}.`;
  const safe = steps.find(s => s.load === safeX);
  if (safe && safe !== best) {
    const more = mj(safe) / mj(best) - 1;
    t += ` At the SLO-safe point, ${safeX}, ${fmt(mj(safe), 'mJ')}: ` + (more < 0.02
      ? `within ${Math.max(1, Math.round(100 * more))}% of the fewest, so meeting the objectives costs next to no energy here.`
      : `${Math.round(100 * more)}% more a token than the fewest.`);
  } else if (safe) t += ' That is the SLO-safe point.';
  return h('p', {id: 'energy-verdict', dataset: {load: String(best.load), mj: String(mj(best)), loads: steps.map(s => s.load).join(','), mjs: steps.map(s => mj(s).toFixed(2)).join(',')}},
    t + ' (knee\'s power model of the GPU, a point estimate over each whole run.)');
}

// plainVerdict says what the knee means in the sweep's own figures: from
// the knee to the highest load, how much throughput grew and how many
// times p95 TTFT did; then the SLO-safe point. Kneedle's detail is behind
// a disclosure.
export function plainVerdict(sw, kneeX, safeX) {
  const what = sw.load_kind === 'rate' ? 'req/s offered' : 'users';
  const who = sw.load_kind === 'rate' ? 'requests' : 'users';
  const tput = sw.knee_metric === 'throughput_rps' ? 'throughput_rps' : 'output_tps';
  const parts = [];
  const k = sw.steps.find(s => s.load === kneeX), last = sw.steps[sw.steps.length - 1];
  if (k && last && last !== k && k[tput] > 0 && k.ttft_p95_ms > 0) {
    const grow = last[tput] / k[tput] - 1, slow = last.ttft_p95_ms / k.ttft_p95_ms;
    parts.push(`Knee at ${kneeX} ${what}: beyond it, up to ${last.load}, throughput ${grow >= 0.005 ? 'grows ' + Math.round(100 * grow) + '%' : grow <= -0.005 ? 'falls ' + Math.round(-100 * grow) + '%' : 'stays the same'} while p95 TTFT grows ×${slow >= 10 ? slow.toFixed(0) : slow.toFixed(1)}` +
      (slow >= 2 && grow < 0.25 ? `: the extra ${who} mostly wait.` : '.'));
  } else {
    parts.push(kneeX != null ? `Knee at ${kneeX} ${what}.` : 'No knee in this sweep: throughput still grows at its highest load.');
  }
  parts.push(safeX != null ? ` The SLO-safe point is ${safeX} ${what}, the highest load at which every objective holds.` : ' No load of the sweep meets every objective.');
  return parts.join('');
}
