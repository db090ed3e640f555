"""The official Python A2A server as a remote agent the harness delegates to.

A server built on PyPI `a2a-sdk[http-server]==1.3.0` as its README builds one (JSON-RPC
and HTTP+JSON routes, the in-memory task store, the SDK's in-memory push notification
config store and its push sender), with an agent that completes every task at once, runs
in this process. harness-local, on the scripted model, names it in its registry
(`--agents`): the model delegates to it with `create_task_for_participant`; the harness
reads its card, sends the work (a push config pointing at its own callback), follows the
remote task to its end, and the model's next input holds the remote's answer inside the
untrusted block, attributed to the agent; the task completes.

The same with a server that offers no push notifications and takes a few seconds: the
harness polls it (the sweep rings the task's poll timer) until it has finished.

Issue 47: the server keeps a log of every request it gets (URL, headers, body), in which
the harness's task id and context id never appear; and a server with push notifications
that never finishes is given up at the registry's (shortened) deadline: the model is told,
the remote task is cancelled, and the callback's token no longer works.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import tempfile
import threading
import time
import uuid

from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
import uvicorn

from starlette.applications import Starlette

from a2a.helpers.proto_helpers import new_task_from_user_message
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandlerV2
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes, create_rest_routes
from a2a.server.tasks import (
    BasePushNotificationSender,
    InMemoryPushNotificationConfigStore,
    InMemoryTaskStore,
    TaskUpdater,
)
from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill, Part

from conftest import run_harness


ANSWER = 'Painted by the reference agent.'
WAIT_S = 30.0


class RequestLog:
    """ASGI middleware that keeps every request's method, URL, headers and body."""

    def __init__(self, app) -> None:  # noqa: ANN001
        self.app = app
        self.requests: list[dict] = []

    async def __call__(self, scope, receive, send) -> None:  # noqa: ANN001
        if scope['type'] != 'http':
            return await self.app(scope, receive, send)
        body = b''
        more = True
        while more:
            message = await receive()
            body += message.get('body', b'')
            more = message.get('more_body', False)
        self.requests.append({
            'method': scope['method'],
            'url': scope['path'] + ('?' + scope['query_string'].decode()
                                    if scope['query_string'] else ''),
            'headers': [(k.decode('latin-1'), v.decode('latin-1'))
                        for k, v in scope['headers']],
            'body': body.decode('utf-8', 'replace'),
        })
        sent = False

        async def replay() -> dict:
            nonlocal sent
            if sent:
                return await receive()
            sent = True
            return {'type': 'http.request', 'body': body, 'more_body': False}

        await self.app(scope, replay, send)


class CompleteAtOnce(AgentExecutor):
    """Completes every task, at once or after `delay_s` of work."""

    def __init__(self, delay_s: float = 0.0) -> None:
        self.delay_s = delay_s

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        task = context.current_task
        if task is None:
            task = new_task_from_user_message(context.message)
            await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        if self.delay_s:
            await updater.start_work()
            await asyncio.sleep(self.delay_s)
        await updater.complete(updater.new_agent_message([Part(text=ANSWER)]))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        task = context.current_task
        if task is not None:
            await TaskUpdater(event_queue, task.id, task.context_id).cancel()


def _app(url: str, push: bool = True, delay_s: float = 0.0) -> RequestLog:
    card = AgentCard(
        name='reference',
        description='a2a-sdk 1.3.0 server that completes every task at once',
        version='1.0.0',
        supported_interfaces=[
            AgentInterface(url=url, protocol_binding='JSONRPC', protocol_version='1.0'),
            AgentInterface(url=url, protocol_binding='HTTP+JSON', protocol_version='1.0'),
        ],
        capabilities=AgentCapabilities(streaming=True, push_notifications=push),
        default_input_modes=['text/plain'],
        default_output_modes=['text/plain'],
        skills=[AgentSkill(id='complete', name='complete', description='completes at once',
                           tags=['test'])],
    )
    configs = InMemoryPushNotificationConfigStore() if push else None
    handler = DefaultRequestHandlerV2(
        agent_executor=CompleteAtOnce(delay_s),
        task_store=InMemoryTaskStore(),
        agent_card=card,
        push_config_store=configs,
        push_sender=BasePushNotificationSender(httpx.AsyncClient(), configs) if push else None,
    )
    return RequestLog(Starlette(routes=[
        *create_agent_card_routes(card),
        *create_jsonrpc_routes(handler, '/'),
        *create_rest_routes(handler),
    ]))


def _serve(**app_args: object):
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        port = s.getsockname()[1]
    url = f'http://127.0.0.1:{port}'
    app = _app(url, **app_args)
    server = uvicorn.Server(uvicorn.Config(app, host='127.0.0.1', port=port,
                                           log_level='warning', access_log=False))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert time.monotonic() < deadline, 'the reference server did not start'
        time.sleep(0.05)
    yield Reference(url, app.requests)
    server.should_exit = True
    thread.join(10)


@dataclass
class Reference:
    """A reference server: its URL, and the requests it got so far."""
    url: str
    requests: list[dict]


@pytest.fixture(scope='module')
def reference() -> Reference:
    yield from _serve()


@pytest.fixture(scope='module')
def reference_without_push() -> Reference:
    yield from _serve(push=False, delay_s=3.0)


