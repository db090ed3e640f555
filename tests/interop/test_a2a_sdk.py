"""Interop: the official A2A Python client (a2a-sdk 1.3.0) against harness-local.

Every test runs three times, once per binding ('JSONRPC', 'HTTP+JSON' and
'GRPC', the SDK's gRPC transport), through the ``binding`` fixture in conftest.py.
Over gRPC the wire checks read the call's response message (no field unknown to
the SDK's proto) or its google.rpc.Status (code, ErrorInfo) instead of a JSON body. The server runs the conformance agent
whose behaviour is chosen by the messageId prefix (spec digest §7.1).

Spec references (§x.y) point into shared/spec/a2a-1.0.md.
"""

from __future__ import annotations

import asyncio
import json
import time

from collections.abc import AsyncIterator
from uuid import uuid4

import grpc
import httpx
import pytest

from google.protobuf import json_format
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.unknown_fields import UnknownFieldSet

from a2a.client import A2ACardResolver, A2AClientError, Client
from a2a.types import a2a_pb2_grpc
from a2a.types import (
    AgentCard,
    AuthenticationInfo,
    CancelTaskRequest,
    DeleteTaskPushNotificationConfigRequest,
    GetTaskPushNotificationConfigRequest,
    GetTaskRequest,
    ListTaskPushNotificationConfigsRequest,
    ListTasksRequest,
    ListTasksResponse,
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    SendMessageResponse,
    StreamResponse,
    SubscribeToTaskRequest,
    Task,
    TaskPushNotificationConfig,
    TaskState,
)
from a2a.utils.errors import (
    A2AError,
    InvalidParamsError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)

from conftest import grpc_target


STREAM_TIMEOUT_S = 20.0

TERMINAL = {
    TaskState.TASK_STATE_COMPLETED,
    TaskState.TASK_STATE_FAILED,
    TaskState.TASK_STATE_CANCELED,
    TaskState.TASK_STATE_REJECTED,
}
INTERRUPTED = {
    TaskState.TASK_STATE_INPUT_REQUIRED,
    TaskState.TASK_STATE_AUTH_REQUIRED,
}
IN_PROGRESS = {TaskState.TASK_STATE_SUBMITTED, TaskState.TASK_STATE_WORKING}


# --------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------


def state_name(state: int) -> str:
    return TaskState.Name(state)


def new_id(prefix: str) -> str:
    return f'{prefix}-{uuid4().hex[:8]}'


def user_message(
    prefix: str,
    *,
    task_id: str | None = None,
    context_id: str | None = None,
    text: str = 'hello from the a2a-sdk interop suite',
) -> Message:
    m = Message(
        message_id=new_id(prefix),
        role=Role.ROLE_USER,
        parts=[Part(text=text)],
    )
    if task_id:
        m.task_id = task_id
    if context_id:
        m.context_id = context_id
    return m


def send_request(message: Message, **config) -> SendMessageRequest:
    req = SendMessageRequest(message=message)
    if config:
        req.configuration.CopyFrom(SendMessageConfiguration(**config))
    return req


def kind(ev: StreamResponse) -> str:
    return ev.WhichOneof('payload') or '<empty>'


def describe(events: list[StreamResponse]) -> list[str]:
    out = []
    for ev in events:
        k = kind(ev)
        if k == 'task':
            out.append(f'task({state_name(ev.task.status.state)})')
        elif k == 'status_update':
            out.append(f'status({state_name(ev.status_update.status.state)})')
        elif k == 'artifact_update':
            a = ev.artifact_update
            out.append(
                f'artifact({a.artifact.artifact_id},append={a.append},'
                f'last={a.last_chunk})'
            )
        else:
            out.append(k)
    return out


async def collect(
    stream: AsyncIterator[StreamResponse], timeout: float = STREAM_TIMEOUT_S
) -> list[StreamResponse]:
    """Drains a stream; fails if the server does not close it in time."""
    events: list[StreamResponse] = []

    async def drain() -> None:
        async for ev in stream:
            events.append(ev)

    try:
        await asyncio.wait_for(drain(), timeout)
    except (TimeoutError, asyncio.TimeoutError):
        pytest.fail(
            f'stream not closed by the server within {timeout}s; '
            f'events so far: {describe(events)}'
        )
    return events


async def send_blocking(client: Client, req: SendMessageRequest) -> StreamResponse:
    """Non-streaming send: the SDK wraps the single response in a StreamResponse."""
    events = await collect(client.send_message(req))
    assert len(events) == 1, describe(events)
    return events[0]


async def send_for_task(client: Client, req: SendMessageRequest) -> Task:
    ev = await send_blocking(client, req)
    assert kind(ev) == 'task', f'expected a Task, got {kind(ev)}'
    return ev.task


def text_of(parts) -> str:
    return ''.join(p.text for p in parts if p.WhichOneof('content') == 'text')


def agent_texts(task: Task) -> list[str]:
    """Texts of agent messages in status.message and in history."""
    texts = []
    if task.status.HasField('message'):
        if task.status.message.role == Role.ROLE_AGENT:
            texts.append(text_of(task.status.message.parts))
    for m in task.history:
        if m.role == Role.ROLE_AGENT:
            texts.append(text_of(m.parts))
    return texts


