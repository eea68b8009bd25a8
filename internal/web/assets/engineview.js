// The engine view: the simulated engine's running batch ("running N of
// max_num_seqs") and waiting queue at a moment of the run, as the engine's
// own steps had them (the answer's batch trace), and one request of the
// same run followed through its phases: "Next phase" moves the clock to
// each, highlights it on the request's bar and shows its token strip (the
// TTFT pause, then ticks one TPOT apart). Every number is the simulator's.
import {h, fmt} from './api.js';

// The most ticks a strip draws; a longer answer shows every k-th token.
const maxTicks = 128;

// phasesOf is request r's path, each phase with its start and end (ms).
export function phasesOf(r) {
  const fe = r.front_end_ms || 0, admitted = r.sent_ms + r.queue_ms;
  const list = [
    {id: 'arrival', name: 'Arrival', from: r.arrival_ms, to: r.sent_ms, cls: 'w',
      text: r.sent_ms > r.arrival_ms ? 'it arrives and waits in the client for a free slot' : 'it arrives and is sent at once'},
    {id: 'front_end', name: 'Front end', from: r.sent_ms, to: r.sent_ms + fe, cls: 'fe', text: 'HTTP, chat template and tokenization, before the engine sees it'},
    {id: 'queue', name: 'Engine queue', from: r.sent_ms + fe, to: admitted, cls: 'q', text: 'it waits in the engine\'s queue until the scheduler has a free slot in the batch and KV blocks for it'},
    {id: 'prefill', name: 'Prefill', from: admitted, to: r.first_token_ms, cls: 'p', text: `its ${r.input_tokens} prompt tokens are processed, in chunks beside the batch's decode`},
    {id: 'first_token', name: 'First token', from: r.first_token_ms, to: r.first_token_ms, cls: 'd', text: 'its first token reaches the user: the TTFT pause ends'},
    {id: 'decode', name: 'Decode', from: r.first_token_ms, to: r.done_ms, cls: 'd', text: `each engine step adds one token: ${r.output_tokens - 1} more, one TPOT apart`},
    {id: 'complete', name: 'Complete', from: r.done_ms, to: r.done_ms, cls: '', text: 'its last token arrives and its slot in the batch is free for the next request'},
  ];
  return list;
}

// countAt reads the batch trace at t: the last change at or before it.
function countAt(b, t) {
  let lo = 0, hi = b.at_ms.length - 1;
  if (hi < 0 || t < b.at_ms[0]) return {running: 0, waiting: 0};
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (b.at_ms[mid] <= t) lo = mid; else hi = mid - 1;
  }
  return {running: b.running[lo], waiting: b.waiting[lo]};
}

// BatchGauge is the batch gauge and the queue bar beside it, read from a
// batch trace at a moment; ids are prefix-gauge and prefix-queue.
export class BatchGauge {
  constructor(prefix) {
    this.prefix = prefix;
    const row = (id, label) => h('div', {class: 'gauge-row'}, h('span', {class: 'gauge-label'}, label),
      h('div', {class: 'gauge', id, role: 'img'}, h('div', {class: 'fill'})), h('span', {class: 'gauge-text', id: id + '-text'}));
    this.runningRow = row(prefix + '-gauge', 'Running batch');
    this.queueRow = row(prefix + '-queue', 'Engine queue');
    this.el = h('div', {class: 'batch-gauge'}, this.runningRow, this.queueRow);
  }

  // at draws the trace b at time t and returns the counts drawn.
  at(b, t) {
    const c = countAt(b, t);
    this.draw(c, b.max_num_seqs, '');
    return c;
  }

  // average draws the time-weighted mean of the trace b over its span.
  average(b) {
    let run = 0, wait = 0;
    const n = b.at_ms.length, span = b.at_ms[n - 1] - b.at_ms[0];
    for (let i = 0; i + 1 < n; i++) {
      const dt = b.at_ms[i + 1] - b.at_ms[i];
      run += b.running[i] * dt; wait += b.waiting[i] * dt;
    }
    const c = span > 0 ? {running: run / span, waiting: wait / span} : {running: b.running[0] || 0, waiting: b.waiting[0] || 0};
    this.draw(c, b.max_num_seqs, 'on average ');
    return c;
  }

