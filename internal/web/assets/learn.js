// The Learn page: the mental model of an LLM service in short sections,
// each beside a live element that reruns knee's engine, the claims each
// section makes checked on the engine (the table in learnapi.go, which a
// Go test checks too), a knowledge check, and progress kept in this
// browser only (progress.js).
import {api, apiSteps, sweepSoFar, h, fmt, debounce} from './api.js';
import {lineChart} from './charts.js';
import * as progress from './progress.js';
import {pairView, lessonTableView} from './lifecycle.js';
import {BatchGauge} from './engineview.js';

const metricNames = {
  ttft_p50_ms: ['TTFT p50', 'ms'], ttft_p95_ms: ['p95 TTFT', 'ms'], ttft_p99_ms: ['p99 TTFT', 'ms'],
  tpot_p50_ms: ['TPOT p50', 'ms'], e2e_p50_ms: ['E2E p50', 'ms'], e2e_p99_ms: ['p99 E2E', 'ms'],
  queue_p50_ms: ['queue p50', 'ms'], throughput_rps: ['throughput', 'req/s'], output_tps: ['output', 'tok/s'],
  decode_rate_tps: ['decode rate', 'tok/s'],
};

const sectionTitles = {
  tokens: '1 · Tokens are work, but two kinds of work',
  phases: '2 · TTFT and decode speed answer different questions',
  curve: '3 · Throughput rises until the batch is full; then users wait',
  realism: '4 · A benchmark should look like production',
  traps: '5 · Four common traps',
};

// The knowledge check. Every option is a belief a learner could hold, of
// about the same length as the others, with its own explanation; the page
// shuffles them (see order) and an answer can be changed. The right
// answers' length ranks differ from question to question (longest, second,
// third, shortest), so length gives nothing away either; the browser test
// checks both.
const questions = [
  {id: 'ttft-flat-decode', q: 'Under more load, p95 TTFT grows several-fold while the decode rate (tokens per second once a request streams) stays flat. What is the first hypothesis?',
    choices: [
      ['queue', 'Requests wait before the engine admits them, or queue for their prefill: waiting or prefill pressure',
        'TTFT is the wait plus the prefill, and a flat decode rate says the engine steps are no slower: the new time is spent waiting to be admitted, or getting prompts through a crowded prefill.'],
      ['decode', 'The decode steps have slowed, so each token, the first one included, takes longer to make',
        'Slower steps would slow every token after the first as well, and the decode rate would fall with them; it stayed flat, so the steps are not slower.'],
      ['output', 'The answers have grown longer, and a longer answer takes longer to produce its first token',
        'A longer answer moves the last token, not the first: TTFT is over before any more of the answer is made.'],
      ['network', 'The network to the client is congested, so every streamed token reaches the user later',
        'A congested network would stretch the gaps between streamed tokens too, and the decode rate the client measures would drop; it stayed flat.']],
    answer: 'queue', section: 'phases', control: 'ph-rate',
    why: 'Section 2\'s arrival-rate slider shows it: past what 32 sequences serve, the queue part of the bar takes over while TPOT hardly moves. knee diagnose names these queue_pressure and prefill_pressure.'},
  {id: 'rps-misleads', q: 'A vendor says a server "does 60 requests per second". Why is that not yet a capacity figure?',
    choices: [
      ['tokens', 'Requests per second depends on the prompt and output lengths; without them it says little',
        'A request is as much work as its tokens: the same server does many more short requests per second than long ones.'],
      ['users', 'It does not say how many GPUs served it, and only a rate per GPU compares deployments',
        'Partly true: a rate per GPU is what compares deployments by cost. But 60 requests per second per GPU of 128-token answers and of 2,048-token answers are different capacities, so the lengths are what is missing first.'],
      ['mean', 'It is a mean over the run, and a capacity must be stated as the p95 of requests per second',
        'A rate is already a count over time; what a capacity needs beside it is the request lengths and the latency at that rate, not a percentile of the rate.'],
      ['loop', 'It may come from a closed loop of users, and only an open-loop rate can measure capacity',
        'Both load models measure a throughput: an open loop shows the queue a busy service builds, but a closed loop\'s rate at a known latency is a capacity too. Neither says how much work 60 requests are without their lengths.']],
    answer: 'tokens', section: 'tokens', control: 'tok-output',
    why: 'Section 1 shows it on one user: eight times the output cuts requests per second to well under half, and in section 5 the same 256 users serve several times fewer requests per second with 2,048-token prompts than with 128-token ones.'},
  {id: 'knee', q: 'What is the knee of a load sweep?',
    choices: [
      ['bend', 'The load past which throughput stops rising, while latency climbs',
        'Below the knee more users mean more throughput; past it the batch is full and more users only queue, so p95 TTFT grows many times faster than throughput.'],
      ['max', 'The load at which the sweep measured its highest throughput of all',
        'The highest throughput usually lies past the knee, on the flat part, where users already wait many times longer for a few percent more.'],
      ['fail', 'The load at which the first requests start to fail or be refused',
        'Past the knee requests still succeed: they wait instead of failing. Failures come later, if at all (timeouts, refusals).'],
      ['util', 'The load at which GPU utilisation first reaches 100% on every device',
        'GPU utilisation counts the time a kernel runs, not how much each step does: it can read 100% long before the batch is full.']],
    answer: 'bend', section: 'curve', control: 'cv-users',
    why: 'Move section 3\'s users slider across the purple line to see the badge change. The SLO-safe point is the highest load that still meets the objectives, usually below or at the knee.'},
  {id: 'percentiles', q: 'Why should a benchmark report percentiles, errors and refusals rather than an average latency?',
    choices: [
      ['tail', 'The average hides the slow tail and the failed requests, which users notice',
        'A few slow requests hardly move the average, and a failed or refused request has no latency at all: only percentiles with the errors beside them show what users meet.'],
      ['lower', 'Percentiles sit below the average, so they describe the typical user more fairly',
        'The tail percentiles (p95, p99) sit above the average, and they are reported for that: they show the slow requests the average smooths away.'],
      ['settle', 'An average needs many more requests than a p99 before it settles to a stable value',
        'It is the other way round: a p99 rests on the slowest 1% of requests and needs many more of them to settle than a mean does.'],
      ['same', 'For latency the average and the median agree, so an average adds nothing new',
        'Latency is skewed: a few very slow requests pull the mean above the median, so the two disagree exactly when it matters.']],
    answer: 'tail', section: 'realism', control: 'rl-rate',
    why: 'In section 4 the varied-length run has the same mean lengths and a median end-to-end latency no higher than the fixed run\'s, yet its p99 is several times longer: a mean or a median alone would call the varied run as fast or faster.'},
];

