"""The resume function under `cargo lambda watch`, fed from DynamoDB Local's stream by
stream_tool.py as the event source mapping feeds it in AWS.

In Lambda (HARNESS config `detached_runs` false), a `returnImmediately` SendMessage stores
its task runnable (`wake`) and answers without running the agent: the write is the task's
wake-up, and the resume function, fed the table's stream through template.yaml's filter,
is what drives it. Here `cargo lambda watch` serves the functions on a fresh DynamoDB
Local table (as test_cargo_lambda_watch.py's DynamoDB variant, whose helpers this reuses),
and stream_tool.py, run as a developer runs it, reads the stream, filters it and invokes
the resume function through the emulator's Invoke API.

Needs HARNESS_TEST_DYNAMODB_ENDPOINT (tests/run starts DynamoDB Local); without it the
tests that need a server are skipped, unless HARNESS_TEST_REQUIRE_DYNAMODB is set.
The filter and delivery tests need no server.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

import stream_tool
from test_cargo_lambda_watch import (
    COMPLETED,
    HEADERS,
    REQUEST_TIMEOUT_S,
    ROOT,
    Watch,
    _free_loopback_port,
    _from_function,
    _invoke,
    _message,
    _path_with_venv,
    _scheduled_event,
    _stop,
    _store_env,
    wait_listening,
    watch_env,
)


TOOL = Path(stream_tool.__file__).resolve()
FIXTURES = ROOT / 'common' / 'tests' / 'fixtures'
INPUT_REQUIRED = 'TASK_STATE_INPUT_REQUIRED'
# Longest a followed stream may take to complete a task (a cold build of the resume
# function included).
FOLLOW_TIMEOUT_S = REQUEST_TIMEOUT_S
# The functions' lease (HARNESS_LEASE_SECONDS): short, so a wake-up's grace before the
# sweeper rings it again (the lease's length, at most a minute) is short too.
LEASE_S = 2


# --------------------------------------------------------------------------- the filter


def _records(name: str) -> list[dict[str, Any]]:
    return json.loads((FIXTURES / name).read_text())['Records']


def test_template_filter_is_the_tools_default() -> None:
    """The tool reads the mapping's filter from template.yaml; its built-in default (used
    while the template has none) is the same pattern."""
    mapping = stream_tool.mapping_from_template()
    if mapping is None:
        pytest.skip('template.yaml has no stream mapping for ResumeFunction yet')
    assert mapping.patterns == [stream_tool.DEFAULT_PATTERN], mapping.patterns
    assert 1 <= mapping.batch_size <= 10000


def test_filter_on_real_stream_records() -> None:
    """The filter on the records common/tests/resume_events.rs feeds the resume handler
    (captured from DynamoDB Local): it passes exactly the records `task_to_resume` picks,
    the runnable, unleased task items."""
    patterns = stream_tool.resume_mapping().patterns
    batch = _records('dynamodb-stream-resume-batch.json')
    assert [stream_tool.passes(patterns, r) for r in batch] == [True, False, False, True]
    capture = _records('dynamodb-stream-capture.json')
    passing = [i for i, r in enumerate(capture) if stream_tool.passes(patterns, r)]
    assert passing == [0, 8], passing


def test_notifier_filter_on_the_push_capture() -> None:
    """The notifier's mapping (read by `--function notifier`) passes exactly the records
    common/tests/push_notifier.rs shows `task_to_notify` picks: new push-marked events and
    the new config."""
    patterns = stream_tool.function_mapping(stream_tool.TEMPLATE, 'notifier').patterns
    capture = _records('dynamodb-stream-push-capture.json')
    passing = [i for i, r in enumerate(capture) if stream_tool.passes(patterns, r)]
    assert passing == [1, 3, 5], passing
    with pytest.raises(ValueError):
        stream_tool.function_mapping(stream_tool.TEMPLATE, 'no-such-function')


@pytest.mark.parametrize(
    'pattern,record,expected',
    [
        ({'a': {'S': [{'exists': False}]}}, {}, True),
        ({'a': {'S': [{'exists': False}]}}, {'a': {'S': 'x'}}, False),
        # Matching works on leaves: an object is no leaf value.
        ({'a': [{'exists': False}]}, {'a': {'S': 'x'}}, True),
        ({'a': [{'exists': True}]}, {'a': {'S': 'x'}}, False),
        ({'a': ['x', 'y']}, {'a': 'y'}, True),
        ({'a': ['x']}, {'a': ['z', 'x']}, True),
        ({'a': ['x']}, {}, False),
        ({'a': [{'prefix': 'EV#'}]}, {'a': 'EV#01'}, True),
        ({'a': [{'anything-but': ['TASK']}]}, {'a': 'EV#01'}, True),
        ({'a': [{'anything-but': ['TASK']}]}, {'a': 'TASK'}, False),
        ({'a': [{'numeric': ['>', 1, '<=', 5]}]}, {'a': 5}, True),
        ({'a': [{'numeric': ['>', 1]}]}, {'a': 1}, False),
    ],
)
def test_matcher(pattern: dict[str, Any], record: dict[str, Any], expected: bool) -> None:
    assert stream_tool.matches(pattern, record) is expected


# --------------------------------------------------------------------------- delivery


class _FakeFunction(BaseHTTPRequestHandler):
    """A resume function that fails the records it is told to, a number of times."""

    fail: dict[str, int] = {}
    batches: list[list[str]] = []

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        event = json.loads(self.rfile.read(int(self.headers['Content-Length'])))
        seqs = [r['dynamodb']['SequenceNumber'] for r in event['Records']]
        type(self).batches.append(seqs)
        failures = []
        for seq in seqs:
            if self.fail.get(seq, 0) > 0:
                self.fail[seq] -= 1
                failures.append({'itemIdentifier': seq})
        body = json.dumps({'batchItemFailures': failures}).encode()
        self.send_response(200)
        self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def fake_function() -> Iterator[tuple[str, type[_FakeFunction]]]:
    handler = type('Fake', (_FakeFunction,), {'fail': {}, 'batches': []})
    server = HTTPServer(('127.0.0.1', 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f'http://127.0.0.1:{server.server_port}/2015-03-31/functions/resume/invocations', handler
    finally:
        server.shutdown()
        server.server_close()


def _batch(n: int) -> list[dict[str, Any]]:
    template = _records('dynamodb-stream-resume-batch.json')[0]
    out = []
    for i in range(n):
        r = json.loads(json.dumps(template))
        r['dynamodb']['SequenceNumber'] = f'{i + 1:021d}'
        out.append(r)
    return out


def test_failed_records_are_retried_from_the_earliest(fake_function) -> None:
    """As the mapping with ReportBatchItemFailures: the batch is sent again from the
    earliest failed record on, until it succeeds."""
    url, fn = fake_function
    fn.fail.update({f'{2:021d}': 1, f'{3:021d}': 2})
    report = stream_tool.Report()
    stream_tool.deliver(_batch(4), url, 3, 10, report, lambda _: None)
    short = [[int(s) for s in b] for b in fn.batches]
    assert short == [[1, 2, 3, 4], [2, 3, 4], [3, 4]], short
    assert report.delivered == 4 and report.retried == 2 and not report.given_up


def test_records_failing_every_retry_are_given_up(fake_function) -> None:
    url, fn = fake_function
    fn.fail.update({f'{3:021d}': 100})
    report = stream_tool.Report()
    stream_tool.deliver(_batch(4), url, 2, 10, report, lambda _: None)
    assert len(fn.batches) == 3, fn.batches
    assert report.delivered == 2
    assert report.given_up == [f'{3:021d}', f'{4:021d}']


# --------------------------------------------------------------------------- the functions


@dataclass
class Deployment:
    watch: Watch
    port: int
    endpoint: str
    table: str
    env: dict[str, str]
    checkpoint: Path

    def run_tool(self, *extra: str) -> subprocess.CompletedProcess[str]:
        """stream_tool.py once (drain), as a developer runs it next to the watch."""
        proc = subprocess.run(
            [sys.executable, str(TOOL), *self.tool_args(), *extra],
            env=self.env, capture_output=True, text=True, timeout=REQUEST_TIMEOUT_S + 60,
        )
        assert proc.returncode == 0, (
            f'stream_tool.py exited with {proc.returncode}:\n{proc.stderr}\n{self.watch.log_tail()}'
        )
        return proc

    def tool_args(self) -> list[str]:
        return [
            '--endpoint', self.endpoint, '--table', self.table,
            '--invoke-port', str(self.port), '--checkpoint', str(self.checkpoint),
        ]


@pytest.fixture(scope='module')
def deployment() -> Iterator[Deployment]:
    """`cargo lambda watch` on a fresh DynamoDB Local table (template.yaml's definition,
    stream included), configured as template.yaml configures the functions."""
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
    work = Path(tempfile.mkdtemp(prefix='harness-resume-stream-'))
    log = work / 'cargo-lambda-watch.log'
    store_env = _store_env('dynamodb', str(work))
    # The test's webhook receiver is on loopback.
    env = watch_env(path, base, store_env, HARNESS_AGENT='conformance',
                    HARNESS_DEFAULT_PARTICIPANT='anonymous', HARNESS_PUSH_ALLOW_PRIVATE_URLS='true',
                    HARNESS_LEASE_SECONDS=str(LEASE_S))
    with open(log, 'wb') as out:
        proc = subprocess.Popen(
            ['cargo', 'lambda', 'watch', '--invoke-address', '127.0.0.1',
             '--invoke-port', str(port), '--ignore-changes', '--features', 'embedded-store'],
            cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    w = Watch(base=base, store='dynamodb', log=log)
    try:
        wait_listening(proc, port, w)
        yield Deployment(
            watch=w, port=port, endpoint=store_env['AWS_ENDPOINT_URL_DYNAMODB'],
            table=store_env['HARNESS_TABLE'], env=env, checkpoint=work / 'checkpoint.json',
        )
    finally:
        _stop(proc)
        shutil.rmtree(work, ignore_errors=True)


@pytest.fixture(scope='module')
def client(deployment: Deployment) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=deployment.watch.base, headers=HEADERS, timeout=REQUEST_TIMEOUT_S) as c:
        yield c


def _send(client: httpx.Client, deployment: Deployment, message: dict[str, Any],
          return_immediately: bool) -> dict[str, Any]:
    body: dict[str, Any] = {'message': message}
    if return_immediately:
        body['configuration'] = {'returnImmediately': True}
    resp = client.post('/message:send', json=body)
    _from_function(resp, deployment.watch)
    assert resp.status_code == 200, f'{resp.status_code} {resp.text}\n{deployment.watch.log_tail()}'
    return resp.json()['task']


def _get(client: httpx.Client, task_id: str) -> dict[str, Any]:
    resp = client.get(f'/tasks/{task_id}')
    assert resp.status_code == 200, resp.text
    return resp.json()


def _delivered(proc: subprocess.CompletedProcess[str]) -> int:
    """How many records the run invoked the function with (its last line says)."""
    return _summary(proc, 'record(s) delivered')


def _dropped(proc: subprocess.CompletedProcess[str]) -> int:
    return _summary(proc, 'dropped')


def _summary(proc: subprocess.CompletedProcess[str], label: str) -> int:
    """The count before `label` in the run's last line."""
    for line in reversed(proc.stderr.splitlines()):
        if 'record(s) delivered' in line:
            before = line.split('stream_tool: ', 1)[1].split(label, 1)[0].split()
            return int(before[-1])
    raise AssertionError(f'no summary in:\n{proc.stderr}')