  draw(c, m, how) {
    const g = this.runningRow.querySelector('.gauge'), q = this.queueRow.querySelector('.gauge');
    const n = v => (Number.isInteger(v) ? String(v) : v.toFixed(1));
    g.querySelector('.fill').style.width = (100 * Math.min(c.running, m) / m) + '%';
    g.dataset.running = String(c.running); g.dataset.max = String(m);
    g.setAttribute('aria-label', `${how}running ${n(c.running)} of ${m}`);
    this.runningRow.querySelector('.gauge-text').textContent = `${how}running ${n(c.running)} of ${m}` + (c.running >= m ? ' (full)' : '');
    // The queue on the batch's scale: a full bar is a whole batch waiting.
    q.querySelector('.fill').style.width = (100 * Math.min(c.waiting, m) / m) + '%';
    q.dataset.waiting = String(c.waiting);
    q.setAttribute('aria-label', `${how}${n(c.waiting)} waiting`);
    this.queueRow.querySelector('.gauge-text').textContent = `${how}${n(c.waiting)} waiting` + (c.waiting > m ? ` (${(c.waiting / m).toFixed(1)} batches)` : '');
  }
}

export class EngineView {
  constructor(el) {
    this.el = el;
    this.t = 0; this.phase = -1; this.playing = false; this.raf = 0;
    this.gauge = new BatchGauge('eng');
    this.scrub = h('input', {type: 'range', id: 'eng-time', min: 0, max: 1000, step: 1, value: 0, 'aria-label': 'Time in the run',
      oninput: () => { this.pause(); this.setT(this.start + this.span() * this.scrub.value / 1000); }});
    this.clock = h('output', {id: 'eng-clock', for: 'eng-time'}, '0 ms');
    this.play = h('button', {type: 'button', id: 'eng-play', class: 'secondary', 'aria-pressed': 'false', onclick: () => this.toggle()}, 'Play');
    this.next = h('button', {type: 'button', id: 'eng-next', onclick: () => this.nextPhase()}, 'Next phase →');
    this.phaseText = h('p', {id: 'eng-phase-text', class: 'step-text', 'aria-live': 'polite'}, 'Press “Next phase” to follow one request through its phases while the batch fills.');
    this.figs = h('div', {class: 'metrics', id: 'eng-figs'});
    this.bar = h('div', {class: 'bar follow-bar', id: 'eng-req-bar', role: 'img'});
    this.strip = h('div', {class: 'token-strip', id: 'eng-strip', role: 'img'});
    this.note = h('p', {class: 'notes', id: 'eng-note'});
    el.append(h('h2', {}, 'Inside the engine'),
      h('p', {class: 'notes'}, 'The engine runs at most max_num_seqs requests in one batch; one step of the batch adds a token to each. While the batch has room a new request joins at once; once it is full, new requests wait in the engine\'s queue. The gauges are the engine\'s own steps at the clock\'s moment.'),
      this.gauge.el,
      h('div', {class: 'timeline'}, this.play, this.next, h('label', {for: 'eng-time'}, 'Time'), this.scrub, this.clock),
      this.phaseText, this.bar,
      h('p', {class: 'legend notes'}, h('span', {class: 'w'}, 'client wait'), h('span', {class: 'fe'}, 'front end'), h('span', {class: 'q'}, 'engine queue'), h('span', {class: 'p'}, 'prefill'), h('span', {class: 'd'}, 'decode')),
      this.strip, this.figs, this.note);
  }

  span() { return (this.end - this.start) || 1; }