// order places the options of every question at random, except that the
// right answers take four different positions (a random rotation), so no
// position is right more than once on a page.
function order(qs) {
  const shift = Math.floor(Math.random() * 4);
  return qs.map((q, i) => {
    const others = q.choices.filter(c => c[0] !== q.answer);
    for (let k = others.length - 1; k > 0; k--) {
      const j = Math.floor(Math.random() * (k + 1));
      [others[k], others[j]] = [others[j], others[k]];
    }
    const at = (shift + i) % q.choices.length;
    others.splice(at, 0, q.choices.find(c => c[0] === q.answer));
    return {...q, choices: others};
  });
}

const levelText = {healthy: 'Healthy', strained: 'Strained', saturated: 'Saturated'};

let root = null;
let state = null; // {sections, labNames}

export function unmount() { if (root) delete root.dataset.ready; root = null; }

// stepSlider is a range over a list of values (powers of two and the like),
// announcing the value itself rather than its index.
function stepSlider(id, label, values, value, unit) {
  const input = h('input', {id, type: 'range', min: 0, max: values.length - 1, step: 1, value: Math.max(0, values.indexOf(value)), dataset: {values: values.join(',')}});
  const out = h('output', {for: id, id: id + '-value'});
  const show = () => {
    const v = values[Number(input.value)];
    out.textContent = v + ' ' + unit;
    input.setAttribute('aria-valuetext', v + ' ' + unit);
    input.dataset.value = String(v);
  };
  show();
  input.addEventListener('input', show);
  return {input, get: () => values[Number(input.value)],
    set: v => { input.value = String(Math.max(0, values.indexOf(v))); input.dispatchEvent(new Event('input', {bubbles: true})); },
    el: h('div', {class: 'field'}, h('label', {for: id}, label), h('div', {class: 'pair'}, input, out))};
}

// live runs the simulator for an element: the newest answer wins, and the
// element's data-seq counts the answers shown (the browser test waits on it).
function live(out, params, render) {
  let seq = 0;
  const run = async () => {
    const my = ++seq;
    try {
      const ps = params();
      const res = await Promise.all(ps.map(p => api('/api/sim', p)));
      if (my !== seq || !root) return;
      render(...res);
    } catch (e) {
      if (my !== seq || !root) return;
      out.replaceChildren(h('p', {class: 'error', role: 'alert'}, e.message));
    }
    out.dataset.seq = String(Number(out.dataset.seq || 0) + 1);
  };
  return {run, soon: debounce(run, 40)};
}

function figure(id, label, value, unit, ratio) {
  return h('div', {class: 'metric', id, dataset: {value: value == null ? '' : String(value)}},
    h('span', {class: 'label'}, label), h('span', {class: 'value'}, fmt(value, unit)),
    ratio == null ? null : h('span', {class: 'ratio notes'}, ' ×' + (ratio >= 10 ? ratio.toFixed(0) : ratio.toFixed(2))));
}

function section(id, lede, liveEl, extra) {
  const sec = state.sections.find(s => s.id === id);
  const read = h('input', {type: 'checkbox', id: 'read-' + id, checked: !!progress.load().read[id],
    onchange: e => { progress.update(p => { if (e.target.checked) p.read[id] = true; else delete p.read[id]; }); renderProgress(); }});
  // On a desktop the live element stands beside the text it shows
  // (style.css, .learn-grid); on a phone it follows the text.
  return h('section', {class: 'card learn-section', id: 'learn-' + id, 'aria-labelledby': 'h-' + id},
    h('h2', {id: 'h-' + id, tabindex: '-1'}, sectionTitles[id]),
    h('div', {class: 'learn-grid'},
      h('div', {class: 'learn-prose'}, ...lede.map(t => h('p', {class: 'learn-text'}, t))),
      h('div', {class: 'learn-live'}, liveEl, extra || null),
      h('div', {class: 'learn-after'},
        h('h3', {}, 'What the engine shows'),
        h('ul', {class: 'claims', id: 'claims-' + id}, sec.claims.map(c => h('li', {id: 'claim-' + c.id, dataset: {holds: ''}}, c.text, ' ', h('span', {class: 'check notes'}, 'checking…')))),
        h('p', {class: 'command'}, 'On a real server: ', h('code', {}, sec.command)),
        h('label', {class: 'read'}, read, ' I have read this section'))));
}

