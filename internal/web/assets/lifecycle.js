// The lifecycle view: requests of a simulated run (or of a live bench, see
// runs.js) moving through the six phases of SPEC §1, the count in each
// phase, each request's time split into queue, prefill and decode, a
// step-through of the phases, and the worked pair.
import {api, h, fmt, reducedMotion, debounce, stacked} from './api.js';
import {defaults} from './sim.js';
import {BatchGauge, StepView} from './engineview.js';

export const phases = [
  {id: 'arrival', title: '1 Arrival', text: 'A request arrives when the load model schedules it — a user presses enter (open loop), or a user\'s previous answer has just finished (closed loop). Shown here for a moment after it arrives, and while the client holds it back.'},
  {id: 'queue', title: '2 Queue', text: 'It waits: in the client for a free slot, then, after the server\'s front end (HTTP, chat template, tokenization: about 12 ms on a quiet server, more on a busy one; part of TTFT but no queue), in the engine\'s waiting queue until the scheduler admits it to the running batch (limited by max sequences and free KV-cache blocks). Waiting adds to what the user feels but does no work.'},
  {id: 'prefill', title: '3 Prefill', text: 'The engine processes every prompt token, in chunks that fit the batched-token budget beside everyone else\'s decode; its cost grows with the prompt length.'},
  {id: 'first_token', title: '4 First token', text: 'The first output token leaves: time to first token (TTFT) is queue plus prefill — how long the user stares at an empty answer.'},
  {id: 'decode', title: '5 Decode', text: 'Every engine step adds one token to each running request; the time per output token (TPOT) grows with the batch and the context it reads from the KV cache.'},
  {id: 'complete', title: '6 Complete', text: 'The last token arrives: end-to-end latency is TTFT plus (output tokens − 1) × TPOT. Its KV blocks are freed for the requests waiting behind it.'},
];

// phaseAt says where request r is at time t (ms). Arrival and first token
// are instants: a request shows in their lane for w ms after them.
export function phaseAt(r, t, w) {
  if (t < r.arrival_ms) return null;
  if (r.error) return t >= r.done_ms ? null : (t < r.sent_ms + r.queue_ms ? 'queue' : 'prefill');
  if (t >= r.done_ms) return 'complete';
  if (r.first_token_ms > 0 && t >= r.first_token_ms) return t < r.first_token_ms + w ? 'first_token' : 'decode';
  if (t < Math.max(r.sent_ms, r.arrival_ms + w)) return 'arrival';
  if (t >= r.sent_ms + r.queue_ms) return 'prefill';
  return 'queue';
}

