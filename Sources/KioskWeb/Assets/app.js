// The kiosk's phone page: pairs with the kiosk, follows its state live (server-sent events on
// api/events) and changes it through the web API (api/…, the control API's routes and answers).
// Plain JavaScript, no library, no build step.
'use strict';

const $ = (sel, root = document) => root.querySelector(sel);
const $$ = (sel, root = document) => Array.from(root.querySelectorAll(sel));
const MINUS = '\u2212';

const page = {
  kiosk: null,        // the last KioskState (event "state")
  palette: null,      // the theme's colours (GET api/theme, event "theme")
  themes: null,       // GET api/themes
  role: localStorage.getItem('kiosk.role'),   // "owner" | "operator" | "viewer" | null (not known)
  device: localStorage.getItem('kiosk.device'),
  paired: false,
  tab: null,
};

// ---------------------------------------------------------------- the API

class ApiError extends Error {
  constructor(status, message, field) { super(message); this.status = status; this.field = field; }
}

/// Calls the web API: JSON in and out; an error answer ({"error": …}) becomes an ApiError
/// carrying the status and the kiosk's own message.
async function api(method, path, body) {
  const init = { method, credentials: 'same-origin', headers: { Accept: 'application/json' } };
  if (body !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  let res;
  try {
    res = await fetch('api/' + path, init);
  } catch (e) {
    throw new ApiError(0, 'the kiosk did not answer (' + e.message + ')');
  }
  const type = res.headers.get('Content-Type') || '';
  let data = null;
  if (type.includes('json')) data = await res.json().catch(() => null);
  if (!res.ok) {
    const message = data && typeof data.error === 'string' ? data.error : (res.statusText || 'no explanation');
    const err = new ApiError(res.status, message, data && data.field);
    if (res.status === 401) unpaired(message);
    if (res.status === 403 && /viewer/i.test(message)) setRole('viewer');
    throw err;
  }
  return data;
}

/// Carries out a change for a control; shows any error with what was asked.
async function act(what, method, path, body) {
  try {
    return await api(method, path, body);
  } catch (e) {
    showError(what, e);
    return null;
  }
}

// ---------------------------------------------------------------- errors

function showError(what, e) {
  const box = $('#errors');
  const status = e && e.status ? ` (HTTP ${e.status})` : '';
  let text = (e && e.message) || String(e);
  if (e && e.status === 403) text = 'not allowed: ' + text;
  const div = document.createElement('div');
  div.className = 'error';
  div.setAttribute('role', 'alert');
  const span = document.createElement('span');
  span.textContent = `${what}: ${text}${status}`;
  const close = document.createElement('button');
  close.type = 'button';
  close.textContent = 'OK';
  close.setAttribute('aria-label', 'Dismiss');
  close.onclick = () => div.remove();
  div.append(span, close);
  box.append(div);
  while (box.children.length > 3) box.firstElementChild.remove();
  setTimeout(() => div.remove(), 12000);
}

// ---------------------------------------------------------------- colours

function hexToRgb(hex) {
  const m = /^#?([0-9a-f]{6})$/i.exec(String(hex || '').trim());
  if (!m) return null;
  const n = parseInt(m[1], 16);
  return [(n >> 16) & 255, (n >> 8) & 255, n & 255];
}
function luminance(rgb) {
  const c = rgb.map(v => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); });
  return 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2];
}
function contrast(a, b) {
  const la = luminance(a), lb = luminance(b);
  return (Math.max(la, lb) + 0.05) / (Math.min(la, lb) + 0.05);
}
/// The colour to write on `bg`: the theme's text or background colour if either reads well, else black or white.
function onColor(bg, fg, back) {
  for (const c of [fg, back]) if (c && contrast(bg, c) >= 4.5) return c;
  return contrast(bg, [0, 0, 0]) >= contrast(bg, [255, 255, 255]) ? [0, 0, 0] : [255, 255, 255];
}
const css = rgb => `rgb(${rgb[0]} ${rgb[1]} ${rgb[2]})`;

