// The inbox: a person's view of the tasks they take part in, over this harness's own A2A
// API (JSON-RPC, SSE for the open task). Everything a task holds is untrusted: it reaches
// the page only as text nodes (textContent) or as elements built here, never as HTML.
//
// Identity: in `none` mode the participant id the person picks is sent as
// X-Participant-Id and kept in sessionStorage (this tab only) so a reload keeps it; in
// `jwt` mode the token is kept in memory only, never in a URL or storage, so a reload
// asks for it again.

const CHANNEL = 'application/vnd.tiny-harness.channel+json';
const EVENT = 'application/vnd.tiny-harness.event+json';
const TASK_KEY = 'io.github.madarauchiha-314.tiny-harness/task';
/// When the answer to what waits on someone is due (RFC 3339), set by the harness.
const REPLY_BY = 'io.github.madarauchiha-314.tiny-harness/replyBy';
const COMMANDS = 'https://madarauchiha-314.github.io/tiny-harness/a2a/ext/commands/v1';
const TERMINAL = ['TASK_STATE_COMPLETED', 'TASK_STATE_FAILED', 'TASK_STATE_CANCELED', 'TASK_STATE_REJECTED'];
const INTERRUPTED = ['TASK_STATE_INPUT_REQUIRED', 'TASK_STATE_AUTH_REQUIRED'];
const LIST_EVERY_MS = 2000;
/// The messages of the open task the page shows (the newest): what it asks GetTask for.
const HISTORY_SHOWN = 50;
/// How long a burst of the open task's events is gathered before it is read again once.
const RELOAD_AFTER_MS = 250;
/// The states in which an answer may be on its way: the stored task does not hold it yet.
const ANSWERING = ['TASK_STATE_SUBMITTED', 'TASK_STATE_WORKING'];

const $ = (id) => document.getElementById(id);
const state = { who: null, token: null, tokenMode: false, claim: null, waiting: new Set(), rpcPath: '/', commands: [], open: null, stream: null, seq: 0, listTimer: null, reloading: false, reloadAgain: false, live: new Map(), base: new Map() };

/// An element with text content only; children appended in order.
function el(tag, text, cls) {
  const e = document.createElement(tag);
  if (text !== undefined && text !== null) e.textContent = String(text);
  if (cls) e.className = cls;
  return e;
}

function showError(e) {
  const box = $('error');
  box.textContent = e ? `Something went wrong: ${e.message || e}` : '';
  box.hidden = !e;
}

function headers(extra) {
  const h = { 'Content-Type': 'application/json', 'A2A-Version': '1.0', ...extra };
  if (state.tokenMode) h.Authorization = `Bearer ${state.token}`;
  else h['X-Participant-Id'] = state.who;
  return h;
}

async function rpc(method, params) {
  const body = JSON.stringify({ jsonrpc: '2.0', id: ++state.seq, method, params });
  let res;
  try {
    res = await fetch(state.rpcPath, { method: 'POST', headers: headers(), body });
  } catch (e) {
    throw new Error(`the harness could not be reached (${e.message})`);
  }
  const text = await res.text();
  let answer;
  try {
    answer = JSON.parse(text);
  } catch {
    throw new Error(`the harness answered HTTP ${res.status}: ${text.slice(0, 200)}`);
  }
  if (answer.error) throw new Error(answer.error.message || `error ${answer.error.code}`);
  if (!res.ok) throw new Error(`the harness answered HTTP ${res.status}`);
  return answer.result;
}

// ------------------------------------------------------------------ safe markdown

/// A link target that cannot run script: http(s) and mailto only.
function safeHref(href) {
  try {
    const u = new URL(href, location.href);
    return ['http:', 'https:', 'mailto:'].includes(u.protocol) ? u.href : null;
  } catch {
    return null;
  }
}