  // setData takes a simulated run (POST /api/sim with lifecycle) and
  // follows one request of its steady state: the first to arrive after
  // 40% of the arrivals.
  setData(res) {
    this.pause();
    this.batch = res.batch;
    const reqs = (res.lifecycle || []).filter(r => !r.error && r.done_ms > 0);
    this.el.hidden = !this.batch || !reqs.length;
    if (this.el.hidden) return;
    this.start = this.batch.at_ms[0];
    this.end = Math.max(...reqs.map(r => r.done_ms));
    // 40% into the arrivals' span: an overload's queue drains long after
    // the last arrival.
    const first = Math.min(...reqs.map(r => r.arrival_ms)), last = Math.max(...reqs.map(r => r.arrival_ms));
    const from = first + 0.4 * (last - first);
    this.req = reqs.find(r => !r.warmup && r.arrival_ms >= from) || reqs[Math.floor(reqs.length / 2)];
    this.phases = phasesOf(this.req);
    this.phase = -1;
    const r = this.req, ttft = r.first_token_ms - r.sent_ms, tpot = r.output_tokens > 1 ? (r.done_ms - r.first_token_ms) / (r.output_tokens - 1) : 0;
    this.tpot = tpot;
    const fig = (id, label, v, unit) => h('div', {class: 'metric', id: 'eng-' + id, dataset: {value: String(v)}},
      h('span', {class: 'label'}, label), h('span', {class: 'value'}, unit ? fmt(v, unit) : String(v)));
    const dur = p => this.phases.find(x => x.id === p);
    this.figs.replaceChildren(
      fig('wait', 'Client wait', dur('arrival').to - dur('arrival').from, 'ms'),
      fig('fe', 'Front end', dur('front_end').to - dur('front_end').from, 'ms'),
      fig('q', 'Engine queue', dur('queue').to - dur('queue').from, 'ms'),
      fig('p', 'Prefill', dur('prefill').to - dur('prefill').from, 'ms'),
      fig('ttft', 'TTFT', ttft, 'ms'),
      fig('tpot', 'TPOT', tpot, 'ms'),
      fig('out', 'Output tokens', r.output_tokens),
      fig('e2e', 'E2E', r.done_ms - r.sent_ms, 'ms'));
    // The request's bar on its own clock, arrival to last token.
    const a = r.arrival_ms, w = (r.done_ms - a) || 1, pct = v => (100 * v / w) + '%';
    this.cursor = h('div', {class: 'cursor'});
    this.segs = this.phases.filter(p => p.to > p.from).map(p => h('span', {class: p.cls, dataset: {phase: p.id, from: String(p.from), to: String(p.to)},
      style: `left:${pct(p.from - a)};width:${pct(p.to - p.from)}`}));
    this.bar.replaceChildren(...this.segs, this.cursor);
    this.bar.setAttribute('aria-label', `request ${r.id}: ` + this.phases.filter(p => p.to > p.from).map(p => `${p.name.toLowerCase()} ${fmt(p.to - p.from, 'ms')}`).join(', '));
    // The token strip on the same clock: the TTFT pause, then one tick a
    // token, each one TPOT after the last.
    const every = Math.ceil(r.output_tokens / maxTicks);
    const ticks = [];
    for (let i = 0; i < r.output_tokens; i += every) {
      const at = r.first_token_ms + i * tpot;
      ticks.push(h('span', {class: 'tick', dataset: {at: String(at), token: String(i + 1)}, style: `left:${pct(at - a)}`}));
    }
    this.ticks = ticks;
    this.strip.replaceChildren(h('span', {class: 'pause', style: `left:${pct(r.sent_ms - a)};width:${pct(ttft)}`}), ...ticks);
    this.strip.dataset.every = String(every);
    this.strip.setAttribute('aria-label', `token strip: no token for ${fmt(ttft, 'ms')} (TTFT), then ${r.output_tokens} tokens one TPOT (${fmt(tpot, 'ms')}) apart` + (every > 1 ? `, one tick every ${every} tokens` : ''));
    this.note.textContent = `Following request ${r.id}, the first to arrive after 40% of the run's arrivals (the steady state): ${r.input_tokens} prompt tokens, ${r.output_tokens} output tokens. Its ticks are one TPOT (its mean gap) apart` +
      (every > 1 ? `, one tick every ${every} tokens.` : '.') + (this.batch.thinned ? ' The gauges skip some of the engine\'s many steps.' : '');
    this.el.dataset.req = String(r.id);
    this.setT(this.start + this.span() / 2);
    this.el.dataset.ready = String(Number(this.el.dataset.ready || 0) + 1);
  }