/// Paints the page in the kiosk's theme (the palette of GET api/theme or a "theme" event).
function applyPalette(p) {
  if (!p) return;
  const pal = p.palette || p;
  const get = k => hexToRgb(pal[k]);
  const bg = get('background'), fg = get('text');
  if (!bg || !fg) return;
  page.palette = pal;
  const root = document.documentElement.style;
  root.setProperty('--bg', css(bg));
  root.setProperty('--fg', css(fg));
  for (const k of ['primary', 'secondary', 'highlight', 'neutral']) {
    const c = get(k);
    if (!c) continue;
    root.setProperty('--' + k, css(c));
    root.setProperty('--on-' + k, css(onColor(c, fg, bg)));
  }
  // The big digits in the primary colour only when it reads on the background.
  const primary = get('primary');
  root.setProperty('--digits', css(primary && contrast(primary, bg) >= 3 ? primary : fg));
  document.documentElement.style.colorScheme = luminance(bg) < 0.2 ? 'dark' : 'light';
  let meta = $('meta[name="theme-color"]');
  if (!meta) { meta = document.createElement('meta'); meta.name = 'theme-color'; document.head.append(meta); }
  meta.content = css(bg);
}

// ---------------------------------------------------------------- state helpers

const field = (o, snake, camel) => (o[snake] !== undefined ? o[snake] : o[camel]);
const counters = () => (page.kiosk && page.kiosk.counters) || [];
const paintScenes = () => ((page.kiosk && page.kiosk.paintings) || []).map(p => p.scene);
const counterScenes = () => [...new Set(counters().map(c => c.scene))];
/// Scenes that are neither counters nor paint: the clocks (and any other kind).
function otherScenes() {
  if (!page.kiosk) return [];
  const known = new Set([...counterScenes(), ...paintScenes()]);
  return (page.kiosk.scenes || []).filter(s => !known.has(s));
}
function sceneKind(name) {
  if (counterScenes().includes(name)) return 'counter';
  if (paintScenes().includes(name)) return 'paint';
  if (page.kiosk && page.kiosk.scene === name) return field(page.kiosk, 'scene_kind', 'sceneKind') || 'clock';
  return 'clock';
}
const canChange = () => page.role !== 'viewer';

function setRole(role) {
  if (!role || role === page.role) return;
  page.role = role;
  localStorage.setItem('kiosk.role', role);
  renderRole();
}

function renderRole() {
  const viewer = page.role === 'viewer';
  document.body.classList.toggle('viewer', viewer);
  $('#viewer-note').hidden = !viewer;
  for (const b of $$('[data-change]')) b.disabled = viewer;
  const who = [page.device && `“${page.device}”`, page.role && `paired as ${page.role}`].filter(Boolean).join(', ');
  $('#device').textContent = who ? `This device: ${who}.` : '';
}

// ---------------------------------------------------------------- rendering

/// A button with a visible text and an accessible name; `change` marks it as a change (hidden for viewers).
function button(text, label, onclick, cls = '', change = true) {
  const b = document.createElement('button');
  b.type = 'button';
  b.textContent = text;
  if (label) b.setAttribute('aria-label', label);
  if (cls) b.className = cls;
  if (change) { b.dataset.change = ''; b.disabled = !canChange(); }
  b.addEventListener('click', onclick);
  return b;
}

function showSceneButton(scene) {
  const onScreen = page.kiosk && page.kiosk.scene === scene;
  const b = button(onScreen ? 'on screen' : 'show on screen', `Show ${scene} on screen`,
                   () => act(`Show ${scene}`, 'POST', 'scene', { name: scene }), 'chip' + (onScreen ? ' on' : ''));
  if (onScreen) { b.disabled = true; b.removeAttribute('data-change'); b.setAttribute('aria-disabled', 'true'); }
  return b;
}

/// The scoreboard: one card per counter, grouped by scene; cards are kept (not rebuilt) so a
/// finger on a button is never lost to an update.
function renderCounters() {
  const root = $('#counter-scenes');
  const scenes = counterScenes();
  $('#no-counters').hidden = scenes.length > 0 || !page.kiosk;
  const groups = new Map($$('.scene-group', root).map(g => [g.dataset.scene, g]));
  for (const [name, g] of groups) if (!scenes.includes(name)) g.remove();
  scenes.forEach((scene, i) => {
    let g = groups.get(scene);
    if (!g) {
      g = document.createElement('div');
      g.className = 'scene-group';
      g.dataset.scene = scene;
      g.innerHTML = '<div class="scene-head"><h2></h2><span class="slot"></span></div><div class="gclock-slot"></div><div class="counters"></div>';
      $('h2', g).textContent = scene;
    }
    if (root.children[i] !== g) root.insertBefore(g, root.children[i] || null);
    $('.slot', g).replaceChildren(showSceneButton(scene));
    renderGameClock($('.gclock-slot', g), scene);  // the scene's game clock (gameclock.js)
    const list = $('.counters', g);
    const items = counters().filter(c => c.scene === scene);
    const cards = new Map($$('.counter', list).map(c => [c.dataset.counter, c]));
    for (const [name, c] of cards) if (!items.some(x => x.name === name)) c.remove();
    items.forEach((c, j) => {
      let card = cards.get(c.name);
      if (!card || card.dataset.label !== c.label) {
        const fresh = counterCard(c);
        if (card) card.replaceWith(fresh);
        card = fresh;
      }
      if (list.children[j] !== card) list.insertBefore(card, list.children[j] || null);
      updateCounter(card, c);
    });
  });
}