/// Inline markdown (`code`, **strong**, *em*, [text](url)) as nodes appended to `parent`.
function inline(parent, text) {
  // Bounded and without nesting, so no input makes matching slow.
  const re = /(`[^`]{1,500}`)|(\*\*[^*]{1,500}\*\*)|(\*[^*]{1,500}\*)|(\[[^[\]]{1,500}\]\([^()\s]{1,2000}\))/g;
  let last = 0;
  for (const m of text.matchAll(re)) {
    if (m.index > last) parent.append(text.slice(last, m.index));
    const t = m[0];
    if (m[1]) parent.append(el('code', t.slice(1, -1)));
    else if (m[2]) parent.append(el('strong', t.slice(2, -2)));
    else if (m[3]) parent.append(el('em', t.slice(1, -1)));
    else {
      const [, label, href] = t.match(/^\[([^[\]]+)\]\(([^()\s]+)\)$/);
      const safe = safeHref(href);
      if (safe) {
        const a = el('a', label);
        a.href = safe;
        a.rel = 'noopener noreferrer nofollow';
        a.target = '_blank';
        parent.append(a);
      } else {
        parent.append(t);
      }
    }
    last = m.index + t.length;
  }
  if (last < text.length) parent.append(text.slice(last));
}

/// Markdown blocks (headings, lists, fenced code, paragraphs) as a fragment of elements.
function markdown(text) {
  const out = document.createDocumentFragment();
  const lines = String(text).split('\n');
  let list = null;
  let para = [];
  const flush = () => {
    if (para.length) {
      const p = el('p');
      inline(p, para.join(' '));
      out.append(p);
      para = [];
    }
  };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    if (line.startsWith('```')) {
      flush();
      list = null;
      const code = [];
      for (i++; i < lines.length && !lines[i].startsWith('```'); i++) code.push(lines[i]);
      out.append(el('pre', code.join('\n')));
      continue;
    }
    const heading = line.match(/^(#{1,4})\s+(.*)$/);
    const item = line.match(/^\s*(?:[-*]|\d+\.)\s+(.*)$/);
    if (heading) {
      flush();
      list = null;
      const h = el(`h${Math.min(heading[1].length + 3, 6)}`);
      inline(h, heading[2]);
      out.append(h);
    } else if (item) {
      flush();
      if (!list) {
        list = el(/^\s*\d/.test(line) ? 'ol' : 'ul');
        out.append(list);
      }
      const li = el('li');
      inline(li, item[1]);
      list.append(li);
    } else if (!line.trim()) {
      flush();
      list = null;
    } else {
      list = null;
      para.push(line);
    }
  }
  flush();
  return out;
}

// ------------------------------------------------------------------ parts and messages

function channelOf(message) {
  const part = (message.parts || []).find((p) => p.mediaType === CHANNEL && p.data);
  return part ? part.data : null;
}

/// Who said it: the participant it names, else its channel part's sender, else (for the
/// agent's own words) the task's assignee.
function senderOf(message, ext) {
  const meta = message.metadata || {};
  if (meta.participant_id) return meta.participant_id;
  const ch = channelOf(message);
  if (ch && ch.sender) return ch.sender;
  const assignee = ((ext && ext.participants) || []).find((p) => p.role === 'assignee');
  return message.role === 'ROLE_AGENT' && assignee ? assignee.id : 'someone';
}

/// A file part as a download link (its bytes, or its URL when http(s)).
function fileLink(part) {
  const name = part.filename || 'file';
  const a = el('a', `Download ${name}`);
  if (part.raw) {
    const bytes = Uint8Array.from(atob(part.raw), (c) => c.charCodeAt(0));
    a.href = URL.createObjectURL(new Blob([bytes], { type: 'application/octet-stream' }));
    a.download = name;
  } else {
    const safe = safeHref(part.url);
    if (!safe) return el('span', `${name} (not downloadable: ${part.url})`);
    a.href = safe;
    a.rel = 'noopener noreferrer nofollow';
  }
  return a;
}

function renderParts(parts, into) {
  for (const part of parts || []) {
    if (typeof part.text === 'string') {
      const block = el('div', null, 'text');
      block.append(markdown(part.text));
      into.append(block);
    } else if (part.raw !== undefined || part.url !== undefined) {
      into.append(fileLink(part));
    } else if (part.data !== undefined) {
      if (part.mediaType === CHANNEL || part.mediaType === EVENT) continue;
      into.append(el('pre', JSON.stringify(part.data, null, 2)));
    }
  }
}