def assert_task_stream(
    events: list[StreamResponse], final_states: set[int]
) -> tuple[Task, int]:
    """Checks the task-stream framing of spec §1.3.

    The first event is a Task; the rest are status/artifact updates of that
    task (a final Task snapshot is allowed as the very last event); the last
    state seen is one of ``final_states`` and nothing but an optional final
    snapshot follows it. Returns (first task, final state).
    """
    shape = describe(events)
    assert events, 'empty stream'
    assert kind(events[0]) == 'task', f'first event must be a Task: {shape}'
    first = events[0].task
    assert first.id, 'Task.id missing'
    assert first.context_id, 'Task.contextId missing'

    state = first.status.state
    final_at = 0 if state in final_states else None
    for i, ev in enumerate(events[1:], start=1):
        k = kind(ev)
        if k == 'status_update':
            su = ev.status_update
            assert su.task_id == first.id, shape
            assert su.context_id == first.context_id, shape
            assert final_at is None, f'event after final state: {shape}'
            state = su.status.state
        elif k == 'artifact_update':
            au = ev.artifact_update
            assert au.task_id == first.id, shape
            assert au.context_id == first.context_id, shape
            assert au.artifact.artifact_id, 'Artifact.artifactId missing'
            assert len(au.artifact.parts) >= 1, 'Artifact.parts empty'
            assert final_at is None, f'event after final state: {shape}'
        elif k == 'task':
            assert i == len(events) - 1, (
                f'a Task snapshot is only allowed first or last: {shape}'
            )
            assert ev.task.id == first.id, shape
            state = ev.task.status.state
        else:
            pytest.fail(f'unexpected {k} event in a task stream: {shape}')
        if state in final_states and final_at is None:
            final_at = i
    assert state in final_states, (
        f'stream closed in {state_name(state)}, expected one of '
        f'{sorted(state_name(s) for s in final_states)}: {shape}'
    )
    return first, state


def unknown_fields(message, path: str = '') -> list[str]:
    """Where a decoded proto message holds fields its descriptor does not know: a field
    our proto has and the SDK's has not (the gRPC form of an unknown ProtoJSON key)."""
    found = [f'{path or "<root>"}: field {f.field_number}' for f in UnknownFieldSet(message)]
    for field, value in message.ListFields():
        if field.type != FieldDescriptor.TYPE_MESSAGE:
            continue
        here = f'{path}.{field.name}' if path else field.name
        if field.message_type.GetOptions().map_entry:
            if field.message_type.fields_by_name['value'].type == FieldDescriptor.TYPE_MESSAGE:
                for k, v in value.items():
                    found += unknown_fields(v, f'{here}[{k}]')
        elif field.is_repeated:
            for i, v in enumerate(value):
                found += unknown_fields(v, f'{here}[{i}]')
        else:
            found += unknown_fields(value, here)
    return found


def wire_payload(record, binding: str):
    """The A2A payload of a recorded non-streaming response."""
    body = record.body
    if binding == 'GRPC':
        assert record.status == grpc.StatusCode.OK, (record.status, record.rpc_status)
        assert record.message is not None
        assert not unknown_fields(record.message), unknown_fields(record.message)
        return body
    assert isinstance(body, dict), f'response body is not a JSON object: {body!r}'
    if binding == 'JSONRPC':
        assert record.status == 200, f'JSON-RPC must answer HTTP 200, got {record.status}'
        assert set(body) == {'jsonrpc', 'id', 'result'}, body.keys()
        assert body['jsonrpc'] == '2.0'
        assert body['id'] == record.request_json['id']
        return body['result']
    assert 'application/json' in record.content_type or (
        'application/a2a+json' in record.content_type
    ), record.content_type
    return body


def strict_parse(payload, message_cls):
    """ProtoJSON parse that rejects unknown keys and bad enum names."""
    try:
        return json_format.ParseDict(payload, message_cls())
    except json_format.ParseError as e:
        pytest.fail(
            f'response is not strict ProtoJSON {message_cls.__name__}: {e}\n'
            f'{json.dumps(payload, indent=1)[:2000]}'
        )


ERROR_INFO_TYPE = 'type.googleapis.com/google.rpc.ErrorInfo'
# reason -> (JSON-RPC code, HTTP status per spec v1.0.1, google.rpc.Code name); §1.4
A2A_ERRORS = {
    'TASK_NOT_FOUND': (-32001, 404, 'NOT_FOUND'),
    'TASK_NOT_CANCELABLE': (-32002, 400, 'FAILED_PRECONDITION'),
    'PUSH_NOTIFICATION_NOT_SUPPORTED': (-32003, 400, 'FAILED_PRECONDITION'),
    'UNSUPPORTED_OPERATION': (-32004, 400, 'FAILED_PRECONDITION'),
}


def assert_wire_error(record, binding: str, reason: str) -> None:
    """The error body on the wire has the shape of §1.4 / §2 with an ErrorInfo."""
    code, http_status, status_name = A2A_ERRORS[reason]
    body = record.body
    if binding == 'GRPC':
        # §2 (gRPC): the status code, and a google.rpc.Status in grpc-status-details-bin.
        assert record.status.name == status_name, (record.status, reason)
        assert record.rpc_status is not None, 'no google.rpc.Status in the trailers'
        err = json_format.MessageToDict(record.rpc_status)
        assert err.get('code') == record.status.value[0], err
        assert isinstance(err.get('message'), str) and err['message']
        details = err.get('details')
    elif binding == 'JSONRPC':
        assert isinstance(body, dict), f'error body is not a JSON object: {body!r}'

        assert record.status == 200, f'JSON-RPC errors travel with HTTP 200, got {record.status}'
        assert set(body) == {'jsonrpc', 'id', 'error'}, body
        assert body['id'] == record.request_json['id']
        err = body['error']
        assert set(err) <= {'code', 'message', 'data'}, f'extra keys in error: {err}'
        assert err['code'] == code, err
        assert isinstance(err.get('message'), str) and err['message']
        details = err.get('data')
    else:
        assert isinstance(body, dict), f'error body is not a JSON object: {body!r}'
        assert record.status == http_status, (
            f'HTTP {record.status}, expected {http_status} for {reason}: {body}'
        )
        assert 'application/json' in record.content_type or (
            'application/a2a+json' in record.content_type
        ), record.content_type
        assert set(body) == {'error'}, body
        err = body['error']
        assert err.get('code') == http_status, err
        assert err.get('status') == status_name, err
        assert isinstance(err.get('message'), str) and err['message']
        details = err.get('details')
    assert isinstance(details, list), f'error details must be an array: {err}'
    infos = [d for d in details if isinstance(d, dict) and d.get('@type') == ERROR_INFO_TYPE]
    assert infos, f'no google.rpc.ErrorInfo in error details: {details}'
    assert infos[0].get('reason') == reason, infos[0]
    assert infos[0].get('domain') == 'a2a-protocol.org', infos[0]