function counterCard(c) {
  const card = document.createElement('article');
  card.className = 'card counter';
  card.dataset.counter = c.name;
  card.dataset.scene = c.scene;
  card.dataset.label = c.label;
  const head = document.createElement('div');
  head.className = 'head';
  const h = document.createElement('h3');
  h.className = 'label';
  h.textContent = c.label;
  const range = document.createElement('span');
  range.className = 'range';
  head.append(h, range);
  const value = document.createElement('output');
  value.className = 'value';
  value.setAttribute('aria-label', `${c.label} value`);
  const path = `counter/${encodeURIComponent(c.name)}/`;
  const steps = document.createElement('div');
  steps.className = 'steps';
  steps.append(
    button(`${MINUS}1`, `${c.label} ${MINUS}1`, () => change(card, `${c.label} ${MINUS}1`, path + 'dec'), 'secondary'),
    button('+1', `${c.label} +1`, () => change(card, `${c.label} +1`, path + 'inc'), 'primary'));
  const more = document.createElement('div');
  more.className = 'more';
  more.append(
    button('Set to…', `${c.label} set to…`, () => setTo(card)),
    button('Reset', `${c.label} reset`, async () => {
      if (await confirmDialog(`Reset ${c.label} (now ${card.dataset.value})?`, 'Reset')) change(card, `${c.label} reset`, path + 'reset');
    }, 'ghost'));
  card.append(head, value, steps, more);
  return card;
}

function updateCounter(card, c) {
  const v = String(c.value);
  const out = $('.value', card);
  if (out.textContent !== v) {
    const had = out.textContent !== '';
    out.textContent = v;
    if (had) { card.classList.remove('flash'); void card.offsetWidth; card.classList.add('flash'); }
  }
  card.dataset.value = v;
  card.dataset.min = c.minimum;
  card.dataset.max = c.maximum;
  $('.range', card).textContent = `${c.minimum}…${c.maximum}`;
}

/// Sends a counter change and shows the value it answers with at once (the live event follows).
async function change(card, what, path, body) {
  const r = await act(what, 'POST', path, body);
  if (r && typeof r.value === 'number') {
    const c = counters().find(x => x.name === card.dataset.counter && x.scene === card.dataset.scene);
    if (c) c.value = r.value;
    updateCounter(card, Object.assign({}, c || {}, { value: r.value, minimum: card.dataset.min, maximum: card.dataset.max }));
  }
}

async function setTo(card) {
  const d = $('#setto');
  const label = card.dataset.label;
  $('#setto-title').textContent = `Set ${label} to`;
  const input = $('#setto-value');
  input.value = card.dataset.value;
  input.min = card.dataset.min;
  input.max = card.dataset.max;
  $('#setto-range').textContent = `From ${card.dataset.min} to ${card.dataset.max}.`;
  d.returnValue = '';
  d.showModal();
  input.select();
  await new Promise(r => d.addEventListener('close', r, { once: true }));
  if (d.returnValue !== 'ok') return;
  const value = Number(input.value);
  if (!Number.isInteger(value)) { showError(`${label} set to…`, new Error(`“${input.value}” is not a whole number`)); return; }
  change(card, `${label} set to ${value}`, `counter/${encodeURIComponent(card.dataset.counter)}/set`, { value });
}

function confirmDialog(text, ok) {
  const d = $('#confirm');
  $('#confirm-text').textContent = text;
  $('#confirm-ok').textContent = ok;
  d.returnValue = '';
  d.showModal();
  return new Promise(r => d.addEventListener('close', () => r(d.returnValue === 'ok'), { once: true }));
}