function renderMessage(message, ext, extraClass) {
  const li = el('li', null, `msg ${extraClass || ''}`);
  const head = el('div');
  head.append(el('span', senderOf(message, ext), 'who'));
  const ch = channelOf(message);
  if (ch && ch.kind && ch.kind !== 'message') head.append(el('span', ch.kind.replace('_', ' '), 'kind'));
  const to = message.metadata && message.metadata.addressee;
  if (to) head.append(el('span', `to ${to}`, 'kind'));
  li.append(head);
  renderParts(message.parts, li);
  return li;
}

// ------------------------------------------------------------------ the task list

/// Whether the task waits on me: the harness says so ("waiting on me" listing), whatever
/// its status message says now.
function waitingOnMe(task) {
  return state.waiting.has(task.id) && task.status && INTERRUPTED.includes(task.status.state);
}

/// When the answer the task waits on is due (ms since the epoch), if it is.
function dueOf(task) {
  const due = task.status && task.status.message && task.status.message.metadata && task.status.message.metadata[REPLY_BY];
  const at = typeof due === 'string' ? Date.parse(due) : NaN;
  return Number.isNaN(at) ? null : at;
}

/// A due time as the person reads it: in their own time zone.
function dueText(at) {
  return `Answer by ${new Date(at).toLocaleString()}`;
}

function extOf(task) {
  return (task.metadata && task.metadata[TASK_KEY]) || {};
}

function shortState(task) {
  return (task.status ? task.status.state : 'TASK_STATE_UNSPECIFIED').replace('TASK_STATE_', '').replace('_', ' ').toLowerCase();
}

async function refreshList() {
  const [waiting, all] = await Promise.all([
    rpc('ListTasks', { waitingOnMe: true, pageSize: 100, historyLength: 0 }),
    rpc('ListTasks', { pageSize: 100, historyLength: 0 }),
  ]);
  // What waits on me, soonest due first; then what has no due time, newest first.
  const first = (waiting.tasks || []).map((t, i) => [dueOf(t) ?? Infinity, i, t])
    .sort((a, b) => a[0] - b[0] || a[1] - b[1]).map(([, , t]) => t);
  const seen = new Set(first.map((t) => t.id));
  state.waiting = seen;
  const rest = (all.tasks || []).filter((t) => !seen.has(t.id));
  const list = $('task-list');
  list.replaceChildren();
  for (const task of [...first, ...rest]) {
    const li = el('li');
    li.dataset.taskId = task.id;
    if (seen.has(task.id)) li.classList.add('waiting');
    if (state.open === task.id) li.classList.add('open');
    const b = el('button');
    b.type = 'button';
    b.append(el('span', extOf(task).name || task.id));
    if (seen.has(task.id)) b.append(el('span', 'Waiting on you', 'badge'));
    const due = seen.has(task.id) && dueOf(task);
    if (due) b.append(el('span', dueText(due), 'due state'));
    b.append(el('span', shortState(task), 'state'));
    b.addEventListener('click', () => openTask(task.id).catch(showError));
    li.append(b);
    list.append(li);
  }
  $('no-tasks').hidden = first.length + rest.length > 0;
}

function startListing() {
  clearTimeout(state.listTimer);
  const tick = async () => {
    try {
      await refreshList();
    } catch (e) {
      showError(e);
    }
    state.listTimer = setTimeout(tick, LIST_EVERY_MS);
  };
  tick();
}

// ------------------------------------------------------------------ one task