def assert_invalid_params(exc: BaseException, record, binding: str) -> None:
    """-32602 on JSON-RPC; HTTP 400 INVALID_ARGUMENT on REST; INVALID_ARGUMENT on
    gRPC (§1.4, §2).

    The SDK maps a REST 400 or a gRPC INVALID_ARGUMENT to InvalidParamsError only
    when an ErrorInfo with reason INVALID_PARAMS is attached, which the spec does
    not require.
    """
    body = record.body
    if binding == 'GRPC':
        assert isinstance(exc, InvalidParamsError) or (
            isinstance(exc, A2AClientError) and 'INVALID_ARGUMENT' in str(exc)
        ), repr(exc)
        assert record.status == grpc.StatusCode.INVALID_ARGUMENT, (record.status, record.rpc_status)
        assert record.rpc_status is not None and record.rpc_status.message
    elif binding == 'JSONRPC':
        assert isinstance(exc, InvalidParamsError), repr(exc)
        assert record.status == 200
        assert body['error']['code'] == -32602, body
    else:
        assert isinstance(exc, InvalidParamsError) or (
            isinstance(exc, A2AClientError) and 'HTTP Error 400' in str(exc)
        ), repr(exc)
        assert record.status == 400, (record.status, body)
        assert body['error']['status'] == 'INVALID_ARGUMENT', body


async def complete_task(client: Client, **msg_kw) -> Task:
    task = await send_for_task(
        client, send_request(user_message('tck-complete-task', **msg_kw))
    )
    assert task.status.state == TaskState.TASK_STATE_COMPLETED
    return task


async def working_task(client: Client) -> Task:
    """A task that stays WORKING for ~4 s (test-resubscribe-message-id)."""
    task = await send_for_task(
        client,
        send_request(
            user_message('test-resubscribe-message-id'), return_immediately=True
        ),
    )
    assert task.status.state in IN_PROGRESS, state_name(task.status.state)
    return task


async def fetch_card(base_url: str) -> tuple[AgentCard, dict]:
    async with httpx.AsyncClient(timeout=10) as h:
        resp = await h.get(base_url.rstrip('/') + '/.well-known/agent-card.json')
        assert resp.status_code == 200
        raw = resp.json()
        card = await A2ACardResolver(h, base_url).get_agent_card()
    return card, raw


# --------------------------------------------------------------------------
# agent card
# --------------------------------------------------------------------------


async def test_agent_card_advertises_the_binding_at_the_base_url(
    base_url: str, binding: str
):
    card, raw = await fetch_card(base_url)
    strict_parse(raw, AgentCard)
    matches = [i for i in card.supported_interfaces if i.protocol_binding == binding]
    assert matches, [
        (i.protocol_binding, i.url) for i in card.supported_interfaces
    ]
    iface = matches[0]
    assert iface.url.rstrip('/') == base_url.rstrip('/')
    assert iface.protocol_version.startswith('1.'), iface.protocol_version
    assert card.capabilities.streaming is True
    assert card.name and card.description and card.version
    assert 'text/plain' in card.default_input_modes


# --------------------------------------------------------------------------
# SendMessage (blocking)
# --------------------------------------------------------------------------


async def test_blocking_send_completes_task_with_hello_from_tck(
    client: Client, wire, binding: str
):
    msg = user_message('tck-complete-task')
    task = await send_for_task(client, send_request(msg))

    assert task.id and task.context_id
    assert task.status.state == TaskState.TASK_STATE_COMPLETED
    assert 'Hello from TCK' in agent_texts(task), agent_texts(task)
    user_ids = [m.message_id for m in task.history if m.role == Role.ROLE_USER]
    assert msg.message_id in user_ids, 'history must hold the user message'

    payload = wire_payload(wire.last(), binding)
    assert set(payload) == {'task'}, payload.keys()
    strict_parse(payload, SendMessageResponse)


async def test_blocking_send_of_message_response_returns_direct_message_without_task(
    client: Client, wire, binding: str
):
    ev = await send_blocking(
        client, send_request(user_message('tck-message-response'))
    )
    assert kind(ev) == 'message', describe([ev])
    m = ev.message
    assert m.role == Role.ROLE_AGENT
    assert m.message_id
    assert m.context_id, 'server messages carry the contextId (§3.2)'
    assert text_of(m.parts) == 'Direct message response'

    payload = wire_payload(wire.last(), binding)
    assert set(payload) == {'message'}, payload.keys()
    strict_parse(payload, SendMessageResponse)


async def test_blocking_send_of_reject_task_returns_rejected_task(client: Client):
    task = await send_for_task(client, send_request(user_message('tck-reject-task')))
    assert task.status.state == TaskState.TASK_STATE_REJECTED


async def test_blocking_send_of_artifact_text_returns_text_artifact(
    client: Client, wire, binding: str
):
    task = await send_for_task(
        client, send_request(user_message('tck-artifact-text'))
    )
    assert task.status.state == TaskState.TASK_STATE_COMPLETED
    assert len(task.artifacts) == 1, task.artifacts
    art = task.artifacts[0]
    assert art.artifact_id
    assert text_of(art.parts) == 'Generated text content'
    strict_parse(wire_payload(wire.last(), binding), SendMessageResponse)


async def test_blocking_send_of_artifact_data_returns_data_artifact(client: Client):
    task = await send_for_task(
        client, send_request(user_message('tck-artifact-data'))
    )
    assert task.status.state == TaskState.TASK_STATE_COMPLETED
    assert len(task.artifacts) == 1
    parts = task.artifacts[0].parts
    assert len(parts) == 1
    assert parts[0].WhichOneof('content') == 'data'
    assert json_format.MessageToDict(parts[0].data) == {'key': 'value', 'count': 42}


