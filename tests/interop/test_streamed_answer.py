"""Issue 50 item 1 with the official Python client: the model's answer as it is written.

harness-local runs the LLM agent on the scripted model, whose one turn writes the answer
in 20 chunks 200 ms apart (a call log records when the call starts: the first chunk is
written then). The a2a-sdk 1.3.0 client, streaming, on each binding:

- `send_message` gets the answer as artifact updates of one artifact whose texts joined
  are the answer, the first within 500 ms of the model's first chunk, the last with
  `lastChunk`, then COMPLETED; the SDK's own task manager (`a2a.server.tasks.TaskManager`,
  the client of 1.3.0 does not fold events itself) folds them into a task holding the
  answer once;
- `subscribe` after about 10 chunks gets the task, the answer's updates so far (from one
  that replaces, as the task manager requires), then the rest: the answer once.

Every event the client got is strict on the wire: over the HTTP bindings each SSE data
line parses as ProtoJSON with no unknown key, over gRPC each message has no field unknown
to the SDK's proto.
"""

from __future__ import annotations

import asyncio
import json
import tempfile
import time

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest

from a2a.client import Client, ClientConfig, create_client
from a2a.server.context import ServerCallContext
from a2a.server.tasks import InMemoryTaskStore, TaskManager
from a2a.types import StreamResponse, SubscribeToTaskRequest, Task, TaskState

from conftest import HarnessServer, grpc_channel, run_harness
from test_a2a_sdk import (
    collect,
    describe,
    kind,
    send_request,
    strict_parse,
    text_of,
    unknown_fields,
    user_message,
)


CHUNKS = [f'c{i:02} ' for i in range(20)]
ANSWER = ''.join(CHUNKS)
CHUNK_DELAY_MS = 200
FIRST_WITHIN_MS = 500


@pytest.fixture(scope='module')
def llm_server() -> Iterator[tuple[HarnessServer, Path]]:
    """harness-local on the scripted model that streams ANSWER; and its call log."""
    work = Path(tempfile.mkdtemp(prefix='harness-streamed-'))
    log = work / 'calls.log'
    script = work / 'script.json'
    script.write_text(json.dumps({'call_log': str(log), 'turns': [
        {'chunks': CHUNKS, 'chunk_delay_ms': CHUNK_DELAY_MS}]}))
    args = ['--agent', 'llm', '--model', f'scripted:{script}']
    with run_harness(args, HARNESS_DEFAULT_PARTICIPANT='alice') as server:
        yield server, log


class _SseTee(httpx.AsyncBaseTransport):
    """Keeps the bytes of every event stream the client reads, as it reads them."""

    def __init__(self) -> None:
        self.inner = httpx.AsyncHTTPTransport()
        self.streams: list[bytearray] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self.inner.handle_async_request(request)
        if 'text/event-stream' not in response.headers.get('content-type', ''):
            return response
        kept = bytearray()
        self.streams.append(kept)
        body = response.stream

        class Tee(httpx.AsyncByteStream):
            async def __aiter__(self) -> AsyncIterator[bytes]:
                async for chunk in body:
                    kept.extend(chunk)
                    yield chunk

            async def aclose(self) -> None:
                await body.aclose()

        return httpx.Response(response.status_code, headers=response.headers, stream=Tee(),
                              extensions=response.extensions)

    async def aclose(self) -> None:
        await self.inner.aclose()

    def assert_strict(self, binding: str) -> int:
        """Every SSE data line seen is one strict StreamResponse; how many there were."""
        count = 0
        for kept in self.streams:
            for line in kept.decode().splitlines():
                if not line.startswith('data:'):
                    continue
                obj = json.loads(line[5:])
                if binding == 'JSONRPC':
                    assert set(obj) == {'jsonrpc', 'id', 'result'}, obj
                    obj = obj['result']
                assert len(obj) == 1, f'StreamResponse must have exactly one key: {obj}'
                strict_parse(obj, StreamResponse)
                count += 1
        return count


@pytest.fixture
async def sdk(llm_server, binding: str) -> AsyncIterator[tuple[Client, _SseTee]]:
    """A streaming SDK client on `binding`, and the tee of its event streams."""
    server, _ = llm_server
    tee = _SseTee()
    async with httpx.AsyncClient(transport=tee, timeout=30) as h:
        config = ClientConfig(supported_protocol_bindings=[binding], streaming=True,
                              httpx_client=h, grpc_channel_factory=grpc_channel)
        client = await create_client(server.base_url, client_config=config)
        try:
            yield client, tee
        finally:
            await client.close()