// LifecycleView draws a set of requests and animates a clock over them.
export class LifecycleView {
  constructor(el, {showBars = true} = {}) {
    this.el = el;
    this.reqs = [];
    this.t = 0; this.playing = false; this.raf = 0; this.focus = -1;
    this.lanes = {};
    const laneEls = phases.map(p => {
      const count = h('span', {class: 'count', id: 'count-' + p.id, dataset: {count: '0'}}, '0');
      const dots = h('div', {class: 'dots', 'aria-hidden': 'true'});
      // The followed request's dot, first in the lane it is in.
      const mine = h('span', {class: 'dot followed', hidden: true, title: 'the followed request'});
      this.lanes[p.id] = {count, dots, mine};
      return h('div', {class: 'lane', dataset: {phase: p.id}, id: 'lane-' + p.id}, h('h3', {}, p.title), count, mine, dots);
    });
    this.lanesEl = h('div', {class: 'lanes', role: 'group', 'aria-label': 'Requests in each phase'}, laneEls);
    this.play = h('button', {type: 'button', id: 'lc-play', 'aria-pressed': 'false', onclick: () => this.toggle()}, 'Play');
    this.scrub = h('input', {type: 'range', id: 'lc-time', min: 0, max: 1000, step: 1, value: 0, 'aria-label': 'Time in the run',
      oninput: () => { this.pause(); this.setT(this.span() * this.scrub.value / 1000); }});
    this.clock = h('output', {id: 'lc-clock', for: 'lc-time'}, '0 ms');
    this.speed = h('select', {id: 'lc-speed', 'aria-label': 'Playback speed'},
      ['0.05', '0.1', '0.25', '0.5', '1'].map(s => h('option', {value: s}, '×' + s + ' real time')));
    this.speed.value = '0.25';
    this.bars = h('div', {class: 'bars', id: 'lc-bars', role: 'img', 'aria-label': 'Each request\'s time split into client wait, front end, engine queue, prefill and decode'});
    // The time axis under the scrubber: the run's clock at five points.
    this.axis = h('div', {class: 'time-axis', id: 'lc-axis', 'aria-hidden': 'true'});
    // The engine's batch at the clock's moment, when the run has a trace
    // of it (a simulated run; a live bench's does not).
    this.gauge = new BatchGauge('lc');
    this.gauge.el.hidden = true;
    el.append(this.gauge.el, this.lanesEl,
      h('div', {class: 'timeline'}, this.play, h('label', {for: 'lc-time'}, 'Time'), this.scrub, this.clock, this.speed),
      this.axis,
      showBars ? h('div', {class: 'card'}, h('h2', {}, 'Where each request\'s time went'),
        h('p', {class: 'legend notes'}, 'Each row is one request on the run\'s clock, from its arrival to its last token:',
          h('span', {class: 'w'}, 'client wait'), h('span', {class: 'fe'}, 'front end'), h('span', {class: 'q'}, 'engine queue'), h('span', {class: 'p'}, 'prefill'), h('span', {class: 'd'}, 'decode')),
        this.bars) : null);
  }

  span() { return this.end - this.start; }

  setRequests(reqs, {keepTime = false} = {}) {
    this.reqs = reqs.filter(r => r.done_ms > 0);
    this.start = Math.min(...this.reqs.map(r => r.arrival_ms), Infinity);
    this.end = Math.max(...this.reqs.map(r => r.done_ms), -Infinity);
    if (!this.reqs.length) { this.start = 0; this.end = 1; }
    this.w = Math.max(20, this.span() / 120);
    this.axis.replaceChildren(...[0, 1, 2, 3, 4].map(i => h('span', {}, fmt(this.span() * i / 4, 'ms'))));
    if (!keepTime) this.t = this.start + this.span() / 2;
    this.drawBars();
    this.setT(Math.min(Math.max(this.t, this.start), this.end));
  }

  // setBatch takes the engine's batch trace (null: none to draw).
  setBatch(b) {
    this.batch = b || null;
    this.gauge.el.hidden = !this.batch;
  }

  // follow marks request r: its dot in the lanes and its bar.
  follow(r) {
    this.followed = r || null;
    this.drawBars();
    this.setT(this.t);
  }

  setT(t) {
    this.t = t;
    if (this.batch) this.gauge.at(this.batch, t);
    const mine = this.followed ? phaseAt(this.followed, t, this.w) : null;
    for (const p of phases) this.lanes[p.id].mine.hidden = p.id !== mine;
    const counts = Object.fromEntries(phases.map(p => [p.id, 0]));
    for (const r of this.reqs) {
      const ph = phaseAt(r, t, this.w);
      if (ph) counts[ph]++;
    }
    for (const p of phases) {
      const l = this.lanes[p.id], n = counts[p.id];
      if (l.count.dataset.count !== String(n)) {
        l.count.dataset.count = String(n); l.count.textContent = String(n);
        const shown = Math.min(n, 80);
        l.dots.replaceChildren(...Array.from({length: shown}, () => h('span', {class: 'dot'})), n > shown ? h('small', {}, ' +' + (n - shown)) : '');
      }
    }
    this.scrub.value = String(Math.round(1000 * (t - this.start) / (this.span() || 1)));
    this.clock.textContent = fmt(t - this.start, 'ms');
    this.clock.dataset.t = String(t);
    if (this.cursor) this.cursor.style.left = (100 * (t - this.start) / (this.span() || 1)) + '%';
  }

