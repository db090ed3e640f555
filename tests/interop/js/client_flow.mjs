// Drives an A2A server with the official JS client (@a2a-js/sdk) over one binding.
//
//   node client_flow.mjs <base-url> <JSONRPC|HTTP+JSON>
//
// The SDK is loaded from $A2A_JS_PREFIX/node_modules (an `npm ci` of this folder's
// lockfile, kept outside the checkout). The server must run the conformance agent, whose
// behaviour is chosen by the messageId prefix (spec digest §7.1), and allow loopback
// webhooks. Every step runs on its own client and tasks, all at once; the report on
// stdout is {binding, steps: {<step>: {ok: true, ...facts} | {ok: false, error, exchanges}}},
// exchanges being the step's HTTP requests and (non-SSE) answers. Exit 1 if a step failed,
// 2 on a usage or setup error.

import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';

const [baseUrl, binding] = process.argv.slice(2);
if (!baseUrl || !['JSONRPC', 'HTTP+JSON'].includes(binding)) {
  console.error('usage: node client_flow.mjs <base-url> <JSONRPC|HTTP+JSON>');
  process.exit(2);
}
const prefix = process.env.A2A_JS_PREFIX;
if (!prefix) {
  console.error('set A2A_JS_PREFIX to a folder holding an `npm ci` of this folder\'s lockfile '
    + '(test_js_client.py keeps one in ~/.cache/harness/js-client)');
  process.exit(2);
}
const require = createRequire(join(prefix, 'package.json'));
const sdk = require('@a2a-js/sdk');
const {
  ClientFactory, ClientFactoryOptions, JsonRpcTransportFactory, RestTransportFactory,
} = require('@a2a-js/sdk/client');
const errors = require('@a2a-js/sdk/errors');
const { TaskState, taskStateToJSON } = sdk;

const STEP_TIMEOUT_MS = 20_000;
const SLOW = 'test-resubscribe-message-id'; // WORKING for ~4 s, then COMPLETED

// ------------------------------------------------------------------ helpers

function check(cond, what) {
  if (!cond) throw new Error(what);
}

const stateName = taskStateToJSON;
const id = (p) => `${p}-${randomUUID().slice(0, 8)}`;

function message(idPrefix, extra = {}) {
  return {
    messageId: id(idPrefix),
    role: 'ROLE_USER',
    parts: [{ text: 'hello from the @a2a-js/sdk interop client' }],
    ...extra,
  };
}

/** A SendMessageRequest built from ProtoJSON by the SDK's own type. */
const sendRequest = (msg, configuration) =>
  sdk.SendMessageRequest.fromJSON({ message: msg, configuration });

const isTask = (r) => r && 'status' in r && 'id' in r;

async function sendForTask(client, msg, configuration) {
  const r = await client.sendMessage(sendRequest(msg, configuration));
  check(isTask(r), `expected a Task, got ${JSON.stringify(r)}`);
  return r;
}

function describe(ev) {
  const { $case, value } = ev.payload ?? {};
  if ($case === 'task') return `task(${stateName(value.status?.state)})`;
  if ($case === 'statusUpdate') return `status(${stateName(value.status?.state)})`;
  if ($case === 'artifactUpdate') {
    return `artifact(append=${value.append},last=${value.lastChunk})`;
  }
  return $case ?? '<empty>';
}

/** Reads a stream to its end; returns the events. */
async function drain(stream) {
  const events = [];
  for await (const ev of stream) events.push(ev);
  return events;
}

/** The task-stream framing (spec digest §1.3): a Task first, then updates of that task. */
function taskStream(events) {
  const shape = events.map(describe);
  check(events[0]?.payload?.$case === 'task', `first event must be a Task: ${shape}`);
  const task = events[0].payload.value;
  let state = task.status.state;
  for (const ev of events.slice(1)) {
    const { $case, value } = ev.payload ?? {};
    check(['statusUpdate', 'artifactUpdate', 'task'].includes($case), `unexpected event: ${shape}`);
    const taskId = $case === 'task' ? value.id : value.taskId;
    check(taskId === task.id, `event of another task: ${shape}`);
    if ($case !== 'artifactUpdate') state = value.status.state;
  }
  return { task, state, shape };
}

