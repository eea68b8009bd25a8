// The learner's progress: sections read, questions answered, lab scenarios
// run. Kept in this browser's local storage only; nothing is sent anywhere.
const key = 'knee-learn-progress-v1';

export function load() {
  try {
    const p = JSON.parse(localStorage.getItem(key) || '{}');
    return {read: p.read || {}, answers: p.answers || {}, lab: p.lab || {}};
  } catch {
    return {read: {}, answers: {}, lab: {}};
  }
}

export function update(f) {
  const p = load();
  f(p);
  try { localStorage.setItem(key, JSON.stringify(p)); } catch { /* storage refused: progress is not kept */ }
  return p;
}

export function reset() {
  try { localStorage.removeItem(key); } catch { /* nothing kept */ }
}

// noteLab records that a lab scenario was run (called by the lab page).
export function noteLab(name) { update(p => { p.lab[name] = true; }); }