def test_a_dropped_wake_up_is_rung_again_by_the_sweeper(
    client: httpx.Client, deployment: Deployment,
) -> None:
    """Issue 19, must-show 2: the task's wake-up record is lost for good (the tool drops
    it, as a mapping that gave up on it). Nothing drives the task, until the sweeper finds
    it in its index past the wake-up's grace and rings it again; the stream carries that
    write to the resume function, which completes the task."""
    task = _send(client, deployment, _message('tck-complete-task'), return_immediately=True)
    lost = deployment.run_tool('--drop-task', task['id'])
    assert _dropped(lost) >= 1, lost.stderr
    assert _get(client, task['id'])['status']['state'] != COMPLETED

    time.sleep(LEASE_S + 0.5)
    swept = _invoke(deployment.watch, 'sweeper', _scheduled_event())
    assert task['id'] in swept['woken'], f'{swept}\n{deployment.watch.log_tail()}'
    run = deployment.run_tool()
    assert _delivered(run) >= 1, run.stderr
    done = _get(client, task['id'])
    assert done['status']['state'] == COMPLETED, f'{done}\n{run.stderr}\n{deployment.watch.log_tail()}'


def test_return_immediately_task_completes_through_the_stream(
    client: httpx.Client, deployment: Deployment,
) -> None:
    """SendMessage with returnImmediately answers before the agent runs; nothing drives
    the task until the stream tool feeds its runnable record to the resume function."""
    task = _send(client, deployment, _message('tck-complete-task'), return_immediately=True)
    assert task['status']['state'] != COMPLETED, task
    # No drive is running: another function reading the table sees the same.
    assert _get(client, task['id'])['status']['state'] == task['status']['state']

    run = deployment.run_tool()
    assert _delivered(run) >= 1, run.stderr

    done = _get(client, task['id'])
    assert done['status']['state'] == COMPLETED, f'{done}\n{run.stderr}\n{deployment.watch.log_tail()}'
    assert done['status']['message']['parts'] == [{'text': 'Hello from TCK'}], done

    # Drained: a second run has nothing new to deliver, and the task stays completed.
    again = deployment.run_tool()
    assert _delivered(again) == 0, again.stderr
    assert _get(client, task['id'])['status']['state'] == COMPLETED


