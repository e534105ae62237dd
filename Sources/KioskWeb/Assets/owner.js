// The owners' page ("Devices", shown only to a device paired as owner): the paired devices with
// their role and last use, revoking one, opening a code for another device, and the log's recent
// warnings and errors. Uses app.js's helpers ($, api, act, button, confirmDialog, showError, page).
'use strict';

window.ownerPanel = (() => {
  const when = iso => (iso ? new Date(iso).toLocaleString() : 'never');

  /// GET api/devices: one row per device, with a revoke button named `Revoke NAME`.
  async function loadDevices() {
    let r;
    try { r = await api('GET', 'devices'); } catch (e) { if (e.status !== 401) showError('Devices', e); return; }
    const list = $('#device-list');
    const devices = (r && r.devices) || [];
    $('#devices-empty').hidden = devices.length > 0;
    list.replaceChildren(...devices.map(d => {
      const li = document.createElement('li');
      li.dataset.device = d.name;
      const who = document.createElement('span');
      who.className = 'who';
      const me = d.name === page.device ? ' (this device)' : '';
      who.textContent = `${d.name}${me} · ${d.role}`;
      const seen = document.createElement('span');
      seen.className = 'when';
      seen.textContent = `last seen ${when(d.last_use)} · paired ${when(d.created)}`;
      who.append(seen);
      li.append(who, button('Revoke', `Revoke ${d.name}`, () => revoke(d.name), 'danger', false));
      return li;
    }));
  }

  async function revoke(name) {
    const self = name === page.device;
    const ok = await confirmDialog(self ? `Revoke this device (${name})? It will have to pair again.`
                                        : `Revoke ${name}? It is refused at once and has to pair again.`, 'Revoke');
    if (!ok) return;
    const r = await act(`Revoke ${name}`, 'POST', `devices/${encodeURIComponent(name)}/revoke`);
    if (r) loadDevices();
  }

  /// POST api/devices/pair: a one-time code for another device, shown here (and on the kiosk).
  async function openCode(role) {
    const show = $('#pair-on-screen').checked;
    const r = await act(`Pair a ${role}`, 'POST', 'devices/pair', { role, show });
    const out = $('#pair-opened');
    if (!r) { out.hidden = true; return; }
    out.replaceChildren();
    const code = document.createElement('code');
    code.textContent = r.code;
    const link = document.createElement('a');
    link.href = r.url;
    link.textContent = r.url;
    out.append(`Code for a ${r.role}: `, code, document.createElement('br'),
               `Open on the other device: `, link, document.createElement('br'),
               `valid once, until ${new Date(r.expires).toLocaleTimeString()}${r.shown ? '; also on the kiosk\u2019s screen' : ''}.`);
    out.hidden = false;
  }

  function renderPairButtons() {
    const root = $('#pair-roles');
    if (root.childElementCount) return;
    for (const role of ['viewer', 'operator', 'owner']) {
      root.append(button(`Pair ${role === 'owner' || role === 'operator' ? 'an' : 'a'} ${role}`, `Pair a new ${role}`, () => openCode(role), '', false));
    }
  }

  /// GET api/errors: newest first.
  async function loadErrors() {
    let r;
    try { r = await api('GET', 'errors'); } catch (e) { if (e.status !== 401) showError('Recent errors', e); return; }
    const entries = ((r && r.errors) || []).slice().reverse();
    $('#recent-errors-empty').hidden = entries.length > 0;
    $('#recent-errors').replaceChildren(...entries.map(e => {
      const li = document.createElement('li');
      li.dataset.level = e.level;
      const t = document.createElement('time');
      t.dateTime = e.time;
      t.textContent = `${new Date(e.time).toLocaleString()} · ${e.level}`;
      li.append(t, e.message);
      return li;
    }));
  }

  $('#recent-errors-reload').addEventListener('click', loadErrors);

  return {
    load() {
      if (page.role !== 'owner') return;
      renderPairButtons();
      loadDevices();
      loadErrors();
    },
  };
})();