async function renderTask(task) {
  const ext = extOf(task);
  $('detail-heading').textContent = ext.name || task.id;
  $('task-state').textContent = `State: ${shortState(task)}`;
  $('task-goal').replaceChildren(markdown(ext.goal || ''));
  const criteria = $('task-criteria');
  criteria.replaceChildren(...(ext.acceptance_criteria || []).map((c) => el('li', `${c.met ? '✔' : '○'} ${c.text}`)));
  $('task-people').replaceChildren(...(ext.participants || []).map((p) => el('li', `${p.display_name || p.id} (${p.role}${p.kind === 'agent' ? ', agent' : ''})${p.id === state.who ? ' — you' : ''}`)));

  const convo = $('conversation');
  convo.replaceChildren(...(task.history || []).map((m) => renderMessage(m, ext)));
  const status = task.status || {};
  if (status.message) convo.append(renderMessage(status.message, ext, waitingOnMe(task) ? 'question' : 'current'));

  const asking = waitingOnMe(task);
  $('ask').hidden = !asking;
  if (asking) {
    const q = $('ask-question');
    q.replaceChildren();
    renderParts(status.message.parts, q);
    // Only a question names what the reply answers; after another status (a command's
    // reply) the answer goes without, and still answers the open question.
    const asked = channelOf(status.message);
    $('answer').dataset.inReplyTo = asked && asked.kind === 'help_request' ? status.message.messageId : '';
  }
  const due = asking && dueOf(task);
  $('ask-due').hidden = !due;
  $('ask-due').textContent = due ? dueText(due) : '';

  const subs = $('subtasks');
  subs.replaceChildren();
  for (const ref of ext.sub_tasks || []) {
    const li = el('li');
    const b = el('button', ref.task_id);
    b.type = 'button';
    b.addEventListener('click', () => openTask(ref.task_id).catch(showError));
    li.append(b);
    subs.append(li);
    rpc('GetTask', { id: ref.task_id, historyLength: 0 })
      .then((t) => {
        b.textContent = `${extOf(t).name || t.id}: ${shortState(t)}`;
      })
      .catch(() => li.append(el('span', ' (not visible to you)', 'state')));
  }
  if (!(ext.sub_tasks || []).length) subs.append(el('li', 'None.', 'state'));

  renderArtifacts(task);
  $('cancel').hidden = TERMINAL.includes(status.state);
}

// ------------------------------------------------------------------ artifacts, as they stream

/// The text an artifact's parts carry, joined.
function textOf(artifact) {
  return (artifact.parts || []).filter((p) => typeof p.text === 'string').map((p) => p.text).join('');
}

/// The stored artifacts, and in place of or after them those streaming (`state.live`). A
/// streaming one keeps its element, so its text goes on growing in the same node. Once
/// the task is no longer working, what it stores is the answer: the streamed text goes.
function renderArtifacts(task) {
  const status = task.status || {};
  if (!ANSWERING.includes(status.state)) state.live.clear();
  const arts = $('artifacts');
  arts.replaceChildren();
  for (const a of task.artifacts || []) {
    const live = state.live.get(a.artifactId);
    if (live) {
      arts.append(live.li);
      continue;
    }
    const li = el('li');
    li.dataset.artifactId = a.artifactId;
    li.append(el('div', a.name || a.artifactId, 'who'));
    renderParts(a.parts, li);
    arts.append(li);
  }
  for (const live of state.live.values()) if (!live.li.isConnected) arts.append(live.li);
  if (!arts.children.length) arts.append(el('li', 'None.', 'state'));
}

/// Applies an `artifactUpdate` of the open task as A2A says: `append` adds its parts' text
/// to the artifact with its id, else it replaces the artifact. The text goes into one text
/// node (shown as typed, never as HTML); nothing else on the page is drawn again.
function applyUpdate(update) {
  const artifact = update.artifact || {};
  const id = artifact.artifactId;
  if (!id) return;
  let live = state.live.get(id);
  if (!live) {
    const li = el('li', null, 'streaming');
    li.dataset.artifactId = id;
    li.append(el('div', artifact.name || id, 'who'));
    const text = document.createTextNode(update.append ? state.base.get(id) || '' : '');
    const block = el('div', null, 'text live');
    block.append(text);
    li.append(block);
    live = { li, text };
    state.live.set(id, live);
    const arts = $('artifacts');
    const shown = [...arts.children].find((c) => c.dataset.artifactId === id);
    if (shown) shown.replaceWith(li);
    else {
      arts.querySelector(':scope > li:not([data-artifact-id])')?.remove(); // "None."
      arts.append(li);
    }
  }
  if (update.append) live.text.appendData(textOf(artifact));
  else live.text.data = textOf(artifact);
}

/// A task as a stream gives it: what the updates after it apply to.
function applySnapshot(task) {
  state.base = new Map((task.artifacts || []).map((a) => [a.artifactId, textOf(a)]));
  for (const [id, live] of state.live) live.text.data = state.base.get(id) || '';
}

async function loadTask(id) {
  const task = await rpc('GetTask', { id, historyLength: HISTORY_SHOWN });
  if (state.open === id) await renderTask(task);
  return task;
}