  drawBars() {
    // At most 60 rows, spread evenly over the run so late queueing shows.
    const every = Math.ceil(this.reqs.length / 60) || 1;
    const rows = this.reqs.filter((r, i) => i % every === 0 || r === this.followed);
    const span = this.span() || 1, pct = v => (100 * v / span) + '%';
    this.cursor = h('div', {class: 'cursor', style: 'position:absolute;top:0;bottom:0;width:2px;background:#0f172a;left:0'});
    this.bars.replaceChildren(h('div', {style: 'position:relative'}, this.cursor, ...rows.map(r => {
      // queue_ms is the time in the server before prefill; its front end
      // (HTTP, template, tokenization) is drawn as a phase of its own.
      const wait = Math.max(0, r.sent_ms - r.arrival_ms), fe = r.front_end_ms || 0, q = Math.max(0, r.queue_ms - fe), p = r.prefill_ms;
      const dec = Math.max(0, r.done_ms - (r.first_token_ms || r.done_ms));
      const segs = [['w', wait], ['fe', fe], ['q', q], ['p', Math.max(0, (r.first_token_ms || r.done_ms) - r.sent_ms - r.queue_ms)], ['d', dec]];
      // A stored sweep numbers its requests within each step (knee records).
      const name = r.step === undefined ? `request ${r.id}` : `request ${r.id} of step ${r.step}`;
      const title = `${name}: client wait ${fmt(wait, 'ms')}, front end ${fmt(fe, 'ms')}, queue ${fmt(q, 'ms')}, prefill ${fmt(p, 'ms')}, decode ${fmt(dec, 'ms')}, ${r.input_tokens} in / ${r.output_tokens} out`;
      return h('div', {class: 'bar' + (r === this.followed ? ' followed' : ''), title, dataset: r.step === undefined ? {id: String(r.id)} : {id: String(r.id), step: String(r.step)}},
        h('span', {style: `width:${pct(r.arrival_ms - this.start)};background:transparent`}),
        ...segs.map(([c, v]) => h('span', {class: c, style: `width:${pct(v)}`})));
    })));
  }

  toggle() { this.playing ? this.pause() : this.start_(); }

  start_() {
    if (!this.reqs.length) return;
    this.playing = true; this.play.textContent = 'Pause'; this.play.setAttribute('aria-pressed', 'true');
    let last = performance.now();
    const tick = now => {
      if (!this.playing) return;
      let t = this.t + (now - last) * Number(this.speed.value);
      last = now;
      if (t > this.end) t = this.start;
      this.setT(t);
      this.raf = requestAnimationFrame(tick);
    };
    this.raf = requestAnimationFrame(tick);
  }

  pause() {
    this.playing = false; cancelAnimationFrame(this.raf);
    this.play.textContent = 'Play'; this.play.setAttribute('aria-pressed', 'false');
  }

  setFocus(i) {
    this.focus = i;
    for (const [k, p] of phases.entries()) document.getElementById('lane-' + p.id)?.classList.toggle('focus', k === i);
  }
}

let view = null;

// lifecycleRequests: arrivals for six seconds at the default rate, longer
// than a request takes end to end there, so some moment of the run has a
// request in every phase at once, from arriving to complete
// (TestLifecycleDefaultQueues holds this number too: keep them equal).
const lifecycleRequests = 900;