async def test_blocking_send_of_artifact_file_returns_raw_file_artifact(
    client: Client,
):
    task = await send_for_task(
        client, send_request(user_message('tck-artifact-file'))
    )
    assert task.status.state == TaskState.TASK_STATE_COMPLETED
    assert len(task.artifacts) == 1
    parts = task.artifacts[0].parts
    assert len(parts) == 1
    assert parts[0].WhichOneof('content') == 'raw'
    assert parts[0].raw == b'tck'
    assert parts[0].filename == 'output.txt'
    assert parts[0].media_type == 'text/plain'


async def test_blocking_send_of_artifact_file_url_returns_url_artifact(
    client: Client,
):
    task = await send_for_task(
        client, send_request(user_message('tck-artifact-file-url'))
    )
    assert task.status.state == TaskState.TASK_STATE_COMPLETED
    assert len(task.artifacts) == 1
    parts = task.artifacts[0].parts
    assert len(parts) == 1
    assert parts[0].WhichOneof('content') == 'url'
    assert parts[0].url == 'https://example.com/output.txt'
    assert parts[0].filename == 'output.txt'
    assert parts[0].media_type == 'text/plain'


async def test_concurrent_blocking_sends_each_get_their_own_completed_task(
    client: Client,
):
    msgs = [user_message('tck-complete-task') for _ in range(6)]
    tasks = await asyncio.gather(
        *(send_for_task(client, send_request(m)) for m in msgs)
    )
    assert len({t.id for t in tasks}) == len(msgs)
    for m, t in zip(msgs, tasks):
        assert t.status.state == TaskState.TASK_STATE_COMPLETED
        assert m.message_id in [h.message_id for h in t.history]


async def test_blocking_send_waits_until_a_slow_task_is_completed(client: Client):
    # Blocking is the default: the reply must come only once the task is
    # terminal or interrupted (§3.3), here ~4 s later.
    started = time.monotonic()
    task = await send_for_task(
        client, send_request(user_message('test-resubscribe-message-id'))
    )
    assert task.status.state == TaskState.TASK_STATE_COMPLETED, state_name(
        task.status.state
    )
    assert time.monotonic() - started > 2.0


async def test_send_with_return_immediately_returns_in_progress_task_at_once(
    client: Client,
):
    started = time.monotonic()
    task = await working_task(client)
    assert time.monotonic() - started < 2.5
    got = await client.get_task(GetTaskRequest(id=task.id))
    assert got.id == task.id
    assert got.status.state in IN_PROGRESS


async def test_input_required_then_follow_up_on_same_task_completes_it(
    client: Client,
):
    first_msg = user_message('tck-input-required')
    task = await send_for_task(client, send_request(first_msg))
    assert task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED

    # Only taskId given: the server infers the contextId from the task.
    second_msg = user_message('tck-complete-task', task_id=task.id)
    done = await send_for_task(client, send_request(second_msg))
    assert done.id == task.id
    assert done.context_id == task.context_id
    assert done.status.state == TaskState.TASK_STATE_COMPLETED

    user_ids = [m.message_id for m in done.history if m.role == Role.ROLE_USER]
    assert user_ids == [first_msg.message_id, second_msg.message_id], user_ids


async def test_send_history_length_zero_omits_history_from_returned_task(
    client: Client,
):
    task = await send_for_task(
        client,
        send_request(user_message('tck-complete-task'), history_length=0),
    )
    assert task.status.state == TaskState.TASK_STATE_COMPLETED
    assert len(task.history) == 0


async def test_send_to_unknown_task_id_raises_task_not_found(
    client: Client, wire, binding: str
):
    with pytest.raises(TaskNotFoundError):
        await send_blocking(
            client,
            send_request(user_message('tck-complete-task', task_id=f'no-such-{uuid4().hex}')),
        )
    assert_wire_error(wire.last(), binding, 'TASK_NOT_FOUND')


async def test_send_to_a_completed_task_raises_unsupported_operation(
    client: Client, wire, binding: str
):
    task = await complete_task(client)
    with pytest.raises(UnsupportedOperationError):
        await send_blocking(
            client, send_request(user_message('tck-complete-task', task_id=task.id))
        )
    assert_wire_error(wire.last(), binding, 'UNSUPPORTED_OPERATION')


async def test_send_with_context_id_not_matching_the_task_raises_invalid_params(
    client: Client, wire, binding: str
):
    task = await send_for_task(client, send_request(user_message('tck-input-required')))
    assert task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    with pytest.raises(A2AError) as ei:
        await send_blocking(
            client,
            send_request(
                user_message(
                    'tck-complete-task',
                    task_id=task.id,
                    context_id=f'other-ctx-{uuid4().hex}',
                )
            ),
        )
    assert_invalid_params(ei.value, wire.last(), binding)
    # The task itself is untouched.
    got = await client.get_task(GetTaskRequest(id=task.id))
    assert got.status.state == TaskState.TASK_STATE_INPUT_REQUIRED


async def test_send_with_client_context_id_starts_task_in_that_context(
    client: Client,
):
    ctx = f'ctx-{uuid4().hex}'
    task = await complete_task(client, context_id=ctx)
    assert task.context_id == ctx


# --------------------------------------------------------------------------
# SendStreamingMessage
# --------------------------------------------------------------------------