/// Reads the open task again once its events stop coming for a moment: a burst of events
/// is one GetTask, never one each, and never two at once (an event during a read asks for
/// one more after it).
function reloadSoon(id) {
  if (state.reloading) {
    state.reloadAgain = true;
    return;
  }
  state.reloading = true;
  setTimeout(async () => {
    try {
      if (state.open === id) await loadTask(id);
    } catch (e) {
      showError(e);
    }
    state.reloading = false;
    if (state.reloadAgain) {
      state.reloadAgain = false;
      reloadSoon(id);
    }
  }, RELOAD_AFTER_MS);
}

/// Follows the open task: SubscribeToTask over SSE; an answer's artifact updates are shown
/// as they come (`applyUpdate`), its other events read the task again, a burst of them
/// once (so the page shows what GetTask does), until the task ends or another is opened. A
/// stream closes when the task waits on someone (an interrupted state): until it moves
/// on, the task is read again every few seconds, then followed again. A stream that ends
/// at once (refused, say) is tried again later and later, never in a tight loop. Each
/// stream after the first resumes after the last event shown (`Last-Event-ID`), so a cut
/// or a wait loses nothing of what happened in between.
async function follow(id) {
  if (state.stream) state.stream.abort();
  const ctrl = new AbortController();
  state.stream = ctrl;
  let pause = 500;
  let subscribe = true;
  let last = null;
  while (state.stream === ctrl && state.open === id) {
    const started = Date.now();
    if (subscribe) last = await stream(id, ctrl, last);
    if (state.stream !== ctrl || state.open !== id) return;
    const task = await loadTask(id);
    const now = task.status && task.status.state;
    if (TERMINAL.includes(now)) return;
    subscribe = !INTERRUPTED.includes(now);
    pause = subscribe && Date.now() - started < 1000 ? Math.min(pause * 2, 15000) : 500;
    await new Promise((done) => setTimeout(done, subscribe ? pause : LIST_EVERY_MS));
  }
}

/// Follows the task from after the event `last` (from now when null); returns the id of
/// the last event it showed.
async function stream(id, ctrl, last) {
  const body = JSON.stringify({ jsonrpc: '2.0', id: ++state.seq, method: 'SubscribeToTask', params: { id } });
  const extra = { Accept: 'text/event-stream' };
  if (last) extra['Last-Event-ID'] = last;
  let first = true;
  try {
    const res = await fetch(state.rpcPath, { method: 'POST', headers: headers(extra), body, signal: ctrl.signal });
    if (!res.ok || !res.body) return last;
    const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += value;
      let cut;
      while ((cut = buffer.indexOf('\n\n')) >= 0) {
        const event = buffer.slice(0, cut);
        buffer = buffer.slice(cut + 2);
        if (state.open !== id) continue;
        // Resumed, the stream's Task holds no answer being written: what the page shows
        // of it stands, and the updates after `last` go on from it.
        onEvent(id, event, !(first && last));
        first = false;
        const line = event.split('\n').find((l) => l.startsWith('id:'));
        if (line) last = line.slice(3).trimStart();
      }
    }
  } catch (e) {
    if (e.name !== 'AbortError') showError(e);
  }
  return last;
}

/// One SSE event of the open task's stream: an artifact update is applied at once; any
/// other event reads the task again soon (a Task also sets what the answer shows, unless
/// `snapshot` is false).
function onEvent(id, event, snapshot) {
  const data = event.split('\n').filter((l) => l.startsWith('data:')).map((l) => l.slice(5).trimStart()).join('\n');
  let result = null;
  try {
    result = JSON.parse(data).result;
  } catch {
    // Not one the page knows: reading the task shows where it stands.
  }
  const update = result && result.artifactUpdate;
  if (update && update.taskId === id) {
    applyUpdate(update);
    return;
  }
  if (snapshot && result && result.task && result.task.id === id) applySnapshot(result.task);
  reloadSoon(id);
}

async function openTask(id) {
  showError(null);
  if (state.open !== id) {
    state.live.clear();
    state.base.clear();
  }
  state.open = id;
  $('start').hidden = true;
  $('pick').hidden = true;
  $('task').hidden = false;
  for (const li of $('task-list').children) li.classList.toggle('open', li.dataset.taskId === id);
  const task = await loadTask(id);
  if (!TERMINAL.includes(task.status && task.status.state)) follow(id).catch(showError);
}

