// The owners' Settings page (shown only to a device paired as owner): the values the settings
// layer may hold (GET api/settings), each with where it comes from and a "reset to file" button,
// changed with one PATCH api/settings. An error names its key: it is shown at that field and the
// form stays as it was. Uses app.js's helpers ($, api, act, showError, page).
'use strict';

window.settingsPanel = (() => {
  // answer: the last GET/PATCH answer; byKey: its values by key; edits: key → value not yet saved.
  const st = { answer: null, byKey: new Map(), edits: new Map(), fields: new Map() };

  /// `scene.NAME.rest` → [NAME as written in the key, rest]; null for other keys.
  function sceneKey(key) {
    const m = /^scene\.("[^"]*"|[A-Za-z0-9_-]+)\.(.+)$/.exec(key);
    return m ? [m[1], m[2]] : null;
  }
  const shownName = n => n.replace(/^"|"$/g, '');
  /// A string as TOML writes it ("\"score\"") read back; null when it is no plain string.
  const tomlString = t => (typeof t === 'string' && /^".*"$/.test(t) ? t.slice(1, -1).replace(/\\(["\\])/g, '$1') : null);
  const current = key => (st.edits.has(key) ? st.edits.get(key) : st.byKey.get(key) && st.byKey.get(key).value);

  /// Where a value comes from, in words: the file's place, the reader's default, or who set it.
  function sourceText(v, fallback) {
    if (!v) return fallback || 'not set';
    if (v.layer) return v.source;
    if (v.source === 'default') return 'default';
    return `from the file (${v.source})`;
  }

  // ------------------------------------------------------------ one field

  /// A field for `key`: label, the input `input` (with get() → value), its source, a reset button
  /// when the settings layer holds the key, and a slot for its error.
  function fieldFor(key, title, input, fallback) {
    const v = st.byKey.get(key);
    const box = document.createElement('div');
    box.className = 'setting';
    box.dataset.key = key;
    const id = 'set-' + key.replace(/[^A-Za-z0-9_-]/g, '_');
    input.el.id = id;
    if (input.el.tagName === 'OL') input.el.setAttribute('aria-label', title);
    const label = document.createElement('label');
    label.htmlFor = id;
    label.textContent = title;
    const src = document.createElement('p');
    src.className = 'source';
    src.textContent = sourceText(v, fallback);
    const err = document.createElement('p');
    err.className = 'field-error';
    err.setAttribute('role', 'alert');
    err.hidden = true;
    box.append(label, input.wrap || input.el, src);
    if (v && v.layer) {
      box.append(button('Reset to file', `Reset ${title} to file`, () => reset(key, title), 'ghost reset', false));
    }
    box.append(err);
    st.fields.set(key, { box, err, input });
    const note = () => { st.edits.set(key, input.get()); box.classList.add('edited'); box.classList.remove('invalid'); err.hidden = true; $('#settings-save').disabled = false; };
    input.el.addEventListener('input', note);
    input.el.addEventListener('change', note);
    return box;
  }

  function textInput(key, attrs = {}) {
    const el = document.createElement('input');
    Object.assign(el, attrs);
    const v = current(key);
    el.value = v === undefined || v === null ? '' : String(v);
    return { el, get: () => el.value };
  }
  function numberInput(key, attrs) {
    const i = textInput(key, Object.assign({ type: 'number', inputMode: 'numeric', step: '1' }, attrs));
    return { el: i.el, get: () => (i.el.value === '' ? i.el.value : Number(i.el.value)) };
  }
  /// A choice among `options` (numbers stay numbers); a value not among them is offered too.
  function selectInput(key, options) {
    const el = document.createElement('select');
    const v = current(key);
    const numeric = options.length > 0 && options.every(o => typeof o === 'number');
    const opts = options.map(String);
    if (v !== undefined && v !== null && !opts.includes(String(v))) opts.unshift(String(v));
    el.replaceChildren(...opts.map(o => new Option(o, o)));
    if (v !== undefined && v !== null) el.value = String(v);
    return { el, get: () => (numeric ? Number(el.value) : el.value) };
  }
  function colorInput(key) {
    const el = document.createElement('input');
    el.type = 'color';
    const v = current(key);
    el.value = /^#[0-9a-f]{6}$/i.test(v || '') ? v : ((page.palette && page.palette.primary) || '#4fc3f7');
    return { el, get: () => el.value.toUpperCase() };
  }

  /// A list kept in order (the scene order): each entry with ↑/↓ buttons.
  function orderInput(key) {
    const el = document.createElement('ol');
    el.className = 'order';
    let items = (current(key) || []).slice();
    const draw = () => el.replaceChildren(...items.map((s, i) => {
      const li = document.createElement('li');
      const name = document.createElement('span');
      name.textContent = s;
      const move = (d) => () => {
        [items[i], items[i + d]] = [items[i + d], items[i]];
        draw();
        el.dispatchEvent(new Event('change'));
      };
      const up = button('\u2191', `Move ${s} up`, move(-1), 'chip', false);
      const down = button('\u2193', `Move ${s} down`, move(1), 'chip', false);
      up.disabled = i === 0;
      down.disabled = i === items.length - 1;
      li.append(name, up, down);
      return li;
    }));
    draw();
    return { el, get: () => items.slice() };
  }

  /// A schedule: one period a line, and its picture of the day redrawn as it is typed.
  function scheduleInput(key, kind) {
    const wrap = document.createElement('div');
    const el = document.createElement('textarea');
    el.rows = 3;
    el.spellcheck = false;
    el.value = (current(key) || []).join('\n');
    const pic = document.createElement('div');
    pic.className = 'timeline';
    const get = () => el.value.split('\n').map(s => s.trim()).filter(Boolean);
    const redraw = () => pic.replaceChildren(timeline(get(), kind));
    el.addEventListener('input', redraw);
    redraw();
    wrap.append(el, pic);
    return { el, wrap, get };
  }

  // ------------------------------------------------------------ the day's picture

  const minutes = hhmm => { const m = /^(\d{1,2}):(\d{2})$/.exec(hhmm); return m && +m[1] < 24 && +m[2] < 60 ? +m[1] * 60 + +m[2] : null; };

  /// Brightness: "HH:MM 80%" / "HH:MM off", each until the next starts → [{from, to, level}].
  function brightnessSpans(periods) {
    const ps = periods.map(p => {
      const m = /^(\d{1,2}:\d{2})\s+(off|(\d+(?:\.\d+)?)\s*%)$/i.exec(p);
      const at = m && minutes(m[1]);
      return at === null || !m ? null : { at, level: m[3] === undefined ? 0 : Math.min(100, +m[3]) };
    }).filter(Boolean).sort((a, b) => a.at - b.at);
    return ps.flatMap((p, i) => {
      const next = ps[(i + 1) % ps.length].at;
      if (ps.length === 1) return [{ from: 0, to: 1440, level: p.level }];
      return next > p.at ? [{ from: p.at, to: next, level: p.level }]
                         : [{ from: p.at, to: 1440, level: p.level }, { from: 0, to: next, level: p.level }];
    });
  }
  /// Blanking: "HH:MM-HH:MM" periods with the panel off (may cross midnight) → [{from, to, level: 0}].
  function blankSpans(periods) {
    return periods.flatMap(p => {
      const m = /^(\d{1,2}:\d{2})\s*-\s*(\d{1,2}:\d{2})$/.exec(p);
      const a = m && minutes(m[1]), b = m && minutes(m[2]);
      if (a === null || b === null || !m) return [];
      return b > a ? [{ from: a, to: b, level: 0 }] : [{ from: a, to: 1440, level: 0 }, { from: 0, to: b, level: 0 }];
    });
  }

  /// An SVG of the day (0–24 h): the screen's level at each hour (lit = the theme's primary colour
  /// at that strength, off = dark), hours marked every 6 h. Made by the HTML parser (which puts
  /// <svg> in its namespace) from numbers only.
  function timeline(periods, kind) {
    const W = 240, H = 36, bar = 20;
    const spans = kind === 'brightness' ? brightnessSpans(periods) : blankSpans(periods);
    const x = m => ((m / 1440) * W).toFixed(2);
    const rect = (from, to, cls, opacity) =>
      `<rect class="${cls}" x="${x(from)}" y="0" width="${(x(to) - x(from)).toFixed(2)}" height="${bar}" fill-opacity="${opacity}"/>`;
    let body = rect(0, 1440, 'lit', kind === 'brightness' && spans.length ? 0 : 1);
    for (const s of spans) body += s.level === 0 ? rect(s.from, s.to, 'off', 1) : rect(s.from, s.to, 'lit', (0.25 + 0.75 * s.level / 100).toFixed(3));
    for (const h of [0, 6, 12, 18, 24]) {
      const anchor = h === 0 ? 'start' : h === 24 ? 'end' : 'middle';
      body += `<text x="${h === 0 ? 1 : h === 24 ? W - 1 : x(h * 60)}" y="${H - 2}" text-anchor="${anchor}">${String(h).padStart(2, '0')}</text>`;
    }
    const holder = document.createElement('div');
    holder.innerHTML = `<svg viewBox="0 0 ${W} ${H}" role="img">${body}</svg>`;
    const svg = holder.firstElementChild;
    const words = spans.length
      ? spans.map(s => `${hm(s.from)}\u2013${hm(s.to)} ${s.level === 0 ? 'off' : s.level + '%'}`).join(', ')
      : (kind === 'brightness' ? 'no schedule: the panel\u2019s level all day' : 'never blanked by the schedule');
    svg.setAttribute('aria-label', `The day: ${words}`);
    svg.dataset.spans = JSON.stringify(spans);
    return svg;
  }
  const hm = m => `${String(Math.floor(m / 60)).padStart(2, '0')}:${String(m % 60).padStart(2, '0')}`;

  // ------------------------------------------------------------ the page

  function card(title, ...children) {
    const c = document.createElement('div');
    c.className = 'card settings-group';
    const h = document.createElement('h3');
    h.textContent = title;
    c.append(h, ...children.filter(Boolean));
    return c;
  }

  function render() {
    st.fields.clear();
    const values = (st.answer && st.answer.values) || [];
    const keys = values.map(v => v.key);
    const kinds = new Map();
    for (const v of values) {
      const s = sceneKey(v.key);
      if (s && s[1] === 'kind') kinds.set(s[0], tomlString(v.toml));
    }
    const groups = [];
    // Counters: each counter's label and colour, the scene's digits and minimum.
    for (const [scene, kind] of kinds) {
      if (kind !== 'counter') continue;
      const fields = [];
      const prefix = `scene.${scene}.counter[`;
      const indices = [...new Set(keys.filter(k => k.startsWith(prefix)).map(k => parseInt(k.slice(prefix.length), 10)))].sort((a, b) => a - b);
      for (const i of indices) {
        const base = `scene.${scene}.counter[${i}]`;
        const name = tomlString((values.find(v => v.key === `${base}.name`) || {}).toml) || `counter ${i + 1}`;
        fields.push(fieldFor(`${base}.label`, `${name}: label (team name)`, textInput(`${base}.label`, { maxLength: 64, autocapitalize: 'characters' })));
        fields.push(fieldFor(`${base}.color`, `${name}: colour`, colorInput(`${base}.color`), 'not set (the theme\u2019s colour)'));
      }
      fields.push(fieldFor(`scene.${scene}.digits`, 'Digits', numberInput(`scene.${scene}.digits`, { min: 1, max: 9 })));
      fields.push(fieldFor(`scene.${scene}.min`, 'Minimum', numberInput(`scene.${scene}.min`)));
      groups.push(card(`Scoreboard ${shownName(scene)}`, ...fields));
    }
    // Look and scenes.
    const themes = page.themes ? (Array.isArray(page.themes) ? page.themes : page.themes.themes || []).map(t => (typeof t === 'string' ? t : t.name)) : [];
    const look = [fieldFor('theme', 'Theme', selectInput('theme', themes.length ? themes : [current('theme') || 'default']))];
    if (current('scenes.order')) look.push(fieldFor('scenes.order', 'Scene order', orderInput('scenes.order')));
    for (const k of keys.filter(k => /^output\[\d+\]\.scenes$/.test(k))) {
      const scenes = current(k) || [];
      const input = selectInput(k, scenes);
      input.get = () => [input.el.value, ...scenes.filter(s => s !== input.el.value)];
      look.push(fieldFor(k, `Output ${Number(k.match(/\d+/)[0]) + 1}: default scene`, input));
    }
    groups.push(card('Theme and scenes', ...look));
    // Clocks.
    const zones = typeof Intl.supportedValuesOf === 'function' ? Intl.supportedValuesOf('timeZone') : [];
    for (const [scene, kind] of kinds) {
      if (kind !== 'clock') continue;
      const tz = textInput(`scene.${scene}.time_zone`, { autocapitalize: 'off', spellcheck: false });
      tz.el.setAttribute('list', 'settings-zones');
      groups.push(card(`Clock ${shownName(scene)}`,
        fieldFor(`scene.${scene}.hour_format`, 'Hour format', selectInput(`scene.${scene}.hour_format`, [24, 12])),
        fieldFor(`scene.${scene}.time_zone`, 'Time zone', tz, 'not set (the kiosk\u2019s local time)')));
    }
    $('#settings-zones').replaceChildren(...zones.map(z => new Option(z)));
    // The day: brightness and blanking, with their pictures.
    const day = [
      fieldFor('display.brightness.schedule', 'Brightness schedule (one "HH:MM 80%" or "HH:MM off" a line)',
               scheduleInput('display.brightness.schedule', 'brightness'), 'not set'),
      fieldFor('display.blank.schedule', 'Screen off (one "HH:MM-HH:MM" a line)', scheduleInput('display.blank.schedule', 'blank'), 'not set'),
      ...keys.filter(k => /^output\[\d+\]\.blank\.schedule$/.test(k)).map(k =>
        fieldFor(k, `Output ${Number(k.match(/\d+/)[0]) + 1}: screen off`, scheduleInput(k, 'blank'))),
    ];
    groups.push(card('The day', ...day));
    for (const [scene, kind] of kinds) {
      if (kind !== 'paint') continue;
      groups.push(card(`Paint ${shownName(scene)}`, fieldFor(`scene.${scene}.idle_reset_seconds`,
        'Clear after idle (seconds, 0 = never)', numberInput(`scene.${scene}.idle_reset_seconds`, { min: 0, step: 'any' }))));
    }
    // Home Assistant's name for the kiosk (with [mqtt] only: the broker is how it sees the kiosk).
    if (keys.some(k => k.startsWith('mqtt.'))) {
      const id = tomlString((st.byKey.get('mqtt.id') || {}).toml);
      groups.push(card('Home Assistant', fieldFor('homeassistant.name', 'Name in Home Assistant',
        textInput('homeassistant.name', { maxLength: 64 }), `not set ("kioskd ${id || 'ID'}")`)));
    }
    $('#settings-fields').replaceChildren(...groups);
    $('#settings-file').textContent = st.answer ? st.answer.file : 'the config file';
    // The checkbox only on a fleet's primary (a follower's fleet-wide changes are made there).
    const fleet = st.answer && st.answer.fleet;
    $('#settings-fleet-box').hidden = !(fleet && fleet.role === 'primary');
    $('#settings-fleet-group').textContent = fleet ? `(group ‘${fleet.group}’)` : '';
    $('#settings-save').disabled = st.edits.size === 0;
  }

  /// The field an error is about: the key it names (`key 'scene.score.digits': …`, also an element
  /// such as `display.brightness.schedule[1]`), else the answer's `field`.
  function fieldOf(e) {
    const named = [...String(e.message).matchAll(/key '([^']+)'/g)].map(m => m[1]);
    for (const k of [...named, e.field].filter(Boolean)) {
      for (const [key, f] of st.fields) if (k === key || k.startsWith(key + '[') || k.startsWith(key + '.')) return f;
    }
    return null;
  }

  function showFieldError(e, what) {
    const f = fieldOf(e);
    if (!f) { showError(what, e); return; }
    f.err.textContent = `${e.message} (HTTP ${e.status})`;
    f.err.hidden = false;
    f.box.classList.add('invalid');
    f.box.scrollIntoView({ block: 'center' });
  }

  function take(answer) {
    st.answer = answer;
    st.byKey = new Map(answer.values.map(v => [v.key, v]));
  }

  /// A value the whole fleet was given is changed (and reset) for the fleet: on its primary.
  const fromFleet = key => { const v = st.byKey.get(key); return !!(v && v.layer && /^set from the fleet /.test(v.source)); };
  const forFleet = () => $('#settings-fleet').checked && !$('#settings-fleet-box').hidden;

  async function save() {
    if (!st.edits.size) return;
    const body = Object.fromEntries(st.edits);
    for (const f of st.fields.values()) { f.err.hidden = true; f.box.classList.remove('invalid'); }
    $('#settings-save').disabled = true;
    try {
      take(await api('PATCH', forFleet() ? 'settings/fleet' : 'settings', body));
      st.edits.clear();
      render();
      $('#settings-status').textContent = `Saved ${Object.keys(body).length === 1 ? '1 value' : Object.keys(body).length + ' values'} at ${new Date().toLocaleTimeString()}.`;
    } catch (e) {
      $('#settings-save').disabled = false;
      showFieldError(e, 'Settings');
      $('#settings-status').textContent = 'Nothing was changed.';
    }
  }

  async function reset(key, title) {
    try {
      take(await api('PATCH', fromFleet(key) ? 'settings/fleet' : 'settings', { [key]: null }));
      st.edits.delete(key);
      render();
      $('#settings-status').textContent = `${title}: back to the file's value.`;
    } catch (e) {
      showFieldError(e, `Reset ${title}`);
    }
  }

  async function load() {
    let r;
    try { r = await api('GET', 'settings'); } catch (e) { if (e.status !== 401) showError('Settings', e); return; }
    take(r);
    st.edits.clear();
    render();
    $('#settings-status').textContent = '';
  }

  $('#settings-save').addEventListener('click', save);
  $('#settings-undo').addEventListener('click', load);

  return { load() { if (page.role === 'owner') load(); }, timeline };
})();