async function checkClaims() {
  for (const sec of state.sections) {
    for (const c of sec.claims) {
      const li = document.getElementById('claim-' + c.id);
      if (!li || !root) return;
      const span = li.querySelector('.check');
      try {
        const r = await api('/api/learn/check', {section: sec.id, claim: c.id});
        const [name, unit] = metricNames[c.metric];
        let text = `${name} ${fmt(r.from, unit)} → ${fmt(r.to, unit)}`;
        if (c.over) {
          const [oname, ounit] = metricNames[c.over];
          text += `, ${oname} ${fmt(r.over_from, ounit)} → ${fmt(r.over_to, ounit)}`;
        }
        const bound = c.at_least ? `at least ×${c.at_least}` : `at most ×${c.at_most}`;
        text += `: ×${r.value < 1 ? r.value.toFixed(2) : r.value.toFixed(1)}${c.over ? ' relative' : ''} (claimed ${bound}) ${r.holds ? '✓ holds' : '✗ does not hold'}`;
        span.textContent = '— ' + text;
        li.dataset.holds = String(r.holds);
        li.className = r.holds ? 'met' : 'unmet';
      } catch (e) {
        span.textContent = '— ' + e.message;
      }
    }
  }
}

export async function mount(el, ctx, rest) {
  root = el;
  delete el.dataset.ready;
  const [learn, presets] = await Promise.all([api('/api/learn'), api('/api/presets')]);
  state = {sections: learn.sections, labNames: presets.lab_scenarios.map(s => s.name)};
  const base = id => state.sections.find(s => s.id === id).base;
  const tokenSteps = [16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192];

  // 1. Tokens.
  const tb = base('tokens');
  const prompt = stepSlider('tok-prompt', 'Prompt tokens', tokenSteps.slice(2), Number(tb.input_tokens), 'tokens');
  const output = stepSlider('tok-output', 'Output tokens', tokenSteps.slice(0, -1), Number(tb.output_tokens), 'tokens');
  const tokOut = h('div', {id: 'tok-out', class: 'metrics', 'aria-live': 'polite', dataset: {seq: '0'}});
  let tokRef = null;
  const tok = live(tokOut, () => [tb, {...tb, input_tokens: String(prompt.get()), output_tokens: String(output.get())}], (ref, r) => {
    tokRef = ref.figures;
    const f = r.figures, x = (a, b) => (b ? a / b : null);
    tokOut.replaceChildren(
      figure('tok-ttft', 'TTFT p50', f.ttft_ms.p50, 'ms', x(f.ttft_ms.p50, tokRef.ttft_ms.p50)),
      figure('tok-tpot', 'TPOT p50', f.tpot_ms.p50, 'ms', x(f.tpot_ms.p50, tokRef.tpot_ms.p50)),
      figure('tok-e2e', 'E2E p50', f.e2e_ms.p50, 'ms', x(f.e2e_ms.p50, tokRef.e2e_ms.p50)),
      figure('tok-rps', 'Requests/s', f.throughput_rps, 'req/s', x(f.throughput_rps, tokRef.throughput_rps)),
      figure('tok-otps', 'Output', f.output_tps, 'tok/s', x(f.output_tps, tokRef.output_tps)));
  });
  for (const s of [prompt, output]) s.input.addEventListener('input', tok.soon);

  // 2. Phases.
  const pb = base('phases');
  const rate = stepSlider('ph-rate', 'Arrival rate', [5, 10, 15, 20, 25, 30, 35, 40, 50, 60], pb.load, 'req/s');
  const phOut = h('div', {id: 'ph-out', 'aria-live': 'polite', dataset: {seq: '0'}});
  const ph = live(phOut, () => [{...pb, load: rate.get()}], r => {
    const f = r.figures, fe = f.front_end_ms.p50, q = f.queue_ms.p50, p = f.prefill_ms.p50, d = f.decode_ms.p50, tot = (fe + q + p + d) || 1;
    const pct = v => (100 * v / Math.max(tot, 6000)) + '%';
    phOut.replaceChildren(
      h('div', {class: 'bar', style: 'height:22px', role: 'img', id: 'ph-bar', 'aria-label': `median request: front end ${fmt(fe, 'ms')}, queue ${fmt(q, 'ms')}, prefill ${fmt(p, 'ms')}, decode ${fmt(d, 'ms')}`},
        h('span', {class: 'fe', style: `width:${pct(fe)}`}), h('span', {class: 'q', style: `width:${pct(q)}`}), h('span', {class: 'p', style: `width:${pct(p)}`}), h('span', {class: 'd', style: `width:${pct(d)}`})),
      h('p', {class: 'legend notes'}, 'Median request:', h('span', {class: 'fe'}, 'front end ' + fmt(fe, 'ms')), h('span', {class: 'q'}, 'queue ' + fmt(q, 'ms')), h('span', {class: 'p'}, 'prefill ' + fmt(p, 'ms')), h('span', {class: 'd'}, 'decode ' + fmt(d, 'ms'))),
      h('div', {class: 'metrics'},
        figure('ph-ttft', 'p95 TTFT', f.ttft_ms.p95, 'ms'), figure('ph-tpot', 'TPOT p50', f.tpot_ms.p50, 'ms'),
        figure('ph-rate-tps', 'Decode rate', f.decode_rate_tps, 'tok/s'), figure('ph-e2e', 'E2E p50', f.e2e_ms.p50, 'ms')),
      h('p', {class: 'notes'}, `${r.engine.name}, at most ${r.engine.max_num_seqs} requests in the batch, ${r.params.input_tokens} prompt / ${r.params.output_tokens} output tokens — ${r.pressure.level}: ${r.pressure.reason}`));
  });
  rate.input.addEventListener('input', ph.soon);
  const pairEl = h('div', {id: 'learn-pair'}, h('p', {class: 'notes'}, 'simulating the worked pair…'));
  const lessonEl = h('div', {id: 'learn-lesson'});

  // 3. The curve.
  const cb = base('curve');
  // 272 users: the batch (256) is full and a few requests miss the
  // objectives, the Strained band between Healthy and Saturated that the
  // text promises (it spans about 257 to 287 users here; powers of two
  // alone jumped from Healthy at 256 to Saturated at 512).
  const users = stepSlider('cv-users', 'Users (concurrency)', [1, 2, 4, 8, 16, 32, 64, 128, 256, 272, 512, 1024], cb.load, 'users');
  const cvOut = h('div', {id: 'cv-out', 'aria-live': 'polite', dataset: {seq: '0'}});
  const charts = h('div', {class: 'curves'}, h('div', {id: 'cv-throughput'}), h('div', {id: 'cv-ttft'}), h('div', {id: 'cv-energy'}),
    h('p', {id: 'cv-energy-text'}), h('p', {id: 'cv-notes', class: 'notes'}, 'sweeping…'));
  let sweep = null, cvLast = null;
  // The engine's batch over the run: it fills as users are added, then
  // the queue beside it grows (the engine's own steps, averaged in time).
  const cvGauge = new BatchGauge('cv-batch');
  const cv = live(cvOut, () => [{...cb, load: users.get(), lifecycle: true}], r => {
    cvLast = r;
    const f = r.figures, pr = r.pressure;
    cvOut.replaceChildren(
      h('div', {id: 'cv-badge', class: 'badge ' + pr.level, dataset: {level: pr.level}, role: 'status'}, h('strong', {}, levelText[pr.level]), h('span', {}, pr.reason)),
      h('div', {class: 'metrics'}, figure('cv-rps', 'Throughput', f.throughput_rps, 'req/s'), figure('cv-ttft-p95', 'p95 TTFT', f.ttft_ms.p95, 'ms'),
        figure('cv-queue', 'Queue p50', f.queue_ms.p50, 'ms'), figure('cv-front-end', 'Front end p50', f.front_end_ms.p50, 'ms'), figure('cv-otps', 'Output', f.output_tps, 'tok/s'),
        r.energy && r.energy.j_per_output_token != null ? figure('cv-mj-token', 'Energy per output token', 1000 * r.energy.j_per_output_token, 'mJ') : null),
      r.batch ? cvGauge.el : null,
      h('p', {class: 'notes'}, 'Queue: the wait before the engine admits a request (what the badge counts as waiting). Front end: the API server\'s work before that (HTTP, chat template, tokenization), a phase of its own; it grows when the server is busy streaming to many users.'));
    if (r.batch) cvGauge.average(r.batch);
    drawCurve(sweep, cvLast);
  });
  users.input.addEventListener('input', cv.soon);

  // 4. Realism: fixed lengths beside varied lengths with the same means,
  // and, when knee ui was given --trace, that trace replayed beside fixed
  // lengths at its own means.
  const rb = base('realism');
  const varied = state.sections.find(s => s.id === 'realism').claims[0].to;
  const trace = learn.trace;
  const rlRate = stepSlider('rl-rate', 'Arrival rate (mean)', [10, 20, 30, 40, 50, 60, 70], rb.load, 'req/s');
  const rlOut = h('div', {id: 'rl-out', 'aria-live': 'polite', dataset: {seq: '0'}});
  const columns = [
    {id: 'fixed', title: p => 'fixed: ' + p.input_tokens + ' / ' + p.output_tokens, params: {}},
    {id: 'varied', title: p => 'varied: ' + p.input_tokens + ' / ' + p.output_tokens, params: {input_tokens: varied.input_tokens, output_tokens: varied.output_tokens}},
  ];
  if (trace) {
    columns.push({id: 'trace-fixed', title: p => `fixed at the trace's means: ${p.input_tokens} / ${p.output_tokens}`,
      params: {input_tokens: String(trace.mean_input_tokens), output_tokens: String(trace.mean_output_tokens), requests: Math.min(trace.requests, 2000)}});
    columns.push({id: 'trace', title: () => `trace replay: ${trace.name}`, params: {trace: true}});
  }
  const rl = live(rlOut, () => columns.map(c => ({...rb, load: rlRate.get(), ...c.params})), (...res) => {
    const rows = [['ttft-p50', 'TTFT p50', r => r.figures.ttft_ms.p50, 'ms'], ['ttft-p95', 'TTFT p95', r => r.figures.ttft_ms.p95, 'ms'],
      ['ttft-p99', 'TTFT p99', r => r.figures.ttft_ms.p99, 'ms'], ['e2e-mean', 'E2E mean', r => r.figures.e2e_ms.mean, 'ms'],
      ['e2e-p50', 'E2E p50', r => r.figures.e2e_ms.p50, 'ms'], ['e2e-p99', 'E2E p99', r => r.figures.e2e_ms.p99, 'ms'],
      ['errors', 'Errors (refused included)', r => r.figures.errors, ''], ['requests', 'Requests simulated', r => r.requests, '']];
    const cell = (r, side, [key, , get, unit]) => h('td', {id: `rl-${side}-${key}`, dataset: {value: String(get(r))}}, unit ? fmt(get(r), unit) : String(get(r)));
    rlOut.replaceChildren(h('div', {class: 'table-wrap'}, h('table', {id: 'rl-table'},
      h('thead', {}, h('tr', {}, h('th', {}, 'at ' + rlRate.get() + ' req/s'), columns.map((c, i) => h('th', {}, c.title(res[i].params))))),
      h('tbody', {}, rows.map(row => h('tr', {}, h('td', {}, row[1]), columns.map((c, i) => cell(res[i], c.id, row))))))),
    h('ul', {class: 'warnings'}, res.flatMap((r, i) => (r.warnings || []).map(w => h('li', {}, columns[i].id + ': ' + w)))));
  });
  rlRate.input.addEventListener('input', rl.soon);

  // 5. Traps: each with the control that shows it.
  const trb = base('traps');
  const trPrompt = stepSlider('tr-prompt', 'Prompt tokens at 256 users', [128, 256, 512, 1024, 2048], Number(trb.input_tokens), 'tokens');
  const trOut = h('div', {id: 'tr-out', class: 'metrics', 'aria-live': 'polite', dataset: {seq: '0'}});
  const tr = live(trOut, () => [{...trb, input_tokens: String(trPrompt.get())}], r => {
    trOut.replaceChildren(figure('tr-rps', 'Requests/s', r.figures.throughput_rps, 'req/s'), figure('tr-ttft', 'p95 TTFT', r.figures.ttft_ms.p95, 'ms'),
      figure('tr-itps', 'Input', r.figures.input_tps, 'tok/s'), h('div', {class: 'metric'}, h('span', {class: 'label'}, 'Badge'), h('span', {class: 'value'}, levelText[r.pressure.level])));
  });
  trPrompt.input.addEventListener('input', tr.soon);
  const show = (target, s) => v => () => { s.set(v); goTo(target, s.input.id); };
  const traps = [
    ['Requests per second without token sizes', 'A rate of requests is a rate of work only with the tokens per request beside it.', 'Show it: 1,024 output tokens in section 1', 'trap-rps', show('tokens', output)(1024)],
    ['TTFT confused with decode speed', 'A slow first token and a slow stream have different causes (waiting or prefill, against slow steps); "the model is slow" names neither.', 'Show it: 40 req/s in section 2', 'trap-ttft', show('phases', rate)(40)],
    ['Full GPU utilisation while users queue', 'A busy GPU means the batch is full, not that users are served: past the knee they wait for it.', 'Show it: 1,024 users in section 3', 'trap-busy', show('curve', users)(1024)],
    ['Short-prompt benchmarks used for sizing', 'Capacity measured with short prompts is capacity for short prompts. Move the prompt slider below between 128 and 2,048 tokens.', 'Show it: 2,048-token prompts below', 'trap-short', () => { trPrompt.set(2048); trPrompt.input.focus(); }],
  ];
  const trapList = h('ol', {class: 'traps'}, traps.map(([title, text, label, id, f]) => h('li', {}, h('strong', {}, title), ' — ', text, ' ',
    h('button', {type: 'button', class: 'secondary', id, onclick: f}, label))));

  el.append(h('h1', {}, 'Learn'),
    h('p', {class: 'lede'}, 'How an LLM service behaves under load, in five short sections. Every figure is knee\'s own engine (the simulator behind knee sim), rerun as you move a control; every sentence under "What the engine shows" is checked on that engine as the page loads.'),
    h('div', {id: 'learn-progress', class: 'card', role: 'status'}),
    h('nav', {class: 'toc', 'aria-label': 'Sections'}, Object.entries(sectionTitles).map(([id, t]) => h('a', {href: '#learn/' + id, onclick: e => { e.preventDefault(); goTo(id); }}, t)),
      h('a', {href: '#learn/quiz', onclick: e => { e.preventDefault(); goTo('quiz'); }}, 'Knowledge check')),
    section('tokens', [
      'A model\'s work is counted in tokens, but a request has two kinds. Its prompt tokens are read all at once in the prefill, before any output can leave. Its output tokens are made one engine step at a time in the decode, one token per step for every request in the batch.',
      'So the prompt length moves the time to first token (TTFT), and the output length moves the end-to-end latency (E2E). The time per output token (TPOT) hardly moves with either. Here one user sends one request after another, so nothing waits and only the work shows; the ×-figures compare with 512 prompt and 128 output tokens.'],
    h('div', {class: 'live'}, prompt.el, output.el, tokOut)),
    section('phases', [
      'TTFT answers "how long until the answer starts?"; the decode rate (tokens per second, 1 / TPOT) answers "how fast does it stream once it has started?". Total latency adds them up and so hides which one is slow.',
      'Two more words the objectives use. Inter-token latency (ITL) is each gap between two streamed tokens as the client receives them; TPOT is their mean over one request\'s decode, so one long stall shows in p99 ITL but hardly in TPOT. Goodput is the requests per second that met every objective (knee\'s --slo, e.g. p95(ttft)<2s, p99(itl)<100ms): the throughput that counts, since a request that missed its objective was served but not served well.',
      'Here the engine admits at most 32 requests at once. Raise the arrival rate past what 32 sequences serve: the wait before admission grows, while prefill and the per-token pace stay about where they were. TTFT includes about 12 ms of front end (HTTP, chat template, tokenization) before the engine sees the request.'],
    h('div', {class: 'live'}, rate.el, phOut),
    h('div', {}, h('h3', {}, 'The worked pair: same total, different bottleneck'), pairEl)),
    section('curve', [
      'Adding users adds throughput while the engine has room in its batch. Once the batch is full, at the knee, more users only wait: throughput stays flat while the queue, and with it p95 TTFT, climbs. It does not fall unless something makes it (KV-cache preemption recomputing requests, or a client that cannot keep up). The SLO-safe point is the highest load that still meets the objectives (here p95 TTFT under 2 s and p95 TPOT under 100 ms). The highest throughput is not a healthy operating point: compare its p95 TTFT against the objective.',
      'Each point is measured at its steady state: every user\'s first request is warm-up, then two to eight more turns of every user are measured (3,072 requests at 1,024 users), and throughput is the users over the mean time a request takes (Little\'s law). A fixed request count would cut the high loads short and measure their start-up queue and drain instead.',
      h('span', {id: 'cv-levels-text'}, 'Move the users slider across the knee and watch the badge: Healthy while the batch has room, Strained just past it (at 272 users the batch of 256 is full and some requests miss the objectives), then Saturated.')],
    h('div', {class: 'live'}, users.el, cvOut, charts), lessonEl),
    section('realism', [
      'A benchmark is only as good as its likeness to production. Production prompts and answers vary in length; a fixed-length run has no long requests to make a tail. And a result is a distribution (p50, p95, p99) with the errors and refusals beside it, never one average.',
      'Choose the load model as production sends: an open loop (requests arrive on a schedule, e.g. Poisson at a rate, whatever the server does: --rate) shows the queue a busy service builds; a closed loop (a fixed number of users, each waiting for its answer before sending the next: --concurrency) slows down with the server and so hides it. Leave out a warm-up (--warmup): the first requests meet an empty cache and a cold batch. And run long enough for the statistics to settle, many times the longest request and at least a few hundred requests per load; a p99 needs thousands to mean anything.',
      'The first two runs below have the same mean lengths and the same Poisson arrivals; the varied one draws its lengths from a lognormal distribution. ' + (trace
        ? `The last two replay the trace knee ui was started with (${trace.name}, ${trace.format}, ${trace.requests} requests, mean ${trace.mean_input_tokens} prompt / ${trace.mean_output_tokens} output tokens) with its own arrival pattern scaled to the slider's mean rate, beside a fixed-length run of as many requests at the trace's means. A trace differs from its means in more than the spread of lengths: its arrivals come in bursts and lulls, and rows that name shared prompt blocks (Mooncake's hash_ids) are served partly from the prefix cache.`
        : 'That is a length distribution, not a trace replay: start knee ui with --trace FILE (Mooncake, Azure, BurstGPT or generic JSONL/CSV) to replay a real trace here beside them; knee bench --trace replays one against a real server.')],
    h('div', {class: 'live'}, rlRate.el, rlOut)),
    section('traps', ['Each trap below comes with the control that shows it; the buttons move that control for you.'],
      h('div', {class: 'live'}, trapList, trPrompt.el, trOut)),
    h('section', {class: 'card learn-section', id: 'learn-quiz', 'aria-labelledby': 'h-quiz'},
      h('h2', {id: 'h-quiz', tabindex: '-1'}, 'Knowledge check'),
      h('p', {class: 'notes'}, 'Choose an answer; the explanation of your choice appears once you have, with a link to the live element that shows it. You can change your answer and read why each option holds or not.'),
      order(questions).map(renderQuestion)),
    h('p', {class: 'notes'}, 'Your progress (sections read, questions answered, lab scenarios run) is kept in this browser\'s local storage; nothing is sent anywhere.'));
  renderProgress();
  await Promise.all([tok.run(), ph.run(), cv.run(), rl.run(), tr.run()]);
  // Each load of the sweep is drawn as the simulator finishes it.
  const cvSteps = [];
  apiSteps('/api/sweep', cb, line => { cvSteps.push(line.step); sweep = sweepSoFar(cvSteps, line); drawCurve(sweep, cvLast); })
    .then(sw => { sweep = sw; drawCurve(sweep, cvLast); }).catch(e => { document.getElementById('cv-notes').textContent = 'sweep: ' + e.message; });
  api('/api/lesson').then(l => lessonEl.replaceChildren(lessonTableView(l))).catch(e => lessonEl.replaceChildren(h('p', {class: 'error'}, e.message)));
  api('/api/pair', {}).then(p => pairEl.replaceChildren(...pairView(p, 'lp'))).catch(e => pairEl.replaceChildren(h('p', {class: 'error'}, e.message)));
  el.dataset.ready = '1';
  if (rest && rest[0]) goTo(rest[0]);
  checkClaims();
}