async def test_stream_001_yields_task_then_working_artifact_completed_and_closes(
    streaming_client: Client,
):
    events = await collect(
        streaming_client.send_message(send_request(user_message('tck-stream-001')))
    )
    first, final = assert_task_stream(events, TERMINAL)
    assert final == TaskState.TASK_STATE_COMPLETED, describe(events)

    kinds = describe(events)
    artifact_idx = [i for i, e in enumerate(events) if kind(e) == 'artifact_update']
    assert len(artifact_idx) == 1, kinds
    art = events[artifact_idx[0]].artifact_update.artifact
    assert text_of(art.parts), 'the streamed artifact must carry text'

    # WORKING is reported (in the first Task or a status update) before the
    # artifact, and COMPLETED after it.
    working_idx = [
        i for i, e in enumerate(events)
        if (kind(e) == 'status_update'
            and e.status_update.status.state == TaskState.TASK_STATE_WORKING)
        or (kind(e) == 'task' and e.task.status.state == TaskState.TASK_STATE_WORKING)
    ]
    completed_idx = [
        i for i, e in enumerate(events)
        if kind(e) == 'status_update'
        and e.status_update.status.state == TaskState.TASK_STATE_COMPLETED
    ]
    assert working_idx and working_idx[0] < artifact_idx[0], kinds
    assert completed_idx and completed_idx[0] > artifact_idx[0], kinds


async def test_stream_artifact_chunked_yields_two_appended_chunks(
    streaming_client: Client,
):
    events = await collect(
        streaming_client.send_message(
            send_request(user_message('tck-stream-artifact-chunked'))
        )
    )
    first, final = assert_task_stream(events, TERMINAL)
    assert final == TaskState.TASK_STATE_COMPLETED

    chunks = [e.artifact_update for e in events if kind(e) == 'artifact_update']
    assert len(chunks) == 2, describe(events)
    c1, c2 = chunks
    assert c1.artifact.artifact_id == c2.artifact.artifact_id
    assert text_of(c1.artifact.parts) == 'chunk-1 '
    assert text_of(c2.artifact.parts) == 'chunk-2'
    # §3.2: the first chunk is not an append; the last is an append and
    # carries lastChunk.
    assert c1.append is False, 'first chunk must not set append'
    assert c1.last_chunk is False
    assert c2.append is True
    assert c2.last_chunk is True

    # The stored task holds the reassembled artifact.
    task = await streaming_client.get_task(GetTaskRequest(id=first.id))
    assert len(task.artifacts) == 1, task.artifacts
    assert task.artifacts[0].artifact_id == c1.artifact.artifact_id
    assert text_of(task.artifacts[0].parts) == 'chunk-1 chunk-2'


async def test_stream_of_complete_task_starts_with_task_and_closes_completed(
    streaming_client: Client,
):
    msg = user_message('tck-complete-task')
    events = await collect(streaming_client.send_message(send_request(msg)))
    first, final = assert_task_stream(events, TERMINAL)
    assert final == TaskState.TASK_STATE_COMPLETED
    task = await streaming_client.get_task(GetTaskRequest(id=first.id))
    assert task.status.state == TaskState.TASK_STATE_COMPLETED
    assert 'Hello from TCK' in agent_texts(task), agent_texts(task)


async def test_stream_ignores_return_immediately_and_follows_slow_task_to_completion(
    streaming_client: Client,
):
    # §3.3: returnImmediately has no effect on streaming.
    events = await collect(
        streaming_client.send_message(
            send_request(
                user_message('test-resubscribe-message-id'), return_immediately=True
            )
        )
    )
    _, final = assert_task_stream(events, TERMINAL)
    assert final == TaskState.TASK_STATE_COMPLETED


async def test_stream_of_message_response_is_a_single_message(
    streaming_client: Client,
):
    events = await collect(
        streaming_client.send_message(send_request(user_message('tck-message-response')))
    )
    assert [kind(e) for e in events] == ['message'], describe(events)
    assert events[0].message.role == Role.ROLE_AGENT
    assert text_of(events[0].message.parts) == 'Direct message response'


async def test_stream_closes_at_input_required(streaming_client: Client):
    events = await collect(
        streaming_client.send_message(send_request(user_message('tck-input-required')))
    )
    first, final = assert_task_stream(events, TERMINAL | INTERRUPTED)
    assert final == TaskState.TASK_STATE_INPUT_REQUIRED, describe(events)


async def test_streamed_follow_up_on_input_required_task_starts_with_that_task(
    client: Client, streaming_client: Client,
):
    # §3.1.2: a task stream MUST begin with the Task object, also when the
    # message continues an existing task.
    # (a2a-sdk 1.3.0's own server starts such a stream with a status update.)
    task = await send_for_task(client, send_request(user_message('tck-input-required')))
    assert task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED

    events = await collect(
        streaming_client.send_message(
            send_request(user_message('tck-complete-task', task_id=task.id))
        )
    )
    first, final = assert_task_stream(events, TERMINAL)
    assert first.id == task.id
    assert first.context_id == task.context_id
    assert final == TaskState.TASK_STATE_COMPLETED


async def test_stream_of_reject_task_closes_rejected(streaming_client: Client):
    events = await collect(
        streaming_client.send_message(send_request(user_message('tck-reject-task')))
    )
    _, final = assert_task_stream(events, TERMINAL)
    assert final == TaskState.TASK_STATE_REJECTED


async def raw_grpc_stream(base_url: str, message: Message) -> list[StreamResponse]:
    """SendStreamingMessage on the SDK's generated stub, without its client."""
    async with grpc.aio.insecure_channel(grpc_target(base_url)) as channel:
        call = a2a_pb2_grpc.A2AServiceStub(channel).SendStreamingMessage(
            SendMessageRequest(message=message),
            metadata=[('a2a-version', '1.0')],
            timeout=STREAM_TIMEOUT_S,
        )
        events = [event async for event in call]
        assert await call.code() == grpc.StatusCode.OK, await call.details()
    for event in events:
        assert event.WhichOneof('payload'), f'a StreamResponse without a payload: {event}'
        assert not unknown_fields(event), unknown_fields(event)
    return events