  setT(t) {
    this.t = t;
    this.gauge.at(this.batch, t);
    this.scrub.value = String(Math.round(1000 * (t - this.start) / this.span()));
    this.clock.textContent = fmt(t - this.start, 'ms');
    this.clock.dataset.t = String(t);
    const r = this.req, a = r.arrival_ms, w = (r.done_ms - a) || 1;
    const inside = t >= a && t <= r.done_ms;
    this.cursor.style.left = (100 * Math.min(Math.max(t - a, 0), w) / w) + '%';
    this.cursor.hidden = !inside;
    for (const tk of this.ticks) tk.classList.toggle('sent', Number(tk.dataset.at) <= t);
  }

  // nextPhase moves the clock to the start of the followed request's next
  // phase (skipping those it did not spend time in, but not its instants).
  nextPhase() {
    this.pause();
    let i = this.phase;
    do { i = (i + 1) % this.phases.length; } while (this.phases[i].to <= this.phases[i].from && !['first_token', 'complete'].includes(this.phases[i].id) && i !== this.phase);
    this.phase = i;
    const p = this.phases[i];
    this.setT(p.from);
    for (const s of this.segs) s.classList.toggle('focus', s.dataset.phase === p.id);
    const c = countAt(this.batch, p.from);
    const d = p.to > p.from ? ` for ${fmt(p.to - p.from, 'ms')}` : '';
    this.phaseText.textContent = `${i + 1} ${p.name}${d}: ${p.text}. The engine is running ${c.running} of ${this.batch.max_num_seqs} with ${c.waiting} waiting.`;
    this.phaseText.dataset.phase = p.id;
    this.phaseText.dataset.from = String(p.from);
    this.phaseText.dataset.to = String(p.to);
  }

  toggle() { this.playing ? this.pause() : this.startPlay(); }

