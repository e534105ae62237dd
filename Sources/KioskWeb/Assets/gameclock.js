// The scoreboard's game clock on the phone page (docs/web.md, docs/scoreboard.md): the time
// left, the period and the shot clock of each counter scene with a `[scene.NAME.clock]`, and
// the scorekeeper's buttons. Loaded after app.js, whose helpers it uses ($, button, act, page,
// confirmDialog); app.js's renderCounters calls renderGameClock for each scene's slot.
//
// The kiosk sends a clock only when it changes ("running since T with R left", in the `state`
// event's game_clocks, with now_monotonic_ns: the instant the event was sent, on the clock T is
// on). The page works out the time left at its own instant from these and redraws only when
// what it shows changes (each second, or each tenth under the threshold), as the screen does.
'use strict';

const gclock = { state: null, receivedMs: 0, timer: null, cards: new Map() };

const gameClocks = () => (page.kiosk && (page.kiosk.game_clocks || page.kiosk.gameClocks)) || [];

/// The time left of a kept run ({remaining_ms, since_monotonic_ns}) now, in milliseconds (never below 0).
function gclockLeftMs(run) {
  if (!run) return 0;
  const since = field(run, 'since_monotonic_ns', 'sinceMonotonicNs');
  const r = field(run, 'remaining_ms', 'remainingMs');
  if (since === null || since === undefined) return r;
  const sent = field(page.kiosk, 'now_monotonic_ns', 'nowMonotonicNs') || since;
  return Math.max(0, r - (sent - since) / 1e6 - (performance.now() - gclock.receivedMs));
}

/// What a clock counting down shows with `ms` left: tenths rounded up, `S.t` under the
/// threshold, else whole seconds rounded up (`M:SS`, or `S` for the shot clock), as the kiosk.
function gclockDown(ms, tenthsBelowMs, minutes) {
  const n = Math.ceil(Math.max(ms, 0) / 100);
  if (n < Math.ceil(tenthsBelowMs / 100)) return { text: `${Math.floor(n / 10)}.${n % 10}`, low: true, tenths: true };
  const s = Math.ceil(n / 10);
  return { text: minutes ? gclockMinutes(s) : String(s), low: false, tenths: false };
}
const gclockMinutes = s => `${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}`;

/// The face of clock `c` now: its game clock's text, the shot clock's, and when either next changes (ms, null: never).
function gclockFace(c) {
  const face = c.face || {};
  const length = field(face, 'period_length_ms', 'periodLengthMs');
  const showsGame = field(face, 'shows_game_clock', 'showsGameClock') !== false;
  const gameRun = showsGame ? c : null;
  const left = gclockLeftMs(c);
  let game = null;
  let wait = null;
  const soonest = w => { if (w > 0 && (wait === null || w < wait)) wait = w; };
  if (gameRun) {
    if (face.direction === 'up') {
      const played = Math.max(0, length - left);
      game = { text: gclockMinutes(Math.floor(played / 1000)), low: left === 0, tenths: false };
      if (c.since_monotonic_ns != null && left > 0) soonest(1000 - (played % 1000));
    } else {
      const below = field(face, 'tenths_below_ms', 'tenthsBelowMs') || 0;
      game = gclockDown(left, below, true);
      game.low = game.low || left === 0;
      if (c.since_monotonic_ns != null && left > 0) soonest(gclockNextDown(left, below));
    }
  }
  let shot = null;
  if (c.shot) {
    const shotLeft = showsGame ? gclockLeftMs(c.shot) : left;
    shot = gclockDown(shotLeft, field(face, 'shot_tenths_below_ms', 'shotTenthsBelowMs') || 5000, false);
    shot.low = shot.low || shotLeft === 0;
    if (c.shot.since_monotonic_ns != null && shotLeft > 0) soonest(gclockNextDown(shotLeft, field(face, 'shot_tenths_below_ms', 'shotTenthsBelowMs') || 5000));
  }
  return { game, shot, wait };
}

/// Counting down with `ms` left, how long until the face changes: the next tenth under the
/// threshold, else the next whole second or the threshold, whichever comes first.
function gclockNextDown(ms, tenthsBelowMs) {
  const n = Math.ceil(ms / 100);
  const threshold = Math.ceil(tenthsBelowMs / 100);
  const k = n - 1 < threshold ? n - 1 : Math.max(Math.floor((n - 1) / 10) * 10, threshold - 1);
  return ms - k * 100;
}

