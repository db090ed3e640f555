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


def _app(url: str, push: bool = True, delay_s: float = 0.0) -> Starlette:
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
    return Starlette(routes=[
        *create_agent_card_routes(card),
        *create_jsonrpc_routes(handler, '/'),
        *create_rest_routes(handler),
    ])


def _serve(**app_args: object):
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        port = s.getsockname()[1]
    url = f'http://127.0.0.1:{port}'
    server = uvicorn.Server(uvicorn.Config(_app(url, **app_args), host='127.0.0.1', port=port,
                                           log_level='warning', access_log=False))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert time.monotonic() < deadline, 'the reference server did not start'
        time.sleep(0.05)
    yield url
    server.should_exit = True
    thread.join(10)


@pytest.fixture(scope='module')
def reference() -> str:
    yield from _serve()


@pytest.fixture(scope='module')
def reference_without_push() -> str:
    yield from _serve(push=False, delay_s=3.0)


def _delegate_and_finish(reference: str, *extra: str) -> dict:
    """harness-local delegates to the server at `reference`; its task, completed, and the
    model's input after the remote's outcome."""
    work = Path(tempfile.mkdtemp(prefix='harness-remote-'))
    log = work / 'requests.jsonl'
    script = work / 'script.json'
    script.write_text(json.dumps({'request_log': str(log), 'turns': [
        {'tool_calls': [{'name': 'create_task_for_participant', 'arguments': {
            'participant_id': 'ref', 'name': 'Paint', 'goal': 'Paint the shed'}}]},
        {'text': 'The shed is painted.'},
    ]}))
    agents = work / 'agents.toml'
    agents.write_text(f'[agents.ref]\ncard_url = "{reference}/.well-known/agent-card.json"\n')
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
    assert task['status']['message']['parts'][0]['text'] == 'The shed is painted.'
    ext = task['metadata']['io.github.madarauchiha-314.tiny-harness/task']
    assert ext['sub_tasks'][0]['agent'] == {'kind': 'agent', 'id': 'ref'}, ext
    requests = [json.loads(line) for line in log.read_text().splitlines() if line]
    last = json.dumps([r for r in requests if r['turn'] == 1][0]['messages'])
    block = last[last.index('source=\\"agent:ref\\"'):]
    assert ANSWER in block[:block.index('</untrusted')], last
    return task


def test_the_harness_delegates_to_the_official_python_server(reference: str) -> None:
    _delegate_and_finish(reference)


def test_a_remote_without_push_notifications_is_polled(reference_without_push: str) -> None:
    # A short lease makes the sweep (which rings poll timers) run every 2 s.
    started = time.monotonic()
    _delegate_and_finish(reference_without_push, '--lease-seconds', '4')
    assert time.monotonic() - started >= 3.0, 'the remote took 3 s: it was polled, not told'
