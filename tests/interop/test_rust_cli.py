"""Interop: the official Rust A2A client, `a2acli` (crates.io a2a-cli 0.4.5), against harness-local.

The CLI runs as a subprocess over one binding at a time: it takes the binding from the
card's supportedInterfaces, in the card's order unless `--transport jsonrpc|rest` names a
preference, which each test passes. It also passes `-o json` (the protocol's ProtoJSON on
stdout, one event a line with --stream) and `--debug` (every wire request and response on
stderr). Each step is one test per binding; every invocation's command line, exit code,
stdout and stderr are printed, so a failure shows the step's exchanges, and every wire
request is checked to be of the binding asked for.

What the CLI cannot do, and how the flow copes:
- No flag sets `Message.messageId`: each send carries a fresh UUIDv7, so the conformance
  agent (behaviour chosen by the messageId prefix, spec digest §7.1) completes every task
  the CLI starts at once. A task that waits for input or works slowly is started by the
  a2a-sdk client instead (`seed`), and the CLI acts on it: the reply that resumes it,
  `task get --wait`, `task subscribe`, `task cancel` and push configs. The direct Message
  reply, rejection and artifact behaviours are out of the CLI's reach.
- No `--metadata` (the help of --svc-param names one), no `statusTimestampAfter` filter
  on `task list`, no push config inside `send`.
- A protocol error exits 1 with one envelope on stderr,
  `{"error":{"code":"TASK_NOT_FOUND","message":…,"a2aCode":-32001}}`; a usage error exits 2
  (a negative value must be written `--history-length=-1`).

The binary is `cargo install`ed into $HOME/.cache/harness/a2a-cli (build files in
$HOME/.cache/harness/a2a-cli-build) when missing; tests/run does that in its own step,
since the cold compile takes minutes. Cargo is then required: its absence fails.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shlex
import shutil
import subprocess
import threading

from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from uuid import uuid4

import httpx
import pytest

from google.protobuf import json_format

from a2a.client import ClientConfig, create_client
from a2a.types import Message, Part, Role, SendMessageConfiguration, SendMessageRequest

from conftest import HTTP_BINDINGS, run_harness


VERSION = '0.4.5'
ROOT = Path.home() / '.cache' / 'harness' / 'a2a-cli'
BINARY = ROOT / 'bin' / 'a2acli'
BUILD_DIR = Path.home() / '.cache' / 'harness' / 'a2a-cli-build'
TRANSPORT = {'JSONRPC': 'jsonrpc', 'HTTP+JSON': 'rest'}
RUN_TIMEOUT_S = 60
SLOW = 'test-resubscribe-message-id'  # WORKING for ~4 s, then COMPLETED
WAITS = 'tck-input-required'  # INPUT_REQUIRED; a reply completes it
IN_PROGRESS = {'TASK_STATE_SUBMITTED', 'TASK_STATE_WORKING'}
WIRE_REQUEST = re.compile(r'A2A wire request method=(\S+) url=(\S+) .*?body=(.*)$', re.M)


# ------------------------------------------------------------------ the CLI

def _installed_version() -> str:
    try:
        done = subprocess.run([BINARY, '--version'], capture_output=True, text=True, timeout=10)
    except OSError:
        return ''
    return done.stdout.strip()


@pytest.fixture(scope='session')
def a2acli() -> Path:
    """The pinned a2acli, installed into the cache unless it is there already."""
    if _installed_version() == f'a2acli {VERSION}':
        return BINARY
    cargo = shutil.which('cargo')
    if not cargo:
        pytest.fail(f'cargo not found on PATH: it installs a2acli {VERSION} into {ROOT}',
                    pytrace=False)
    done = subprocess.run(
        [cargo, 'install', 'a2a-cli', '--version', VERSION, '--locked', '--root', str(ROOT)],
        env={**os.environ, 'CARGO_TARGET_DIR': str(BUILD_DIR)},
        capture_output=True, text=True, timeout=3600,
    )
    if done.returncode != 0 or _installed_version() != f'a2acli {VERSION}':
        pytest.fail(f'cargo install a2a-cli {VERSION} failed ({done.returncode}):\n'
                    f'{done.stderr[-3000:]}', pytrace=False)
    return BINARY


@dataclass
class Run:
    argv: list[str]
    code: int
    stdout: str
    stderr: str

    def json(self) -> dict:
        return json.loads(self.stdout)

    def events(self) -> list[dict]:
        """The JSON Lines of a streaming command."""
        return [json.loads(line) for line in self.stdout.splitlines() if line.strip()]

    @property
    def error(self) -> dict:
        """The error envelope's `error` object, from stderr."""
        for line in reversed(self.stderr.splitlines()):
            if line.startswith('{"error"'):
                return json.loads(line)['error']
        raise AssertionError('no error envelope on stderr')

    def requests(self) -> list[tuple[str, str, str]]:
        """(method, url, body) of each wire request, from the --debug log."""
        return WIRE_REQUEST.findall(self.stderr)

    def sent_message(self) -> dict:
        """The Message of the first (send) request."""
        body = json.loads(self.requests()[0][2])
        return body.get('params', body)['message']