async def test_stream_events_on_the_wire_are_strict_protojson(
    base_url: str, binding: str
):
    """Raw SSE check: one StreamResponse per data line, no extra keys (§1.3, §3.1).
    Over gRPC, a raw stub call: every message is a StreamResponse with its payload
    set and no field unknown to the SDK's proto, and the call ends OK."""
    if binding == 'GRPC':
        events = await raw_grpc_stream(base_url, user_message('tck-stream-001'))
        _, final = assert_task_stream(events, TERMINAL)
        assert final == TaskState.TASK_STATE_COMPLETED
        return
    msg = json_format.MessageToDict(user_message('tck-stream-001'))
    headers = {'A2A-Version': '1.0', 'Accept': 'text/event-stream'}
    if binding == 'JSONRPC':
        url = base_url
        body = {
            'jsonrpc': '2.0', 'id': 'sse-1', 'method': 'SendStreamingMessage',
            'params': {'message': msg},
        }
    else:
        url = base_url.rstrip('/') + '/message:stream'
        body = {'message': msg}

    datas: list[str] = []
    async with httpx.AsyncClient(timeout=STREAM_TIMEOUT_S) as h:
        async with h.stream('POST', url, json=body, headers=headers) as resp:
            assert resp.status_code == 200
            assert resp.headers['content-type'].startswith('text/event-stream')
            async for line in resp.aiter_lines():
                if line.startswith('event:'):
                    pytest.fail(f'unexpected named SSE event: {line}')
                if line.startswith('data:'):
                    datas.append(line[5:].strip())

    events = []
    for d in datas:
        obj = json.loads(d)
        if binding == 'JSONRPC':
            assert set(obj) == {'jsonrpc', 'id', 'result'}, obj
            assert obj['id'] == 'sse-1'
            obj = obj['result']
        assert len(obj) == 1, f'StreamResponse must have exactly one key: {obj}'
        events.append(strict_parse(obj, StreamResponse))
    _, final = assert_task_stream(events, TERMINAL)
    assert final == TaskState.TASK_STATE_COMPLETED


# --------------------------------------------------------------------------
# GetTask
# --------------------------------------------------------------------------


async def _two_turn_task(client: Client) -> tuple[Task, list[str]]:
    m1 = user_message('tck-input-required')
    t = await send_for_task(client, send_request(m1))
    m2 = user_message('tck-complete-task', task_id=t.id)
    t = await send_for_task(client, send_request(m2))
    assert t.status.state == TaskState.TASK_STATE_COMPLETED
    return t, [m1.message_id, m2.message_id]


async def test_get_task_returns_full_history_in_chronological_order(
    client: Client, wire, binding: str
):
    task, sent_ids = await _two_turn_task(client)
    got = await client.get_task(GetTaskRequest(id=task.id))
    strict_parse(wire_payload(wire.last(), binding), Task)
    assert got.id == task.id
    assert got.context_id == task.context_id
    assert got.status.state == TaskState.TASK_STATE_COMPLETED
    user_ids = [m.message_id for m in got.history if m.role == Role.ROLE_USER]
    assert user_ids == sent_ids


async def test_get_task_history_length_limits_to_most_recent_messages(
    client: Client,
):
    task, _ = await _two_turn_task(client)
    full = await client.get_task(GetTaskRequest(id=task.id))
    assert len(full.history) >= 2

    one = await client.get_task(GetTaskRequest(id=task.id, history_length=1))
    assert len(one.history) == 1
    assert one.history[0].message_id == full.history[-1].message_id

    two = await client.get_task(GetTaskRequest(id=task.id, history_length=2))
    assert [m.message_id for m in two.history] == [
        m.message_id for m in full.history[-2:]
    ]

    zero = await client.get_task(GetTaskRequest(id=task.id, history_length=0))
    assert len(zero.history) == 0
    assert zero.status.state == TaskState.TASK_STATE_COMPLETED


async def test_get_task_of_unknown_id_raises_task_not_found(
    client: Client, wire, binding: str
):
    with pytest.raises(TaskNotFoundError):
        await client.get_task(GetTaskRequest(id=f'no-such-task-{uuid4().hex}'))
    assert_wire_error(wire.last(), binding, 'TASK_NOT_FOUND')


async def test_get_task_with_negative_history_length_raises_invalid_params(
    client: Client, wire, binding: str
):
    task = await complete_task(client)
    with pytest.raises(A2AError) as ei:
        await client.get_task(GetTaskRequest(id=task.id, history_length=-1))
    assert_invalid_params(ei.value, wire.last(), binding)


# --------------------------------------------------------------------------
# ListTasks
# --------------------------------------------------------------------------


async def test_list_tasks_pages_newest_first_without_duplicates(
    client: Client, wire, binding: str
):
    ctx = f'ctx-list-{uuid4().hex}'
    created = []
    for _ in range(5):
        created.append((await complete_task(client, context_id=ctx)).id)
        await asyncio.sleep(0.02)  # distinct status timestamps

    seen: list[Task] = []
    token = ''
    pages = 0
    while True:
        resp = await client.list_tasks(
            ListTasksRequest(context_id=ctx, page_size=2, page_token=token)
        )
        pages += 1
        payload = wire_payload(wire.last(), binding)
        # §3.3: all four keys are always present.
        assert {'tasks', 'nextPageToken', 'pageSize', 'totalSize'} <= set(payload), (
            payload.keys()
        )
        strict_parse(payload, ListTasksResponse)
        assert resp.page_size == 2
        assert resp.total_size == 5
        assert 1 <= len(resp.tasks) <= 2
        seen.extend(resp.tasks)
        token = resp.next_page_token
        if not token:
            break
        assert pages < 10, 'pagination does not terminate'

    assert pages == 3
    ids = [t.id for t in seen]
    assert len(ids) == len(set(ids)), f'duplicates across pages: {ids}'
    assert set(ids) == set(created)
    assert ids == list(reversed(created)), 'ListTasks must be newest first'
    stamps = [t.status.timestamp.ToDatetime() for t in seen if t.status.HasField('timestamp')]
    assert stamps == sorted(stamps, reverse=True)
    for t in seen:
        assert t.context_id == ctx