export async function mount(el, ctx) {
  const base = ctx.simParams || defaults;
  // The lifecycle starts at an open-loop rate above the default engine's
  // capacity (about 49 req/s since the defaults were refitted), so a queue forms in most moments of the run
  // (TestLifecycleDefaultQueues holds this number: keep them equal).
  const p = {...base, load_kind: 'rate', load: ctx.lifecycleRate || 150, lifecycle: true, requests: lifecycleRequests};
  const rate = h('input', {id: 'lc-rate', type: 'number', min: 0.5, max: 2000, step: 'any', value: p.load});
  const status = h('p', {class: 'notes', id: 'lc-status', 'aria-live': 'polite'});
  const stepText = h('p', {class: 'step-text', id: 'step-text', 'aria-live': 'polite'}, 'Step through the six phases of a request, one sentence each.');
  let stepI = -1;
  const showStep = i => {
    stepI = Math.max(0, Math.min(phases.length - 1, i));
    view.pause();
    view.setFocus(stepI);
    let follow = '';
    const r = view.followed;
    if (r) {
      // The clock moves to where the followed request enters the phase
      // (phaseAt's bounds), so its dot is in the lane in focus.
      const w = view.w;
      const at = {arrival: r.arrival_ms, queue: Math.max(r.sent_ms, r.arrival_ms + w), prefill: Math.max(r.sent_ms + r.queue_ms, r.arrival_ms + w),
        first_token: r.first_token_ms, decode: r.first_token_ms + w, complete: r.done_ms}[phases[stepI].id];
      view.setT(at);
      const here = phaseAt(r, at, w) === phases[stepI].id;
      follow = ` Request ${r.id} (its dot ringed, its bar marked) ` + (here ? `is here at ${fmt(at - view.start, 'ms')} of the run.` : 'spends no time in this phase.');
      stepText.dataset.at = String(at);
      stepText.dataset.here = String(here);
    }
    stepText.textContent = phases[stepI].title + ' — ' + phases[stepI].text + follow;
    stepText.dataset.step = String(stepI + 1);
  };
  el.append(h('h1', {}, 'Request lifecycle'),
    h('p', {class: 'lede'}, 'Each dot is a request of a simulated run (knee\'s engine, the simulator page\'s model, GPU and limits) at the moment the clock shows. Watch where requests pile up: before the first token (queue, prefill) or after it (decode).'),
    h('div', {class: 'filters'},
      h('div', {class: 'field'}, h('label', {for: 'lc-rate'}, 'Arrival rate (req/s)'), rate),
      h('div', {class: 'field'}, h('span', {}, 'Prompt / output tokens'), h('span', {}, `${p.input_tokens} / ${p.output_tokens} (from the simulator page)`))),
    status);
  const holder = h('div', {id: 'lifecycle'});
  // The step-through sits just above the lanes it highlights, so the lane
  // in focus is on screen when a button is pressed.
  el.append(h('section', {class: 'card step-card', 'aria-label': 'Step through the phases'},
    h('div', {class: 'steps'},
      h('button', {type: 'button', id: 'step-prev', class: 'secondary', onclick: () => showStep(stepI - 1)}, '← Previous phase'),
      h('button', {type: 'button', id: 'step-next', onclick: () => showStep(stepI + 1)}, 'Next phase →')),
    stepText));
  el.append(holder);
  view = new LifecycleView(holder);
  // The same run's engine, one iteration at a time.
  const steps = new StepView();
  el.append(steps.el);
  const pairEl = h('section', {class: 'card', id: 'pair', 'aria-label': 'The worked pair'}, h('h2', {}, 'The worked pair: same latency, different bottleneck'), h('p', {class: 'notes'}, 'simulating…'));
  el.append(pairEl);

  const load = async () => {
    p.load = Number(rate.value);
    ctx.lifecycleRate = p.load;
    try {
      const res = await api('/api/sim', p);
      view.setRequests(res.lifecycle);
      view.setBatch(res.batch);
      steps.setSteps(res.engine_steps);
      // Follow one request of the steady state: the first to arrive after
      // 40% of the arrivals' span (an overload's queue drains long after
      // the last arrival).
      const lastArrival = Math.max(...view.reqs.map(r => r.arrival_ms));
      const from = view.start + 0.4 * (lastArrival - view.start);
      view.follow(view.reqs.find(r => !r.warmup && !r.error && r.arrival_ms >= from) || null);
      status.textContent = `${res.lifecycle.length} requests at ${p.load} req/s on ${res.engine.name}: TTFT p50 ${fmt(res.figures.ttft_ms.p50, 'ms')}, queue p50 ${fmt(res.figures.queue_ms.p50, 'ms')} (front end ${fmt(res.figures.front_end_ms.p50, 'ms')} besides), TPOT p50 ${fmt(res.figures.tpot_ms.p50, 'ms')} — ${res.pressure.level}.`;
      status.dataset.ready = '1';
      if (!reducedMotion() && !view.playing && stepI < 0) view.start_();
    } catch (e) {
      status.textContent = e.message; status.className = 'error';
    }
  };
  rate.addEventListener('input', debounce(load, 150));
  await load();
  renderPair(pairEl);
}