class Cli:
    """Runs a2acli against one harness over one binding; prints every exchange."""

    def __init__(self, binary: Path, base_url: str, binding: str, home: Path):
        self.base_url = base_url
        self.binding = binding
        self.common = [str(binary), '--agent-card', base_url, '--transport', TRANSPORT[binding],
                       '--debug', '--poll-interval', '200ms', '--timeout', '20s']
        # No A2ACLI_* setting or .env file of the machine's applies.
        self.env = {k: v for k, v in os.environ.items() if not k.startswith('A2ACLI_')}
        self.env.update(XDG_CONFIG_HOME=str(home), NO_PROXY='127.0.0.1,localhost')
        self.home = home

    def argv(self, args: tuple[str, ...], text: bool) -> list[str]:
        return [*self.common, *([] if text else ['-o', 'json', '--compact']), *args]

    def __call__(self, *args: str, code: int = 0, text: bool = False) -> Run:
        argv = self.argv(args, text)
        done = subprocess.run(argv, capture_output=True, text=True, timeout=RUN_TIMEOUT_S,
                              env=self.env, cwd=self.home, stdin=subprocess.DEVNULL)
        return self.check(Run(argv, done.returncode, done.stdout, done.stderr), code)

    def start(self, *args: str) -> Background:
        return Background(self, self.argv(args, text=False))

    def check(self, run: Run, code: int) -> Run:
        print(f'$ a2acli {shlex.join(run.argv[1:])}\n-> exit {run.code}\n'
              f'--- stdout\n{run.stdout}--- stderr\n{run.stderr}')
        assert run.code == code, (f'exit {run.code}, expected {code}: '
                                  f'{run.stderr.splitlines()[-1:] or "<no stderr>"}')
        for method, url, body in run.requests():
            jsonrpc = body.startswith('{"jsonrpc"')
            if self.binding == 'JSONRPC':
                assert (method, url, jsonrpc) == ('POST', self.base_url, True), (method, url)
            else:
                assert url != self.base_url and not jsonrpc, (method, url)
        return run


class Background:
    """A streaming a2acli run read while other commands go on."""

    def __init__(self, cli: Cli, argv: list[str]):
        self.cli, self.argv, self.head = cli, argv, ''
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, env=cli.env, cwd=cli.home,
                                     stdin=subprocess.DEVNULL)
        self.timer = threading.Timer(RUN_TIMEOUT_S, self.proc.kill)
        self.timer.start()

    def first_event(self) -> dict:
        self.head = self.proc.stdout.readline()
        if not self.head:
            self.finish()
            pytest.fail('the stream closed without an event')
        return json.loads(self.head)

    def finish(self, code: int = 0) -> Run:
        out, err = self.proc.communicate()
        self.timer.cancel()
        return self.cli.check(Run(self.argv, self.proc.returncode, self.head + out, err), code)


# ------------------------------------------------------------------ fixtures and helpers

@pytest.fixture(scope='module')
def harness() -> Iterator[str]:
    # The webhook receiver of the push step listens on loopback.
    with run_harness(['--push-allow-private-urls', 'true'],
                     HARNESS_DEFAULT_PARTICIPANT='anonymous') as server:
        yield server.base_url


@pytest.fixture(params=HTTP_BINDINGS)
def binding(request: pytest.FixtureRequest) -> str:
    # a2acli 0.4.5 has no gRPC transport (`--transport jsonrpc|rest`): the HTTP bindings only.
    return request.param