def test_input_required_reply_with_return_immediately_completes_through_the_stream(
    client: httpx.Client, deployment: Deployment,
) -> None:
    """A task waiting for input (the conformance agent's `tck-input-required`), replied
    to with returnImmediately: the reply makes it runnable, and the resume function,
    woken through the stream, runs the agent on it to completion."""
    first = _send(client, deployment, _message('tck-input-required'), return_immediately=False)
    assert first['status']['state'] == INPUT_REQUIRED, first
    # Whatever the first message's writes put on the stream, none of it resumes anything.
    deployment.run_tool()
    assert _get(client, first['id'])['status']['state'] == INPUT_REQUIRED

    reply = {**_message('tck-complete-task'), 'taskId': first['id'], 'contextId': first['contextId']}
    answered = _send(client, deployment, reply, return_immediately=True)
    assert answered['id'] == first['id']
    assert answered['status']['state'] != COMPLETED, answered

    run = deployment.run_tool()
    assert _delivered(run) >= 1, run.stderr
    done = _get(client, first['id'])
    assert done['status']['state'] == COMPLETED, f'{done}\n{run.stderr}\n{deployment.watch.log_tail()}'
    ids = [m['messageId'] for m in done.get('history', [])]
    assert reply['messageId'] in ids, ids


def test_follow_mode_completes_tasks_as_they_are_written(
    client: httpx.Client, deployment: Deployment,
) -> None:
    """`--follow` keeps polling the stream: a task written while it runs is completed
    without running the tool again."""
    proc = subprocess.Popen(
        [sys.executable, str(TOOL), *deployment.tool_args(), '--follow', '--interval', '0.5'],
        env=deployment.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        task = _send(client, deployment, _message('tck-complete-task'), return_immediately=True)
        deadline = time.monotonic() + FOLLOW_TIMEOUT_S
        state = task['status']['state']
        while state != COMPLETED and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.5)
            state = _get(client, task['id'])['status']['state']
        assert proc.poll() is None, f'the tool stopped: {proc.communicate()[1]}'
        assert state == COMPLETED, f'still {state}\n{deployment.watch.log_tail()}'
    finally:
        if proc.poll() is None:
            # Stop once the records in hand are handled (Ctrl-C would stop at once).
            proc.send_signal(signal.SIGTERM)
        try:
            _, err = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            _, err = proc.communicate()
    assert proc.returncode == 0, err
    # Stopped, it kept its place: the next run starts after this task's records.
    assert json.loads(deployment.checkpoint.read_text())['shards'], deployment.checkpoint.read_text()
    assert _delivered(deployment.run_tool()) == 0


