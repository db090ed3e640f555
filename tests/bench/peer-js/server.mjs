// The bench's JS peer: the official JS A2A SDK's server (`@a2a-js/sdk` 1.3.0 on express
// 5) with the same agent as tests/bench/reference_server.py: every task is created, then
// completed with one agent text message ("done"), nothing else.
//
// - JSON-RPC at `/`, the HTTP+JSON routes under `/rest` (the SDK's two express routers
//   each guard every path they are mounted on, so they cannot share one), the well-known
//   agent card; streaming on, push off.
// - `DefaultRequestHandler` with the SDK's `InMemoryTaskStore`.
// - One node process, as the SDK's samples run it.
//
//     node server.mjs --port 9100        # or PORT=9100 node server.mjs
//
// Prints `peer-js serving http://127.0.0.1:PORT` once it is listening. tests/bench/run
// installs the packages (package-lock.json) outside the checkout and runs a copy of this
// file from beside them.

import { randomUUID } from 'node:crypto';

import express from 'express';

import { AGENT_CARD_PATH, Role, TaskState } from '@a2a-js/sdk';
import { AgentEvent, DefaultRequestHandler, InMemoryTaskStore } from '@a2a-js/sdk/server';
import {
  UserBuilder,
  agentCardHandler,
  jsonRpcHandler,
  restHandler,
} from '@a2a-js/sdk/server/express';

function text(value) {
  return { content: { $case: 'text', value }, metadata: undefined, filename: '', mediaType: '' };
}

function statusUpdate(taskId, contextId, state, message) {
  return AgentEvent.statusUpdate({
    taskId,
    contextId,
    status: { state, message, timestamp: new Date().toISOString() },
    metadata: undefined,
  });
}

/** Every task: created, then completed with one text message, nothing else. The SDK
 * wants a task (or a message) first on every turn, so a task the handler already has is
 * sent again as it is. The handler settles the bus once this returns. */
class CompleteAtOnce {
  async execute(requestContext, eventBus) {
    const { taskId, contextId } = requestContext;
    const task = requestContext.task ?? {
      id: taskId,
      contextId,
      status: { state: TaskState.TASK_STATE_SUBMITTED, message: undefined, timestamp: undefined },
      artifacts: [],
      history: [{ ...requestContext.userMessage, taskId, contextId }],
      metadata: undefined,
    };
    eventBus.publish(AgentEvent.task(task));
    const done = {
      messageId: randomUUID(),
      contextId,
      taskId,
      role: Role.ROLE_AGENT,
      parts: [text('done')],
      metadata: undefined,
      extensions: [],
      referenceTaskIds: [],
    };
    eventBus.publish(statusUpdate(taskId, contextId, TaskState.TASK_STATE_COMPLETED, done));
  }

  async cancelTask(taskId, eventBus) {
    eventBus.publish(statusUpdate(taskId, '', TaskState.TASK_STATE_CANCELED, undefined));
  }
}

function card(url) {
  return {
    name: 'peer-js',
    description: '@a2a-js/sdk 1.3.0 peer server for benchmarks',
    supportedInterfaces: [
      { url, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '1.0' },
      { url: `${url}/rest`, protocolBinding: 'HTTP+JSON', tenant: '', protocolVersion: '1.0' },
    ],
    provider: undefined,
    version: '1.0.0',
    documentationUrl: '',
    capabilities: {
      streaming: true,
      pushNotifications: false,
      extensions: [],
      extendedAgentCard: false,
    },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [
      {
        id: 'complete',
        name: 'complete',
        description: 'completes every task at once',
        tags: ['bench'],
        examples: [],
        inputModes: [],
        outputModes: [],
        securityRequirements: [],
      },
    ],
    signatures: [],
    iconUrl: '',
  };
}

function port() {
  const args = process.argv.slice(2);
  const value = args[0] === '--port' ? args[1] : process.env.PORT;
  const n = Number(value);
  if (!value || !Number.isInteger(n) || n <= 0 || n > 65535) {
    console.error('usage: node server.mjs --port PORT (or PORT=...)');
    process.exit(2);
  }
  return n;
}

const listenPort = port();
const url = `http://127.0.0.1:${listenPort}`;
const requestHandler = new DefaultRequestHandler(
  card(url),
  new InMemoryTaskStore(),
  new CompleteAtOnce()
);
const userBuilder = UserBuilder.noAuthentication;
const app = express();
app.use(`/${AGENT_CARD_PATH}`, agentCardHandler({ agentCardProvider: requestHandler }));
app.use('/rest', restHandler({ requestHandler, userBuilder }));
app.use(jsonRpcHandler({ requestHandler, userBuilder }));
app.listen(listenPort, '127.0.0.1', (err) => {
  if (err) {
    throw err;
  }
  console.log(`peer-js serving ${url}`);
});