const agentTexts = (task) =>
  [task.status?.message, ...task.history]
    .filter((m) => m && m.role === sdk.Role.ROLE_AGENT)
    .map((m) => m.parts.map((p) => (p.content?.$case === 'text' ? p.content.value : '')).join(''));

/** Runs `call`, which must throw the SDK's `Semantic` error; returns what it surfaced. */
async function expectError(call, Semantic) {
  try {
    await call();
  } catch (e) {
    check(e instanceof Semantic, `expected ${Semantic.name}, got ${e?.constructor?.name}: ${e?.message}`);
    return { class: e.constructor.name, name: e.name, code: e.envelopeCode, status: e.statusCode };
  }
  throw new Error(`expected ${Semantic.name}, the call succeeded`);
}

const JSONRPC_CODE = {
  TaskNotFoundError: 'TASK_NOT_FOUND',
  TaskNotCancelableError: 'TASK_NOT_CANCELABLE',
  UnsupportedOperationError: 'UNSUPPORTED_OPERATION',
  RequestMalformedError: 'INVALID_PARAMS',
};

/** The binding-specific class the transport throws, with its wire code. */
function checkTransportError(err, name) {
  if (binding === 'JSONRPC') {
    check(err.class === `JsonRpc${name}`, `JSON-RPC transport threw ${err.class}`);
    check(err.code === errors.A2A_ERROR_CODE[JSONRPC_CODE[name]], `JSON-RPC code ${err.code} for ${name}`);
  } else {
    check(err.class === `Rest${name}`, `REST transport threw ${err.class}`);
    check(err.status === (name === 'TaskNotFoundError' ? 404 : 400), `HTTP ${err.status} for ${name}`);
  }
  return err;
}

/** A fetch that records each exchange (request body, status, non-SSE answer). */
function recordingFetch(log) {
  return async (url, init = {}) => {
    const entry = { method: init.method ?? 'GET', url: String(url) };
    if (init.body) entry.request = JSON.parse(init.body);
    log.push(entry);
    const res = await fetch(url, init);
    entry.status = res.status;
    entry.contentType = res.headers.get('content-type');
    if (entry.contentType?.startsWith('text/event-stream')) {
      entry.response = '<event stream>';
    } else {
      const text = await res.clone().text();
      try { entry.response = text ? JSON.parse(text) : null; } catch { entry.response = text; }
    }
    return res;
  };
}

async function newClient() {
  const log = [];
  const fetchImpl = recordingFetch(log);
  const factory = new ClientFactory(ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
    transports: [new JsonRpcTransportFactory({ fetchImpl }), new RestTransportFactory({ fetchImpl })],
    preferredTransports: [binding],
  }));
  const client = await factory.createFromUrl(baseUrl);
  return { client, log };
}

/** A loopback webhook receiver: resolves `next(pred)` with the first matching POST. */
async function webhook() {
  const got = [];
  const waiters = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => { body += c; });
    req.on('end', () => {
      got.push({ headers: req.headers, body: JSON.parse(body || 'null') });
      res.end();
      for (const w of waiters.splice(0)) w();
    });
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const next = async (pred) => {
    for (;;) {
      const hit = got.find(pred);
      if (hit) return hit;
      await new Promise((r) => waiters.push(r));
    }
  };
  return { url: `http://127.0.0.1:${server.address().port}/a2a-js-webhook`, next, server };
}

// -------------------------------------------------------------------- steps