/// Empties `field` once `sent` (its text when sent) is delivered, unless the person has
/// typed on meanwhile: the answer can come after the message already shows in the
/// conversation, and a draft begun by then is theirs to keep.
function clearSent(field, sent) {
  if (field.value === sent) field.value = '';
}

async function send(parts, extra) {
  const message = { messageId: crypto.randomUUID(), role: 'ROLE_USER', parts, ...extra };
  return rpc('SendMessage', { message, configuration: { returnImmediately: true } });
}

// ------------------------------------------------------------------ commands

function commandsFor(text) {
  if (!text.startsWith('/') || text.includes(' ') || text.includes('\n')) return [];
  const typed = text.slice(1);
  return state.commands.filter((c) => c.name.startsWith(typed));
}

function showCommands() {
  const box = $('say-text');
  const list = $('commands');
  const matches = commandsFor(box.value);
  list.replaceChildren(...matches.map((c, i) => {
    const li = el('li', `/${c.name} ${c.argument_hint || ''} — ${c.description}`);
    li.id = `command-${i}`;
    li.setAttribute('role', 'option');
    li.setAttribute('aria-selected', i === 0 ? 'true' : 'false');
    li.dataset.name = c.name;
    li.addEventListener('mousedown', (e) => {
      e.preventDefault();
      complete(c.name);
    });
    return li;
  }));
  list.hidden = matches.length === 0;
  box.setAttribute('aria-expanded', String(matches.length > 0));
  box.setAttribute('aria-activedescendant', matches.length ? 'command-0' : '');
}

function complete(name) {
  const box = $('say-text');
  box.value = `/${name} `;
  $('commands').hidden = true;
  box.setAttribute('aria-expanded', 'false');
  box.focus();
}

function moveSelection(step) {
  const items = [...$('commands').children];
  if (!items.length) return;
  let at = items.findIndex((li) => li.getAttribute('aria-selected') === 'true');
  at = (at + step + items.length) % items.length;
  items.forEach((li, i) => li.setAttribute('aria-selected', String(i === at)));
  $('say-text').setAttribute('aria-activedescendant', items[at].id);
}

// ------------------------------------------------------------------ wiring

/// The participant a token names (its `claim`), read without verifying it: the page only
/// needs to know who "me" is; the harness verifies the token on every request.
function claimOf(token, claim) {
  try {
    const payload = token.split('.')[1].replace(/-/g, '+').replace(/_/g, '/');
    const value = JSON.parse(atob(payload))[claim];
    return typeof value === 'string' && value ? value : null;
  } catch {
    return null;
  }
}

function parseParticipants(text) {
  const roles = ['assignee', 'reporter', 'watcher', 'admin'];
  return text.split('\n').map((l) => l.trim()).filter(Boolean).map((line) => {
    const [id, role, kind] = line.split(/\s+/);
    if (!roles.includes(role)) throw new Error(`"${line}": the role must be one of ${roles.join(', ')}`);
    return { id, role, kind: kind === 'agent' ? 'agent' : 'human' };
  });
}

async function signedIn() {
  $('sign-in').hidden = true;
  $('app').hidden = false;
  $('sign-out').hidden = false;
  $('pick').hidden = false;
  $('whoami').textContent = `You are ${state.who}`;
  startListing();
}

