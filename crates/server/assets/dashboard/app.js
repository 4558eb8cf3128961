// bayesd dashboard (ADR 0006): plain JavaScript, no library, drawing inline SVG from the public /v1 API.
// `/` lists the studies, `/studies/{id}` shows one study. Every plot mark that stands for an observation carries
// data-mark="<plot>" (and data-obs="<index>") so that the browser tests can count them.
'use strict';

(() => {
  const app = document.getElementById('app');
  const TOKEN_KEY = 'bayesd.token';
  const SVG_NS = 'http://www.w3.org/2000/svg';
  const LIST_PAGE = 25;
  const STUDY_POLL_MS = 3000;
  const LIST_POLL_MS = 5000;

  // ---------------------------------------------------------------- API access and the token

  class AuthError extends Error {}
  class ApiError extends Error {
    constructor(status, problem) {
      super((problem && (problem.detail || problem.title)) || `HTTP ${status}`);
      this.status = status;
      this.problem = problem;
    }
  }

  const token = () => sessionStorage.getItem(TOKEN_KEY);

  async function request(method, path, body, accept = 'application/json') {
    const headers = { Accept: accept };
    const t = token();
    if (t) headers.Authorization = `Bearer ${t}`;
    const init = { method, headers, cache: 'no-store' };
    if (body !== undefined) {
      headers['Content-Type'] = 'application/json';
      init.body = JSON.stringify(body);
    }
    const res = await fetch(path, init);
    if (res.status === 401) throw new AuthError(t ? 'The token was not accepted.' : '');
    if (!res.ok) {
      let problem = null;
      try { problem = await res.json(); } catch (_) { /* not JSON */ }
      throw new ApiError(res.status, problem);
    }
    return res;
  }
  const getJson = async (path) => (await request('GET', path)).json();
  const postJson = async (path, body) => (await request('POST', path, body)).json();

  /** Every item of a paged collection (pages of 1000, following next_cursor). */
  async function getAll(path, key) {
    const out = [];
    let after = '';
    for (;;) {
      const sep = path.includes('?') ? '&' : '?';
      const page = await getJson(`${path}${sep}limit=1000${after ? `&after=${encodeURIComponent(after)}` : ''}`);
      out.push(...page[key]);
      if (!page.next_cursor) return out;
      after = page.next_cursor;
    }
  }

  /** The token form: shown when the API answers 401; nothing of a study is on the page meanwhile. */
  function showTokenForm(message) {
    stopPolling();
    sessionStorage.removeItem(TOKEN_KEY);
    updateForgetButton();
    const input = h('input', { id: 'token', type: 'password', autocomplete: 'off', required: '' });
    const form = h('form', { class: 'token panel', 'aria-labelledby': 'token-title' },
      h('h1', { id: 'token-title' }, 'API token required'),
      h('p', {}, 'This server requires a bearer token. It is kept for this browser tab only (sessionStorage) ' +
        'and sent with every API call.'),
      message ? h('p', { class: 'error', role: 'alert' }, message) : null,
      h('label', { for: 'token' }, 'Token'),
      input,
      h('button', { class: 'btn', type: 'submit' }, 'Continue'));
    form.addEventListener('submit', (e) => {
      e.preventDefault();
      const v = input.value.trim();
      if (!v) return;
      sessionStorage.setItem(TOKEN_KEY, v);
      updateForgetButton();
      route();
    });
    app.replaceChildren(form);
    input.focus();
  }

  function updateForgetButton() {
    const b = document.getElementById('forget-token');
    if (b) b.hidden = !token();
  }

  // ---------------------------------------------------------------- DOM helpers

  function build(el, attrs, children) {
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
      else el.setAttribute(k, v === true ? '' : String(v));
    }
    for (const c of children.flat(Infinity)) {
      if (c === null || c === undefined || c === false) continue;
      el.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return el;
  }
  const h = (tag, attrs, ...children) => build(document.createElement(tag), attrs, children);
  const s = (tag, attrs, ...children) => build(document.createElementNS(SVG_NS, tag), attrs, children);

  function fmt(v) {
    if (v === null || v === undefined || Number.isNaN(v)) return '—';
    if (typeof v !== 'number') return String(v);
    if (v === 0) return '0';
    const a = Math.abs(v);
    if (a >= 1e5 || a < 1e-3) return v.toExponential(2);
    return String(Number(v.toPrecision(4)));
  }
  function ago(iso) {
    const sec = Math.max(0, (Date.now() - Date.parse(iso)) / 1000);
    if (sec < 60) return `${Math.round(sec)} s ago`;
    if (sec < 3600) return `${Math.round(sec / 60)} min ago`;
    if (sec < 86400) return `${Math.round(sec / 3600)} h ago`;
    return `${Math.round(sec / 86400)} d ago`;
  }
  const time = (iso) => h('time', { datetime: iso, title: iso }, ago(iso));
  const badge = (status) => h('span', { class: `badge ${status}` }, status);

  // ---------------------------------------------------------------- scales, colours, axes

  function niceTicks(lo, hi, n = 5) {
    if (!(hi > lo)) return [lo];
    const step0 = (hi - lo) / n;
    const mag = 10 ** Math.floor(Math.log10(step0));
    const err = step0 / mag; // in [1, 10): round to 1, 2, 5 or 10 (as d3's tickIncrement)
    const step = (err >= 7.07 ? 10 : err >= 3.16 ? 5 : err >= 1.41 ? 2 : 1) * mag;
    const out = [];
    for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push(Math.abs(v) < step * 1e-9 ? 0 : v);
    return out;
  }

  /**
   * A scale from an axis spec onto [r0, r1]: {type: 'linear'|'log', domain: [lo, hi]} or {type: 'band', choices}.
   * Returns f(value) with f.ticks() and f.label(value).
   */
  function scale(spec, r0, r1) {
    if (spec.type === 'band') {
      const n = spec.choices.length;
      const bw = (r1 - r0) / Math.max(n, 1);
      const f = (v) => r0 + bw * (spec.choices.indexOf(v) + 0.5);
      f.bandwidth = bw;
      f.ticks = () => spec.choices;
      f.label = (v) => String(v);
      return f;
    }
    let [lo, hi] = spec.domain;
    if (!(hi > lo)) { lo -= 1; hi += 1; }
    if (spec.type === 'log' && lo > 0) {
      const [l0, l1] = [Math.log10(lo), Math.log10(hi)];
      const f = (v) => r0 + ((Math.log10(Math.max(v, lo * 1e-12)) - l0) / (l1 - l0)) * (r1 - r0);
      f.ticks = () => {
        const decades = [];
        for (let e = Math.ceil(l0 - 1e-9); e <= Math.floor(l1 + 1e-9); e++) decades.push(10 ** e);
        if (decades.length >= 2) return decades;
        return niceTicks(lo, hi, 4);
      };
      f.label = fmt;
      return f;
    }
    const f = (v) => r0 + ((v - lo) / (hi - lo)) * (r1 - r0);
    f.ticks = (n) => niceTicks(lo, hi, n);
    f.label = fmt;
    return f;
  }

  /** A [lo, hi] domain around the values, padded by 5 %. */
  function extent(values, pad = 0.05) {
    const v = values.filter((x) => Number.isFinite(x));
    if (!v.length) return [0, 1];
    let lo = Math.min(...v);
    let hi = Math.max(...v);
    if (hi === lo) { const d = Math.abs(lo) * 0.1 || 1; lo -= d; hi += d; }
    const p = (hi - lo) * pad;
    return [lo - p, hi + p];
  }

  // A colour ramp (viridis stops): t = 0 worst … 1 best.
  const RAMP = [[68, 1, 84], [59, 82, 139], [33, 145, 140], [94, 201, 98], [253, 231, 37]];
  function ramp(t) {
    const x = Math.min(1, Math.max(0, Number.isFinite(t) ? t : 0)) * (RAMP.length - 1);
    const i = Math.min(RAMP.length - 2, Math.floor(x));
    const f = x - i;
    const c = RAMP[i].map((a, k) => Math.round(a + (RAMP[i + 1][k] - a) * f));
    return `rgb(${c.join(',')})`;
  }
  const PALETTE = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b', '#e377c2', '#17becf', '#7f7f7f', '#bcbd22'];

  /** The axis spec of a parameter: its range (log for scale: log) or its choices. */
  function paramAxis(p) {
    if (p.type === 'categorical') return { type: 'band', choices: p.choices };
    const lo = p.low;
    const hi = p.high;
    if (p.scale === 'log') return { type: 'log', domain: [lo, hi] };
    const pad = (hi - lo) * 0.03;
    return { type: 'linear', domain: [lo - pad, hi + pad] };
  }
  const paramLabel = (p) => (p.scale === 'log' ? `${p.name} (log scale)` : p.name);

  /**
   * A plot frame: an SVG with a viewBox, axes with ticks and labels. Returns {svg, x, y, inner (group), box}.
   * opts: {w, h, x: axis spec, y: axis spec, xLabel, yLabel, title (accessible name), grid}
   */
  function frame(opts) {
    const W = opts.w || 400;
    const H = opts.h || 260;
    const m = { l: opts.ml || 58, r: 14, t: 10, b: 42 };
    const box = { x0: m.l, x1: W - m.r, y0: H - m.b, y1: m.t };
    const x = scale(opts.x, box.x0, box.x1);
    const y = scale(opts.y, box.y0, box.y1);
    const svg = s('svg', { class: 'plot', viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': opts.title },
      s('title', {}, opts.title));
    const ax = s('g', { class: 'axis' });
    const xt = opts.x.type === 'band' ? x.ticks() : x.ticks(Math.max(3, Math.round((box.x1 - box.x0) / 80)));
    const yt = opts.y.type === 'band' ? y.ticks() : y.ticks(5);
    for (const t of yt) {
      const py = y(t);
      if (opts.y.type !== 'band') ax.append(s('line', { class: 'gridline', x1: box.x0, x2: box.x1, y1: py, y2: py }));
      ax.append(s('text', { x: box.x0 - 5, y: py + 4, 'text-anchor': 'end' }, clip(y.label(t), Math.max(6, Math.floor((m.l - 24) / 6.2)))));
    }
    const thin = xt.length > 8 ? Math.ceil(xt.length / 8) : 1;
    xt.forEach((t, i) => {
      const px = x(t);
      ax.append(s('line', { x1: px, x2: px, y1: box.y0, y2: box.y0 + 4 }));
      if (i % thin === 0) ax.append(s('text', { x: px, y: box.y0 + 16, 'text-anchor': 'middle' }, clip(x.label(t), 12)));
    });
    ax.append(s('path', { d: `M${box.x0},${box.y1}V${box.y0}H${box.x1}`, fill: 'none' }));
    ax.append(s('text', { class: 'label', x: (box.x0 + box.x1) / 2, y: H - 6, 'text-anchor': 'middle' }, opts.xLabel));
    ax.append(s('text', { class: 'label', transform: `translate(13,${(box.y0 + box.y1) / 2}) rotate(-90)`,
      'text-anchor': 'middle' }, clip(opts.yLabel, 30)));
    svg.append(ax);
    const inner = s('g', {});
    svg.append(inner);
    return { svg, x, y, inner, box };
  }
  const clip = (t, n) => (t.length > n ? `${t.slice(0, n - 1)}…` : t);

  /** A failed observation's mark: a cross at the bottom edge of the plot. */
  function cross(px, py, r, attrs) {
    return s('path', { ...attrs, class: 'mark failed', d: `M${px - r},${py - r}L${px + r},${py + r}M${px - r},${py + r}L${px + r},${py - r}` });
  }

  /** A deterministic jitter in [-0.5, 0.5) for strip plots. */
  const jitter = (i) => ((i * 0.6180339887) % 1) - 0.5;

  function figure(caption, svg, extra) {
    return h('figure', {}, h('figcaption', {}, caption), svg, extra || null);
  }

  function legend(items) {
    return h('div', { class: 'legend' }, items.map(([color, text]) => h('span', {},
      s('svg', { width: 10, height: 10, viewBox: '0 0 10 10', 'aria-hidden': 'true' }, s('rect', { width: 10, height: 10, rx: 2, fill: color })),
      ' ', text)));
  }

  // ---------------------------------------------------------------- routing and polling

  let pollTimer = null;
  let pollGeneration = 0;
  function stopPolling() {
    pollGeneration += 1;
    if (pollTimer) clearTimeout(pollTimer);
    pollTimer = null;
  }
  /**
   * Calls fn every ms milliseconds (after each call finishes) until the page changes. A 401 shows the token form;
   * other errors (a server restarting, a network hiccup) are shown in the live line and polling goes on.
   */
  function poll(ms, fn) {
    const gen = pollGeneration;
    const tick = async () => {
      if (gen !== pollGeneration) return;
      if (!document.hidden) {
        try {
          await fn();
        } catch (e) {
          if (gen !== pollGeneration) return;
          if (e instanceof AuthError) { fail(e); return; }
          const live = document.querySelector('.live');
          if (live) live.textContent = `Could not refresh (${e.message}); retrying every ${ms / 1000} s.`;
        }
      }
      if (gen === pollGeneration) pollTimer = setTimeout(tick, ms);
    };
    pollTimer = setTimeout(tick, ms);
  }

  function fail(e) {
    if (e instanceof AuthError) { showTokenForm(e.message); return; }
    stopPolling();
    const msg = e instanceof ApiError && e.status === 404 ? 'No such study.' : `Error: ${e.message}`;
    app.replaceChildren(h('p', { class: 'error', role: 'alert' }, msg), h('p', {}, h('a', { href: '/' }, 'All studies')));
  }

  async function route() {
    stopPolling();
    const m = location.pathname.match(/^\/studies\/([^/]+)\/?$/);
    try {
      if (m) await studyPage(decodeURIComponent(m[1]));
      else await listPage();
    } catch (e) {
      fail(e);
    }
  }

  // ---------------------------------------------------------------- the study list

  async function listPage() {
    document.title = 'Studies · bayesd';
    const params = new URLSearchParams(location.search);
    const state = { status: params.get('status') || '', cursors: [''], best: new Map() };
    const filter = h('select', { id: 'status-filter' },
      ['', 'active', 'completed', 'archived'].map((v) => h('option', { value: v, selected: v === state.status }, v || 'all')));
    const prev = h('button', { class: 'btn', type: 'button', id: 'prev-page' }, '← Previous');
    const next = h('button', { class: 'btn', type: 'button', id: 'next-page' }, 'Next →');
    const body = h('tbody', {});
    const info = h('p', { class: 'muted small', 'aria-live': 'polite' });
    const live = h('span', { class: 'live on' });
    const table = h('table', { id: 'studies' },
      h('thead', {}, h('tr', {}, ['Name', 'Status', 'Algorithm', 'Observations', 'Best value', 'Last activity']
        .map((c, i) => h('th', { scope: 'col', class: i === 3 || i === 4 ? 'num' : null }, c)))),
      body);
    app.replaceChildren(
      h('h1', {}, 'Studies'),
      h('div', { class: 'toolbar' }, h('label', { for: 'status-filter' }, 'Status '), filter, prev, next,
        live),
      h('div', { class: 'panel' }, h('div', { class: 'table-wrap' }, table), info));

    // One page: API pages of LIST_PAGE from the cursor, until LIST_PAGE studies pass the status filter.
    let nextCursor = null;
    const load = async () => {
      const rows = [];
      let after = state.cursors[state.cursors.length - 1];
      for (;;) {
        const page = await getJson(`/v1/studies?limit=${LIST_PAGE}${after ? `&after=${encodeURIComponent(after)}` : ''}`);
        rows.push(...page.studies.filter((st) => !state.status || st.status === state.status));
        after = page.next_cursor || null;
        if (!after || rows.length >= LIST_PAGE) break;
      }
      nextCursor = after;
      render(rows);
      await fillBest(rows);
    };
    const render = (rows) => {
      body.replaceChildren(...rows.map((st) => {
        const cached = state.best.get(st.id);
        return h('tr', { 'data-study': st.id },
          h('td', {}, h('a', { href: `/studies/${st.id}` }, st.name || st.id)),
          h('td', {}, badge(st.status)),
          h('td', {}, st.algorithm_in_use),
          h('td', { class: 'num' }, st.counts.observations),
          h('td', { class: 'num', 'data-best': st.id }, cached && cached.updated === st.updated_at ? fmt(cached.value) : '…'),
          h('td', {}, time(st.updated_at)));
      }));
      if (!rows.length) body.append(h('tr', {}, h('td', { colspan: 6, class: 'muted' }, 'No studies.')));
      prev.disabled = state.cursors.length <= 1;
      next.disabled = !nextCursor;
      live.textContent = `updates every ${LIST_POLL_MS / 1000} s`;
      info.textContent = `Page ${state.cursors.length}; ${rows.length} studies${state.status ? ` (${state.status})` : ''}.`;
    };
    // Best values come from GET …/best, asked again only when a study changed; 3 requests at a time.
    const fillBest = async (rows) => {
      const todo = rows.filter((st) => { const c = state.best.get(st.id); return !c || c.updated !== st.updated_at; });
      const worker = async () => {
        for (let st = todo.shift(); st; st = todo.shift()) {
          let value = null;
          try { const b = await getJson(`/v1/studies/${st.id}/best`); value = b.best_observed ? b.best_observed.value : null; } catch (e) {
            if (e instanceof AuthError) throw e;
          }
          state.best.set(st.id, { updated: st.updated_at, value });
          const cell = body.querySelector(`[data-best="${st.id}"]`);
          if (cell) cell.textContent = fmt(value);
        }
      };
      await Promise.all([worker(), worker(), worker()]);
    };
    filter.addEventListener('change', () => {
      state.status = filter.value;
      state.cursors = [''];
      history.replaceState(null, '', state.status ? `/?status=${state.status}` : '/');
      load().catch(fail);
    });
    next.addEventListener('click', () => { if (nextCursor) { state.cursors.push(nextCursor); load().catch(fail); } });
    prev.addEventListener('click', () => { if (state.cursors.length > 1) { state.cursors.pop(); load().catch(fail); } });
    await load();
    poll(LIST_POLL_MS, load);
  }

  // ---------------------------------------------------------------- the study page

  /** Everything the study page draws, fetched from the API. */
  async function fetchStudy(id, study) {
    const [observations, suggestions, best] = await Promise.all([
      getAll(`/v1/studies/${id}/observations`, 'observations'),
      getAll(`/v1/studies/${id}/suggestions`, 'suggestions'),
      getJson(`/v1/studies/${id}/best`),
    ]);
    const data = primary({ study, observations, suggestions, best, model: null, modelError: null });
    try {
      data.model = await modelSlices(data);
    } catch (e) {
      if (e instanceof AuthError) throw e;
      data.modelError = e.message;
    }
    return data;
  }

  const changeKey = (st) => `${st.updated_at}|${st.status}|${st.counts.observations}|${st.counts.suggestions}`;

  async function studyPage(id) {
    let study = await getJson(`/v1/studies/${encodeURIComponent(id)}`);
    let data = await fetchStudy(study.id, study);
    const ui = { sort: { key: 'seq', dir: 1 } };
    const content = h('div', {});
    const live = h('p', { class: 'live', id: 'live', 'aria-live': 'polite' });
    app.replaceChildren(h('p', { class: 'small' }, h('a', { href: '/' }, '← All studies')), content, live);
    const draw = () => {
      document.title = `${study.name} · bayesd`;
      renderStudy(content, data, ui);
      live.className = study.status === 'active' ? 'live on' : 'live';
      live.textContent = study.status === 'active'
        ? `Live: checks for changes every ${STUDY_POLL_MS / 1000} s (last at ${new Date().toLocaleTimeString()}).`
        : `The study is ${study.status}; not refreshing.`;
    };
    draw();
    if (study.status !== 'active') return;
    let key = changeKey(study);
    poll(STUDY_POLL_MS, async () => {
      const fresh = await getJson(`/v1/studies/${study.id}`);
      if (changeKey(fresh) !== key) {
        study = fresh;
        data = await fetchStudy(study.id, study);
        key = changeKey(study);
      }
      draw();
      if (study.status !== 'active') stopPolling();
    });
  }

  // --- derived data

  /** A study with several objectives is drawn by its first (as its `predict` answers): each observation's value is
   * that objective's; the Pareto panel shows them all. Infeasible runs keep their values and are coloured. */
  function primary(data) {
    const objs = data.study.objectives;
    if (!objs || !objs.length) return data;
    const name = objs[0].name;
    data.study = { ...data.study, objective: objs[0] };
    data.observations = data.observations.map((o) => (o.failed || o.value != null ? o : { ...o, value: (o.values || {})[name] }));
    return data;
  }

  const isMin = (study) => study.objective && study.objective.goal === 'minimize';
  const better = (study, a, b) => (isMin(study) ? a < b : a > b);
  const okValue = (o) => !o.failed && Number.isFinite(o.value);

  /** The inputs plotted against the objective: the query parameters of an indirect study, else the parameters. */
  function inputs(study) {
    if (study.indirect) return study.indirect.query_parameters.map((p) => ({ p, get: (o) => (o.query || {})[p.name] }));
    return study.parameters.map((p) => ({ p, get: (o) => o.assignments[p.name] }));
  }

  /** t in [0, 1] of each observation's value, 1 = best; null for a failed one. */
  function valueShade(data) {
    const vals = data.observations.filter(okValue).map((o) => o.value);
    const lo = Math.min(...vals);
    const hi = Math.max(...vals);
    return (o) => {
      if (!okValue(o)) return null;
      const t = hi > lo ? (o.value - lo) / (hi - lo) : 1;
      return isMin(data.study) ? 1 - t : t;
    };
  }

  /** The cost of each observation: its observed cost, else its suggestion's expected cost, else 0. */
  function costs(data) {
    const expected = new Map(data.suggestions.map((sg) => [sg.id, sg.expected_cost]));
    return data.observations.map((o) => (Number.isFinite(o.cost) ? o.cost : expected.get(o.suggestion_id) || 0));
  }

  const valueLabel = (study) => `${(study.objective && study.objective.name) || 'value'} (${isMin(study) ? 'minimise' : 'maximise'})`;

  // --- rendering

  function renderStudy(root, data, ui) {
    const st = data.study;
    const panels = [
      summary(data),
      convergencePanel(data),
      slicePanel(data),
      modelPanel(data),
      importancePanel(data),
      parallelPanel(data),
      paretoPanel(data),
      ...blockPanels(data),
      suggestionsPanel(data),
      observationsPanel(data, ui),
    ];
    // Keep the scroll position: replace the panels in place.
    root.replaceChildren(...panels.filter(Boolean));
    root.dataset.observations = String(data.observations.length);
    root.dataset.study = st.id;
  }

  function panel(id, title, ...children) {
    return h('section', { class: 'panel', id, 'aria-labelledby': `${id}-h` }, h('h2', { id: `${id}-h` }, title), ...children);
  }

  function summary(data) {
    const st = data.study;
    const b = data.best;
    const facts = [
      ['Status', badge(st.status)],
      ['Algorithm', st.algorithm_in_use],
      ['Objective', valueLabel(st)],
      ['Observations', st.counts.observations],
      ['Suggestions', st.counts.suggestions],
      ['Total cost', fmt(st.total_cost)],
      st.budget_remaining ? ['Budget left', [st.budget_remaining.observations != null ? `${st.budget_remaining.observations} observations` : null,
        st.budget_remaining.cost != null ? `cost ${fmt(st.budget_remaining.cost)}` : null, st.budget_remaining.spent ? 'spent' : null]
        .filter(Boolean).join(', ')] : null,
      ['Created', time(st.created_at)],
      ['Last activity', time(st.updated_at)],
    ].filter(Boolean);
    const point = (a) => Object.entries(a || {}).map(([k, v]) => `${k} = ${fmt(v)}`).join(', ');
    return h('section', { class: 'panel', id: 'summary', 'aria-labelledby': 'study-name' },
      h('h1', { id: 'study-name' }, st.name),
      h('ul', { class: 'facts' }, facts.map(([k, v]) => h('li', {}, h('b', {}, `${k}: `), v))),
      b.pareto ? h('p', { id: 'pareto-summary' }, h('b', {}, 'Pareto front: '),
        `${b.pareto.points.length} points, hypervolume ${fmt(b.pareto.hypervolume)} above ${point(b.pareto.reference_point)}`) : null,
      st.objectives && st.objectives.length > 1 ? null : h('p', {}, h('b', {}, 'Best observed: '), b.best_observed
        ? `${fmt(b.best_observed.value)} at ${point(b.best_observed.assignments) || 'its query'}` : 'none yet'),
      st.objectives && st.objectives.length > 1 ? null : h('p', {}, h('b', {}, 'Recommended: '), b.recommended
        ? `${point(b.recommended.assignments)} (predicted ${fmt(b.recommended.predicted.mean)} ± ${fmt(2 * b.recommended.predicted.stddev)})`
        : 'no model yet'));
  }

  /** Value against x for each observation, failed ones as crosses at the bottom, the best so far as a step line. */
  function convergencePlot(data, xs, xLabel, mark) {
    const st = data.study;
    const obs = data.observations;
    const vals = obs.filter(okValue).map((o) => o.value);
    const threshold = st.level_set ? st.level_set.threshold : null;
    const f = frame({
      w: 600, h: 300, title: `${valueLabel(st)} against ${xLabel}`, xLabel, yLabel: valueLabel(st),
      x: { type: 'linear', domain: extent(xs, 0.03) },
      y: { type: 'linear', domain: extent(threshold === null ? vals : [...vals, threshold]) },
    });
    if (threshold !== null) {
      f.inner.append(s('line', { class: 'threshold', x1: f.box.x0, x2: f.box.x1, y1: f.y(threshold), y2: f.y(threshold) },
        s('title', {}, `level-set threshold ${fmt(threshold)}`)));
    }
    let best = null;
    let d = '';
    obs.forEach((o, i) => {
      const px = f.x(xs[i]);
      // The best so far: of the feasible runs (an infeasible one is a measurement, not a candidate answer).
      if (okValue(o) && o.feasible !== false) {
        if (best === null || better(st, o.value, best)) {
          d += d ? `H${px}V${f.y(o.value)}` : `M${px},${f.y(o.value)}`;
          best = o.value;
        }
      }
    });
    if (d) f.inner.append(s('path', { class: 'best-line', d: `${d}H${f.x(xs[xs.length - 1])}` }));
    obs.forEach((o, i) => {
      const px = f.x(xs[i]);
      const tip = s('title', {}, `#${i + 1}: ${o.failed ? 'failed' : fmt(o.value)}${o.feasible === false ? ' (infeasible)' : ''}${Number.isFinite(o.cost) ? `, cost ${fmt(o.cost)}` : ''}`);
      if (okValue(o)) f.inner.append(s('circle', { class: o.feasible === false ? 'mark infeasible' : 'mark', 'data-mark': mark, 'data-obs': i, cx: px, cy: f.y(o.value), r: 4, fill: o.feasible === false ? INFEASIBLE : '#3b6fa0' }, tip));
      else f.inner.append(cross(px, f.box.y0 - 6, 4, { 'data-mark': mark, 'data-obs': i }));
    });
    return f.svg;
  }

  function convergencePanel(data) {
    const obs = data.observations;
    if (!obs.length) return panel('convergence', 'Convergence', h('p', { class: 'muted' }, 'No observations yet.'));
    const figs = [figure('Against evaluation number', convergencePlot(data, obs.map((_, i) => i + 1), 'evaluation number', 'convergence'))];
    const c = costs(data);
    if (c.some((v) => v > 0) || data.study.cost_model) {
      let sum = 0;
      const cum = c.map((v) => (sum += v));
      figs.push(figure('Against cumulative cost', convergencePlot(data, cum, 'cumulative cost', 'convergence-cost')));
    }
    return panel('convergence', 'Convergence',
      h('p', { class: 'muted small' }, 'Each observation as a point (failed runs as red crosses at the bottom); the line is the best value so far.'),
      h('div', { class: 'grid2' }, figs));
  }

  /** The objective against one input: numbers on their axis, categories as strips. */
  function slicePlot(data, inp, shade) {
    const st = data.study;
    const vals = data.observations.filter(okValue).map((o) => o.value);
    const f = frame({ title: `${valueLabel(st)} against ${inp.p.name}`, x: paramAxis(inp.p), y: { type: 'linear', domain: extent(vals) },
      xLabel: paramLabel(inp.p), yLabel: valueLabel(st) });
    if (inp.p.type === 'categorical') {
      for (const c of inp.p.choices) {
        f.inner.append(s('rect', { class: 'strip', x: f.x(c) - f.x.bandwidth * 0.4, width: f.x.bandwidth * 0.8, y: f.box.y1, height: f.box.y0 - f.box.y1 }));
      }
    }
    data.observations.forEach((o, i) => {
      const v = inp.get(o);
      if (v === undefined || v === null) return;
      let px = f.x(v);
      if (inp.p.type === 'categorical') px += jitter(i) * f.x.bandwidth * 0.6;
      const tip = s('title', {}, `#${i + 1}: ${inp.p.name} = ${fmt(v)}, ${o.failed ? 'failed' : fmt(o.value)}`);
      if (okValue(o)) f.inner.append(s('circle', { class: 'mark', 'data-mark': 'slice', 'data-obs': i, cx: px, cy: f.y(o.value), r: 4, fill: ramp(shade(o)) }, tip));
      else f.inner.append(cross(px, f.box.y0 - 6, 4, { 'data-mark': 'slice', 'data-obs': i }));
    });
    return f.svg;
  }

  function colourLegend(study) {
    return legend([[ramp(0), 'worst value'], [ramp(0.5), 'middle'], [ramp(1), `best value (${isMin(study) ? 'lowest' : 'highest'})`]]);
  }

  function slicePanel(data) {
    if (!data.observations.length) return null;
    const shade = valueShade(data);
    const inps = inputs(data.study);
    return panel('slices', 'Slice plots',
      h('p', { class: 'muted small' }, `The objective against each ${data.study.indirect ? 'query parameter' : 'parameter'}; categorical parameters as strips. Colour: the value.`),
      colourLegend(data.study),
      h('div', { class: 'grid' }, inps.map((inp) => h('div', { 'data-plot': 'slice', 'data-param': inp.p.name },
        figure(inp.p.name, slicePlot(data, inp, shade))))));
  }

  // --- the model: posterior mean ± 2σ along each parameter through the recommended point

  const MODEL_POINTS = 41;

  /** The values along one parameter at which to predict. */
  function along(p, n) {
    if (p.type === 'categorical') return p.choices.slice();
    if (p.type === 'int') {
      const k = Math.min(n, p.high - p.low + 1);
      const out = [];
      for (let i = 0; i < k; i++) {
        const t = k === 1 ? 0 : i / (k - 1);
        out.push(Math.round(p.scale === 'log' ? p.low * (p.high / p.low) ** t : p.low + t * (p.high - p.low)));
      }
      return [...new Set(out)];
    }
    return Array.from({ length: n }, (_, i) => {
      const t = i / (n - 1);
      return p.scale === 'log' ? p.low * (p.high / p.low) ** t : p.low + t * (p.high - p.low);
    });
  }

  /** Predicts along each decision parameter (one POST …/predict); null without a recommended point. */
  async function modelSlices(data) {
    const st = data.study;
    // Several objectives have no recommended point: the slices go through the Pareto front's first point.
    const rec = data.best.recommended || ((data.best.pareto || {}).points || [])[0];
    if (!rec) return null;
    const params = st.parameters;
    const decisions = params.filter((p) => p.role !== 'context');
    // The centre: the recommended point; context parameters (not part of a decision) at their mean observed value.
    const centre = {};
    for (const p of params) {
      let v = rec.assignments[p.name];
      if (v === undefined && p.role === 'context') {
        const seen = data.observations.map((o) => o.assignments[p.name]).filter(Number.isFinite);
        v = seen.length ? seen.reduce((a, b) => a + b, 0) / seen.length : (p.low + p.high) / 2;
      }
      if (v === undefined && data.best.best_observed) v = data.best.best_observed.assignments[p.name];
      if (v === undefined) v = p.type === 'categorical' ? p.choices[0] : (p.low + p.high) / 2;
      centre[p.name] = v;
    }
    const n = Math.max(5, Math.min(MODEL_POINTS, Math.floor(1000 / Math.max(1, decisions.length))));
    const slices = decisions.map((p) => ({ p, xs: along(p, n) }));
    const points = slices.flatMap(({ p, xs }) => xs.map((v) => ({ ...centre, [p.name]: v })));
    if (!points.length) return null;
    const res = await postJson(`/v1/studies/${st.id}/predict`, { points });
    let k = 0;
    for (const sl of slices) sl.pred = sl.xs.map(() => res.predictions[k++]);
    return { centre, slices };
  }

  function modelPlot(data, sl) {
    const st = data.study;
    const p = sl.p;
    const lo = sl.pred.map((q) => q.mean - 2 * q.stddev);
    const hi = sl.pred.map((q) => q.mean + 2 * q.stddev);
    const observed = st.indirect ? [] : data.observations;
    const vals = observed.filter(okValue).map((o) => o.value);
    const f = frame({ title: `posterior of ${valueLabel(st)} along ${p.name}`, x: paramAxis(p), y: { type: 'linear', domain: extent([...lo, ...hi, ...vals]) },
      xLabel: paramLabel(p), yLabel: valueLabel(st) });
    if (p.type === 'categorical') {
      sl.xs.forEach((c, i) => {
        const px = f.x(c);
        const q = sl.pred[i];
        f.inner.append(s('line', { class: 'errbar', x1: px, x2: px, y1: f.y(lo[i]), y2: f.y(hi[i]) }),
          s('rect', { class: 'mean-line', x: px - 8, y: f.y(q.mean) - 1.5, width: 16, height: 3 },
            s('title', {}, `${c}: ${fmt(q.mean)} ± ${fmt(2 * q.stddev)}`)));
      });
    } else {
      const pts = (arr) => sl.xs.map((v, i) => `${f.x(v)},${f.y(arr[i])}`);
      f.inner.append(s('polygon', { class: 'band', points: [...pts(hi), ...pts(lo).reverse()].join(' ') }),
        s('polyline', { class: 'mean-line', points: pts(sl.pred.map((q) => q.mean)).join(' ') }));
    }
    observed.forEach((o, i) => {
      const v = o.assignments[p.name];
      if (v === undefined) return;
      const px = f.x(v) + (p.type === 'categorical' ? jitter(i) * f.x.bandwidth * 0.6 : 0);
      if (okValue(o)) f.inner.append(s('circle', { class: 'obs-faint', 'data-mark': 'model', 'data-obs': i, cx: px, cy: f.y(o.value), r: 3 }));
      else f.inner.append(cross(px, f.box.y0 - 6, 3, { 'data-mark': 'model', 'data-obs': i }));
    });
    const c = data.model.centre[p.name];
    if (p.type !== 'categorical' && Number.isFinite(c)) {
      f.inner.append(s('line', { class: 'rec-line', x1: f.x(c), x2: f.x(c), y1: f.box.y0, y2: f.box.y1 }, s('title', {}, `recommended ${p.name} = ${fmt(c)}`)));
    }
    return f.svg;
  }

  function modelPanel(data) {
    const st = data.study;
    if (!data.model) {
      const why = data.modelError ? `The model is not available: ${data.modelError}` : 'No model yet (no recommended point).';
      return panel('model', 'Model', h('p', { class: 'muted' }, why));
    }
    const ctx = st.parameters.filter((p) => p.role === 'context');
    return panel('model', 'Model: posterior along each parameter',
      h('p', { class: 'muted small' }, 'Posterior mean (line) ± 2 standard deviations (band) of the surrogate that ',
        h('code', {}, 'predict'), ' uses, along each parameter with the others at ', data.best.recommended ? 'the recommended point' : 'a point of the Pareto front',
        ' (dashed line)',
        ctx.length ? `; context ${ctx.map((p) => `${p.name} at its mean observed value ${fmt(data.model.centre[p.name])}`).join(', ')}` : '',
        st.indirect ? '. Indirect study: the axes are target parameters, which observations do not have, so no points are shown.'
          : '. Grey points: the observations (a projection, not on the slice).'),
      h('div', { class: 'grid' }, data.model.slices.map((sl) => h('div', { 'data-plot': 'model', 'data-param': sl.p.name },
        figure(sl.p.name, modelPlot(data, sl))))));
  }

  // --- parameter importance from the fitted ARD lengthscales

  /** Importance per parameter of one suggestion's fitted lengthscales (1/ℓ, normalised; categoricals: their largest one-hot 1/ℓ). */
  function importanceOf(study, diag) {
    const hp = diag && diag.hyperparameters;
    if (!hp) return null;
    const ls = hp.components && hp.components.length ? hp.components[0].lengthscales : hp.lengthscales;
    if (!Array.isArray(ls) || !ls.length) return null;
    // Encoded dimensions follow the parameters in order, a categorical one-hot over its choices (ADR 0004).
    const dims = [];
    for (const p of study.parameters) {
      const k = p.type === 'categorical' ? p.choices.length : 1;
      for (let j = 0; j < k; j++) dims.push(p.name);
    }
    if (dims.length !== ls.length) return null;
    const inv = {};
    ls.forEach((l, j) => { inv[dims[j]] = Math.max(inv[dims[j]] || 0, 1 / l); });
    const total = Object.values(inv).reduce((a, b) => a + b, 0);
    for (const k of Object.keys(inv)) inv[k] /= total;
    return inv;
  }

  function importancePanel(data) {
    const st = data.study;
    const series = data.suggestions.map((sg, i) => ({ i: i + 1, imp: importanceOf(st, sg.diagnostics) })).filter((r) => r.imp);
    if (!series.length) return panel('importance', 'Parameter importance', h('p', { class: 'muted' }, 'No suggestion reports fitted ARD lengthscales: the model has not been used yet, or this algorithm does not fit them (kernel candidates, TRUVAR and level-set policies report no lengthscales in their diagnostics).'));
    const names = st.parameters.map((p) => p.name);
    const f = frame({ w: 600, h: 280, title: 'relative importance of each parameter against suggestion number', x: { type: 'linear', domain: extent(series.map((r) => r.i), 0.02) },
      y: { type: 'linear', domain: [0, 1] }, xLabel: 'suggestion number', yLabel: 'importance (share of 1/ℓ)' });
    names.forEach((n, k) => {
      const color = PALETTE[k % PALETTE.length];
      f.inner.append(s('polyline', { fill: 'none', stroke: color, 'stroke-width': 2, points: series.map((r) => `${f.x(r.i)},${f.y(r.imp[n])}`).join(' ') }));
      for (const r of series) f.inner.append(s('circle', { 'data-mark': 'importance', cx: f.x(r.i), cy: f.y(r.imp[n]), r: 2.5, fill: color }, s('title', {}, `suggestion ${r.i}: ${n} ${Math.round(r.imp[n] * 100)} %`)));
    });
    const last = series[series.length - 1].imp;
    const bars = frame({ w: 600, h: 70 + 36 * names.length, ml: 110, title: 'importance of each parameter at the latest fit', x: { type: 'linear', domain: [0, 1] },
      y: { type: 'band', choices: names }, xLabel: 'importance (share of 1/ℓ)', yLabel: '' });
    names.forEach((n, k) => {
      bars.inner.append(s('rect', { x: bars.x(0), y: bars.y(n) - 9, width: bars.x(last[n]) - bars.x(0), height: 18, fill: PALETTE[k % PALETTE.length] }),
        s('text', { class: 'axis', x: bars.x(last[n]) + 4, y: bars.y(n) + 4, 'font-size': 11 }, `${Math.round(last[n] * 100)} %`));
    });
    return panel('importance', 'Parameter importance',
      h('p', { class: 'muted small' }, 'From the fitted ARD lengthscales ℓ in each suggestion\'s diagnostics: a short lengthscale means the objective changes quickly along that parameter. Importance = 1/ℓ as a share of the sum (a categorical takes its largest one-hot dimension).'),
      legend(names.map((n, k) => [PALETTE[k % PALETTE.length], n])),
      h('div', { class: 'grid2' }, figure('Over time', f.svg), figure(`Latest (suggestion ${series[series.length - 1].i})`, bars.svg)));
  }

  // --- parallel coordinates

  function parallelPanel(data) {
    const st = data.study;
    const inps = inputs(st);
    if (!data.observations.length || !inps.length) return null;
    const vals = data.observations.filter(okValue).map((o) => o.value);
    const axes = [...inps.map((inp) => ({ name: inp.p.name, label: paramLabel(inp.p), spec: paramAxis(inp.p), get: inp.get })),
      { name: valueLabel(st), label: valueLabel(st), spec: { type: 'linear', domain: extent(vals) }, get: (o) => (okValue(o) ? o.value : null) }];
    const W = Math.max(1000, 140 * axes.length);
    const H = 340;
    const top = 28;
    const bottom = H - 30;
    const xAt = (k) => 90 + (k * (W - 180)) / (axes.length - 1);
    const svg = s('svg', { class: 'plot', viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': 'parallel coordinates of the observations' },
      s('title', {}, 'parallel coordinates of the observations'));
    const scales = axes.map((a) => scale(a.spec, bottom, top));
    const shade = valueShade(data);
    data.observations.forEach((o, i) => {
      const pts = [];
      axes.forEach((a, k) => {
        const v = a.get(o);
        if (v === null || v === undefined) { if (k === axes.length - 1) pts.push(`${xAt(k)},${bottom + 8}`); return; }
        pts.push(`${xAt(k)},${scales[k](v)}`);
      });
      const t = shade(o);
      svg.append(s('polyline', { class: t === null ? 'pc-line failed' : 'pc-line', 'data-mark': 'parcoords', 'data-obs': i, points: pts.join(' '), stroke: t === null ? null : ramp(t) },
        s('title', {}, `#${i + 1}: ${o.failed ? 'failed' : fmt(o.value)}`)));
    });
    axes.forEach((a, k) => {
      const g = s('g', { class: 'axis pc' });
      const x = xAt(k);
      g.append(s('line', { x1: x, x2: x, y1: top, y2: bottom }));
      const ticks = a.spec.type === 'band' ? scales[k].ticks() : scales[k].ticks(4);
      for (const t of ticks) {
        g.append(s('line', { x1: x - 3, x2: x, y1: scales[k](t), y2: scales[k](t) }),
          s('text', { x: x - 5, y: scales[k](t) + 4, 'text-anchor': 'end' }, clip(scales[k].label(t), 10)));
      }
      g.append(s('text', { class: 'label', x, y: 16, 'text-anchor': 'middle' }, clip(a.label, Math.max(12, Math.floor((W - 180) / (axes.length - 1) / 7.5)))));
      svg.append(g);
    });
    return panel('parallel', 'Parallel coordinates',
      h('p', { class: 'muted small' }, 'One line per observation through its parameter values and its value, coloured by value; failed runs dashed red.'),
      colourLegend(st), h('div', { class: 'table-wrap' }, svg));
  }

  const INFEASIBLE = '#d9822b';

  /** Studies with several objectives: each run's objectives, the observed Pareto front drawn over them (two
   * objectives: a scatter with the front's staircase; more: parallel coordinates of the objectives), infeasible runs
   * in orange. */
  function paretoPanel(data) {
    const objs = data.study.objectives;
    if (!objs || objs.length < 2) return null;
    const front = new Set(((data.best.pareto || {}).points || []).map((p) => p.observation_id));
    const runs = data.observations.map((o, i) => ({ o, i })).filter(({ o }) => !o.failed && o.values);
    if (!runs.length) return panel('pareto', 'Pareto front', h('p', { class: 'muted' }, 'No successful runs yet.'));
    const label = (ob) => `${ob.name} (${ob.goal === 'minimize' ? 'minimise' : 'maximise'})`;
    const colour = (o) => (o.feasible === false ? INFEASIBLE : front.has(o.id) ? '#1f4e79' : '#9db4cc');
    const tip = (o, i) => s('title', {}, `#${i + 1}: ${objs.map((ob) => `${ob.name} ${fmt(o.values[ob.name])}`).join(', ')}`
      + `${o.feasible === false ? ' (infeasible)' : ''}${front.has(o.id) ? ' (on the front)' : ''}`);
    const key = legend([['#1f4e79', 'on the Pareto front'], ['#9db4cc', 'dominated'], [INFEASIBLE, 'infeasible']]);
    if (objs.length === 2) {
      const [a, b] = objs;
      const f = frame({ w: 600, h: 340, title: `${a.name} against ${b.name}`, xLabel: label(a), yLabel: label(b),
        x: { type: 'linear', domain: extent(runs.map(({ o }) => o.values[a.name])) },
        y: { type: 'linear', domain: extent(runs.map(({ o }) => o.values[b.name])) } });
      // The front's staircase: sorted along the first objective from its best end.
      const sign = (ob) => (ob.goal === 'minimize' ? -1 : 1);
      const pts = runs.filter(({ o }) => front.has(o.id)).map(({ o }) => [o.values[a.name], o.values[b.name]])
        .sort((p, q) => sign(a) * (q[0] - p[0]));
      if (pts.length) {
        let d = `M${f.x(pts[0][0])},${f.y(pts[0][1])}`;
        for (const [x, y] of pts.slice(1)) d += `H${f.x(x)}V${f.y(y)}`;
        f.inner.append(s('path', { class: 'best-line', d }));
      }
      for (const { o, i } of runs) {
        f.inner.append(s('circle', { class: o.feasible === false ? 'mark infeasible' : 'mark', 'data-mark': 'pareto', 'data-obs': i,
          cx: f.x(o.values[a.name]), cy: f.y(o.values[b.name]), r: front.has(o.id) ? 5 : 3.5, fill: colour(o) }, tip(o, i)));
      }
      return panel('pareto', 'Pareto front', key, figure('Every successful run; the front as a staircase', f.svg));
    }
    const W = Math.max(700, 160 * objs.length);
    const H = 320;
    const top = 28;
    const bottom = H - 30;
    const xAt = (k) => 90 + (k * (W - 180)) / (objs.length - 1);
    const scales = objs.map((ob) => scale({ type: 'linear', domain: extent(runs.map(({ o }) => o.values[ob.name])) }, bottom, top));
    const svg = s('svg', { class: 'plot', viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': 'parallel coordinates of the objectives' },
      s('title', {}, 'parallel coordinates of the objectives'));
    for (const { o, i } of runs) {
      const pts = objs.map((ob, k) => `${xAt(k)},${scales[k](o.values[ob.name])}`);
      svg.append(s('polyline', { class: 'pc-line', 'data-mark': 'pareto', 'data-obs': i, points: pts.join(' '), stroke: colour(o),
        'stroke-width': front.has(o.id) ? 2.5 : 1 }, tip(o, i)));
    }
    objs.forEach((ob, k) => {
      const g = s('g', { class: 'axis pc' });
      const x = xAt(k);
      g.append(s('line', { x1: x, x2: x, y1: top, y2: bottom }));
      for (const t of scales[k].ticks(4)) {
        g.append(s('line', { x1: x - 3, x2: x, y1: scales[k](t), y2: scales[k](t) }),
          s('text', { x: x - 5, y: scales[k](t) + 4, 'text-anchor': 'end' }, clip(scales[k].label(t), 10)));
      }
      g.append(s('text', { class: 'label', x, y: 16, 'text-anchor': 'middle' }, clip(label(ob), 24)));
      svg.append(g);
    });
    return panel('pareto', 'Pareto front', key, h('div', { class: 'table-wrap' }, svg));
  }

  // --- panels of the structural blocks

  function blockPanels(data) {
    const st = data.study;
    return [
      st.control_sets && st.control_sets.length ? controlSetsPanel(data) : null,
      st.parameters.some((p) => p.role === 'context') ? contextsPanel(data) : null,
      st.level_set ? levelSetPanel(data) : null,
      st.noise_levels && st.noise_levels.length ? noiseLevelsPanel(data) : null,
      st.kernel && st.kernel.candidates ? kernelPanel(data) : null,
      st.indirect ? indirectPanel(data) : null,
    ];
  }

  function simpleTable(id, head, rows) {
    return h('div', { class: 'table-wrap' }, h('table', { id },
      h('thead', {}, h('tr', {}, head.map((c) => h('th', { scope: 'col' }, c)))),
      h('tbody', {}, rows.map((r) => h('tr', {}, r.map((c) => h('td', { class: typeof c === 'number' ? 'num' : null }, typeof c === 'number' ? fmt(c) : c)))))));
  }

  function controlSetsPanel(data) {
    const st = data.study;
    const sets = st.control_sets.map((c) => c.name);
    const rows = st.control_sets.map((c) => {
      const played = data.observations.filter((o) => o.control_set === c.name);
      const cs = played.map((o) => o.cost).filter(Number.isFinite);
      const vals = played.filter(okValue).map((o) => o.value);
      const bestV = vals.length ? (isMin(st) ? Math.min(...vals) : Math.max(...vals)) : null;
      return [c.name, c.parameters.join(', '), played.length, cs.length ? cs.reduce((a, b) => a + b, 0) / cs.length : null,
        cs.reduce((a, b) => a + b, 0), c.cost ?? null, bestV];
    });
    const f = frame({ w: 600, h: 70 + 40 * sets.length, ml: 90, title: 'control set played at each evaluation', x: { type: 'linear', domain: extent(data.observations.map((_, i) => i + 1), 0.03) },
      y: { type: 'band', choices: sets }, xLabel: 'evaluation number', yLabel: 'set' });
    const c = costs(data);
    const cmax = Math.max(...c, 1e-12);
    data.observations.forEach((o, i) => {
      if (!o.control_set) return;
      const r = 3 + 5 * Math.sqrt(c[i] / cmax);
      f.inner.append(s('circle', { class: 'mark', 'data-mark': 'control-sets', 'data-obs': i, cx: f.x(i + 1), cy: f.y(o.control_set), r, fill: PALETTE[sets.indexOf(o.control_set) % PALETTE.length] },
        s('title', {}, `#${i + 1}: ${o.control_set}, cost ${fmt(c[i])}, ${o.failed ? 'failed' : fmt(o.value)}`)));
    });
    return panel('control-sets', 'Control sets',
      h('p', { class: 'muted small' }, 'Which set each run played (point area: its cost), and per set the plays, observed costs and best value.'),
      h('div', { class: 'grid2' }, figure('Plays', f.svg), simpleTable('control-set-table', ['Set', 'Parameters', 'Plays', 'Mean cost', 'Total cost', 'Known cost', 'Best value'], rows)));
  }

  /** Gaussian KDE of values in [lo, hi] with bandwidth bw, renormalised to the range (truncated). */
  function kde(values, lo, hi, bw, n = 100) {
    const xs = Array.from({ length: n }, (_, i) => lo + (i * (hi - lo)) / (n - 1));
    const dens = xs.map((x) => values.reduce((a, v) => a + Math.exp(-0.5 * ((x - v) / bw) ** 2), 0) / (values.length * bw * Math.sqrt(2 * Math.PI)));
    const mass = dens.reduce((a, d) => a + d, 0) * ((hi - lo) / (n - 1));
    return xs.map((x, i) => [x, mass > 0 ? dens[i] / mass : 0]);
  }

  function contextsPanel(data) {
    const st = data.study;
    const ctx = st.parameters.filter((p) => p.role === 'context');
    // The bandwidth the policy used (diagnostics.extra.bandwidth, encoded units) when a suggestion reports one.
    const withBw = data.suggestions.filter((sg) => sg.diagnostics && sg.diagnostics.extra && Array.isArray(sg.diagnostics.extra.bandwidth));
    const policyBw = withBw.length ? withBw[withBw.length - 1].diagnostics.extra.bandwidth : null;
    const figs = ctx.map((p, k) => {
      const vals = data.observations.map((o) => o.assignments[p.name]).filter(Number.isFinite);
      if (p.type === 'categorical' || !vals.length) return h('p', { class: 'muted' }, `${p.name}: no observed values.`);
      const range = p.high - p.low;
      const sd = Math.sqrt(vals.reduce((a, v) => a + (v - vals.reduce((x, y) => x + y, 0) / vals.length) ** 2, 0) / Math.max(1, vals.length - 1));
      // The policy's bandwidth is in encoded units (a fraction of the range, of log10 for a log scale: then the rule).
      const usePolicy = policyBw && policyBw[k] && p.scale !== 'log';
      const bw = usePolicy ? policyBw[k] * range : Math.max(1.06 * sd * vals.length ** -0.2, range * 1e-3);
      const curve = kde(vals, p.low, p.high, bw);
      const bins = 12;
      const counts = new Array(bins).fill(0);
      for (const v of vals) counts[Math.min(bins - 1, Math.floor(((v - p.low) / range) * bins))] += 1;
      const binDens = counts.map((c) => c / (vals.length * (range / bins)));
      const ymax = Math.max(...curve.map((c) => c[1]), ...binDens) * 1.1;
      const f = frame({ title: `observed ${p.name} and its density estimate`, x: { type: 'linear', domain: [p.low, p.high] }, y: { type: 'linear', domain: [0, ymax] },
        xLabel: p.name, yLabel: 'density' });
      counts.forEach((c, b) => {
        const x0 = f.x(p.low + (b * range) / bins);
        const x1 = f.x(p.low + ((b + 1) * range) / bins);
        f.inner.append(s('rect', { class: 'hist', x: x0 + 0.5, width: Math.max(0, x1 - x0 - 1), y: f.y(binDens[b]), height: f.box.y0 - f.y(binDens[b]) }));
      });
      f.inner.append(s('polyline', { class: 'kde', points: curve.map(([x, d]) => `${f.x(x)},${f.y(d)}`).join(' ') }));
      data.observations.forEach((o, i) => {
        const v = o.assignments[p.name];
        if (!Number.isFinite(v)) return;
        f.inner.append(s('line', { class: 'rug', 'data-mark': 'contexts', 'data-obs': i, x1: f.x(v), x2: f.x(v), y1: f.box.y0, y2: f.box.y0 - 10 }, s('title', {}, `#${i + 1}: ${p.name} = ${fmt(v)}`)));
      });
      return figure(`${p.name} (bandwidth ${fmt(bw)}${usePolicy ? ', as the policy used' : ', rule of thumb'})`, f.svg);
    });
    return panel('contexts', 'Contexts',
      h('p', { class: 'muted small' }, 'The observed context values (ticks), their histogram and the Gaussian kernel density estimate truncated to the range.'),
      h('div', { class: 'grid' }, figs));
  }

  function levelSetPanel(data) {
    const st = data.study;
    const ls = data.best.recommended && data.best.recommended.extra && data.best.recommended.extra.level_set;
    const thr = st.level_set.threshold;
    if (!ls) return panel('level-set', 'Level set', h('p', { class: 'muted' }, `Threshold ${fmt(thr)}; no classification yet (it comes with the model's recommendation).`));
    const classes = ['above', 'unclassified', 'below'];
    const decisions = st.parameters.filter((p) => p.role !== 'context');
    const numeric = decisions.filter((p) => p.type !== 'categorical');
    const shade = valueShade(data);
    const counts = ls.counts || {};
    const head = h('p', {}, `Threshold ${fmt(thr)}: ${counts.above ?? ls.above.length} points above, ${counts.below ?? ls.below.length} below, ${counts.unclassified ?? ls.unclassified.length} unclassified`,
      ls.domain_size ? ` of ${ls.domain_size}` : '', ls.truncated ? ' (lists truncated)' : '', '.');
    const leg = legend([['#2e9d4f', 'above'], ['#5b7fa6', 'below'], ['#d7dce1', 'unclassified']]);
    let figs;
    if (numeric.length === 2 && decisions.length === 2) {
      const [px, py] = numeric;
      const f = frame({ w: 440, h: 400, title: 'classification of the domain', x: paramAxis(px), y: paramAxis(py), xLabel: paramLabel(px), yLabel: paramLabel(py) });
      for (const c of classes) for (const q of ls[c] || []) f.inner.append(s('rect', { class: `cls-${c}`, x: f.x(q[px.name]) - 5, y: f.y(q[py.name]) - 5, width: 10, height: 10 }, s('title', {}, `${c}: ${px.name} ${fmt(q[px.name])}, ${py.name} ${fmt(q[py.name])}`)));
      data.observations.forEach((o, i) => {
        const a = o.assignments;
        if (!Number.isFinite(a[px.name]) || !Number.isFinite(a[py.name])) return;
        if (okValue(o)) f.inner.append(s('circle', { class: 'mark', 'data-mark': 'level-set', 'data-obs': i, cx: f.x(a[px.name]), cy: f.y(a[py.name]), r: 3.5, fill: ramp(shade(o)) }, s('title', {}, `#${i + 1}: ${fmt(o.value)}`)));
        else f.inner.append(cross(f.x(a[px.name]), f.y(a[py.name]), 3.5, { 'data-mark': 'level-set', 'data-obs': i }));
      });
      figs = [figure(`${px.name} × ${py.name} (squares: domain, circles: observations coloured by value)`, f.svg)];
    } else {
      // One strip per parameter: where along it the domain points of each class are.
      figs = decisions.map((p) => {
        const f = frame({ h: 200, ml: 96, title: `classification along ${p.name}`, x: paramAxis(p), y: { type: 'band', choices: classes }, xLabel: paramLabel(p), yLabel: 'class' });
        classes.forEach((c) => (ls[c] || []).forEach((q, j) => f.inner.append(s('circle', { class: `cls-${c}`, cx: f.x(q[p.name]), cy: f.y(c) + jitter(j) * f.y.bandwidth * 0.6, r: 2.5 }))));
        return figure(p.name, f.svg);
      });
    }
    return panel('level-set', 'Level set', head, leg, h('div', { class: 'grid' }, figs));
  }

  function noiseLevelsPanel(data) {
    const st = data.study;
    const rows = st.noise_levels.map((l) => {
      const played = data.observations.filter((o) => o.noise_level === l.name);
      return [l.name, l.noise_variance ?? null, l.cost ?? null, played.length];
    });
    return panel('noise-levels', 'Noise levels', simpleTable('noise-level-table', ['Level', 'Noise variance', 'Cost', 'Runs'], rows));
  }

  function kernelPanel(data) {
    const st = data.study;
    const specs = st.kernel.candidates;
    const policy = (st.policy && st.policy.candidates) || [];
    const byName = new Map(policy.map((c) => [c.name, c]));
    const names = specs.map((c, i) => c.name || `candidate ${i + 1}`);
    const n = Math.max(1, data.observations.length);
    const f = frame({ w: 600, h: 70 + 40 * names.length, ml: 90, title: 'kernel candidates: alive until eliminated, chosen at each iteration',
      x: { type: 'linear', domain: [0, n + 1] }, y: { type: 'band', choices: names }, xLabel: 'iteration (observations)', yLabel: 'candidate' });
    names.forEach((name) => {
      const c = byName.get(name);
      const end = c && c.eliminated_at_iteration ? c.eliminated_at_iteration : n;
      f.inner.append(s('line', { class: `timeline ${c && c.surviving === false ? 'dead' : 'alive'}`, x1: f.x(0.5), x2: f.x(end), y1: f.y(name), y2: f.y(name) }));
      if (c && c.eliminated_at_iteration) {
        f.inner.append(build(cross(f.x(end), f.y(name), 6, {}), {}, [s('title', {}, `${name} eliminated at iteration ${end}`)]));
      }
    });
    data.suggestions.forEach((sg, i) => {
      const cand = sg.diagnostics && sg.diagnostics.extra && sg.diagnostics.extra.candidate;
      if (cand && names.includes(cand)) f.inner.append(s('circle', { 'data-mark': 'kernel', cx: f.x(i + 1), cy: f.y(cand), r: 4, fill: '#1f4e79' }, s('title', {}, `suggestion ${i + 1} chose ${cand}`)));
    });
    const rows = specs.map((c, i) => {
      const p = byName.get(names[i]) || {};
      const desc = Object.entries(c).filter(([k]) => k !== 'name').map(([k, v]) => `${k} ${typeof v === 'object' ? JSON.stringify(v) : fmt(v)}`).join(', ');
      return [names[i], desc, p.surviving === undefined ? '—' : p.surviving ? 'yes' : 'no', p.eliminated_at_iteration ?? '—', p.selected ?? null, p.error_sum ?? null, p.beta_sigma_sum ?? null];
    });
    return panel('kernel', 'Kernel candidates',
      h('p', { class: 'muted small' }, 'Each candidate model\'s life (green while it survives, red once eliminated, × at the elimination) and the candidate each suggestion chose (dots).'),
      h('div', { class: 'grid2' }, figure('Candidates over time', f.svg)),
      simpleTable('kernel-table', ['Candidate', 'Model', 'Surviving', 'Eliminated at', 'Chosen', 'Error sum', 'β·σ sum'], rows));
  }

  function indirectPanel(data) {
    const st = data.study;
    const q = st.indirect.query_parameters;
    const t = st.parameters;
    const pairs = st.indirect.pairs || [];
    const figs = [];
    const shade = valueShade(data);
    if (q.length >= 2) {
      const f = frame({ w: 440, h: 380, title: 'queries asked, coloured by value', x: paramAxis(q[0]), y: paramAxis(q[1]), xLabel: paramLabel(q[0]), yLabel: paramLabel(q[1]) });
      for (const pr of pairs) f.inner.append(s('circle', { class: 'obs-faint', cx: f.x(pr.query[q[0].name]), cy: f.y(pr.query[q[1].name]), r: 1.8 }));
      data.observations.forEach((o, i) => {
        const a = o.query || {};
        if (!Number.isFinite(a[q[0].name]) || !Number.isFinite(a[q[1].name])) return;
        if (okValue(o)) f.inner.append(s('circle', { class: 'mark', 'data-mark': 'indirect', 'data-obs': i, cx: f.x(a[q[0].name]), cy: f.y(a[q[1].name]), r: 5, fill: ramp(shade(o)) }, s('title', {}, `#${i + 1}: ${fmt(o.value)}`)));
        else f.inner.append(cross(f.x(a[q[0].name]), f.y(a[q[1].name]), 4, { 'data-mark': 'indirect', 'data-obs': i }));
      });
      figs.push(figure(`Queries (${q[0].name} × ${q[1].name}); grey: the pairs' queries`, f.svg));
    }
    if (t.length >= 2 && pairs.length) {
      const f = frame({ w: 440, h: 380, title: 'example pairs: target points', x: paramAxis(t[0]), y: paramAxis(t[1]), xLabel: paramLabel(t[0]), yLabel: paramLabel(t[1]) });
      for (const pr of pairs) f.inner.append(s('circle', { class: 'obs-faint', 'data-mark': 'pairs', cx: f.x(pr.target[t[0].name]), cy: f.y(pr.target[t[1].name]), r: 2.5 }));
      const rec = data.best.recommended;
      if (rec && Number.isFinite(rec.assignments[t[0].name])) {
        const cx = f.x(rec.assignments[t[0].name]);
        const cy = f.y(rec.assignments[t[1].name]);
        f.inner.append(s('path', { d: `M${cx},${cy - 8}L${cx + 7},${cy + 6}L${cx - 7},${cy + 6}Z`, fill: '#e07b00' }, s('title', {}, 'recommended target point')));
      }
      figs.push(figure(`Pairs' targets (${t[0].name} × ${t[1].name}); triangle: recommended`, f.svg));
    }
    return panel('indirect', 'Indirect queries',
      h('p', {}, `${pairs.length} example pairs given at creation${pairs.length ? '' : ' (uploaded pairs are not listed by the API)'}; ${data.observations.length} queries observed.`),
      colourLegend(st), h('div', { class: 'grid2' }, figs));
  }

  // --- suggestions

  function suggestionsPanel(data) {
    const stateOf = (sg) => (sg.state === 'abandoned' && sg.abandon_reason === 'expired' ? 'expired' : sg.state);
    const states = ['open', 'completed', 'abandoned', 'expired'];
    const total = Object.fromEntries(states.map((x) => [x, 0]));
    const byClient = new Map();
    for (const sg of data.suggestions) {
      const k = sg.client_id || '(no client id)';
      if (!byClient.has(k)) byClient.set(k, Object.fromEntries(states.map((x) => [x, 0])));
      byClient.get(k)[stateOf(sg)] += 1;
      total[stateOf(sg)] += 1;
    }
    const open = data.suggestions.filter((sg) => sg.state === 'open');
    return panel('suggestions', 'Suggestions',
      h('p', {}, states.map((x) => `${total[x]} ${x}`).join(' · ')),
      simpleTable('suggestion-clients', ['Client', ...states], [...byClient].map(([c, n]) => [c, ...states.map((x) => String(n[x]))])),
      open.length ? h('div', {}, h('h3', {}, 'Open suggestions'), simpleTable('open-suggestions', ['Suggestion', 'Client', 'Created', 'Expires', 'Assignments'],
        open.map((sg) => [sg.id.slice(0, 8), sg.client_id || '—', time(sg.created_at), sg.expires_at ? time(sg.expires_at) : 'never',
          Object.entries(sg.query || sg.assignments).map(([k, v]) => `${k} = ${fmt(v)}`).join(', ')]))) : null);
  }

  // --- the observations table

  function observationsPanel(data, ui) {
    const st = data.study;
    const inps = inputs(st);
    const client = new Map(data.suggestions.map((sg) => [sg.id, sg.client_id]));
    const hasCost = data.observations.some((o) => Number.isFinite(o.cost));
    const cols = [
      { key: 'seq', label: '#', num: true, get: (o, i) => i + 1 },
      { key: 'value', label: valueLabel(st), num: true, get: (o) => (o.failed ? null : o.value) },
      ...inps.map((inp) => ({ key: `p:${inp.p.name}`, label: inp.p.name, num: inp.p.type !== 'categorical', get: (o) => inp.get(o) })),
      hasCost ? { key: 'cost', label: 'cost', num: true, get: (o) => o.cost } : null,
      st.control_sets ? { key: 'set', label: 'control set', get: (o) => o.control_set } : null,
      st.noise_levels ? { key: 'noise', label: 'noise level', get: (o) => o.noise_level } : null,
      { key: 'client', label: 'client', get: (o) => client.get(o.suggestion_id) || '' },
      { key: 'created', label: 'created', get: (o) => o.created_at },
    ].filter(Boolean);
    const col = cols.find((c) => c.key === ui.sort.key) || cols[0];
    const rows = data.observations.map((o, i) => ({ o, i }));
    const cmp = (a, b) => {
      const x = col.get(a.o, a.i);
      const y = col.get(b.o, b.i);
      if (x === y) return a.i - b.i;
      if (x === null || x === undefined) return 1; // empty last either way
      if (y === null || y === undefined) return -1;
      return (x < y ? -1 : 1) * ui.sort.dir;
    };
    rows.sort(cmp);
    const bestId = data.best.best_observed && data.best.best_observed.observation_id;
    const table = h('table', { id: 'observations' },
      h('thead', {}, h('tr', {}, cols.map((c) => h('th', { scope: 'col', class: c.num ? 'num' : null, 'aria-sort': c.key === col.key ? (ui.sort.dir > 0 ? 'ascending' : 'descending') : null },
        h('button', { type: 'button', onclick: () => {
          ui.sort = { key: c.key, dir: ui.sort.key === c.key ? -ui.sort.dir : 1 };
          const fresh = observationsPanel(data, ui);
          document.getElementById('observations-panel').replaceWith(fresh);
          fresh.querySelector(`th[aria-sort] button`).focus();
        } }, c.label))))),
      h('tbody', {}, rows.map(({ o, i }) => h('tr', { 'data-mark': 'table', 'data-obs': i, class: o.failed ? 'failed' : o.feasible === false ? 'infeasible' : o.id === bestId ? 'best' : null },
        cols.map((c) => {
          const v = c.get(o, i);
          if (c.key === 'created') return h('td', {}, time(v));
          if (c.key === 'value' && o.failed) return h('td', { class: 'num' }, 'failed');
          return h('td', { class: c.num ? 'num' : null }, typeof v === 'number' ? fmt(v) : v ?? '—');
        })))));
    const csvPath = `/v1/studies/${st.id}/observations?format=csv`;
    const link = h('a', { class: 'btn', href: csvPath, download: `${st.name || st.id}.csv`, id: 'csv-download' }, 'Download CSV');
    link.addEventListener('click', async (e) => {
      // With a token the browser cannot send the header on a plain link: fetch with it and hand over a blob.
      if (!token()) return;
      e.preventDefault();
      try {
        const blob = await (await request('GET', csvPath, undefined, 'text/csv')).blob();
        const url = URL.createObjectURL(blob);
        const a = h('a', { href: url, download: link.getAttribute('download') });
        document.body.append(a);
        a.click();
        a.remove();
        setTimeout(() => URL.revokeObjectURL(url), 10000);
      } catch (err) { fail(err); }
    });
    return h('section', { class: 'panel', id: 'observations-panel', 'aria-labelledby': 'observations-h' },
      h('h2', { id: 'observations-h' }, 'Observations'),
      h('div', { class: 'toolbar' }, link, h('span', { class: 'muted small' }, 'Sort by a column with its header button; the best observation is green, failed runs red.')),
      h('div', { class: 'table-wrap tall' }, table));
  }

  // ---------------------------------------------------------------- start

  document.getElementById('forget-token').addEventListener('click', () => {
    sessionStorage.removeItem(TOKEN_KEY);
    location.reload();
  });
  updateForgetButton();
  route();
})();