export function unmount() { if (view) view.pause(); view = null; }

async function renderPair(el) {
  let r;
  try { r = await api('/api/pair', {}); } catch (e) { el.append(h('p', {class: 'error'}, e.message)); return; }
  el.replaceChildren(h('h2', {}, 'The worked pair: same latency, different bottleneck'), ...pairView(r, 'pair'), ...(r.lesson ? [lessonTableView(r.lesson)] : []));
}

const phoneWidth = () => window.matchMedia('(max-width: 700px)').matches;

// pairView shows the worked pair: each run's phase bar, its split and
// knee diagnose's verdict (ids: prefix-queue, prefix-decode). The Learn
// page shows it too.
export function pairView(r, prefix) {
  const maxE2E = Math.max(r.queue_dominated.mean_ms.e2e, r.decode_dominated.mean_ms.e2e);
  const side = (s, id) => {
    const m = s.mean_ms, pct = v => (100 * v / maxE2E) + '%';
    return h('div', {id, dataset: {verdict: s.diagnosis.verdict}},
      h('h3', {}, s.title),
      h('p', {class: 'notes'}, `${s.load}${s.step_time_scale !== 1 ? `, engine steps ×${s.step_time_scale.toFixed(2)}` : ''}`),
      h('div', {class: 'bar', style: 'height:22px', role: 'img', 'aria-label': `queue ${fmt(m.queue, 'ms')}, prefill ${fmt(m.prefill, 'ms')}, decode ${fmt(m.decode, 'ms')}`},
        h('span', {class: 'q', style: `width:${pct(m.queue)}`}), h('span', {class: 'p', style: `width:${pct(m.prefill)}`}), h('span', {class: 'd', style: `width:${pct(m.decode)}`})),
      h('p', {}, `mean E2E ${fmt(m.e2e, 'ms')} = queue ${fmt(m.queue, 'ms')} + prefill ${fmt(m.prefill, 'ms')} + decode ${fmt(m.decode, 'ms')}`),
      h('p', {}, 'knee diagnose: ', h('span', {class: 'verdict'}, s.diagnosis.verdict)),
      // On a phone the evidence and the action fold away, so the two
      // sides fit one screen (open them to read); a desktop shows them.
      h('details', {class: 'evidence', open: !phoneWidth()}, h('summary', {}, 'Evidence and action'),
        h('ul', {}, (s.diagnosis.evidence || []).slice(0, 4).map(e => h('li', {}, e.text))),
        h('p', {class: 'notes'}, 'Action: ' + s.diagnosis.action)));
  };
  return [h('p', {class: 'notes'}, `Two simulated runs of ${r.engine} whose requests take the same time end to end on average, diagnosed by knee against the same healthy run (mean E2E ${fmt(r.baseline_mean_ms.e2e, 'ms')}). The total alone cannot tell them apart; the split can.`),
    h('p', {class: 'legend notes'}, h('span', {class: 'q'}, 'queue'), h('span', {class: 'p'}, 'prefill'), h('span', {class: 'd'}, 'decode')),
    h('div', {class: 'pair-grid'}, side(r.queue_dominated, prefix + '-queue'), side(r.decode_dominated, prefix + '-decode')),
    ...(r.lesson ? lessonPairView(r.lesson, prefix) : [])];
}