function renderPaint() {
  const root = $('#paint-scenes');
  root.replaceChildren(...((page.kiosk && page.kiosk.paintings) || []).map(p => {
    const card = document.createElement('div');
    card.className = 'card';
    card.innerHTML = '<div class="scene-head"><h2></h2><span class="slot"></span></div><p class="hint strokes"></p><div class="paint-actions"></div>';
    $('h2', card).textContent = p.scene;
    $('.slot', card).append(showSceneButton(p.scene));
    $('.strokes', card).textContent = p.strokes === 1 ? '1 stroke on the table' : `${p.strokes} strokes on the table`;
    $('.paint-actions', card).append(
      button('Undo', 'Undo the last stroke', () => act('Undo', 'POST', 'paint/undo')),
      button('Save', 'Save the painting', async () => {
        const r = await act('Save', 'POST', 'paint/save');
        if (r) loadGallery();
      }, 'primary'),
      button('Clear', 'Clear the painting', async () => {
        if (await confirmDialog('Clear the painting? Save it first to keep it.', 'Clear')) act('Clear', 'POST', 'paint/clear');
      }, 'danger'));
    return card;
  }));
}

async function loadGallery() {
  let r;
  try {
    r = await api('GET', 'paintings');
  } catch (e) {
    const missing = e.status === 404;
    $('#gallery-missing').hidden = !missing;
    if (!missing) showError('Saved paintings', e);
    return;
  }
  const list = Array.isArray(r) ? r : (r && r.paintings) || [];
  const items = list.map(p => (typeof p === 'string' ? { name: p } : p));
  $('#gallery-empty').hidden = items.length > 0;
  $('#gallery').replaceChildren(...items.map(p => {
    const li = document.createElement('li');
    const url = 'api/paintings/' + encodeURIComponent(p.name);
    const b = document.createElement('button');
    b.type = 'button';
    b.setAttribute('aria-label', `View ${p.name}`);
    const img = document.createElement('img');
    img.loading = 'lazy';
    img.alt = '';
    img.src = url;
    const span = document.createElement('span');
    span.textContent = p.name;
    b.append(img, span);
    b.onclick = () => {
      $('#painting-name').textContent = p.name;
      $('#painting-img').src = url;
      $('#painting-img').alt = p.name;
      const a = $('#painting-download');
      a.href = url;
      a.download = p.name;
      $('#painting').showModal();
    };
    li.append(b);
    return li;
  }));
}

function renderClock() {
  const root = $('#clock-scenes');
  const scenes = otherScenes();
  root.replaceChildren(...scenes.map(s => {
    const card = document.createElement('div');
    card.className = 'card scene-head';
    const h = document.createElement('h2');
    h.textContent = s;
    card.append(h, showSceneButton(s));
    return card;
  }));
  // Each clock scene's colour mode ({"clocks": [{"scene", "mode", "modes"}]}): one pressed button per clock.
  const clocks = ((page.kiosk && page.kiosk.clocks) || []).filter(c => Array.isArray(c.modes));
  const box = $('#clock-modes');
  box.hidden = clocks.length === 0;
  $('#clock-mode-choices').replaceChildren(...clocks.flatMap(c => c.modes.map(m => {
    const what = clocks.length === 1 ? `Clock mode ${m}` : `${c.scene} mode ${m}`;
    const b = button(clocks.length === 1 ? m : `${c.scene}: ${m}`, what,
                     () => act(what, 'POST', 'clock/mode', { mode: m, scene: c.scene }));
    b.setAttribute('aria-pressed', String(m === c.mode));
    return b;
  })));
}

/// The kiosk's screens: with several outputs each of them ({"outputs": [{"name", "scene",
/// "scenes", "blanked"}]}, addressed by name), else the one screen (name null: no output sent).
function screens() {
  const k = page.kiosk;
  if (!k) return [];
  if (Array.isArray(k.outputs) && k.outputs.length > 1) return k.outputs;
  return [{ name: null, scene: k.scene, scenes: k.scenes || [], blanked: !!k.blanked }];
}
/// A request body for screen `o`: `body` with its output when it has a name.
const onScreen = (o, body) => (o.name ? { ...body, output: o.name } : body);
/// "the screen" or "the screen DSI-1", for labels.
const screenName = o => (o.name ? `the screen ${o.name}` : 'the screen');

