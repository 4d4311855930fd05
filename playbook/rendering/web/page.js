'use strict';
// The playbook's history page. Every text from the log reaches the DOM as a text node or
// through textContent / setAttribute, never as HTML. The data is the head (#pb-head) and
// chunks of transactions, oldest first, each opening with the playbook folded up to it;
// chunks are embedded (#pb-chunk-N) or, when served, fetched from data/chunk/N.
(function () {
  const HEAD = JSON.parse(document.getElementById('pb-head').textContent);
  const SERVED = document.body.dataset.source === 'server';
  const N = HEAD.transactions;
  const SECTIONS = HEAD.sections;
  const PAGE = 40;
  const CAUSE_LABEL = {learning: 'learning', hook: 'hook', manual: 'manual edit', revert: 'revert',
    import: 'import', merge: 'merge', other: 'other'};

  // --- DOM helpers ------------------------------------------------------------------------------
  const $ = (id) => document.getElementById(id);
  function el(tag, cls, ...children) {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    for (const child of children) add(node, child);
    return node;
  }
  function add(node, child) {
    if (child === null || child === undefined || child === false) return;
    if (Array.isArray(child)) { for (const c of child) add(node, c); return; }
    node.append(typeof child === 'object' ? child : document.createTextNode(String(child)));
  }
  const SVG = 'http://www.w3.org/2000/svg';
  function svg(tag, attrs, ...children) {
    const node = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, String(v));
    for (const child of children) add(node, child);
    return node;
  }
  function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); }
  function short(text, n) { text = String(text); return text.length > n ? text.slice(0, n - 1) + '\u2026' : text; }
  function when(at) { return at ? String(at).replace('T', ' ').slice(0, 19) : ''; }
  function day(at) { return at ? String(at).slice(0, 10) : ''; }

  // --- data -------------------------------------------------------------------------------------
  const parsed = new Array(HEAD.chunks.length);
  const ready = new Promise((resolve) => {
    if (document.readyState !== 'loading') resolve();
    else document.addEventListener('DOMContentLoaded', () => resolve());
  });

  async function chunk(n) {
    if (parsed[n]) return parsed[n];
    let node = document.getElementById('pb-chunk-' + n);
    if (!node && !SERVED) { await ready; node = document.getElementById('pb-chunk-' + n); }
    let data;
    if (node) {
      data = JSON.parse(node.textContent);
    } else {
      const reply = await fetch('data/chunk/' + n, {cache: 'no-store'});
      if (!reply.ok) throw new Error('chunk ' + n + ': HTTP ' + reply.status);
      data = await reply.json();
    }
    parsed[n] = data;
    return data;
  }

  function chunkIndex(i) { // the chunk holding global transaction i
    const chunks = HEAD.chunks;
    let lo = 0, hi = chunks.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (chunks[mid].first <= i) lo = mid; else hi = mid - 1;
    }
    return lo;
  }

  // A transaction, decoded for display: strings resolved from its chunk's table.
  function decode(c, j) {
    const t = c.t[j], S = c.s;
    const s = (k) => (k === null || k === undefined ? null : S[k]);
    return {
      i: c.first + j, seq: t[0], at: t[1], tx: t[2], source: s(t[3]), cause: t[4], session: s(t[5]),
      model: s(t[6]), analysis: s(t[7]), reasoning: s(t[8]), note: s(t[9]), mask: t[10], raw: t[11],
      firstSeq: t[12], chunk: c,
    };
  }
  async function transaction(i) { const c = await chunk(chunkIndex(i)); return decode(c, i - c.first); }

  function op(c, o) { // one op with its strings resolved
    const S = c.s, s = (k) => (k === null || k === undefined ? null : S[k]);
    switch (o[0]) {
      case 'a': case 'i': return {k: o[0], name: s(o[1]), section: o[2], text: s(o[3]), h: o[4], x: o[5]};
      case 'u': return {k: 'u', name: s(o[1]), text: s(o[2]), before: s(o[3])};
      case 'm': return {k: 'm', name: s(o[1]), section: o[2], text: s(o[3]), h: o[4], x: o[5], sources: o[6].map(s)};
      case 'd': return {k: 'd', name: s(o[1]), reason: s(o[2]), text: s(o[3])};
      case 'p': return {k: 'p', name: s(o[1]), rule: s(o[2]), h: o[3], x: o[4]};
      case 'e': return {k: 'e', name: s(o[1]), rating: s(o[2]), h: o[3], x: o[4], rationale: s(o[5])};
      case 'c': return {k: 'c', name: s(o[1]), h: o[2], x: o[3]};
      case 'v': return {k: 'v', name: s(o[1]), section: o[2]};
      case 'r': return {k: 'r', section: o[1], names: o[2].map(s)};
      case 'b': return {k: 'b', name: s(o[1]), text: s(o[2]), similarity: o[3]};
      default: return {k: 'x', type: s(o[1]), name: s(o[2]), detail: s(o[3])};
    }
  }

  // --- the fold, in the page: the same rules as eventlog/evolve.py ---------------------------------
  function stateFrom(frame) {
    const sections = frame.map((entries) => new Map(entries.map((e) => [e[0], {name: e[0], text: e[1], h: e[2], x: e[3]}])));
    const where = new Map();
    sections.forEach((m, si) => { for (const name of m.keys()) where.set(name, si); });
    return {sections, where};
  }
  function removeKp(st, name) {
    const si = st.where.get(name);
    if (si === undefined) return null;
    st.where.delete(name);
    const kp = st.sections[si].get(name);
    st.sections[si].delete(name);
    return kp;
  }
  function insertKp(st, si, kp) {
    if (st.where.has(kp.name)) removeKp(st, kp.name);
    st.sections[si].set(kp.name, kp);
    st.where.set(kp.name, si);
  }
  function applyOp(st, S, o) {
    const get = (name) => { const si = st.where.get(name); return si === undefined ? null : st.sections[si].get(name); };
    switch (o[0]) {
      case 'a': case 'i': insertKp(st, o[2], {name: S[o[1]], text: S[o[3]], h: o[4], x: o[5]}); break;
      case 'u': { const kp = get(S[o[1]]); if (kp) kp.text = S[o[2]]; break; }
      case 'm': for (const k of o[6]) removeKp(st, S[k]); insertKp(st, o[2], {name: S[o[1]], text: S[o[3]], h: o[4], x: o[5]}); break;
      case 'd': case 'p': removeKp(st, S[o[1]]); break;
      case 'e': { const kp = get(S[o[1]]); if (kp) { kp.h = o[3]; kp.x = o[4]; } break; }
      case 'c': { const kp = get(S[o[1]]); if (kp) { kp.h = o[2]; kp.x = o[3]; } break; }
      case 'v': { const kp = removeKp(st, S[o[1]]); if (kp) insertKp(st, o[2], kp); break; }
      case 'r': {
        const entries = st.sections[o[1]], ordered = new Map();
        for (const k of o[2]) { const name = S[k]; if (entries.has(name)) ordered.set(name, entries.get(name)); }
        for (const [name, kp] of entries) if (!ordered.has(name)) ordered.set(name, kp);
        st.sections[o[1]] = ordered;
        break;
      }
      default: break;
    }
  }
  // The playbook after the first `p` transactions (p = 0: before any).
  async function stateAt(p) {
    if (p >= N) return stateFrom(HEAD.now);
    const ci = chunkIndex(Math.max(p - 1, 0));
    const c = await chunk(ci);
    const st = stateFrom(c.k);
    for (let j = 0; j < p - c.first; j++) for (const o of c.t[j][11]) applyOp(st, c.s, o);
    return st;
  }

  // --- rendering pieces ---------------------------------------------------------------------------
  function kpLink(name) {
    const a = el('a', 'kp-name', name);
    a.href = '#';
    a.setAttribute('data-name', name);
    a.addEventListener('click', (ev) => { ev.preventDefault(); ev.stopPropagation(); showHistory(name); });
    return a;
  }
  function counters(h, x) {
    return el('span', 'cnt', el('span', 'h', 'helpful=' + h), ' ', el('span', 'x', 'harmful=' + x));
  }
  function badge(cause) { return el('span', 'badge ' + cause, CAUSE_LABEL[cause] || cause); }
  function quote(text, n) { return el('span', 'quote', '\u201c' + (n ? short(text, n) : text) + '\u201d'); }

  function opLine(o, n) {
    const li = el('li', 'op-' + o.k);
    const sym = {a: '+', i: '+', m: '+', b: '*', d: '\u2212', p: '\u2212', u: '~', v: '\u2192', e: '=', c: '#', r: '\u2195'}[o.k] || '\u00b7';
    li.append(el('span', 'sym', sym));
    switch (o.k) {
      case 'a': case 'i': add(li, [o.k === 'a' ? 'added ' : 'imported ', kpLink(o.name), ' in ', SECTIONS[o.section], ' ', quote(o.text, n)]); break;
      case 'u': add(li, ['re-worded ', kpLink(o.name), ' ', quote(o.text, n)]); break;
      case 'm': add(li, ['merged ', o.sources.map((s, k) => [k ? ', ' : '', kpLink(s)]), ' into ', kpLink(o.name), ' ', quote(o.text, n)]); break;
      case 'd': add(li, ['deleted ', kpLink(o.name), o.reason ? ' (' + short(o.reason, n) + ')' : '']); break;
      case 'p': add(li, ['pruned ', kpLink(o.name), ' (' + o.rule + ')', counters(o.h, o.x)]); break;
      case 'e': add(li, ['rated ', kpLink(o.name), ' ' + o.rating, counters(o.h, o.x), o.rationale ? short(o.rationale, n) : '']); break;
      case 'c': add(li, ['counters of ', kpLink(o.name), ' set', counters(o.h, o.x)]); break;
      case 'v': add(li, ['moved ', kpLink(o.name), ' to ' + SECTIONS[o.section]]); break;
      case 'r': add(li, ['re-ordered ' + SECTIONS[o.section]]); break;
      case 'b': add(li, ['absorbed a near-duplicate into ', kpLink(o.name), ' ', quote(o.text, n)]); break;
      default: add(li, [o.type, o.name ? [' ', kpLink(o.name)] : '', o.detail ? ' (' + short(o.detail, n) + ')' : '']);
    }
    return li;
  }

  function txCard(t) {
    const li = el('li', 'tx ' + t.cause);
    li.setAttribute('data-tx', t.tx);
    li.setAttribute('data-i', String(t.i));
    const head = el('div', 'tx-head', el('span', 'when', when(t.at)), badge(t.cause),
      el('span', 'meta', t.source), t.session ? el('span', 'meta', 'session ' + t.session) : null,
      t.model ? el('span', 'meta', t.model) : null,
      el('span', 'meta txid', t.tx.slice(0, 12)), el('span', 'meta', 'seq ' + (t.firstSeq === t.seq ? t.seq : t.firstSeq + '\u2013' + t.seq)));
    li.append(head);
    if (t.analysis) li.append(el('div', 'why', el('b', null, 'analysis '), short(t.analysis, 300)));
    if (t.reasoning) li.append(el('div', 'why', el('b', null, 'reasoning '), short(t.reasoning, 300)));
    if (t.note) li.append(el('div', 'why', el('b', null, 'note '), short(t.note, 300)));
    const ops = el('ul', 'ops');
    const shown = t.raw.slice(0, 8);
    for (const o of shown) ops.append(opLine(op(t.chunk, o), 90));
    if (t.raw.length > shown.length) ops.append(el('li', 'meta', '\u2026 and ' + (t.raw.length - shown.length) + ' more'));
    if (!t.raw.length) ops.append(el('li', 'meta', 'no events'));
    li.append(ops);
    li.addEventListener('click', () => setPoint(t.i + 1, true));
    return li;
  }

  // --- the timeline list: newest first, paged, filtered -------------------------------------------
  const list = {cursor: N - 1, token: 0, shown: 0, scanned: 0};
  function filters() {
    const search = $('search').value.trim().toLowerCase();
    const cause = $('f-cause').value;
    const section = $('f-section').value;
    const session = $('f-session').value.trim();
    return {search, cause, section: section === '' ? -1 : Number(section), session,
      any: Boolean(search || cause || section !== '' || session)};
  }
  function haystack(t) {
    const parts = [t.tx, t.source, t.session, t.model, t.analysis, t.reasoning, t.note];
    for (const o of t.raw) for (const k of o.slice(1)) {
      if (typeof k === 'number' && o[0] !== 'e' && o[0] !== 'c') parts.push(t.chunk.s[k]);
      else if (Array.isArray(k)) for (const x of k) parts.push(t.chunk.s[x]);
    }
    for (const o of t.raw) if (o[0] === 'e' || o[0] === 'c') { parts.push(t.chunk.s[o[1]]); if (o[0] === 'e' && o[5] !== null) parts.push(t.chunk.s[o[5]]); }
    return parts.filter((p) => p !== null && p !== undefined).join('\n').toLowerCase();
  }
  function matches(t, f) {
    if (f.cause && t.cause !== f.cause) return false;
    if (f.section >= 0 && !(t.mask & (1 << f.section))) return false;
    if (f.session && t.session !== f.session && !(t.session || '').startsWith(f.session)) return false;
    if (f.search && !haystack(t).includes(f.search)) return false;
    return true;
  }
  async function fillList(reset) {
    const token = ++list.token;
    const f = filters();
    const ol = $('txlist');
    if (reset) { clear(ol); list.cursor = N - 1; list.shown = 0; list.scanned = 0; }
    let found = 0;
    $('more').hidden = true;
    while (list.cursor >= 0 && found < PAGE) {
      const c = await chunk(chunkIndex(list.cursor));
      if (token !== list.token) return; // a newer filter took over
      for (let j = list.cursor - c.first; j >= 0 && found < PAGE; j--) {
        const t = decode(c, j);
        list.cursor = t.i - 1;
        list.scanned++;
        if (f.any && !matches(t, f)) continue;
        ol.append(txCard(t));
        found++;
        list.shown++;
      }
      if (f.any) $('status').textContent = 'searching\u2026 ' + list.scanned.toLocaleString() + ' of ' + N.toLocaleString() + ' transactions';
      if (f.any) await new Promise((r) => setTimeout(r, 0)); // let the page breathe between chunks
      if (token !== list.token) return;
    }
    const total = N.toLocaleString();
    $('status').textContent = f.any
      ? list.shown.toLocaleString() + ' matching, ' + (list.cursor >= 0 ? 'searched ' + list.scanned.toLocaleString() + ' of ' + total : 'all ' + total + ' searched')
      : 'showing the newest ' + list.shown.toLocaleString() + ' of ' + total + ' transactions';
    $('more').hidden = list.cursor < 0;
    markSelected();
  }

  // --- the playbook at a point ---------------------------------------------------------------------
  let point = N;
  let pointToken = 0;
  function markSelected() {
    for (const node of document.querySelectorAll('.tx.sel')) node.classList.remove('sel');
    const node = document.querySelector('.tx[data-i="' + (point - 1) + '"]');
    if (node) node.classList.add('sel');
  }
  async function setPoint(p, fromList) {
    point = Math.max(0, Math.min(N, p));
    $('slider').value = String(point);
    markSelected();
    const token = ++pointToken;
    const st = await stateAt(point);
    const t = point > 0 ? await transaction(point - 1) : null;
    if (token !== pointToken) return;
    renderPoint(st, t);
    if (!fromList && t) {
      const node = document.querySelector('.tx[data-i="' + t.i + '"]');
      if (node) node.scrollIntoView({block: 'nearest'});
    }
    $('history').hidden = true;
    $('playbook').hidden = false;
  }
  function renderPoint(st, t) {
    const label = $('point-label');
    clear(label);
    if (!t) add(label, [el('b', null, 'before the first transaction'), ' \u2014 the empty playbook']);
    else add(label, ['after transaction ', el('b', null, (t.i + 1).toLocaleString() + ' of ' + N.toLocaleString()), ' \u00b7 ',
      el('b', null, when(t.at)), ' \u00b7 ', badge(t.cause), ' ', t.session ? 'session ' + t.session + ' \u00b7 ' : '',
      'seq ' + t.seq, point === N ? ' \u00b7 now' : '']);
    const changed = new Set(), added = new Set();
    if (t) for (const o of t.raw) {
      const x = op(t.chunk, o);
      if (x.k === 'a' || x.k === 'i' || x.k === 'm') added.add(x.name); else if (x.name) changed.add(x.name);
    }
    const panel = $('playbook');
    clear(panel);
    let total = 0;
    st.sections.forEach((m) => { total += m.size; });
    panel.append(el('h2', null, point === N ? 'The playbook now' : 'The playbook then'),
      el('div', 'sub', total + ' key point' + (total === 1 ? '' : 's') + ', as injected into a session'));
    if (!total) panel.append(el('div', 'empty', 'empty: nothing is injected'));
    st.sections.forEach((m, si) => {
      if (!m.size) return;
      const sec = el('div', 'sec');
      sec.setAttribute('data-section', SECTIONS[si]);
      const dot = el('span', 'sec-dot');
      dot.style.background = 'var(--s' + si + ')';
      sec.append(el('div', 'sec-head', dot, '## ' + SECTIONS[si], el('span', 'n', String(m.size))));
      for (const kp of m.values()) {
        const row = el('div', 'kp' + (added.has(kp.name) ? ' added' : changed.has(kp.name) ? ' changed' : ''),
          '[', kpLink(kp.name), ']', counters(kp.h, kp.x), ':: ', el('span', 'kp-text', kp.text));
        row.setAttribute('data-name', kp.name);
        sec.append(row);
      }
      panel.append(sec);
    });
  }

  // --- one key point's history ---------------------------------------------------------------------
  function mentions(o, S, name) {
    if (o[0] === 'r') return false;
    if (S[o[1]] === name) return true;
    return o[0] === 'm' && o[6].some((k) => S[k] === name);
  }
  async function historyOf(name) {
    const items = [];
    const seen = new Set();
    async function walk(target, until) {
      seen.add(target);
      for (let ci = 0; ci < HEAD.chunks.length; ci++) {
        if (HEAD.chunks[ci].first >= until) return;
        const c = await chunk(ci);
        for (let j = 0; j < c.t.length && c.first + j < until; j++) {
          for (const o of c.t[j][11]) {
            if (!mentions(o, c.s, target)) continue;
            if (o[0] === 'm' && c.s[o[1]] === target) {
              for (const k of o[6]) if (!seen.has(c.s[k])) await walk(c.s[k], c.first + j + 1);
            }
            items.push({entry: target, t: decode(c, j), o: op(c, o)});
          }
        }
      }
    }
    await walk(name, N);
    return items;
  }
  function wordDiff(a, b) { // the words of b against a: [kind, text] with kind ' ', '-', '+'
    const x = a.split(/(\s+)/), y = b.split(/(\s+)/);
    if (x.length * y.length > 400000) return [['-', a], ['+', b]];
    const m = x.length, n = y.length, L = Array.from({length: m + 1}, () => new Uint16Array(n + 1));
    for (let i = m - 1; i >= 0; i--) for (let j = n - 1; j >= 0; j--) L[i][j] = x[i] === y[j] ? L[i + 1][j + 1] + 1 : Math.max(L[i + 1][j], L[i][j + 1]);
    const out = [];
    let i = 0, j = 0;
    const push = (k, s) => { if (out.length && out[out.length - 1][0] === k) out[out.length - 1][1] += s; else out.push([k, s]); };
    while (i < m && j < n) {
      if (x[i] === y[j]) { push(' ', x[i]); i++; j++; } else if (L[i + 1][j] >= L[i][j + 1]) push('-', x[i++]); else push('+', y[j++]);
    }
    while (i < m) push('-', x[i++]);
    while (j < n) push('+', y[j++]);
    return out;
  }
  function diffNode(a, b) { // changes separated only by spaces read as one replacement
    const parts = wordDiff(a || '', b || ''), runs = [];
    for (let k = 0; k < parts.length; k++) {
      const [kind, text] = parts[k];
      const between = kind === ' ' && !text.trim() && k > 0 && k < parts.length - 1 && parts[k - 1][0] !== ' ' && parts[k + 1][0] !== ' ';
      if (kind === ' ' && !between) { runs.push({same: text}); continue; }
      let run = runs[runs.length - 1];
      if (!run || run.same !== undefined) { run = {del: '', ins: ''}; runs.push(run); }
      if (kind !== '+') run.del += text;
      if (kind !== '-') run.ins += text;
    }
    const span = el('span', 'diff');
    for (const run of runs) {
      if (run.same !== undefined) { span.append(document.createTextNode(run.same)); continue; }
      if (run.del) span.append(el('del', null, run.del));
      if (run.del && run.ins) span.append(document.createTextNode(' '));
      if (run.ins) span.append(el('ins', null, run.ins));
    }
    return span;
  }
  function counterChart(points) { // points: [{label, h, x}] in order; a small step chart
    const W = 420, H = 120, P = 26;
    const max = Math.max(1, ...points.map((p) => Math.max(p.h, p.x)));
    const X = (k) => P + (points.length < 2 ? 0 : (k * (W - P - 8)) / (points.length - 1));
    const Y = (v) => H - 18 - (v * (H - 30)) / max;
    const path = (key) => points.map((p, k) => (k ? 'H' + X(k).toFixed(1) + 'V' : 'M' + X(k).toFixed(1) + ',') + Y(p[key]).toFixed(1)).join('');
    return svg('svg', {class: 'chart counters', viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': 'helpful and harmful over time'},
      svg('line', {class: 'axis', x1: P, y1: H - 18, x2: W - 4, y2: H - 18}),
      svg('line', {class: 'axis', x1: P, y1: 8, x2: P, y2: H - 18}),
      svg('text', {x: 2, y: 14}, String(max)), svg('text', {x: 2, y: H - 18}, '0'),
      svg('text', {x: P, y: H - 4}, points.length ? day(points[0].at) : ''),
      svg('text', {x: W - 70, y: H - 4}, points.length ? day(points[points.length - 1].at) : ''),
      svg('path', {d: path('h'), fill: 'none', stroke: 'var(--good)', 'stroke-width': 2}),
      svg('path', {d: path('x'), fill: 'none', stroke: 'var(--bad)', 'stroke-width': 2}));
  }
  let historyToken = 0;
  async function showHistory(name) {
    const token = ++historyToken;
    const panel = $('history');
    clear(panel);
    panel.append(el('h2', null, 'History of ', el('span', 'mono', name)), el('div', 'sub', 'reading the log\u2026'));
    $('playbook').hidden = true;
    panel.hidden = false;
    const items = await historyOf(name);
    if (token !== historyToken) return;
    clear(panel);
    const back = el('button', 'back', '\u2190 playbook');
    back.type = 'button';
    back.addEventListener('click', () => { panel.hidden = true; $('playbook').hidden = false; });
    panel.append(back, el('h2', null, 'History of ', el('span', 'mono kp-title', name)));
    const now = stateFrom(HEAD.now), si = now.where.get(name);
    const kp = si === undefined ? null : now.sections[si].get(name);
    panel.append(el('div', 'sub', kp ? ['now in ', SECTIONS[si], ' \u00b7 ', counters(kp.h, kp.x)] : 'not in the playbook now'));
    if (!items.length) { panel.append(el('div', 'empty', 'no event in the log names this key point')); return; }
    const own = items.filter((it) => it.entry === name);
    const points = [];
    for (const it of own) if (it.o.h !== undefined && it.o.k !== 'p') points.push({at: it.t.at, h: it.o.h, x: it.o.x});
    if (points.length) panel.append(el('div', 'legend', el('span', null, el('i', null), 'helpful'), el('span', null, el('i', null), 'harmful')), counterChart(points));
    const legend = panel.querySelectorAll('.legend i');
    if (legend.length) { legend[0].style.background = 'var(--good)'; legend[1].style.background = 'var(--bad)'; }
    const ol = el('ol', 'hist');
    for (const it of items) {
      const o = it.o, t = it.t;
      const gone = (o.k === 'd' || o.k === 'p' || (o.k === 'm' && o.name !== it.entry));
      const li = el('li', 'hist-item' + (gone ? ' gone' : '') + (it.entry !== name ? ' from' : ''));
      li.setAttribute('data-kind', o.k);
      li.setAttribute('data-entry', it.entry);
      li.append(el('div', 'tx-head', el('span', 'when', when(t.at)), badge(t.cause),
        t.session ? el('span', 'meta', 'session ' + t.session) : null, t.model ? el('span', 'meta', t.model) : null,
        el('span', 'meta txid', t.tx.slice(0, 12))));
      const what = el('div', 'what');
      const who = it.entry !== name ? [el('span', 'mono', it.entry), ' '] : '';
      switch (o.k) {
        case 'a': case 'i': add(what, [who, (o.k === 'a' ? 'created' : 'imported') + ' in ' + SECTIONS[o.section] + ' ', quote(o.text), counters(o.h, o.x)]); break;
        case 'u': add(what, [who, 're-worded: ', diffNode(o.before, o.text)]); break;
        case 'm':
          if (o.name === it.entry) add(what, [who, 'created by merging ', o.sources.map((s, k) => [k ? ', ' : '', kpLink(s)]), ' in ' + SECTIONS[o.section] + ' ', quote(o.text), counters(o.h, o.x)]);
          else add(what, [who, 'merged into ', kpLink(o.name)]);
          break;
        case 'd': add(what, [who, 'deleted by ', CAUSE_LABEL[t.cause] || t.cause, t.session ? ' (session ' + t.session + ')' : '', o.reason ? ': ' + o.reason : '']); break;
        case 'p': add(what, [who, 'pruned by the rule ' + o.rule, counters(o.h, o.x)]); break;
        case 'e': add(what, [who, 'rated ' + o.rating, counters(o.h, o.x), o.rationale ? '\u2014 ' + o.rationale : '']); break;
        case 'c': add(what, [who, 'counters set', counters(o.h, o.x)]); break;
        case 'v': add(what, [who, 'moved to ' + SECTIONS[o.section]]); break;
        case 'b': add(what, [who, 'absorbed a near-duplicate (similarity ' + o.similarity.toFixed(2) + ') ', quote(o.text)]); break;
        default: add(what, [who, o.type, o.detail ? ' (' + o.detail + ')' : '']);
      }
      li.append(what);
      const why = t.reasoning || t.note;
      if (why && (o.k !== 'e')) li.append(el('div', 'why', short(why, 240)));
      li.addEventListener('click', (ev) => { if (ev.target.closest('a')) return; setPoint(t.i + 1, false).then(() => showHistory(name)); });
      ol.append(li);
    }
    panel.append(ol);
  }

  // --- the summary -----------------------------------------------------------------------------------
  function lineChart(series, colors, labels, opts) {
    const W = 560, H = 200, P = 34;
    const pts = HEAD.summary;
    const max = Math.max(1, ...series.map((s) => Math.max(...s)));
    // x is time: the samples are evenly spaced in transactions, not in days
    const times = pts.map((p) => Date.parse(p[1])), t0 = times[0], span = times[times.length - 1] - t0;
    const X = (k) => P + (!(span > 0) ? (pts.length < 2 ? 0 : (k * (W - P - 10)) / (pts.length - 1)) : ((times[k] - t0) * (W - P - 10)) / span);
    const Y = (v) => H - 22 - (v * (H - 36)) / max;
    const nodes = [svg('line', {class: 'axis', x1: P, y1: H - 22, x2: W - 6, y2: H - 22}),
      svg('line', {class: 'axis', x1: P, y1: 10, x2: P, y2: H - 22}),
      svg('text', {x: 2, y: 16}, String(max)), svg('text', {x: 2, y: H - 22}, '0'),
      svg('text', {x: P, y: H - 6}, pts.length ? day(pts[0][1]) : ''),
      svg('text', {x: W - 70, y: H - 6}, pts.length ? day(pts[pts.length - 1][1]) : '')];
    series.forEach((s, k) => {
      const d = s.map((v, j) => (j ? 'H' + X(j).toFixed(1) + 'V' : 'M' + X(j).toFixed(1) + ',') + Y(v).toFixed(1)).join('');
      nodes.push(svg('path', {d, fill: 'none', stroke: colors[k], 'stroke-width': 2}));
    });
    const legend = el('div', 'legend', labels.map((l, k) => { const i = el('i'); i.style.background = colors[k]; return el('span', null, i, l); }));
    return [legend, svg('svg', {class: 'chart ' + (opts || ''), viewBox: `0 0 ${W} ${H}`, role: 'img'}, nodes)];
  }
  function renderSummary() {
    const box = $('summary');
    clear(box);
    const pts = HEAD.summary;
    const perSection = SECTIONS.map((_, k) => pts.map((p) => p[2][k]));
    box.append(el('section', 'card', el('h3', null, 'Key points per section over time'),
      lineChart(perSection, SECTIONS.map((_, k) => 'var(--s' + k + ')'), SECTIONS, 'sections')));
    box.append(el('section', 'card', el('h3', null, 'Helpful and harmful over time (sums of the counters)'),
      lineChart([pts.map((p) => p[3]), pts.map((p) => p[4])], ['var(--good)', 'var(--bad)'], ['helpful', 'harmful'], 'ratings')));
    const causes = Object.entries(HEAD.causes).filter(([, n]) => n > 0);
    const most = Math.max(1, ...causes.map(([, n]) => n));
    const bars = el('div', 'bars');
    for (const [cause, n] of causes) {
      const bar = el('div', 'bar');
      bar.style.width = Math.max(1, (100 * n) / most) + '%';
      bar.style.background = 'var(--c-' + cause + ')';
      bars.append(el('span', null, CAUSE_LABEL[cause] || cause), el('div', null, bar), el('span', 'meta', n.toLocaleString()));
    }
    box.append(el('section', 'card', el('h3', null, 'Transactions by cause'), bars,
      el('p', 'meta', N.toLocaleString() + ' transactions, ' + HEAD.events.toLocaleString() + ' events, log at seq ' + HEAD.seq.toLocaleString())));
    if (HEAD.usage.length) {
      const table = el('table', 'cost', el('tr', null, ['day', 'calls', 'input tokens', 'output tokens', 'cost (USD)'].map((h) => el('th', null, h))));
      for (const u of HEAD.usage) table.append(el('tr', null, el('td', null, u[0]), el('td', null, u[1].toLocaleString()),
        el('td', null, u[2].toLocaleString()), el('td', null, u[3].toLocaleString()), el('td', null, u[4].toFixed(4))));
      const card = el('section', 'card', el('h3', null, 'Learning cost per day'), table);
      card.id = 'cost';
      box.append(card);
    }
    if ((HEAD.value || []).length) {
      const table = el('table', 'value', el('tr', null, ['measured', 'cases', 'with', 'without', 'delta', 'cost (USD)'].map((h) => el('th', null, h))));
      for (const v of HEAD.value) table.append(el('tr', null, el('td', null, v[0].slice(0, 16).replace('T', ' ')),
        el('td', null, String(v[1])), el('td', null, v[2].toFixed(2)), el('td', null, v[3].toFixed(2)),
        el('td', null, (v[2] - v[3] >= 0 ? '+' : '') + (v[2] - v[3]).toFixed(2)), el('td', null, v[4].toFixed(2))));
      const card = el('section', 'card', el('h3', null, 'Value of the playbook (playbook eval: with vs without)'), table);
      card.id = 'value';
      box.append(card);
    }
  }

  // --- wiring ------------------------------------------------------------------------------------------
  function show(view) {
    $('view-timeline').hidden = view !== 'timeline';
    $('view-summary').hidden = view !== 'summary';
    $('tab-timeline').classList.toggle('on', view === 'timeline');
    $('tab-summary').classList.toggle('on', view === 'summary');
    if (view === 'summary' && !$('summary').firstChild) renderSummary();
  }
  function debounce(fn, ms) { let timer = 0; return (...a) => { clearTimeout(timer); timer = setTimeout(() => fn(...a), ms); }; }
  function fail(error) {
    const status = $('status');
    status.className = 'status err';
    status.textContent = 'could not read the page data: ' + (error && error.message ? error.message : error);
  }

  function init() {
    document.title = (HEAD.project ? HEAD.project + ' \u2014 ' : '') + 'playbook history';
    $('title').textContent = HEAD.project ? 'playbook history \u00b7 ' + HEAD.project : 'playbook history';
    let entries = 0;
    for (const s of HEAD.now) entries += s.length;
    $('totals').textContent = entries + ' key points now \u00b7 ' + N.toLocaleString() + ' transactions \u00b7 ' +
      HEAD.events.toLocaleString() + ' events' + (N ? ' \u00b7 ' + day(HEAD.chunks[0].time_from) + ' to ' + day(HEAD.chunks[HEAD.chunks.length - 1].time_to) : '');
    const cause = $('f-cause');
    cause.append(new Option('every cause', ''));
    for (const [k, n] of Object.entries(HEAD.causes)) if (n) cause.append(new Option((CAUSE_LABEL[k] || k) + ' (' + n.toLocaleString() + ')', k));
    const section = $('f-section');
    section.append(new Option('every section', ''));
    SECTIONS.forEach((s, k) => section.append(new Option(s.toLowerCase(), String(k))));
    const sessions = $('sessions');
    for (const s of HEAD.sessions) { const o = document.createElement('option'); o.value = s; sessions.append(o); }
    const slider = $('slider');
    slider.max = String(N);
    slider.value = String(N);
    slider.addEventListener('input', debounce(() => setPoint(Number(slider.value), false).catch(fail), 40));
    $('step-back').addEventListener('click', () => setPoint(point - 1, false).catch(fail));
    $('step-fwd').addEventListener('click', () => setPoint(point + 1, false).catch(fail));
    const refilter = debounce(() => fillList(true).catch(fail), 200);
    for (const id of ['search', 'f-session']) $(id).addEventListener('input', refilter);
    for (const id of ['f-cause', 'f-section']) $(id).addEventListener('change', refilter);
    $('more').addEventListener('click', () => fillList(false).catch(fail));
    $('tab-timeline').addEventListener('click', () => show('timeline'));
    $('tab-summary').addEventListener('click', () => show('summary'));
    // data-ready: when the first screen was drawn, in ms since navigation began (read by tests and the benchmark)
    Promise.all([setPoint(N, true), fillList(true)]).then(() => requestAnimationFrame(() => {
      document.body.setAttribute('data-ready', String(Math.max(1, Math.round(performance.now()))));
    })).catch(fail);
  }
  // A small read-only handle for scripts and tests: the playbook after the first p transactions.
  window.playbookPage = Object.freeze({
    transactions: N,
    stateAt: async (p) => (await stateAt(p)).sections.map((m) => Array.from(m.values(), (kp) => [kp.name, kp.text, kp.h, kp.x])),
    history: async (name) => (await historyOf(name)).map((it) => [it.entry, it.o.k, it.t.tx]),
  });
  init();
})();