def test_stream_records_have_the_lambda_event_shape(deployment: Deployment) -> None:
    """What the tool sends is what the event source mapping delivers (the fields the Rust
    fixtures have)."""
    proc = subprocess.run(
        [sys.executable, str(TOOL), '--endpoint', deployment.endpoint, '--table', deployment.table,
         '--dump'],
        env=deployment.env, capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    decoder = json.JSONDecoder()
    text, events = proc.stdout.strip(), []
    while text:
        event, end = decoder.raw_decode(text)
        events.append(event)
        text = text[end:].strip()
    records = [r for e in events for r in e['Records']]
    assert records, 'the tests above wrote runnable tasks'
    for r in records:
        assert list(r)[:7] == ['eventID', 'eventName', 'eventVersion', 'eventSource', 'awsRegion',
                               'dynamodb', 'eventSourceARN'], list(r)
        assert r['eventSource'] == 'aws:dynamodb' and r['eventName'] in {'INSERT', 'MODIFY'}
        assert f"table/{deployment.table}/stream/" in r['eventSourceARN']
        assert isinstance(r['dynamodb']['ApproximateCreationDateTime'], (int, float))
        assert r['dynamodb']['NewImage']['wake'] == {'N': '1'}
        assert r['dynamodb']['StreamViewType'] == 'NEW_AND_OLD_IMAGES'
    ids = {r['dynamodb']['Keys']['pk']['S'] for r in records}
    assert all(i.startswith('TASK#') for i in ids), ids


# --------------------------------------------------------------------------- webhooks


class _Webhook(BaseHTTPRequestHandler):
    """A webhook receiver: records each POST (headers lower-cased, JSON body)."""

    received: list[tuple[dict[str, str], Any]] = []

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        body = json.loads(self.rfile.read(int(self.headers['content-length'])))
        type(self).received.append(({k.lower(): v for k, v in self.headers.items()}, body))
        self.send_response(200)
        self.send_header('content-length', '0')
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def webhook() -> Iterator[tuple[str, list[tuple[dict[str, str], Any]]]]:
    _Webhook.received = []
    server = HTTPServer(('127.0.0.1', 0), _Webhook)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f'http://127.0.0.1:{server.server_port}/hook', _Webhook.received
    finally:
        server.shutdown()


def test_webhook_updates_are_delivered_by_the_notifier_through_the_stream(
    client: httpx.Client, deployment: Deployment, webhook: tuple[str, list[Any]],
) -> None:
    """In Lambda nothing posts a webhook after a commit: the notifier function, fed the
    table's stream through its own mapping, does. A returnImmediately task with a webhook
    is driven by the resume function, then the notifier delivers its updates in order,
    with the config's headers; a second drain of its mapping posts nothing again."""
    url, received = webhook
    body = {'message': _message('tck-complete-task'),
            'configuration': {'returnImmediately': True, 'taskPushNotificationConfig': {
                'url': url, 'token': 'lw-token',
                'authentication': {'scheme': 'Bearer', 'credentials': 'lw-cred'}}}}
    resp = client.post('/message:send', json=body)
    assert resp.status_code == 200, f'{resp.text}\n{deployment.watch.log_tail()}'
    task_id = resp.json()['task']['id']

    deployment.run_tool()  # the resume mapping: drives the task
    assert _get(client, task_id)['status']['state'] == COMPLETED
    assert received == [], 'no function posts a webhook on its own in Lambda'

    notifier = ['--function', 'notifier', '--checkpoint', str(deployment.checkpoint) + '.notifier']
    run = deployment.run_tool(*notifier)
    assert _delivered(run) >= 2, run.stderr  # at least the config and the COMPLETED event
    mine = [(h, b) for h, b in received if json.dumps(b).find(task_id) >= 0]
    assert mine, f'nothing delivered:\n{run.stderr}\n{deployment.watch.log_tail()}'
    states = [b['statusUpdate']['status']['state'] for _, b in mine if 'statusUpdate' in b]
    assert states[-1] == COMPLETED, states
    assert states == sorted(states, key=lambda s: s == COMPLETED), states
    for headers, body in mine:
        assert len(body) == 1 and next(iter(body)) in ('statusUpdate', 'artifactUpdate'), body
        assert headers['authorization'] == 'Bearer lw-cred', headers
        assert headers['x-a2a-notification-token'] == 'lw-token', headers
        assert headers['content-type'] == 'application/a2a+json', headers

    count = len(received)
    again = deployment.run_tool(*notifier)
    assert _delivered(again) == 0, again.stderr
    assert len(received) == count, 'a second drain posts nothing again'