@pytest.fixture(scope='module')
def reference_that_never_finishes() -> Reference:
    yield from _serve(delay_s=3600.0)


def _delegate_and_finish(reference: Reference, *extra: str, deadline: str = '',
                         then: str = 'The shed is painted.',
                         after=lambda: None) -> tuple[dict, str]:  # noqa: ANN001
    """harness-local delegates to the server at `reference` (its registry entry ending
    in `deadline`); its task, completed (`after` is called then, the harness still up),
    and the remote's note in the model's input after the remote's outcome."""
    work = Path(tempfile.mkdtemp(prefix='harness-remote-'))
    log = work / 'requests.jsonl'
    script = work / 'script.json'
    script.write_text(json.dumps({'request_log': str(log), 'turns': [
        {'tool_calls': [{'name': 'create_task_for_participant', 'arguments': {
            'participant_id': 'ref', 'name': 'Paint', 'goal': 'Paint the shed'}}]},
        {'text': then},
    ]}))
    agents = work / 'agents.toml'
    agents.write_text(f'[agents.ref]\ncard_url = "{reference.url}/.well-known/agent-card.json"\n'
                      f'{deadline}\n')
    args = ['--agent', 'llm', '--model', f'scripted:{script}', '--agents', str(agents),
            '--agent-id', 'harness-a', *extra]
    with run_harness(args) as harness:
        headers = {'A2A-Version': '1.0', 'X-Participant-Id': 'alice'}
        rpc = lambda method, params: httpx.post(  # noqa: E731
            harness.base_url, headers=headers, timeout=WAIT_S,
            json={'jsonrpc': '2.0', 'id': str(uuid.uuid4()), 'method': method,
                  'params': params}).json()
        sent = rpc('SendMessage', {'message': {
            'messageId': str(uuid.uuid4()), 'role': 'ROLE_USER',
            'parts': [{'text': 'Get the shed painted'}]},
            'configuration': {'returnImmediately': True}})
        task_id = sent['result']['task']['id']
        deadline = time.monotonic() + WAIT_S
        while True:
            task = rpc('GetTask', {'id': task_id})['result']
            if task['status']['state'] == 'TASK_STATE_COMPLETED':
                break
            assert time.monotonic() < deadline, task
            time.sleep(0.1)
        after()
    assert task['status']['message']['parts'][0]['text'] == then
    ext = task['metadata']['io.github.madarauchiha-314.tiny-harness/task']
    assert ext['sub_tasks'][0]['agent'] == {'kind': 'agent', 'id': 'ref'}, ext
    requests = [json.loads(line) for line in log.read_text().splitlines() if line]
    last = json.dumps([r for r in requests if r['turn'] == 1][0]['messages'])
    block = last[last.index('source=\\"agent:ref\\"'):]
    return task, block[:block.index('</untrusted')]


def _never_named(reference: Reference, task: dict) -> None:
    """No byte of any request the remote got names the harness's task or its context (as
    is, or percent-encoded as a URL path segment would be)."""
    assert reference.requests, 'the remote got nothing'
    encoded = lambda s: ''.join(c if c.isalnum() else f'%{ord(c):02X}' for c in s)  # noqa: E731
    for request in reference.requests:
        seen = json.dumps(request)
        for secret in (task['id'], task['contextId']):
            for form in (secret, encoded(secret)):
                assert form not in seen, f'{form} in {seen}'


def test_the_harness_delegates_to_the_official_python_server(reference: Reference) -> None:
    task, block = _delegate_and_finish(reference)
    assert ANSWER in block, block
    _never_named(reference, task)


def test_a_remote_that_never_finishes_is_given_up_at_its_deadline(
        reference_that_never_finishes: Reference) -> None:
    # A 3 s deadline, and a short lease so the sweep (which rings the deadline's timer)
    # runs every second.
    started = time.monotonic()
    reference = reference_that_never_finishes
    refused = []

    def callback_refused() -> None:
        # The callback it was given no longer works: its token ran out with the deadline.
        sends = [json.loads(r['body']) for r in reference.requests if '"SendMessage"' in r['body']]
        push = sends[0]['params']['configuration']['taskPushNotificationConfig']
        resp = httpx.post(push['url'], json={}, timeout=WAIT_S,
                          headers={'X-A2A-Notification-Token': push['token']})
        refused.append((resp.status_code, resp.json()))

    task, block = _delegate_and_finish(reference, '--lease-seconds', '2', deadline='deadline = 3',
                                       then='Gave up on the painter.', after=callback_refused)
    assert time.monotonic() - started >= 3.0
    assert refused == [(401, {'status': 'unauthorized'})], refused
    assert 'did not answer within its deadline' in block, block
    assert 'cancelled the remote task' in block, block
    _never_named(reference, task)
    cancels = [r for r in reference.requests
               if r['url'].endswith(':cancel') or '"CancelTask"' in r['body']]
    assert len(cancels) == 1, reference.requests


def test_a_remote_without_push_notifications_is_polled(reference_without_push: Reference) -> None:
    # A short lease makes the sweep (which rings poll timers) run every 2 s.
    started = time.monotonic()
    _, block = _delegate_and_finish(reference_without_push, '--lease-seconds', '4')
    assert ANSWER in block, block
    assert time.monotonic() - started >= 3.0, 'the remote took 3 s: it was polled, not told'