@pytest.fixture
def cli(a2acli: Path, harness: str, binding: str, tmp_path: Path) -> Cli:
    return Cli(a2acli, harness, binding, tmp_path)


def seed(base_url: str, prefix: str, *, return_immediately: bool = False) -> dict:
    """A task started by the a2a-sdk client with a messageId a2acli cannot send."""
    async def send() -> dict:
        async with httpx.AsyncClient(timeout=30) as http:
            client = await create_client(
                base_url, client_config=ClientConfig(streaming=False, httpx_client=http))
            try:
                message = Message(message_id=f'{prefix}-{uuid4().hex[:8]}', role=Role.ROLE_USER,
                                  parts=[Part(text='started by the a2a-sdk client')])
                config = SendMessageConfiguration(return_immediately=return_immediately)
                request = SendMessageRequest(message=message, configuration=config)
                async for event in client.send_message(request):
                    return json_format.MessageToDict(event.task)
            finally:
                await client.close()
        raise AssertionError('no answer to the seeding send')

    task = asyncio.run(send())
    print(f'seeded {prefix}: task {task["id"]} {task["status"]["state"]}')
    return task


def text(message: dict) -> str:
    return ''.join(p.get('text', '') for p in message.get('parts', []))


def state(event: dict) -> str | None:
    body = event.get('task') or event.get('statusUpdate')
    return body['status']['state'] if body else None


def describe(events: list[dict]) -> list[str]:
    return [f'{k}({state(e) or ""})' for e in events for k in e]


def task_stream(events: list[dict]) -> tuple[dict, str]:
    """The Task that opens a task stream, and the last state the stream reports."""
    shape = describe(events)
    assert events and 'task' in events[0], f'a task stream starts with its Task: {shape}'
    task = events[0]['task']
    for event in events[1:]:
        assert next(iter(event.values())).get('taskId') == task['id'], f'another task: {shape}'
    return task, [s for s in map(state, events) if s][-1]


def user_ids(task: dict) -> list[str]:
    return [m['messageId'] for m in task.get('history', []) if m['role'] == 'ROLE_USER']