/// Sends a clock command (`POST api/clock {"words": […], "scene"}`, the words of `kioskctl clock`).
function clockCommand(scene, what, words) {
  return act(what, 'POST', 'clock', { words, scene });
}

/// The clock of `scene` in `slot` (emptied when the scene has none). The card is kept across
/// updates (a finger on a button is never lost to one).
function renderGameClock(slot, scene) {
  if (page.kiosk !== gclock.state) { gclock.state = page.kiosk; gclock.receivedMs = performance.now(); }
  const c = gameClocks().find(x => x.scene === scene);
  let card = $('.gclock', slot);
  if (!c) { if (card) card.remove(); gclock.cards.delete(scene); return; }
  if (!card || card.dataset.shot !== String(!!c.shot) || card.dataset.horn !== gclockHornKind()) {
    const fresh = gclockCard(scene, c);
    if (card) card.replaceWith(fresh); else slot.append(fresh);
    card = fresh;
  }
  gclock.cards.set(scene, card);
  gclockUpdate(card, c);
  gclockTick();
}

/// "none" (no [audio]), "off" (no sound device), "muted" or "on".
function gclockHornKind() {
  const h = page.kiosk && page.kiosk.horn;
  if (!h) return 'none';
  return !h.available ? 'off' : h.muted ? 'muted' : 'on';
}

function gclockCard(scene, c) {
  const card = document.createElement('article');
  card.className = 'card gclock';
  card.dataset.scene = scene;
  card.dataset.shot = String(!!c.shot);
  card.dataset.horn = gclockHornKind();
  const face = document.createElement('div');
  face.className = 'gclock-face';
  const time = document.createElement('output');
  time.className = 'gclock-time';
  time.setAttribute('aria-label', 'Game clock');
  const side = document.createElement('div');
  side.className = 'gclock-side';
  const period = document.createElement('span');
  period.className = 'gclock-period';
  side.append(period);
  if (c.shot) {
    const shot = document.createElement('output');
    shot.className = 'gclock-shot';
    shot.setAttribute('aria-label', 'Shot clock');
    side.append(shot);
  }
  const state = document.createElement('span');
  state.className = 'gclock-state';
  side.append(state);
  face.append(time, side);
  if (field(c.face || {}, 'shows_game_clock', 'showsGameClock') === false) time.hidden = true;

  const run = (what, words) => () => clockCommand(scene, what, words);
  const controls = document.createElement('div');
  controls.className = 'gclock-controls';
  const toggle = button('Start', 'Start the clock', () => {
    const running = card.dataset.running === 'true';
    clockCommand(scene, running ? 'Stop the clock' : 'Start the clock', [running ? 'stop' : 'start']);
  }, 'primary gclock-toggle');
  const steps = document.createElement('div');
  steps.className = 'gclock-steps';
  steps.append(
    button(`${MINUS}1 min`, `Clock ${MINUS}1 min`, run(`Clock ${MINUS}1 min`, ['adjust', '-60'])),
    button(`${MINUS}1 s`, `Clock ${MINUS}1 s`, run(`Clock ${MINUS}1 s`, ['adjust', '-1'])),
    button('+1 s', 'Clock +1 s', run('Clock +1 s', ['adjust', '+1'])),
    button('+1 min', 'Clock +1 min', run('Clock +1 min', ['adjust', '+60'])));
  const more = document.createElement('div');
  more.className = 'gclock-more';
  more.append(
    button('Set…', 'Set the clock…', () => gclockSetTo(card)),
    button('Next period', 'Next period', run('Next period', ['period', 'next'])));
  if (c.shot) more.append(button('Reset shot', 'Reset the shot clock', run('Reset the shot clock', ['reset', '--shot']), 'secondary'));
  const kind = gclockHornKind();
  if (kind !== 'none') {
    const horn = button(kind === 'muted' ? 'Horn (muted)' : 'Horn', 'Sound the horn', () => act('Horn', 'POST', 'horn'), 'horn');
    if (kind === 'off') { horn.disabled = true; horn.removeAttribute('data-change'); horn.textContent = 'Horn: no sound device'; }
    more.append(horn);
  }
  more.append(button('Reset', 'Reset the clock', async () => {
    if (await confirmDialog(`Reset the clock of ${scene} to the start of period 1?`, 'Reset')) clockCommand(scene, 'Reset the clock', ['reset']);
  }, 'ghost'));
  controls.append(toggle, steps, more);
  card.append(face, controls);
  return card;
}