// goTo brings a section into view and focuses its live control (or, with
// none named, its heading), so the keyboard lands where the proof is.
function goTo(id, control) {
  const head = document.getElementById('h-' + id);
  if (!head) return;
  head.scrollIntoView({block: 'start'});
  (document.getElementById(control) || head).focus({preventScroll: true});
  history.replaceState(null, '', '#learn/' + id);
}

function renderQuestion(q) {
  const chosen = progress.load().answers[q.id];
  const explain = h('div', {class: 'explain', id: 'why-' + q.id, hidden: !chosen},
    h('p', {class: 'verdict', id: 'verdict-' + q.id}), h('p', {id: 'option-why-' + q.id}), h('p', {}, q.why, ' ',
      h('a', {href: '#learn/' + q.section, id: 'see-' + q.id, onclick: e => { e.preventDefault(); goTo(q.section, q.control); }}, 'See it in section ' + sectionTitles[q.section].split(' ')[0] + ' →')));
  const reveal = choice => {
    const c = q.choices.find(x => x[0] === choice);
    if (!c) return;
    explain.hidden = false;
    const v = explain.querySelector('.verdict');
    // A wrong choice does not give the right one away: the learner can try again.
    v.textContent = choice === q.answer ? 'Right.' : 'Not quite: try another answer.';
    v.dataset.correct = String(choice === q.answer);
    const w = explain.querySelector('#option-why-' + q.id);
    w.textContent = (choice === q.answer ? '' : 'Your choice: ') + c[2];
    w.dataset.choice = choice;
  };
  // An answer can be changed: each option's explanation is worth reading,
  // and the progress counts the answer that stands.
  const fs = h('fieldset', {class: 'question', id: 'q-' + q.id, dataset: {answered: chosen ? '1' : ''}}, h('legend', {}, q.q),
    q.choices.map(([value, text]) => h('label', {class: 'choice'},
      h('input', {type: 'radio', name: 'q-' + q.id, value, id: `q-${q.id}-${value}`, checked: chosen === value,
        onchange: () => {
          progress.update(p => { p.answers[q.id] = value; });
          fs.dataset.answered = '1';
          reveal(value);
          renderProgress();
        }}), ' ', h('span', {class: 'choice-text'}, text))),
    explain);
  if (chosen) reveal(chosen);
  return fs;
}