const steps = {
  async card({ client }) {
    check(client.transport.protocolName === binding,
      `asked for ${binding}, the factory chose ${client.transport.protocolName}`);
    check(client.agentCard.capabilities?.streaming === true, 'card: streaming not declared');
    check(client.agentCard.capabilities?.pushNotifications === true, 'card: push not declared');
    return { transport: client.transport.constructor.name, version: client.protocolVersion };
  },

  async send_blocking({ client }) {
    const msg = message('tck-complete-task');
    const task = await sendForTask(client, msg);
    check(task.status.state === TaskState.TASK_STATE_COMPLETED, `state ${stateName(task.status.state)}`);
    check(agentTexts(task).includes('Hello from TCK'), `agent texts ${agentTexts(task)}`);
    check(task.history.some((m) => m.messageId === msg.messageId), 'history lacks the user message');
    return { taskId: task.id, state: stateName(task.status.state) };
  },

  async send_message_response({ client }) {
    const r = await client.sendMessage(sendRequest(message('tck-message-response')));
    check(!isTask(r) && r.role === sdk.Role.ROLE_AGENT, `expected an agent Message: ${JSON.stringify(r)}`);
    check(r.parts[0]?.content?.value === 'Direct message response', 'wrong message text');
    return { messageId: r.messageId };
  },

  async send_streaming({ client }) {
    const events = await drain(client.sendMessageStream(sendRequest(message('tck-stream-artifact-chunked'))));
    const { task, state, shape } = taskStream(events);
    check(state === TaskState.TASK_STATE_COMPLETED, `stream ended in ${stateName(state)}: ${shape}`);
    const chunks = events.filter((e) => e.payload.$case === 'artifactUpdate').map((e) => e.payload.value);
    check(chunks.length === 2 && !chunks[0].append && chunks[1].append && chunks[1].lastChunk,
      `chunks: ${shape}`);
    // GetTask returns the reassembled artifact.
    const got = await client.getTask(sdk.GetTaskRequest.fromJSON({ id: task.id }));
    const text = got.artifacts[0]?.parts.map((p) => p.content?.value).join('');
    check(text === 'chunk-1 chunk-2', `stored artifact text ${JSON.stringify(text)}`);
    return { events: shape };
  },

  async get_task({ client }) {
    const first = message('tck-input-required');
    const task = await sendForTask(client, first);
    await sendForTask(client, message('tck-complete-task', { taskId: task.id }));
    const got = await client.getTask(sdk.GetTaskRequest.fromJSON({ id: task.id }));
    check(got.id === task.id && got.contextId === task.contextId, 'ids differ');
    check(got.status.state === TaskState.TASK_STATE_COMPLETED, `state ${stateName(got.status.state)}`);
    const one = await client.getTask(sdk.GetTaskRequest.fromJSON({ id: task.id, historyLength: 1 }));
    check(one.history.length === 1 && one.history[0].messageId === got.history.at(-1).messageId,
      `historyLength 1 gave ${one.history.length} messages`);
    return { history: got.history.length };
  },

  async list_tasks({ client }) {
    const contextId = id('ctx-js-list');
    const created = [];
    for (let i = 0; i < 3; i++) {
      created.push((await sendForTask(client, message('tck-complete-task', { contextId }))).id);
      await new Promise((r) => setTimeout(r, 20)); // distinct status timestamps
    }
    const seen = [];
    let pageToken = '';
    let pages = 0;
    do {
      const page = await client.listTasks(sdk.ListTasksRequest.fromJSON({ contextId, pageSize: 2, pageToken }));
      check(page.totalSize === 3 && page.pageSize === 2, `page sizes ${page.pageSize}/${page.totalSize}`);
      seen.push(...page.tasks.map((t) => t.id));
      pageToken = page.nextPageToken;
      check(++pages < 5, 'pagination does not end');
    } while (pageToken);
    check(JSON.stringify(seen) === JSON.stringify(created.toReversed()),
      `listed ${seen}, expected newest first ${created.toReversed()}`);
    const filtered = await client.listTasks(sdk.ListTasksRequest.fromJSON({
      contextId, status: 'TASK_STATE_INPUT_REQUIRED',
    }));
    check(filtered.tasks.length === 0, 'status filter matched completed tasks');
    return { pages, tasks: seen.length };
  },

  async input_required_then_reply({ client }) {
    const first = message('tck-input-required');
    const task = await sendForTask(client, first);
    check(task.status.state === TaskState.TASK_STATE_INPUT_REQUIRED, `state ${stateName(task.status.state)}`);
    const reply = message('tck-complete-task', { taskId: task.id });
    const done = await sendForTask(client, reply);
    check(done.id === task.id && done.contextId === task.contextId, 'the reply did not resume the task');
    check(done.status.state === TaskState.TASK_STATE_COMPLETED, `state ${stateName(done.status.state)}`);
    const users = done.history.filter((m) => m.role === sdk.Role.ROLE_USER).map((m) => m.messageId);
    check(JSON.stringify(users) === JSON.stringify([first.messageId, reply.messageId]), `history ${users}`);
    return { states: ['TASK_STATE_INPUT_REQUIRED', stateName(done.status.state)] };
  },

  async streamed_reply_to_input_required({ client }) {
    const task = await sendForTask(client, message('tck-input-required'));
    const events = await drain(client.sendMessageStream(
      sendRequest(message('tck-complete-task', { taskId: task.id }))));
    const { task: first, state, shape } = taskStream(events);
    check(first.id === task.id, 'the stream is about another task');
    check(state === TaskState.TASK_STATE_COMPLETED, `stream ended in ${stateName(state)}: ${shape}`);
    return { events: shape };
  },

  async cancel({ client }) {
    const task = await sendForTask(client, message(SLOW), { returnImmediately: true });
    const stream = client.resubscribeTask(sdk.SubscribeToTaskRequest.fromJSON({ id: task.id }));
    const head = await stream.next();
    check(head.value?.payload?.$case === 'task', `subscribe began with ${head.value && describe(head.value)}`);
    const canceled = await client.cancelTask(sdk.CancelTaskRequest.fromJSON({ id: task.id }));
    check(canceled.status.state === TaskState.TASK_STATE_CANCELED, `cancel gave ${stateName(canceled.status.state)}`);
    const { state, shape } = taskStream([head.value, ...(await drain(stream))]);
    check(state === TaskState.TASK_STATE_CANCELED, `subscriber saw ${stateName(state)}: ${shape}`);
    const err = checkTransportError(await expectError(
      () => client.cancelTask(sdk.CancelTaskRequest.fromJSON({ id: task.id })),
      errors.TaskNotCancelableError), 'TaskNotCancelableError');
    return { subscriber: shape, cancelAgain: err };
  },

  async subscribe_running({ client }) {
    const task = await sendForTask(client, message(SLOW), { returnImmediately: true });
    check([TaskState.TASK_STATE_SUBMITTED, TaskState.TASK_STATE_WORKING].includes(task.status.state),
      `returnImmediately gave ${stateName(task.status.state)}`);
    const events = await drain(client.resubscribeTask(sdk.SubscribeToTaskRequest.fromJSON({ id: task.id })));
    const { task: first, state, shape } = taskStream(events);
    check(first.id === task.id, 'the stream is about another task');
    check(state === TaskState.TASK_STATE_COMPLETED, `stream ended in ${stateName(state)}: ${shape}`);
    return { events: shape };
  },

  async subscribe_waiting({ client }) {
    const task = await sendForTask(client, message('tck-input-required'));
    const events = await drain(client.resubscribeTask(sdk.SubscribeToTaskRequest.fromJSON({ id: task.id })));
    const { task: first, state, shape } = taskStream(events);
    check(first.id === task.id, 'the stream is about another task');
    check(state === TaskState.TASK_STATE_INPUT_REQUIRED, `stream ended in ${stateName(state)}: ${shape}`);
    return { events: shape };
  },

  async push_config_crud({ client }) {
    const hook = await webhook();
    try {
      const task = await sendForTask(client, message('tck-input-required'));
      const cfgId = id('cfg');
      const created = await client.createTaskPushNotificationConfig(sdk.TaskPushNotificationConfig.fromJSON({
        taskId: task.id, id: cfgId, url: hook.url, token: 'js-token',
        authentication: { scheme: 'Bearer', credentials: 's3cret' },
      }));
      check(created.id === cfgId && created.taskId === task.id && created.url === hook.url,
        `created ${JSON.stringify(created)}`);
      check(created.token === 'js-token', `token ${created.token}`);
      const ref = { taskId: task.id, id: cfgId };
      const got = await client.getTaskPushNotificationConfig(sdk.GetTaskPushNotificationConfigRequest.fromJSON(ref));
      check(got.id === cfgId && got.url === hook.url, `got ${JSON.stringify(got)}`);
      const listed = await client.listTaskPushNotificationConfig(
        sdk.ListTaskPushNotificationConfigsRequest.fromJSON({ taskId: task.id }));
      check(JSON.stringify(listed.configs.map((c) => c.id)) === JSON.stringify([cfgId]), 'list');

      // The config is live: the reply's COMPLETED update reaches the webhook.
      await sendForTask(client, message('tck-complete-task', { taskId: task.id }));
      const completed = (h) => h.body?.statusUpdate?.status?.state === 'TASK_STATE_COMPLETED';
      const hit = await hook.next(completed);
      check(hit.headers.authorization === 'Bearer s3cret', `webhook Authorization ${hit.headers.authorization}`);

      await client.deleteTaskPushNotificationConfig(sdk.DeleteTaskPushNotificationConfigRequest.fromJSON(ref));
      const after = await client.listTaskPushNotificationConfig(
        sdk.ListTaskPushNotificationConfigsRequest.fromJSON({ taskId: task.id }));
      check(after.configs.length === 0, 'config still listed after delete');
      await expectError(() => client.getTaskPushNotificationConfig(
        sdk.GetTaskPushNotificationConfigRequest.fromJSON(ref)), errors.A2AError);
      await client.deleteTaskPushNotificationConfig(sdk.DeleteTaskPushNotificationConfigRequest.fromJSON(ref));
      return { configId: cfgId, delivered: hit.body.statusUpdate.status.state };
    } finally {
      hook.server.close();
    }
  },

  async typed_errors({ client }) {
    const unknown = id('no-such-task');
    const getTask = checkTransportError(await expectError(
      () => client.getTask(sdk.GetTaskRequest.fromJSON({ id: unknown })),
      errors.TaskNotFoundError), 'TaskNotFoundError');
    const cancel = checkTransportError(await expectError(
      () => client.cancelTask(sdk.CancelTaskRequest.fromJSON({ id: unknown })),
      errors.TaskNotFoundError), 'TaskNotFoundError');
    const send = checkTransportError(await expectError(
      () => client.sendMessage(sendRequest(message('tck-complete-task', { taskId: unknown }))),
      errors.TaskNotFoundError), 'TaskNotFoundError');
    const subscribe = checkTransportError(await expectError(
      () => drain(client.resubscribeTask(sdk.SubscribeToTaskRequest.fromJSON({ id: unknown }))),
      errors.TaskNotFoundError), 'TaskNotFoundError');
    const push = await expectError(() => client.createTaskPushNotificationConfig(
      sdk.TaskPushNotificationConfig.fromJSON({ taskId: unknown, url: 'http://127.0.0.1:9/hook' })),
    errors.TaskNotFoundError);
    const done = await sendForTask(client, message('tck-complete-task'));
    const subscribeDone = checkTransportError(await expectError(
      () => drain(client.resubscribeTask(sdk.SubscribeToTaskRequest.fromJSON({ id: done.id }))),
      errors.UnsupportedOperationError), 'UnsupportedOperationError');
    const cancelDone = checkTransportError(await expectError(
      () => client.cancelTask(sdk.CancelTaskRequest.fromJSON({ id: done.id })),
      errors.TaskNotCancelableError), 'TaskNotCancelableError');
    const invalidParams = checkTransportError(await expectError(
      () => client.getTask(sdk.GetTaskRequest.fromJSON({ id: done.id, historyLength: -1 })),
      errors.RequestMalformedError), 'RequestMalformedError');
    return { getTask, cancel, send, subscribe, push, subscribeDone, cancelDone, invalidParams };
  },
};

// --------------------------------------------------------------------- main

async function runStep(name, fn) {
  let c;
  try {
    c = await newClient();
    let timer;
    const timeout = new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no result within ${STEP_TIMEOUT_MS} ms`)), STEP_TIMEOUT_MS);
    });
    try {
      return { ok: true, ...(await Promise.race([fn(c), timeout])) };
    } finally {
      clearTimeout(timer);
    }
  } catch (e) {
    const error = `${e?.constructor?.name ?? 'Error'}: ${e?.message ?? e}`;
    return { ok: false, error, cause: e?.cause?.message, exchanges: c?.log ?? [] };
  }
}

const names = Object.keys(steps);
const results = await Promise.all(names.map((n) => runStep(n, steps[n])));
const sdkVersion = JSON.parse(
  readFileSync(join(prefix, 'node_modules', '@a2a-js', 'sdk', 'package.json'), 'utf8')).version;
const report = { binding, sdk: sdkVersion, steps: {} };
names.forEach((n, i) => { report.steps[n] = results[i]; });
console.log(JSON.stringify(report, null, 1));
process.exit(results.every((r) => r.ok) ? 0 : 1);