async function main() {
  let card;
  try {
    const res = await fetch('/.well-known/agent-card.json');
    card = await res.json();
  } catch (e) {
    showError(new Error(`the agent card could not be read (${e.message})`));
    return;
  }
  const rpcIface = (card.supportedInterfaces || []).find((i) => i.protocolBinding === 'JSONRPC');
  if (rpcIface) state.rpcPath = new URL(rpcIface.url).pathname || '/';
  const ext = ((card.capabilities || {}).extensions || []).find((e) => e.uri === COMMANDS);
  state.commands = (ext && ext.params && ext.params.commands) || [];
  const settings = await (await fetch('settings.json')).json();
  state.tokenMode = settings.auth === 'jwt';
  state.claim = settings.participant_claim;
  $('participant-label').hidden = state.tokenMode;
  $('token-label').hidden = !state.tokenMode;
  $('sign-in-help').textContent = state.tokenMode
    ? 'This harness verifies who you are: paste your token. It is kept in this page only; a reload asks again.'
    : 'This harness runs without sign-in (local mode): your participant id is taken as given.';
  document.title = `Inbox — ${card.name || 'harness'}`;

  $('sign-in').addEventListener('submit', (e) => {
    e.preventDefault();
    if (state.tokenMode) {
      state.token = $('token').value.trim();
      state.who = claimOf(state.token, state.claim);
      if (!state.who) {
        showError(new Error(`that is not a token with a "${state.claim}" claim`));
        return;
      }
    } else {
      state.who = $('participant').value.trim();
      sessionStorage.setItem('participant', state.who);
    }
    if (!state.token && !state.who) return;
    signedIn().catch(showError);
  });
  $('sign-out').addEventListener('click', () => {
    sessionStorage.removeItem('participant');
    state.token = null;
    location.reload();
  });
  $('new-task').addEventListener('click', () => {
    state.open = null;
    if (state.stream) state.stream.abort();
    $('task').hidden = true;
    $('pick').hidden = true;
    $('start').hidden = false;
    $('start-name').focus();
  });
  $('start-cancel').addEventListener('click', () => {
    $('start').hidden = true;
    $('pick').hidden = false;
  });
  $('start').addEventListener('submit', async (e) => {
    e.preventDefault();
    showError(null);
    try {
      const goal = $('start-goal').value.trim();
      const payload = {
        name: $('start-name').value.trim(),
        goal,
        acceptance_criteria: $('start-criteria').value.split('\n').map((t) => t.trim()).filter(Boolean).map((text) => ({ text })),
        participants: parseParticipants($('start-participants').value),
      };
      const answer = await send([{ text: goal }, { mediaType: EVENT, data: { kind: 'task', payload } }]);
      const task = answer.task;
      $('start').reset();
      await refreshList();
      if (task) await openTask(task.id);
    } catch (err) {
      showError(err);
    }
  });
  $('answer').addEventListener('submit', async (e) => {
    e.preventDefault();
    showError(null);
    const field = $('answer-text');
    const typed = field.value;
    const text = typed.trim();
    const id = state.open;
    const reply = { channel_id: id, sender: state.who, kind: 'help_reply', text, in_reply_to: e.target.dataset.inReplyTo || null };
    try {
      await send([{ text }, { mediaType: CHANNEL, data: reply }], { taskId: id });
      clearSent(field, typed);
      await loadTask(id);
      follow(id).catch(showError);
    } catch (err) {
      showError(err);
    }
  });
  $('say').addEventListener('submit', async (e) => {
    e.preventDefault();
    showError(null);
    const id = state.open;
    const field = $('say-text');
    const text = field.value;
    try {
      await send([{ text }], { taskId: id });
      clearSent(field, text);
      showCommands();
      await loadTask(id);
      follow(id).catch(showError);
    } catch (err) {
      showError(err);
    }
  });
  const box = $('say-text');
  box.addEventListener('input', showCommands);
  box.addEventListener('keydown', (e) => {
    const open = !$('commands').hidden;
    if (open && (e.key === 'ArrowDown' || e.key === 'ArrowUp')) {
      e.preventDefault();
      moveSelection(e.key === 'ArrowDown' ? 1 : -1);
    } else if (open && (e.key === 'Enter' || e.key === 'Tab')) {
      e.preventDefault();
      const chosen = [...$('commands').children].find((li) => li.getAttribute('aria-selected') === 'true');
      if (chosen) complete(chosen.dataset.name);
    } else if (open && e.key === 'Escape') {
      $('commands').hidden = true;
    } else if (e.key === 'Enter' && !e.shiftKey) {
      e.preventDefault();
      $('say').requestSubmit();
    }
  });
  $('cancel').addEventListener('click', async () => {
    showError(null);
    try {
      await rpc('CancelTask', { id: state.open });
      await loadTask(state.open);
    } catch (err) {
      showError(err);
    }
  });

  const remembered = sessionStorage.getItem('participant');
  if (!state.tokenMode && remembered) {
    state.who = remembered;
    await signedIn();
  } else {
    $('sign-in').hidden = false;
    (state.tokenMode ? $('token') : $('participant')).focus();
  }
}

main().catch(showError);