function renderProgress() {
  const el = document.getElementById('learn-progress');
  if (!el || !state) return;
  const p = progress.load();
  const read = state.sections.filter(s => p.read[s.id]).length;
  const answered = questions.filter(q => p.answers[q.id]).length;
  const right = questions.filter(q => p.answers[q.id] === q.answer).length;
  const lab = state.labNames.filter(n => p.lab[n]).length;
  el.dataset.read = String(read); el.dataset.answered = String(answered); el.dataset.lab = String(lab);
  el.replaceChildren(h('strong', {}, 'Your progress: '),
    `${read} of ${state.sections.length} sections read · ${answered} of ${questions.length} questions answered (${right} right) · `,
    h('a', {href: '#lab'}, `${lab} of ${state.labNames.length} lab scenarios run`), ' ',
    h('button', {type: 'button', class: 'secondary', id: 'learn-reset', onclick: () => {
      progress.reset();
      for (const c of document.querySelectorAll('.learn-section input[type=checkbox]')) c.checked = false;
      for (const q of questions) {
        for (const r of document.getElementsByName('q-' + q.id)) r.checked = false;
        document.getElementById('why-' + q.id).hidden = true;
        document.getElementById('q-' + q.id).dataset.answered = '';
      }
      renderProgress();
    }}, 'Reset progress'));
}

