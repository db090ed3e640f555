"""The LLM agent's help request, answered with returnImmediately, under `cargo lambda watch`:
the resume function, fed DynamoDB Local's stream by stream_tool.py, finishes the task.

In Lambda (`detached_runs` false) a request function never drives the LLM agent (a model
call could outlive it): a blocking SendMessage leaves the task runnable (`wake`) and
answers once the resume function, woken through the table's stream, has driven it to
INPUT_REQUIRED (the agent, on a scripted model, asks alice a question). alice's reply sent
with `returnImmediately` is answered at once: its write leaves the task runnable without
running the agent, and only the resume function drives it on. Here stream_tool.py plays
the event source mapping.

Every request carries `X-Participant-Id: alice` and the functions have no
HARNESS_DEFAULT_PARTICIPANT: nothing stands for an anonymous caller.

Needs HARNESS_TEST_DYNAMODB_ENDPOINT (tests/run starts DynamoDB Local); skipped without it
unless HARNESS_TEST_REQUIRE_DYNAMODB is set. The helpers are test_cargo_lambda_watch.py's
and test_resume_stream.py's.
"""

from __future__ import annotations

import concurrent.futures
import json
import os
import shutil
import subprocess
import tempfile
import time
import uuid

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from test_cargo_lambda_watch import (
    COMPLETED,
    HEADERS,
    REQUEST_TIMEOUT_S,
    ROOT,
    Watch,
    _dynamodb,
    _free_loopback_port,
    _path_with_venv,
    _stop,
    _store_env,
    wait_listening,
    watch_env,
)
from test_resume_stream import INPUT_REQUIRED, Deployment, _delivered, _get, _send


PARTICIPANT = 'alice'
QUESTION = 'Which colour?'
ANSWER = 'Painted it blue.'
TURNS = [
    {'tool_calls': [{'name': 'ask_participant',
                     'arguments': {'participant_id': PARTICIPANT, 'question': QUESTION}}]},
    {'text': ANSWER},
]


class Llm(Deployment):
    """The deployment, and the scripted model's request log."""

    requests_file: Path

    def requests(self) -> list[dict[str, Any]]:
        """Every request the model was given so far, by any function process."""
        if not self.requests_file.is_file():
            return []
        return [json.loads(line) for line in self.requests_file.read_text().splitlines() if line.strip()]