async def test_list_tasks_omits_artifacts_unless_include_artifacts(
    client: Client, wire, binding: str
):
    ctx = f'ctx-art-{uuid4().hex}'
    task = await send_for_task(
        client, send_request(user_message('tck-artifact-text', context_id=ctx))
    )
    assert task.artifacts

    resp = await client.list_tasks(ListTasksRequest(context_id=ctx))
    payload = wire_payload(wire.last(), binding)
    assert [t.id for t in resp.tasks] == [task.id]
    if binding == 'GRPC':  # proto3 has no absent repeated field: absent is empty
        assert list(resp.tasks[0].artifacts) == []
    else:
        assert 'artifacts' not in payload['tasks'][0], (
            'artifacts must be absent when includeArtifacts is false'
        )

    resp = await client.list_tasks(
        ListTasksRequest(context_id=ctx, include_artifacts=True)
    )
    assert [t.id for t in resp.tasks] == [task.id]
    assert text_of(resp.tasks[0].artifacts[0].parts) == 'Generated text content'


async def test_list_tasks_filters_by_status(client: Client):
    ctx = f'ctx-status-{uuid4().hex}'
    await complete_task(client, context_id=ctx)
    waiting = await send_for_task(
        client, send_request(user_message('tck-input-required', context_id=ctx))
    )
    resp = await client.list_tasks(
        ListTasksRequest(context_id=ctx, status=TaskState.TASK_STATE_INPUT_REQUIRED)
    )
    assert [t.id for t in resp.tasks] == [waiting.id]
    assert resp.next_page_token == ''


async def test_list_tasks_history_length_limits_history_of_each_task(
    client: Client,
):
    ctx = f'ctx-hist-{uuid4().hex}'
    await complete_task(client, context_id=ctx)
    await complete_task(client, context_id=ctx)
    full = await client.list_tasks(ListTasksRequest(context_id=ctx))
    assert len(full.tasks) == 2
    none = await client.list_tasks(ListTasksRequest(context_id=ctx, history_length=0))
    assert [t.id for t in none.tasks] == [t.id for t in full.tasks]
    assert all(len(t.history) == 0 for t in none.tasks)


@pytest.mark.parametrize('page_size', [101, -1])
async def test_list_tasks_with_page_size_out_of_range_raises_invalid_params(
    client: Client, wire, binding: str, page_size: int
):
    with pytest.raises(A2AError) as ei:
        await client.list_tasks(ListTasksRequest(page_size=page_size))
    assert_invalid_params(ei.value, wire.last(), binding)


async def test_list_tasks_of_unused_context_is_empty_with_all_keys(
    client: Client, wire, binding: str
):
    resp = await client.list_tasks(
        ListTasksRequest(context_id=f'ctx-empty-{uuid4().hex}')
    )
    assert len(resp.tasks) == 0
    assert resp.next_page_token == ''
    payload = wire_payload(wire.last(), binding)
    assert {'tasks', 'nextPageToken', 'pageSize', 'totalSize'} <= set(payload)
    assert payload['tasks'] == []


# --------------------------------------------------------------------------
# CancelTask
# --------------------------------------------------------------------------


async def test_cancel_working_task_returns_canceled_task(
    client: Client, wire, binding: str
):
    task = await working_task(client)
    canceled = await client.cancel_task(CancelTaskRequest(id=task.id))
    strict_parse(wire_payload(wire.last(), binding), Task)
    assert canceled.id == task.id
    assert canceled.status.state == TaskState.TASK_STATE_CANCELED
    got = await client.get_task(GetTaskRequest(id=task.id))
    assert got.status.state == TaskState.TASK_STATE_CANCELED


async def test_canceled_task_stays_canceled_after_the_agent_would_have_finished(
    client: Client,
):
    task = await working_task(client)
    await client.cancel_task(CancelTaskRequest(id=task.id))
    await asyncio.sleep(5)  # the agent would complete it ~4 s after start
    got = await client.get_task(GetTaskRequest(id=task.id))
    assert got.status.state == TaskState.TASK_STATE_CANCELED


async def test_cancel_completed_task_raises_task_not_cancelable(
    client: Client, wire, binding: str
):
    task = await complete_task(client)
    with pytest.raises(TaskNotCancelableError):
        await client.cancel_task(CancelTaskRequest(id=task.id))
    assert_wire_error(wire.last(), binding, 'TASK_NOT_CANCELABLE')
    got = await client.get_task(GetTaskRequest(id=task.id))
    assert got.status.state == TaskState.TASK_STATE_COMPLETED


async def test_cancel_unknown_task_raises_task_not_found(
    client: Client, wire, binding: str
):
    with pytest.raises(TaskNotFoundError):
        await client.cancel_task(CancelTaskRequest(id=f'no-such-task-{uuid4().hex}'))
    assert_wire_error(wire.last(), binding, 'TASK_NOT_FOUND')


# --------------------------------------------------------------------------
# SubscribeToTask
# --------------------------------------------------------------------------


async def test_subscribe_to_working_task_yields_task_first_then_completes(
    client: Client, streaming_client: Client,
):
    task = await working_task(client)
    events = await collect(streaming_client.subscribe(SubscribeToTaskRequest(id=task.id)))
    first, final = assert_task_stream(events, TERMINAL)
    assert first.id == task.id
    assert first.context_id == task.context_id
    assert first.status.state in IN_PROGRESS, state_name(first.status.state)
    assert final == TaskState.TASK_STATE_COMPLETED