function drawCurve(sw, cur) {
  const tEl = document.getElementById('cv-throughput'), lEl = document.getElementById('cv-ttft');
  if (!sw || !tEl || !sw.steps) return;
  const xs = sw.steps.map(s => s.load);
  const kneeX = sw.knee && sw.knee.load, safeX = sw.slo_safe && sw.slo_safe.load;
  const vlines = [{x: kneeX, label: 'knee', color: '#9333ea', dash: [4, 3], side: 'left'}, {x: safeX, label: 'SLO-safe', color: '#16a34a'}];
  const curX = cur ? cur.params.load : null;
  lineChart(tEl, {title: 'Throughput over users', xLabel: 'users', yLabel: 'req/s', x: xs, logX: true,
    series: [{label: 'req/s', values: sw.steps.map(s => s.throughput_rps)}],
    marks: {vlines, points: [{x: curX, y: cur ? cur.figures.throughput_rps : null, color: '#ea580c'}]}});
  lineChart(lEl, {title: 'p95 TTFT over users', xLabel: 'users', yLabel: 'ms (log scale)', x: xs, logX: true, logY: true,
    series: [{label: 'p95 TTFT (ms)', values: sw.steps.map(s => s.ttft_p95_ms ?? null), color: '#dc2626'}],
    marks: {vlines, hlines: [{y: 2000, label: 'SLO p95(ttft)<2s', color: '#64748b'}], points: [{x: curX, y: cur ? cur.figures.ttft_ms.p95 : null, color: '#ea580c'}]}});
  tEl.dataset.knee = kneeX ?? ''; tEl.dataset.safe = safeX ?? '';
  tEl.dataset.rps = sw.steps.map(s => s.throughput_rps.toFixed(2)).join(',');
  tEl.dataset.loads = xs.join(',');
  lEl.dataset.ttft = sw.steps.map(s => s.ttft_p95_ms ?? '').join(',');
  tEl.dataset.dot = cur ? String(cur.figures.throughput_rps) : ''; lEl.dataset.dot = cur ? String(cur.figures.ttft_ms.p95) : '';
  lEl.dataset.at = curX == null ? '' : String(curX);
  // The figures as drawn are the whole sweep's: a reader waits for them.
  if (sw.partial) tEl.dataset.loads = tEl.dataset.rps = lEl.dataset.ttft = '';
  tEl.dataset.computed = sw.partial ? `${sw.partial.index}/${sw.partial.of}` : `${sw.steps.length}/${sw.steps.length}`;
  drawEnergy(sw, cur);
  if (sw.partial) {
    document.getElementById('cv-notes').replaceChildren(h('span', {id: 'cv-progress'}, `Sweeping: ${sw.partial.index} of ${sw.partial.of} loads computed; the knee and the SLO-safe point follow the last.`));
    return;
  }
  document.getElementById('cv-notes').replaceChildren(h('span', {class: 'key current'}, '● the slider\'s setting'), h('br'),
    h('span', {id: 'cv-knee'}, h('strong', {}, kneeX != null ? `Knee at ${kneeX} users: ` : 'No knee: '), sw.knee.reason), h('br'),
    h('span', {id: 'cv-safe'}, h('strong', {}, safeX != null ? `SLO-safe point at ${safeX} users: ` : 'No SLO-safe point: '), sw.slo_safe.reason));
}