function renderScreen() {
  const k = page.kiosk;
  if (!k) return;
  const list = screens();
  // One scene chooser per output, headed by its name when there are several.
  $('#scene-choices').replaceChildren(...list.map(o => {
    const box = document.createElement('div');
    box.className = 'choices';
    box.append(...(o.scenes || []).map(s => {
      const what = o.name ? `Scene ${s} on ${o.name}` : `Scene ${s}`;
      const b = button(s, what, () => act(what, 'POST', 'scene', onScreen(o, { name: s })));
      b.setAttribute('aria-pressed', String(s === o.scene));
      return b;
    }));
    if (!o.name) return box;
    const group = document.createElement('div');
    group.className = 'output';
    group.dataset.output = o.name;
    const h = document.createElement('h4');
    h.textContent = o.name;
    group.append(h, box);
    return group;
  }));
  renderThemes();
  // One on/off switch per output.
  $('#blank-switches').replaceChildren(...list.map(o => {
    const row = document.createElement('div');
    row.className = 'row';
    const h = document.createElement('h3');
    h.textContent = o.name ? `Screen ${o.name}` : 'Screen';
    const what = `Turn ${screenName(o)} ${o.blanked ? 'on' : 'off'}`;
    const b = button(o.blanked ? 'Screen off — turn on' : 'Screen on — turn off', what,
                     () => act(what, 'POST', 'blank', onScreen(o, { on: !o.blanked })), 'toggle');
    b.setAttribute('aria-pressed', String(!!o.blanked));
    row.append(h, b);
    return row;
  }));
  renderPreviewChoice();
}

/// The preview's output chooser: shown with several outputs, keeping the choice while it exists.
function renderPreviewChoice() {
  const select = $('#preview-output');
  const names = screens().map(o => o.name).filter(Boolean);
  select.hidden = names.length === 0;
  if (!names.includes(preview.output)) preview.output = names[0] || null;
  if (select.options.length !== names.length || names.some((n, i) => select.options[i].value !== n)) {
    select.replaceChildren(...names.map(n => new Option(n, n)));
  }
  if (preview.output) select.value = preview.output;
}
$('#preview-output').addEventListener('change', ev => {
  preview.output = ev.target.value;
  preview.last = 0;
  refreshPreview();
});

function renderThemes() {
  const k = page.kiosk;
  const names = page.themes ? (Array.isArray(page.themes) ? page.themes : page.themes.themes || []) : [];
  const chosen = k ? field(k, 'chosen_theme', 'chosenTheme') || k.theme : null;
  for (const box of $$('[data-theme-choices]')) {
    box.replaceChildren(...names.map(t => {
      const name = typeof t === 'string' ? t : t.name;
      const b = button(name, `Theme ${name}`, () => act(`Theme ${name}`, 'POST', 'theme', { name }));
      b.setAttribute('aria-pressed', String(name === chosen));
      return b;
    }));
  }
}

function render() {
  if (!page.kiosk) return;
  const k = page.kiosk;
  $('#title').textContent = k.scene ? `Kiosk · ${k.scene}` : 'Kiosk';
  renderCounters();
  renderPaint();
  renderClock();
  renderScreen();
  renderTabs();
  renderRole();
}

// ---------------------------------------------------------------- pages (tabs)

function availableTabs() {
  const tabs = [];
  if (counterScenes().length) tabs.push('score');
  if (paintScenes().length) tabs.push('paint');
  if (otherScenes().length) tabs.push('clock');
  tabs.push('screen');
  if (page.role === 'owner') tabs.push('devices', 'settings');  // owner.js, settings.js
  return tabs;
}

/// The tab of the scene on screen: the page opens where the kiosk is.
function tabOfScene(scene) {
  const kind = sceneKind(scene);
  return kind === 'counter' ? 'score' : kind === 'paint' ? 'paint' : 'clock';
}