async def test_two_subscribers_receive_the_same_events(
    client: Client, streaming_client: Client,
):
    task = await working_task(client)
    a, b = await asyncio.gather(
        collect(streaming_client.subscribe(SubscribeToTaskRequest(id=task.id))),
        collect(streaming_client.subscribe(SubscribeToTaskRequest(id=task.id))),
    )
    for events in (a, b):
        first, final = assert_task_stream(events, TERMINAL)
        assert first.id == task.id
        assert final == TaskState.TASK_STATE_COMPLETED
    # Every update after the later of the two snapshots reaches both, in the
    # same order (§1.3). An update between the two attachments reaches only the
    # earlier subscriber; the later one has it in its snapshot instead.
    earlier, later = (a, b) if len(a) >= len(b) else (b, a)
    missed = earlier[1 : len(earlier) - len(later) + 1]
    shared = earlier[len(missed) + 1 :]
    assert describe(shared) == describe(later[1:])
    assert list(shared) == list(later[1:])
    snapshot = later[0].task
    statuses = [e.status_update.status for e in missed if kind(e) == 'status_update']
    if statuses:
        assert snapshot.status == statuses[-1], describe(missed)
    artifacts = {a.artifact_id for a in snapshot.artifacts}
    for e in missed:
        if kind(e) == 'artifact_update':
            assert e.artifact_update.artifact.artifact_id in artifacts, describe(missed)


async def test_cancel_is_delivered_to_a_subscriber_and_closes_its_stream(
    client: Client, streaming_client: Client,
):
    task = await working_task(client)
    stream = streaming_client.subscribe(SubscribeToTaskRequest(id=task.id))
    first = await asyncio.wait_for(stream.__anext__(), STREAM_TIMEOUT_S)
    assert kind(first) == 'task' and first.task.id == task.id

    canceled = await client.cancel_task(CancelTaskRequest(id=task.id))
    assert canceled.status.state == TaskState.TASK_STATE_CANCELED

    rest = await collect(stream)
    _, final = assert_task_stream([first, *rest], TERMINAL)
    assert final == TaskState.TASK_STATE_CANCELED


async def test_subscribe_to_completed_task_raises_unsupported_operation(
    client: Client, streaming_client: Client, wire, binding: str
):
    task = await complete_task(client)
    with pytest.raises(UnsupportedOperationError):
        await collect(streaming_client.subscribe(SubscribeToTaskRequest(id=task.id)))
    # An error before the first event is a plain error response, not SSE (§1.3).
    assert_wire_error(wire.last(), binding, 'UNSUPPORTED_OPERATION')


async def test_subscribe_to_unknown_task_raises_task_not_found(
    streaming_client: Client, wire, binding: str
):
    with pytest.raises(TaskNotFoundError):
        await collect(
            streaming_client.subscribe(
                SubscribeToTaskRequest(id=f'no-such-task-{uuid4().hex}')
            )
        )
    # An error before the first event is a plain error response, not SSE (§1.3).
    assert_wire_error(wire.last(), binding, 'TASK_NOT_FOUND')


# --------------------------------------------------------------------------
# Push notification config CRUD
# --------------------------------------------------------------------------

WEBHOOK_URL = 'https://example.com/a2a-interop-webhook'


async def _push_supported(base_url: str) -> bool:
    card, _ = await fetch_card(base_url)
    return bool(card.capabilities.push_notifications)


async def test_push_config_create_get_list_delete_on_a_task(
    client: Client, base_url: str, wire, binding: str
):
    assert await _push_supported(base_url), 'the card declares capabilities.pushNotifications'
    task = await complete_task(client)  # CRUD on a completed task must work
    cfg_id = f'cfg-{uuid4().hex[:8]}'

    created = await client.create_task_push_notification_config(
        TaskPushNotificationConfig(
            task_id=task.id,
            id=cfg_id,
            url=WEBHOOK_URL,
            token='interop-token',
            authentication=AuthenticationInfo(scheme='Bearer', credentials='s3cret'),
        )
    )
    strict_parse(wire_payload(wire.last(), binding), TaskPushNotificationConfig)
    assert created.id == cfg_id, 'a client-supplied config id must be kept'
    assert created.task_id == task.id
    assert created.url == WEBHOOK_URL
    assert created.token == 'interop-token'
    assert created.authentication.scheme.lower() == 'bearer'

    got = await client.get_task_push_notification_config(
        GetTaskPushNotificationConfigRequest(task_id=task.id, id=cfg_id)
    )
    assert got.id == cfg_id
    assert got.task_id == task.id
    assert got.url == WEBHOOK_URL

    listed = await client.list_task_push_notification_configs(
        ListTaskPushNotificationConfigsRequest(task_id=task.id)
    )
    assert [c.id for c in listed.configs] == [cfg_id]
    assert listed.next_page_token == ''

    await client.delete_task_push_notification_config(
        DeleteTaskPushNotificationConfigRequest(task_id=task.id, id=cfg_id)
    )
    listed = await client.list_task_push_notification_configs(
        ListTaskPushNotificationConfigsRequest(task_id=task.id)
    )
    assert list(listed.configs) == []
    with pytest.raises(A2AError):
        await client.get_task_push_notification_config(
            GetTaskPushNotificationConfigRequest(task_id=task.id, id=cfg_id)
        )
    # Delete is idempotent (TCK PUSH-DEL-002).
    await client.delete_task_push_notification_config(
        DeleteTaskPushNotificationConfigRequest(task_id=task.id, id=cfg_id)
    )


async def test_push_config_without_id_gets_a_server_generated_id(
    client: Client, base_url: str
):
    assert await _push_supported(base_url), 'the card declares capabilities.pushNotifications'
    task = await complete_task(client)
    created = await client.create_task_push_notification_config(
        TaskPushNotificationConfig(task_id=task.id, url=WEBHOOK_URL)
    )
    assert created.id
    assert created.task_id == task.id
    listed = await client.list_task_push_notification_configs(
        ListTaskPushNotificationConfigsRequest(task_id=task.id)
    )
    assert created.id in [c.id for c in listed.configs]


async def test_push_config_on_unknown_task_raises_task_not_found(
    client: Client, base_url: str
):
    assert await _push_supported(base_url), 'the card declares capabilities.pushNotifications'
    with pytest.raises(TaskNotFoundError):
        await client.create_task_push_notification_config(
            TaskPushNotificationConfig(
                task_id=f'no-such-task-{uuid4().hex}', url=WEBHOOK_URL
            )
        )