// drawEnergy is the batch lesson in joules: energy per output token over
// users from the GPU preset's power model, with a sentence computed from
// the steps: a bigger batch shares the GPU's draw among more tokens, until
// the batch is full; past that each token costs the same while the wait,
// and with it p95 TTFT, breaks the objective.
function drawEnergy(sw, cur) {
  const el = document.getElementById('cv-energy'), text = document.getElementById('cv-energy-text');
  const steps = sw.steps.filter(s => s.energy && s.energy.j_per_output_token != null);
  if (!el || !steps.length) return;
  const mj = s => 1000 * s.energy.j_per_output_token;
  const safeX = sw.slo_safe && sw.slo_safe.load;
  lineChart(el, {title: 'Energy per output token over users', xLabel: 'users', yLabel: 'mJ per token (log scale)', x: steps.map(s => s.load), logX: true, logY: true,
    series: [{label: 'mJ per output token', values: steps.map(mj), color: '#0d9488'}],
    marks: {vlines: [{x: safeX, label: 'SLO-safe', color: '#16a34a'}],
      points: [{x: cur ? cur.params.load : null, y: cur && cur.energy && cur.energy.j_per_output_token != null ? 1000 * cur.energy.j_per_output_token : null, color: '#ea580c'}]}});
  el.dataset.mj = sw.partial ? '' : steps.map(s => mj(s).toFixed(1)).join(',');
  el.dataset.loads = sw.partial ? '' : steps.map(s => s.load).join(',');
  const first = steps[0], safe = steps.find(s => s.load === safeX), last = steps[steps.length - 1];
  if (sw.partial || !safe || safe === first) { text.textContent = ''; return; }
  let t = `Bigger batches, fewer joules per token: at ${first.load} user${first.load === 1 ? '' : 's'} each output token costs ${fmt(mj(first), 'mJ')} of GPU energy, at the SLO-safe ${safe.load} users ${fmt(mj(safe), 'mJ')} (${(mj(first) / mj(safe)).toFixed(0)} times fewer): the GPU's draw is shared by every request in the batch.`;
  if (last !== safe) {
    const change = mj(last) / mj(safe) - 1;
    t += ` Past it, at ${last.load} users, a token costs ${fmt(mj(last), 'mJ')} (${Math.abs(change) < 0.005 ? 'the same' : (change < 0 ? Math.round(-100 * change) + '% less' : Math.round(100 * change) + '% more')}) while p95 TTFT is ${fmt(last.ttft_p95_ms, 'ms')}${last.slo_met ? '' : ', past the objective'}: a full batch saves no more energy, the extra users only wait.`;
  }
  text.textContent = t + ' (From knee\'s power model of the GPU, a point estimate over each whole run.)';
}