/// Shows clock `c` on its card now (the time left computed here, from the kept run).
function gclockUpdate(card, c) {
  const f = gclockFace(c);
  const running = c.since_monotonic_ns != null;
  card.dataset.running = String(running);
  const time = $('.gclock-time', card);
  if (f.game) {
    if (time.textContent !== f.game.text) time.textContent = f.game.text;
    time.classList.toggle('low', f.game.low);
  }
  const shot = $('.gclock-shot', card);
  if (shot && f.shot) {
    if (shot.textContent !== f.shot.text) shot.textContent = f.shot.text;
    shot.classList.toggle('low', f.shot.low);
  }
  $('.gclock-period', card).textContent = `Period ${c.period} of ${c.periods}`;
  const kind = gclockHornKind();
  const horn = page.kiosk && page.kiosk.horn;
  $('.gclock-state', card).textContent = (running ? 'running' : 'stopped')
    + (horn && horn.muted ? ' · horn muted' : '') + (kind === 'off' ? ' · no sound device' : '');
  const toggle = $('.gclock-toggle', card);
  const label = running ? 'Stop the clock' : 'Start the clock';
  if (toggle.getAttribute('aria-label') !== label) {
    toggle.setAttribute('aria-label', label);
    toggle.textContent = running ? 'Stop' : 'Start';
    toggle.classList.toggle('primary', !running);
    toggle.classList.toggle('danger', running);
  }
  return f.wait;
}

/// Redraws the clocks when what they show next changes; nothing runs while every clock is stopped.
function gclockTick() {
  clearTimeout(gclock.timer);
  gclock.timer = null;
  let wait = null;
  for (const [scene, card] of gclock.cards) {
    const c = gameClocks().find(x => x.scene === scene);
    if (!c || !card.isConnected) { gclock.cards.delete(scene); continue; }
    const w = gclockUpdate(card, c);
    if (w !== null && (wait === null || w < wait)) wait = w;
  }
  if (wait !== null && !document.hidden) gclock.timer = setTimeout(gclockTick, Math.ceil(wait) + 1);
}
document.addEventListener('visibilitychange', () => { if (!document.hidden) gclockTick(); });

/// "Set…": a time as the kiosk takes it (`M:SS` or `M:SS.t`; plain seconds such as 45.5 too).
async function gclockSetTo(card) {
  const scene = card.dataset.scene;
  const c = gameClocks().find(x => x.scene === scene);
  const d = $('#clockset');
  const input = $('#clockset-value');
  input.value = $('.gclock-time', card).textContent;
  const length = c && c.face ? field(c.face, 'period_length_ms', 'periodLengthMs') : null;
  $('#clockset-range').textContent = length ? `From 0:00 to ${gclockMinutes(Math.floor(length / 1000))}${length % 1000 ? '.' + Math.floor(length % 1000 / 100) : ''}: M:SS or M:SS.t (7:30, 0:45.5).` : 'M:SS or M:SS.t (7:30, 0:45.5).';
  d.returnValue = '';
  d.showModal();
  input.select();
  await new Promise(r => d.addEventListener('close', r, { once: true }));
  if (d.returnValue !== 'ok') return;
  const text = gclockTimeText(input.value);
  if (!text) { showError('Set the clock', new Error(`“${input.value}” is not a time M:SS or M:SS.t`)); return; }
  clockCommand(scene, `Set the clock to ${text}`, ['set', text]);
}

/// A typed time as `M:SS[.t]`: "7:30" and "0:45.5" as they are, "45.5" or "90" as seconds; null: not a time.
function gclockTimeText(typed) {
  const t = String(typed).trim();
  if (/^\d{1,2}:\d{2}(\.\d)?$/.test(t)) return t;
  if (!/^\d{1,4}(\.\d)?$/.test(t)) return null;
  const tenths = Math.round(Number(t) * 10);
  const s = Math.floor(tenths / 10);
  return gclockMinutes(s) + (tenths % 10 ? `.${tenths % 10}` : '');
}