  // startPlay runs the clock at a tenth of real time over the followed
  // request's life, from its arrival, then from the run's start again.
  startPlay() {
    this.playing = true; this.play.textContent = 'Pause'; this.play.setAttribute('aria-pressed', 'true');
    let last = performance.now();
    const tick = now => {
      if (!this.playing) return;
      let t = this.t + (now - last) * 0.1;
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
}

// StepView is the engine one iteration at a time, from a run's engine
// steps (the answer's engine_steps): max_num_seqs slots, each step's
// decoding requests (one token each) and the requests whose prompt, or a
// chunk of it, joins them; the step's tokens against the token budget;
// the waiting queue; and the requests the step preempted. The buttons
// move one step; the slider jumps. ids are prefixed "es-".
export class StepView {
  constructor() {
    this.i = 0;
    this.slots = h('div', {class: 'es-slots', id: 'es-slots', 'aria-hidden': 'true'});
    this.budget = h('div', {class: 'gauge', id: 'es-budget'}, h('div', {class: 'fill es-prefill'}), h('div', {class: 'fill es-decode'}));
    this.queue = h('div', {class: 'gauge', id: 'es-queue'}, h('div', {class: 'fill'}));
    this.text = h('p', {id: 'es-text', 'aria-live': 'polite'});
    this.range = h('input', {type: 'range', id: 'es-step', min: 0, max: 0, value: 0, 'aria-label': 'engine step'});
    this.range.addEventListener('input', () => this.show(Number(this.range.value)));
    this.el = h('section', {class: 'card', id: 'engine-steps', 'aria-labelledby': 'es-h'},
      h('h2', {id: 'es-h'}, 'The engine, one step at a time'),
      h('p', {class: 'notes'}, 'Each engine step (iteration) runs one batch: every request already decoding makes one token, and requests still in prefill add their prompt tokens, in chunks, as long as the step\'s token budget (max_num_batched_tokens) lasts. These are the simulated run\'s own steps (from its first, or from a little before its first preemption when that comes late): watch the slots fill, a prefill chunk join a decode batch, and, when the KV cache runs out, a request preempted back to the queue.'),
      h('div', {class: 'steps'},
        h('button', {type: 'button', id: 'es-prev', class: 'secondary', onclick: () => this.show(this.i - 1)}, '← Previous step'),
        h('button', {type: 'button', id: 'es-next', onclick: () => this.show(this.i + 1)}, 'Next step →'),
        h('button', {type: 'button', id: 'es-preempt', class: 'secondary', onclick: () => this.nextPreemption()}, 'Next preemption'),
        this.range),
      this.slots,
      h('div', {class: 'gauge-row'}, h('span', {class: 'gauge-label'}, 'Step tokens'), this.budget, h('span', {class: 'gauge-text', id: 'es-budget-text'})),
      h('div', {class: 'gauge-row'}, h('span', {class: 'gauge-label'}, 'Waiting'), this.queue, h('span', {class: 'gauge-text', id: 'es-queue-text'})),
      h('p', {class: 'notes es-key'}, h('span', {class: 'es-cell es-d'}), ' decoding (one token)  ', h('span', {class: 'es-cell es-p'}), ' prefill chunk  ', h('span', {class: 'es-cell'}), ' free slot'),
      this.text);
  }

  setSteps(s) {
    this.s = s;
    this.el.hidden = !s || !s.start_ms.length;
    if (this.el.hidden) return;
    // One cell a slot up to 256 slots; beyond, a cell stands for several.
    this.per = Math.max(1, Math.ceil(s.max_num_seqs / 256));
    const cells = Math.ceil(s.max_num_seqs / this.per);
    this.slots.replaceChildren(...Array.from({length: cells}, () => h('span', {class: 'es-cell'})));
    this.range.max = String(s.start_ms.length - 1);
    this.show(Math.min(this.i, s.start_ms.length - 1));
  }

  nextPreemption() {
    const s = this.s;
    for (let j = this.i + 1; j < s.preempted.length; j++) if (s.preempted[j] > 0) return this.show(j);
  }

  show(i) {
    const s = this.s;
    if (!s) return;
    i = Math.max(0, Math.min(s.start_ms.length - 1, i));
    this.i = i;
    this.range.value = String(i);
    const d = s.decode[i], p = s.prefill[i], pt = s.prefill_tokens[i], w = s.waiting[i], pre = s.preempted[i];
    const cells = this.slots.children, dc = Math.ceil(d / this.per), pc = Math.ceil((d + p) / this.per) - dc;
    for (let c = 0; c < cells.length; c++) cells[c].className = 'es-cell' + (c < dc ? ' es-d' : c < dc + pc ? ' es-p' : '');
    const tokens = d + pt, budget = s.max_num_batched_tokens;
    this.budget.children[0].style.width = (100 * pt / budget) + '%';
    this.budget.children[1].style.left = (100 * pt / budget) + '%';
    this.budget.children[1].style.width = (100 * d / budget) + '%';
    document.getElementById('es-budget-text')?.replaceChildren(`${tokens} of ${budget}`);
    const qTop = Math.max(s.max_num_seqs, ...s.waiting);
    this.queue.children[0].style.width = (100 * w / qTop) + '%';
    document.getElementById('es-queue-text')?.replaceChildren(`${w} waiting`);
    Object.assign(this.el.dataset, {step: String(s.first + i), decode: String(d), prefill: String(p), prefillTokens: String(pt),
      waiting: String(w), preempted: String(pre), slots: String(s.max_num_seqs), budget: String(budget), kv: String(s.kv_usage[i])});
    const reqs = n => `${n} request${n === 1 ? '' : 's'}`;
    let t = `Step ${s.first + i + 1} of ${s.total} (at ${fmt(s.start_ms[i], 'ms')}, ${fmt(s.dur_ms[i], 'ms')} long): `;
    const parts = [];
    if (d) parts.push(`${reqs(d)} decode one token each`);
    if (p) parts.push(`${reqs(p)} prefill ${pt} prompt tokens` + (d ? ' — a prefill chunk joins the decode batch' : ''));
    t += (parts.length ? parts.join('; ') : 'nothing runs') + `; ${d + p} of ${s.max_num_seqs} slots busy; ${w} waiting; KV cache ${fmt(s.kv_usage[i], '%')} full.`;
    if (pre) t += ` The KV cache ran out: ${reqs(pre)} preempted — ${pre === 1 ? 'its' : 'their'} KV blocks freed, back to the queue to be recomputed from the prompt.`;
    this.text.textContent = t;
    this.el.classList.toggle('es-preempting', pre > 0);
  }
}