@contextmanager
def llm_deployment(turns: list[dict[str, Any]], **settings: str) -> Iterator[Llm]:
    """`cargo lambda watch` on a fresh DynamoDB Local table, the LLM agent on a scripted
    model playing `turns`, no default participant, `settings` added to the environment."""
    endpoint = os.environ.get('HARNESS_TEST_DYNAMODB_ENDPOINT')
    if not endpoint:
        if os.environ.get('HARNESS_TEST_REQUIRE_DYNAMODB'):
            pytest.fail('HARNESS_TEST_DYNAMODB_ENDPOINT is not set but DynamoDB tests are required')
        pytest.skip('HARNESS_TEST_DYNAMODB_ENDPOINT is not set (tests/run starts DynamoDB Local)')
    path = _path_with_venv()
    if not shutil.which('cargo-lambda', path=path):
        pytest.fail('cargo-lambda is not installed: pip install -r tests/lambda_watch/requirements.txt')
    port = _free_loopback_port()
    base = f'http://127.0.0.1:{port}'
    work = Path(tempfile.mkdtemp(prefix='harness-llm-watch-')).resolve()
    log = work / 'cargo-lambda-watch.log'
    requests_file = work / 'requests.jsonl'
    script = work / 'script.json'
    script.write_text(json.dumps({'turns': turns, 'request_log': str(requests_file)}))
    store_env = _store_env('dynamodb', str(work))
    env = watch_env(path, base, store_env, HARNESS_AGENT='llm', HARNESS_MODEL=f'scripted:{script}',
                    **settings)
    with open(log, 'wb') as out:
        proc = subprocess.Popen(
            ['cargo', 'lambda', 'watch', '--invoke-address', '127.0.0.1',
             '--invoke-port', str(port), '--ignore-changes', '--features', 'embedded-store'],
            cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    w = Watch(base=base, store='dynamodb', log=log,
              endpoint=store_env['AWS_ENDPOINT_URL_DYNAMODB'], table=store_env['HARNESS_TABLE'])
    try:
        wait_listening(proc, port, w)
        d = Llm(
            watch=w, port=port, endpoint=store_env['AWS_ENDPOINT_URL_DYNAMODB'],
            table=store_env['HARNESS_TABLE'], env=env, checkpoint=work / 'checkpoint.json',
        )
        d.requests_file = requests_file
        yield d
    finally:
        _stop(proc)
        shutil.rmtree(work, ignore_errors=True)


@pytest.fixture(scope='module')
def deployment() -> Iterator[Llm]:
    with llm_deployment(TURNS) as d:
        yield d


@pytest.fixture(scope='module')
def client(deployment: Llm) -> Iterator[httpx.Client]:
    headers = {**HEADERS, 'X-Participant-Id': PARTICIPANT}
    with httpx.Client(base_url=deployment.watch.base, headers=headers, timeout=REQUEST_TIMEOUT_S) as c:
        yield c


def _send_or_log(client: httpx.Client, deployment: Llm, message: dict[str, Any],
                 return_immediately: bool) -> dict[str, Any]:
    """test_resume_stream.py's `_send`, with the watch's log when no answer comes."""
    try:
        return _send(client, deployment, message, return_immediately)
    except httpx.HTTPError as e:
        pytest.fail(f'SendMessage got no answer: {e!r}\n{deployment.watch.log_tail(200)}')


def send_while_streaming(client: httpx.Client, deployment: Llm,
                         message: dict[str, Any]) -> tuple[dict[str, Any], int]:
    """A blocking SendMessage, while the stream tool plays the event source mapping (the
    resume function drives the task); its answer, and how many records were delivered."""
    delivered = 0
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        pending = pool.submit(_send_or_log, client, deployment, message, False)
        deadline = time.monotonic() + REQUEST_TIMEOUT_S
        while not pending.done() and time.monotonic() < deadline:
            delivered += _delivered(deployment.run_tool())
            time.sleep(0.3)
        return pending.result(timeout=REQUEST_TIMEOUT_S), delivered


def _text(task: dict[str, Any]) -> str | None:
    """The text of the first part of the task's status message."""
    parts = (task['status'].get('message') or {}).get('parts') or [{}]
    return parts[0].get('text')


def _stored(deployment: Llm, task_id: str) -> str:
    """What a failure shows: the task's item in the table (its drive bookkeeping), the
    model's turns so far and the watch's log."""
    item = _dynamodb(deployment.endpoint, 'GetItem', {
        'TableName': deployment.table, 'Key': {'pk': {'S': f'TASK#{task_id}'}, 'sk': {'S': 'TASK'}}})
    item = item.get('Item', {})
    record = json.loads(item.get('record', {}).get('S', '{}'))
    agent = record.get('agent') or {}
    brief = {
        'version': record.get('version'), 'wake': record.get('wake'), 'lease': record.get('lease'),
        'gsi2pk': item.get('gsi2pk'), 'model_calls': agent.get('model_calls'),
        'pending_help': agent.get('pending_help'),
    }
    turns = [r['turn'] for r in deployment.requests()]
    hint = ''
    if not turns and record.get('wake') and not record.get('lease'):
        hint = ('\nThe drive handed the task over before its first model call (left runnable, '
                'unleased): it found itself past its invocation deadline (cargo lambda watch '
                'sends Lambda-Runtime-Deadline-Ms 600000, an epoch time in 1970).')
    return f'stored: {json.dumps(brief)}\nmodel turns: {turns}{hint}\n{deployment.watch.log_tail()}'


def _user_texts(request: dict[str, Any]) -> list[str]:
    return [m['text'] for m in request['messages'] if m.get('role') == 'user']


def test_help_reply_with_return_immediately_completes_through_the_stream(
    client: httpx.Client, deployment: Llm,
) -> None:
    # (1) The blocking SendMessage hands the drive to the resume function and answers once
    # the task settles: the model asks alice, the task waits. Meanwhile the stream tool
    # plays the event source mapping; the request function itself never calls the model.
    first = {'messageId': f'm-{uuid.uuid4()}', 'role': 'ROLE_USER', 'parts': [{'text': 'Paint the shed'}]}
    task, delivered = send_while_streaming(client, deployment, first)
    assert task['status']['state'] == INPUT_REQUIRED, f'{task}\n{_stored(deployment, task["id"])}'
    assert _text(task) == QUESTION, task
    assert delivered >= 1, 'the resume function drove it'
    assert [r['turn'] for r in deployment.requests()] == [0], deployment.requests()
    # What the first message's writes put on the stream resumes nothing.
    deployment.run_tool()
    assert _get(client, task['id'])['status']['state'] == INPUT_REQUIRED

    # (2) alice's reply, returnImmediately: answered at once, the agent not run.
    reply = {'messageId': f'm-{uuid.uuid4()}', 'role': 'ROLE_USER', 'parts': [{'text': 'blue'}],
             'taskId': task['id'], 'contextId': task['contextId']}
    answered = _send_or_log(client, deployment, reply, return_immediately=True)
    assert answered['id'] == task['id'], answered
    assert answered['status']['state'] != COMPLETED, answered
    # No drive is running: get-task sees the same, and the model was not called again.
    assert _get(client, task['id'])['status']['state'] != COMPLETED
    assert [r['turn'] for r in deployment.requests()] == [0], deployment.requests()

    # (3) The stream tool feeds the runnable task to the resume function, which drives it.
    run = deployment.run_tool()
    assert _delivered(run) >= 1, f'{run.stderr}\n{deployment.watch.log_tail()}'
    done = _get(client, task['id'])
    assert done['status']['state'] == COMPLETED, f'{done}\n{run.stderr}\n{deployment.watch.log_tail()}'
    assert _text(done) == ANSWER, done
    requests = deployment.requests()
    assert [r['turn'] for r in requests] == [0, 1], requests
    framed = f'Reply from {PARTICIPANT} to "{QUESTION}": blue'
    assert framed in _user_texts(requests[1]), requests[1]

    # Drained: nothing more to deliver, the task stays completed, the model is not called.
    again = deployment.run_tool()
    assert _delivered(again) == 0, again.stderr
    assert _get(client, task['id'])['status']['state'] == COMPLETED
    assert len(deployment.requests()) == 2