function renderTabs() {
  const tabs = availableTabs();
  for (const a of $$('#tabs a')) a.hidden = !tabs.includes(a.dataset.tab);
  let want = location.hash.replace(/^#/, '');
  if (!tabs.includes(want)) want = page.tab && tabs.includes(page.tab) ? page.tab : tabOfScene(page.kiosk.scene);
  if (!tabs.includes(want)) want = tabs[0];
  showTab(want);
}

function showTab(tab) {
  const changed = page.tab !== tab;
  page.tab = tab;
  $('#tabs').hidden = !page.paired;
  for (const a of $$('#tabs a')) {
    if (a.dataset.tab === tab) a.setAttribute('aria-current', 'page'); else a.removeAttribute('aria-current');
  }
  for (const v of $$('.view')) v.hidden = !page.paired || v.id !== 'view-' + tab;
  // The live preview sits on every page but the scoreboard (whose digits are the state).
  const slot = $(`#view-${tab} .preview-slot`);
  const preview = $('#preview');
  if (slot) { slot.append(preview); preview.hidden = false; refreshPreview(); } else preview.hidden = true;
  if (changed && tab === 'paint') loadGallery();
  if (changed && tab === 'devices' && window.ownerPanel) window.ownerPanel.load();
  if (changed && tab === 'settings' && window.settingsPanel) window.settingsPanel.load();
}

window.addEventListener('hashchange', () => { if (page.kiosk && page.paired) renderTabs(); });

// ---------------------------------------------------------------- live preview

// `output`: the output shown (null with one output); `url`: the picture's object URL.
const preview = { last: 0, timer: null, loading: false, again: false, output: null, url: null };
const PREVIEW_MIN_MS = 1000;

/// Reloads the screenshot, at most once a second; a change meanwhile gives one more afterwards.
function refreshPreview() {
  if ($('#preview').hidden || document.hidden || !page.paired) return;
  const wait = preview.last + PREVIEW_MIN_MS - Date.now();
  if (preview.loading || wait > 0) {
    preview.again = true;
    if (!preview.timer && !preview.loading) preview.timer = setTimeout(() => { preview.timer = null; refreshPreview(); }, wait);
    return;
  }
  preview.again = false;
  preview.loading = true;
  preview.last = Date.now();
  const img = $('#preview-img');
  const what = preview.output ? `screen ${preview.output}` : 'screen';
  const done = ok => {
    preview.loading = false;
    $('#preview-caption').textContent = ok ? `${what} · ${new Date().toLocaleTimeString()}` : `${what}: no picture`;
    if (preview.again) refreshPreview();
  };
  img.onload = () => done(true);
  img.onerror = () => done(false);
  // POST api/screenshot names the output; the picture is shown from an object URL.
  fetch('api/screenshot', {
    method: 'POST', credentials: 'same-origin', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(preview.output ? { output: preview.output } : {}),
  }).then(r => (r.ok ? r.blob() : Promise.reject(new Error(`HTTP ${r.status}`)))).then(blob => {
    if (preview.url) URL.revokeObjectURL(preview.url);
    preview.url = URL.createObjectURL(blob);
    img.src = preview.url;
  }, () => done(false));
}
// A clock changes every second without a state change: its preview follows every few seconds.
setInterval(() => { if (page.tab === 'clock' || page.tab === 'screen') refreshPreview(); }, 5000);
document.addEventListener('visibilitychange', () => { if (!document.hidden) { refreshPreview(); if (page.paired && !live.source) connect(); } });

// ---------------------------------------------------------------- live updates

const live = { source: null, delay: 500, timer: null, lostAt: 0, pingSeen: 0, watchdog: null };

function setConn(state, text) {
  const c = $('#conn');
  c.dataset.state = state;
  c.textContent = text;
  $('#lost').hidden = state !== 'lost';
  if (state === 'lost') $('#lost').textContent = text;
}

/// Opens the event stream; on loss, shows it and opens again after a growing delay (0.5 s
/// doubling to 15 s, with some jitter); a good connection resets the delay.
function connect() {
  clearTimeout(live.timer);
  live.timer = null;
  if (live.source) live.source.close();
  const es = new EventSource('api/events');
  live.source = es;
  es.addEventListener('open', () => {
    live.delay = 500;
    setConn('live', 'live');
  });
  es.addEventListener('state', ev => {
    setConn('live', 'live');
    let s;
    try { s = JSON.parse(ev.data); } catch { return; }
    const before = page.kiosk;
    page.kiosk = s;
    render();
    if (before && (before.theme !== s.theme)) loadTheme();
    if (before && paintScenes().length && JSON.stringify(before.paintings) !== JSON.stringify(s.paintings) && page.tab === 'paint') loadGallery();
    refreshPreview();
  });
  es.addEventListener('theme', ev => {
    try { applyPalette(JSON.parse(ev.data)); } catch { /* a malformed theme event leaves the colours */ }
  });
  es.addEventListener('ping', () => { live.pingSeen = Date.now(); });
  es.addEventListener('revoked', () => unpaired('this device was revoked on the kiosk'));
  es.addEventListener('error', () => {
    if (live.source !== es) return;
    es.close();
    live.source = null;
    lost();
  });
}

async function lost() {
  const delay = Math.min(live.delay, 15000);
  live.delay = Math.min(live.delay * 2, 15000);
  setConn('lost', 'connection lost — reconnecting');
  // The stream cannot tell why it failed: ask once, so a revoked device sees the pairing form.
  try {
    await api('GET', 'session');
  } catch (e) {
    if (e.status === 401) return;
  }
  const wait = delay * (0.8 + Math.random() * 0.4);
  live.timer = setTimeout(() => { live.timer = null; connect(); }, wait);
}

window.addEventListener('online', () => { if (page.paired && !live.source) connect(); });

// ---------------------------------------------------------------- pairing

function codeFromURL() {
  const from = s => { const p = new URLSearchParams(s); return p.get('pair') || p.get('code'); };
  return from(location.hash.replace(/^#/, '')) || from(location.search.replace(/^\?/, ''));
}

function guessDeviceName() {
  const ua = navigator.userAgent;
  if (/iPhone/.test(ua)) return 'iPhone';
  if (/iPad/.test(ua)) return 'iPad';
  if (/Android/.test(ua)) return /Mobile/.test(ua) ? 'Android phone' : 'Android tablet';
  return 'Browser';
}

function showPairing(code, message) {
  page.paired = false;
  if (live.source) { live.source.close(); live.source = null; }
  clearTimeout(live.timer);
  setConn('connecting', 'not paired');
  $('#lost').hidden = true;
  $('#tabs').hidden = true;
  for (const v of $$('.view')) v.hidden = v.id !== 'view-pair';
  $('#preview').hidden = true;
  if (code) $('#pair-code').value = code;
  if (!$('#pair-name').value) $('#pair-name').value = page.device || guessDeviceName();
  if (message) $('#pair-title').textContent = message;
  (code ? $('#pair-name') : $('#pair-code')).focus();
}

function unpaired(message) {
  if (!page.paired && !$('#view-pair').hidden) return;
  showPairing(null, 'Pair this device');
  if (message) showError('Not paired', new Error(message));
}

$('#pair-form').addEventListener('submit', async ev => {
  ev.preventDefault();
  const code = $('#pair-code').value.trim();
  const name = $('#pair-name').value.trim();
  const submit = $('#pair-form button[type=submit]');
  submit.disabled = true;
  try {
    const r = await api('POST', 'pair', { code, name });
    learnSession(r, name);
    // The code is spent: keep it out of the address bar and the history.
    history.replaceState(null, '', location.pathname);
    $('#pair-code').value = '';
    await start();
  } catch (e) {
    showError('Pairing', e);
  } finally {
    submit.disabled = false;
  }
});
$('#pair-cancel').addEventListener('click', () => { history.replaceState(null, '', location.pathname); start(); });

// ---------------------------------------------------------------- start

/// Keeps who this device is ({"device": name, "role": "owner" | "operator" | "viewer"}, from api/session or api/pair).
function learnSession(r, fallbackName) {
  const name = r && (typeof r.device === 'string' ? r.device : r.name);
  page.device = name || fallbackName || page.device;
  if (page.device) localStorage.setItem('kiosk.device', page.device);
  if (r && r.role) { page.role = null; setRole(r.role); }
  renderRole();
}

async function loadTheme() {
  try { applyPalette(await api('GET', 'theme')); } catch (e) { if (e.status !== 401) showError('Theme colours', e); }
}
async function loadThemes() {
  try { page.themes = await api('GET', 'themes'); renderThemes(); } catch (e) { if (e.status !== 401) showError('Themes', e); }
}

/// Shows the kiosk if this device is paired (api/status answers), else the pairing form.
async function start() {
  try {
    learnSession(await api('GET', 'session'));
  } catch (e) {
    if (e.status === 401) { showPairing(codeFromURL()); return; }
    showError('Session', e);
  }
  page.paired = true;
  $('#view-pair').hidden = true;
  setConn('connecting', 'connecting…');
  renderRole();
  loadTheme();
  loadThemes();
  connect();
}

const urlCode = codeFromURL();
if (urlCode) {
  // Opened from the kiosk's QR code: pair (again), or go back to the kiosk if already paired.
  showPairing(urlCode);
  fetch('api/session', { credentials: 'same-origin' }).then(r => { $('#pair-cancel').hidden = !r.ok; }, () => {});
} else {
  start();
}