def assert_strict(events: list[StreamResponse], tee: _SseTee, binding: str) -> None:
    if binding == 'GRPC':
        for ev in events:
            assert not unknown_fields(ev), unknown_fields(ev)
    else:
        assert tee.assert_strict(binding) >= len(events)


async def folded(events: list[StreamResponse]) -> Task:
    """The task the SDK's task manager makes of a stream's events."""
    manager = TaskManager(InMemoryTaskStore(), ServerCallContext(), None, None, None)
    for ev in events:
        k = kind(ev)
        if k in ('task', 'status_update', 'artifact_update'):
            await manager.process(getattr(ev, k))
    task = await manager.get_task()
    assert task is not None, describe(events)
    return task


def answer_of(task: Task) -> str:
    assert len(task.artifacts) == 1, task.artifacts
    return text_of(task.artifacts[0].parts)


def call_started_ms(log: Path, task_id: str) -> int:
    """When the task's model call started (ms since the epoch), from the call log."""
    for line in log.read_text().splitlines():
        what, _turn, task, _pid, ms = line.split(' ')
        if what == 'turn' and task == task_id:
            return int(ms)
    pytest.fail(f'no call of {task_id} in {log.read_text()}')


async def test_the_sdk_client_gets_the_answer_as_it_is_written(llm_server, sdk, binding: str):
    _, log = llm_server
    client, tee = sdk
    stream = client.send_message(send_request(user_message('streamed', text='Tell me')))
    events: list[StreamResponse] = []
    received_ms: list[float] = []

    async def drain() -> None:
        async for ev in stream:
            events.append(ev)
            received_ms.append(time.time() * 1000)

    await asyncio.wait_for(drain(), 30)
    shape = describe(events)

    assert kind(events[0]) == 'task', shape
    task_id = events[0].task.id
    at = [i for i, e in enumerate(events) if kind(e) == 'artifact_update']
    updates = [events[i].artifact_update for i in at]
    assert len(updates) >= 5, f'the answer comes in pieces, not at once: {shape}'
    assert len({u.artifact.artifact_id for u in updates}) == 1, shape
    assert ''.join(text_of(u.artifact.parts) for u in updates) == ANSWER, shape
    assert not updates[0].append and all(u.append for u in updates[1:]), shape
    assert updates[-1].last_chunk and not any(u.last_chunk for u in updates[:-1]), shape
    end = events[-1]
    assert kind(end) == 'status_update', shape
    assert end.status_update.status.state == TaskState.TASK_STATE_COMPLETED, shape
    assert at[-1] < len(events) - 1, 'COMPLETED after the last chunk'

    late = received_ms[at[0]] - call_started_ms(log, task_id)
    assert late < FIRST_WITHIN_MS, f'the first piece came {late:.0f} ms after the model wrote it'

    assert answer_of(await folded(events)) == ANSWER
    assert_strict(events, tee, binding)


async def test_a_subscriber_mid_answer_gets_the_answer_once(sdk, binding: str):
    client, tee = sdk
    sender = client.send_message(send_request(user_message('streamed', text='Tell me')))
    seen: list[StreamResponse] = []
    tenth = ''.join(CHUNKS[:10])

    async def until_ten_chunks() -> None:
        async for ev in sender:
            seen.append(ev)
            task = await folded(seen)
            if task.artifacts and len(answer_of(task)) >= len(tenth):
                return

    await asyncio.wait_for(until_ten_chunks(), 30)
    shown = answer_of(await folded(seen))
    assert shown.startswith(tenth) and len(shown) < len(ANSWER), describe(seen)

    events = await collect(client.subscribe(SubscribeToTaskRequest(id=seen[0].task.id)))
    shape = describe(events)
    assert kind(events[0]) == 'task' and not events[0].task.artifacts, shape
    updates = [e.artifact_update for e in events if kind(e) == 'artifact_update']
    assert not updates[0].append, f'what was written so far starts the artifact: {shape}'
    assert len(text_of(updates[0].artifact.parts)) < len(ANSWER), shape
    assert ''.join(text_of(u.artifact.parts) for u in updates) == ANSWER, shape
    assert events[-1].status_update.status.state == TaskState.TASK_STATE_COMPLETED, shape
    assert answer_of(await folded(events)) == ANSWER

    # The sender goes on to the end, and has it once too.
    seen.extend(await collect(sender))
    assert answer_of(await folded(seen)) == ANSWER
    assert_strict(seen + events, tee, binding)