// lessonPairView is the lesson's own pair (A and B, 4.0 s each), as files
// of per-request phase times with no baseline, diagnosed by knee.
function lessonPairView(l, prefix) {
  const side = (s, i) => {
    const pct = v => (100 * v / s.total_s) + '%';
    return h('div', {id: `${prefix}-lesson-${s.name.toLowerCase()}`, class: 'lesson-side', dataset: {verdict: s.diagnosis.verdict, queue: s.queue_s, prefill: s.prefill_s, decode: s.decode_s, total: s.total_s}},
      h('h3', {}, `Request ${s.name}`),
      h('div', {class: 'bar', style: 'height:22px', role: 'img', 'aria-label': `queue ${s.queue_s} s, prefill ${s.prefill_s} s, decode ${s.decode_s} s`},
        h('span', {class: 'q', style: `width:${pct(s.queue_s)}`}), h('span', {class: 'p', style: `width:${pct(s.prefill_s)}`}), h('span', {class: 'd', style: `width:${pct(s.decode_s)}`})),
      h('p', {}, `total ${s.total_s.toFixed(1)} s = queue ${s.queue_s.toFixed(1)} s + prefill ${s.prefill_s.toFixed(1)} s + decode ${s.decode_s.toFixed(1)} s`),
      h('p', {}, 'knee diagnose (no baseline): ', h('span', {class: 'verdict'}, s.diagnosis.verdict)),
      h('p', {class: 'notes'}, 'Action: ' + s.diagnosis.action));
  };
  return [h('h3', {}, "The lesson's own pair"),
    h('p', {class: 'notes', id: prefix + '-lesson-note'}, `The two requests of the lesson, ${l.pair.map(s => s.total_s.toFixed(1) + ' s').join(' and ')} end to end, written as a file of per-request phase times and read by knee diagnose with nothing to compare against. ` +
      l.pair.map(s => `${s.name} ${s.diagnosis.verdict === 'queue_pressure' ? 'waits' : 'generates'}: ${s.diagnosis.verdict}, the queue ${(100 * s.queue_s / s.total_s).toFixed(1)}% of it, decode ${(100 * s.decode_s / s.total_s).toFixed(1)}%.`).join(' ') +
      ' Where decode dominates, knee names it as where the time goes and what to compare its speed with; without a reference it cannot call it slow.'),
    h('div', {class: 'pair-grid'}, ...l.pair.map(side))];
}

// lessonTableView is the lesson's load table through knee's sweep analysis:
// the knee, the SLO-safe row and the row of highest throughput, marked.
export function lessonTableView(l) {
  const t = l.table;
  const mark = row => [row.load === t.knee.load ? 'knee' : '', row.load === t.slo_safe.load ? 'SLO-safe' : '', row.load === t.highest_load ? 'highest throughput' : ''].filter(Boolean).join(', ');
  return h('div', {id: 'lesson-table', class: 'table-wrap'},
    h('h3', {}, "The lesson's load table, analysed by knee"),
    stacked(h('table', {},
      h('thead', {}, h('tr', {}, h('th', {id: 'lesson-load-head'}, `load (${t.load_unit})`), h('th', {}, 'throughput (req/s)'), h('th', {}, 'p95 TTFT'), h('th', {}, t.slo), h('th', {}, 'knee says'))),
      h('tbody', {}, t.rows.map(row => h('tr', {dataset: {load: row.load, mark: mark(row)}, class: mark(row) ? 'marked' : ''},
        h('td', {}, row.load), h('td', {}, row.throughput_rps.toFixed(1)), h('td', {}, row.ttft_p95_s.toFixed(1) + ' s'),
        h('td', {}, row.slo_met ? 'met' : 'failed'), h('td', {}, mark(row))))))),
    h('p', {class: 'notes', id: 'lesson-load-note'}, t.load_note),
    h('p', {class: 'notes'}, `Knee: ${t.knee.reason}. SLO-safe: ${t.slo_safe.reason}.`),
    h('p', {class: 'notes', id: 'lesson-highest-why'}, t.highest_why));
}