class Webhook:
    """A loopback receiver of push notifications."""

    def __init__(self):
        self.got: list[tuple[dict, dict]] = []
        self.cond = threading.Condition()
        hook = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers.get('content-length', 0)))
                self.send_response(200)
                self.end_headers()
                with hook.cond:
                    hook.got.append(({k.lower(): v for k, v in self.headers.items()},
                                     json.loads(body or b'null')))
                    hook.cond.notify_all()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(('127.0.0.1', 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f'http://127.0.0.1:{self.server.server_port}/a2acli-webhook'

    def next(self, pred, timeout: float = 20) -> tuple[dict, dict]:
        def hit() -> tuple[dict, dict] | None:
            return next(((h, b) for h, b in self.got if pred(b)), None)

        with self.cond:
            assert self.cond.wait_for(hit, timeout), f'no such delivery in {timeout}s: {self.got}'
            return hit()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


# ------------------------------------------------------------------ steps

def test_installed_cli_is_the_pinned_version(a2acli: Path):
    assert _installed_version() == f'a2acli {VERSION}'


def test_card(cli: Cli, binding: str):
    card = cli('card', 'get', '--validate').json()  # checked against the A2A JSON schema
    assert card['capabilities'].get('streaming') is True
    assert card['capabilities'].get('pushNotifications') is True
    assert binding in [i['protocolBinding'] for i in card['supportedInterfaces']]
    # Not declared: the CLI refuses before any call.
    refused = cli('card', 'get', '--extended', code=1)
    assert refused.error['code'] == 'UNSUPPORTED_OPERATION' and not refused.requests()


def test_send_blocking(cli: Cli):
    run = cli('send', 'hello from a2acli')
    task = run.json()['task']
    assert task['status']['state'] == 'TASK_STATE_COMPLETED'
    assert text(task['status']['message']) == 'Hello from TCK'
    assert user_ids(task) == [run.sent_message()['messageId']]
    assert len(run.requests()) == 1, 'a blocking send that completes needs no polling'


def test_send_streaming(cli: Cli):
    run = cli('send', '--stream', 'streamed by a2acli')
    assert 'A2A wire stream event' in run.stderr, 'not sent as a stream'
    events = run.events()
    task, last = task_stream(events)
    assert last == 'TASK_STATE_COMPLETED', describe(events)
    got = cli('task', 'get', task['id']).json()
    assert got['status']['state'] == 'TASK_STATE_COMPLETED'
    assert text(got['status']['message']) == 'Hello from TCK'


def test_get_task(cli: Cli, harness: str):
    waiting = seed(harness, WAITS)
    cli('send', '--task-id', waiting['id'], 'the answer')
    got = cli('task', 'get', waiting['id']).json()
    assert (got['id'], got['contextId']) == (waiting['id'], waiting['contextId'])
    assert got['status']['state'] == 'TASK_STATE_COMPLETED'
    assert len(got['history']) >= 3, 'question and answer missing from the history'
    one = cli('task', 'get', waiting['id'], '--history-length', '1').json()
    assert one['history'] == got['history'][-1:]
    # --wait polls GetTask until the task settles.
    slow = seed(harness, SLOW, return_immediately=True)
    assert slow['status']['state'] in IN_PROGRESS
    waited = cli('task', 'get', '--wait', slow['id'])
    assert waited.json()['status']['state'] == 'TASK_STATE_COMPLETED'
    assert len(waited.requests()) > 1, 'the slow task was settled at the first GetTask'


def test_list_tasks(cli: Cli):
    context = f'ctx-a2acli-{uuid4().hex[:8]}'
    created = [cli('send', '--context-id', context, f'task {i}').json()['task']['id']
               for i in range(3)]
    seen, token = [], None
    for _ in range(3):
        page = cli('task', 'list', '--context-id', context, '--page-size', '2',
                   *(['--page-token', token] if token else [])).json()
        assert (page['pageSize'], page['totalSize']) == (2, 3)
        seen += [t['id'] for t in page['tasks']]
        token = page.get('nextPageToken')
        if not token:
            break
    assert not token, 'pagination does not end'
    assert seen == created[::-1], 'not newest first'

    def by_status(status: str) -> list[str]:
        page = cli('task', 'list', '--context-id', context, '--status', status).json()
        return [t['id'] for t in page.get('tasks', [])]

    assert by_status('completed') == seen
    assert by_status('input-required') == []


def test_input_required_then_reply(cli: Cli, harness: str):
    waiting = seed(harness, WAITS)
    shown = cli('task', 'get', waiting['id'], text=True)
    assert 'State: INPUT_REQUIRED' in shown.stdout
    assert f'a2acli send --task-id {waiting["id"]}' in shown.stdout, 'no resume hint'
    assert 'paused at INPUT_REQUIRED' in shown.stderr
    reply = cli('send', '--task-id', waiting['id'], 'the answer')
    done = reply.json()['task']
    assert (done['id'], done['contextId']) == (waiting['id'], waiting['contextId'])
    assert done['status']['state'] == 'TASK_STATE_COMPLETED'
    assert user_ids(done) == [*user_ids(waiting), reply.sent_message()['messageId']]


def test_streamed_reply_to_input_required(cli: Cli, harness: str):
    waiting = seed(harness, WAITS)
    run = cli('send', '--stream', '--task-id', waiting['id'], 'the streamed answer')
    assert 'A2A wire stream event' in run.stderr, 'not sent as a stream'
    events = run.events()
    task, last = task_stream(events)
    assert task['id'] == waiting['id'], 'the stream is about another task'
    assert last == 'TASK_STATE_COMPLETED', describe(events)


def test_cancel(cli: Cli, harness: str):
    slow = seed(harness, SLOW, return_immediately=True)
    subscriber = cli.start('task', 'subscribe', slow['id'])
    head = subscriber.first_event()
    assert state(head) in IN_PROGRESS, f'subscribe began with {describe([head])}'
    canceled = cli('task', 'cancel', slow['id']).json()
    assert canceled['status']['state'] == 'TASK_STATE_CANCELED'
    events = subscriber.finish().events()
    assert task_stream(events)[1] == 'TASK_STATE_CANCELED', describe(events)
    again = cli('task', 'cancel', slow['id'], code=1).error
    assert (again['code'], again['a2aCode']) == ('TASK_NOT_CANCELABLE', -32002)


def test_subscribe_running(cli: Cli, harness: str):
    slow = seed(harness, SLOW, return_immediately=True)
    events = cli('task', 'subscribe', slow['id']).events()
    task, last = task_stream(events)
    assert task['id'] == slow['id'] and task['status']['state'] in IN_PROGRESS
    assert last == 'TASK_STATE_COMPLETED', describe(events)


def test_subscribe_waiting(cli: Cli, harness: str):
    waiting = seed(harness, WAITS)
    run = cli('task', 'subscribe', waiting['id'])
    events = run.events()
    task, last = task_stream(events)
    assert task['id'] == waiting['id']
    assert last == 'TASK_STATE_INPUT_REQUIRED', describe(events)
    assert 'paused at INPUT_REQUIRED' in run.stderr


def test_push_config_crud(cli: Cli, harness: str):
    hook = Webhook()
    try:
        waiting = seed(harness, WAITS)
        task_id, cfg_id = waiting['id'], f'cfg-{uuid4().hex[:8]}'
        created = cli('task', 'push-config', 'create', task_id, hook.url, '--config-id', cfg_id,
                      '--token', 'cli-token', '--auth-scheme', 'Bearer',
                      '--auth-credentials', 's3cret').json()
        assert (created['id'], created['taskId'], created['url']) == (cfg_id, task_id, hook.url)
        assert created.get('token') == 'cli-token'
        got = cli('task', 'push-config', 'get', task_id, cfg_id).json()
        assert (got['id'], got['url']) == (cfg_id, hook.url)
        other = cli('task', 'push-config', 'create', task_id, f'{hook.url}/other').json()
        assert other.get('id'), 'no server-generated id'
        listed = cli('task', 'push-config', 'list', task_id).json()
        assert sorted(c['id'] for c in listed['configs']) == sorted([cfg_id, other['id']])
        cli('task', 'push-config', 'delete', task_id, other['id'])

        # The config is live: the reply's COMPLETED update reaches the webhook.
        cli('send', '--task-id', task_id, 'the answer')
        headers, body = hook.next(
            lambda b: b.get('statusUpdate', {}).get('status', {}).get('state')
            == 'TASK_STATE_COMPLETED')
        assert headers.get('authorization') == 'Bearer s3cret'
        assert body['statusUpdate']['taskId'] == task_id

        deleted = cli('task', 'push-config', 'delete', task_id, cfg_id).json()
        assert deleted == {'deleted': True, 'taskId': task_id, 'id': cfg_id}
        after = cli('task', 'push-config', 'list', task_id).json()
        assert after.get('configs', []) == []
        gone = cli('task', 'push-config', 'get', task_id, cfg_id, code=1).error
        assert gone['code'] == 'TASK_NOT_FOUND'
        cli('task', 'push-config', 'delete', task_id, cfg_id)  # idempotent
    finally:
        hook.close()


def test_typed_errors(cli: Cli):
    def error(*args: str) -> tuple[str, int]:
        e = cli(*args, code=1).error
        return e['code'], e.get('a2aCode')

    unknown = f'no-such-task-{uuid4().hex[:8]}'
    not_found = ('TASK_NOT_FOUND', -32001)
    assert error('task', 'get', unknown) == not_found
    assert error('task', 'cancel', unknown) == not_found
    assert error('send', '--task-id', unknown, 'hello?') == not_found
    assert error('task', 'subscribe', unknown) == not_found
    assert error('task', 'push-config', 'create', unknown, 'http://127.0.0.1:9/hook') == not_found
    assert error('task', 'push-config', 'list', unknown) == not_found

    done = cli('send', 'finish at once').json()['task']['id']
    unsupported = ('UNSUPPORTED_OPERATION', -32004)
    assert error('task', 'subscribe', done) == unsupported
    assert error('send', '--task-id', done, 'more?') == unsupported
    assert error('task', 'cancel', done) == ('TASK_NOT_CANCELABLE', -32002)
    invalid = ('INVALID_PARAMS', -32602)
    assert error('task', 'get', done, '--history-length=-1') == invalid
    assert error('task', 'list', '--page-size=0') == invalid
    usage = cli('task', 'get', done, '--history-length', '-1', code=2).error
    assert usage['code'] == 'A2ACLI_ERR_USAGE'
