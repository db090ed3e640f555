"""The Lambda functions under `cargo lambda watch`, cargo-lambda's Lambda runtime emulator.

A session fixture starts `cargo lambda watch` in the workspace on a free loopback port and
stops it (its process group, then any function process left over) at the end. Requests go
to the A2A paths without any `/lambda-url/<function>` prefix: the router table in the root
Cargo.toml (`[workspace.metadata.lambda.watch.router]`) picks the function. The emulator
starts each function lazily with `cargo run --bin <function>` on its first request, so the
first request to a function may compile it; with a warm target dir that takes seconds.

The event-driven functions (resume, fed by the table's stream; sweeper, on a schedule) are
not in the router table: they are called through the emulator's Lambda Invoke API
(`/2015-03-31/functions/<function>/invocations`) with the events AWS would send
(test_resume_stream.py feeds resume from DynamoDB Local's real stream).

The store is chosen by environment variables, as in AWS:
* always: `HARNESS_STORE=embedded` with a fresh `HARNESS_STATE_DIR` (every function process
  opens the same state directory);
* also, when `HARNESS_TEST_DYNAMODB_ENDPOINT` names a DynamoDB Local (tests/run starts one):
  `HARNESS_STORE=dynamodb`, `AWS_ENDPOINT_URL_DYNAMODB` and a fresh `HARNESS_TABLE`, created
  from template.yaml's definition (the JSON file `HARNESS_TEST_TABLE_DEFINITION` names).

Environment: CARGO_TARGET_DIR (default $HOME/.cache/harness/target);
HARNESS_LAMBDA_WATCH_TIMEOUT_S, the longest wait for one request (default 900 s: a cold
build of a function).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import tomllib
import urllib.request
import uuid

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest


ROOT = Path(__file__).resolve().parents[2]
REQUEST_TIMEOUT_S = float(os.environ.get('HARNESS_LAMBDA_WATCH_TIMEOUT_S', '900'))
START_TIMEOUT_S = 60.0
HEADERS = {'A2A-Version': '1.0', 'Content-Type': 'application/json'}
COMPLETED = 'TASK_STATE_COMPLETED'
# What the emulator itself answers when no function matched; a function never does.
EMULATOR_TITLES = {'Default function disabled', 'Missing function'}
# Function crates that are not Lambda functions.
NOT_FUNCTIONS = {'local'}
# Lambda functions invoked by AWS (the table's stream, a schedule), never over HTTP: not
# in the router table; called through the Invoke API.
EVENT_FUNCTIONS = {'resume', 'sweeper', 'notifier'}
# Functions the router table cannot reach (matchit has no `{id}:suffix` patterns); they are
# called through `/lambda-url/<function>/...`.
PREFIX_ONLY = {'subscribe-to-task'}


# --------------------------------------------------------------------------- the server


@dataclass
class Watch:
    base: str
    store: str
    log: Path
    # With the dynamodb store: DynamoDB Local and the session's table.
    endpoint: str | None = None
    table: str | None = None

    def url(self, path: str) -> str:
        return self.base + path

    def log_tail(self, n: int = 80) -> str:
        try:
            return '\n'.join(self.log.read_text(errors='replace').splitlines()[-n:])
        except OSError:
            return '(no log)'


def _free_loopback_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def _path_with_venv() -> str:
    """PATH with this interpreter's bin dir first, so `cargo lambda` finds the PyPI
    cargo-lambda (and `python3 -m ziglang`)."""
    return os.pathsep.join([str(Path(sys.executable).parent), os.environ.get('PATH', '')])


def _descendants(pid: int) -> list[int]:
    """Every process below `pid`, from /proc."""
    children: dict[int, list[int]] = {}
    for entry in Path('/proc').iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / 'stat').read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(')', 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry.name))
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the watch's process group (cargo-lambda then stops its functions), then
    SIGKILL to whatever it started that is still there."""
    started = _descendants(proc.pid)
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait(timeout=15)
    deadline = time.monotonic() + 5
    for pid in started:
        while time.monotonic() < deadline and Path(f'/proc/{pid}').exists():
            time.sleep(0.1)
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def _dynamodb(endpoint: str, target: str, body: dict[str, Any]) -> dict[str, Any]:
    """One DynamoDB API call. DynamoDB Local does not check signatures, only that there
    is an Authorization header."""
    req = urllib.request.Request(
        endpoint,
        data=json.dumps(body).encode(),
        headers={
            'Content-Type': 'application/x-amz-json-1.0',
            'X-Amz-Target': f'DynamoDB_20120810.{target}',
            'Authorization': 'AWS4-HMAC-SHA256 Credential=test/20260101/us-east-1/dynamodb/'
            'aws4_request, SignedHeaders=host, Signature=0',
        },
    )
    with urllib.request.urlopen(req, timeout=30) as resp:
        return json.loads(resp.read() or b'{}')


def _table_properties() -> dict[str, Any]:
    """The table's CloudFormation properties, as tests/run extracts them from
    template.yaml, or read from template.yaml here (cfn-lint's YAML loader)."""
    path = os.environ.get('HARNESS_TEST_TABLE_DEFINITION')
    if path and Path(path).is_file():
        return json.loads(Path(path).read_text())
    from cfnlint.decode import cfn_yaml

    template = cfn_yaml.load(str(ROOT / 'template.yaml'))
    tables = [
        r for r in template['Resources'].values() if r['Type'] == 'AWS::DynamoDB::Table'
    ]
    assert len(tables) == 1, 'template.yaml declares one table'
    return json.loads(json.dumps(tables[0]['Properties']))


def _create_table(endpoint: str, name: str) -> None:
    props = _table_properties()
    request: dict[str, Any] = {
        'TableName': name,
        'AttributeDefinitions': props['AttributeDefinitions'],
        'KeySchema': props['KeySchema'],
        'BillingMode': props.get('BillingMode', 'PAY_PER_REQUEST'),
    }
    if props.get('GlobalSecondaryIndexes'):
        request['GlobalSecondaryIndexes'] = props['GlobalSecondaryIndexes']
    if props.get('StreamSpecification'):
        request['StreamSpecification'] = {'StreamEnabled': True, **props['StreamSpecification']}
    _dynamodb(endpoint, 'CreateTable', request)
    ttl = props.get('TimeToLiveSpecification')
    if ttl:
        _dynamodb(endpoint, 'UpdateTimeToLive', {'TableName': name, 'TimeToLiveSpecification': ttl})


# Every function process seals webhook secrets with the deployment's one key (push is on).
PUSH_KEY = 'AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8='


# Settings a developer's shell may carry that would change what the functions do.
STALE_SETTINGS = ('HARNESS_DEFAULT_PARTICIPANT', 'HARNESS_MODELS', 'HARNESS_PROMPT',
                  'HARNESS_JWKS_URL', 'HARNESS_JWT_ISSUER', 'HARNESS_JWT_AUDIENCE',
                  'HARNESS_IDENTITY_CLAIM', 'HARNESS_OIDC_DISCOVERY_URL',
                  'HARNESS_JSONRPC_URL', 'HARNESS_REQUIRED_EXTENSIONS',
                  'HARNESS_REST_CONTENT_TYPE', 'HARNESS_RESUME_INVOKE_URL')


def watch_env(path: str, base: str, store_env: dict[str, str], **settings: str) -> dict[str, str]:
    """The environment `cargo lambda watch` (and so every function) runs in: this
    process's, without stale settings, plus the build's, the public URL, `settings` and
    the store's."""
    env = {k: v for k, v in os.environ.items() if k not in STALE_SETTINGS}
    env.update({
        'PATH': path,
        'CARGO_TARGET_DIR': os.environ.get('CARGO_TARGET_DIR')
        or str(Path.home() / '.cache' / 'harness' / 'target'),
        'CARGO_TERM_COLOR': 'never',
        'HARNESS_PUBLIC_URL': base,
        'RUST_LOG': os.environ.get('RUST_LOG', 'info'),
        # Deployed functions verify tokens by default; these suites test the protocol
        # with self-asserted identity unless a test says otherwise.
        'HARNESS_AUTH': 'none',
        **settings,
        **store_env,
    })
    return env


def _store_env(store: str, state_dir: str) -> dict[str, str]:
    if store == 'embedded':
        return {'HARNESS_STORE': 'embedded', 'HARNESS_STATE_DIR': state_dir,
                'HARNESS_PUSH_KEY': PUSH_KEY}
    endpoint = os.environ['HARNESS_TEST_DYNAMODB_ENDPOINT']
    table = f'harness-lambda-watch-{uuid.uuid4().hex[:12]}'
    _create_table(endpoint, table)
    return {
        'HARNESS_STORE': 'dynamodb',
        'HARNESS_TABLE': table,
        'HARNESS_PUSH_KEY': PUSH_KEY,
        'AWS_ENDPOINT_URL_DYNAMODB': endpoint,
        'AWS_REGION': os.environ.get('AWS_REGION', 'us-east-1'),
        'AWS_ACCESS_KEY_ID': os.environ.get('AWS_ACCESS_KEY_ID', 'test'),
        'AWS_SECRET_ACCESS_KEY': os.environ.get('AWS_SECRET_ACCESS_KEY', 'test'),
        'AWS_EC2_METADATA_DISABLED': 'true',
    }


STORES = [
    'embedded',
    pytest.param(
        'dynamodb',
        marks=pytest.mark.skipif(
            not os.environ.get('HARNESS_TEST_DYNAMODB_ENDPOINT'),
            reason='HARNESS_TEST_DYNAMODB_ENDPOINT is not set (tests/run starts DynamoDB Local)',
        ),
    ),
]


def wait_listening(proc: subprocess.Popen, port: int, w: 'Watch') -> None:
    """Waits until `cargo lambda watch` accepts connections on `port`, failing with its
    log if it exits or does not listen within START_TIMEOUT_S."""
    deadline = time.monotonic() + START_TIMEOUT_S
    while True:
        if proc.poll() is not None:
            pytest.fail(f'cargo lambda watch exited with {proc.returncode}:\n{w.log_tail()}')
        try:
            socket.create_connection(('127.0.0.1', port), 0.5).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                pytest.fail(f'cargo lambda watch is not listening after {START_TIMEOUT_S} s:\n{w.log_tail()}')
            time.sleep(0.2)


@pytest.fixture(scope='session', params=STORES)
def watch(request: pytest.FixtureRequest) -> Iterator[Watch]:
    store = request.param
    path = _path_with_venv()
    if not shutil.which('cargo-lambda', path=path):
        pytest.fail('cargo-lambda is not installed: pip install -r tests/lambda_watch/requirements.txt')
    port = _free_loopback_port()
    base = f'http://127.0.0.1:{port}'
    work = Path(tempfile.mkdtemp(prefix=f'harness-lambda-watch-{store}-'))
    state_dir = work / 'state'
    state_dir.mkdir()
    log = work / 'cargo-lambda-watch.log'
    # One remote agent in the registry, so the functions that take its callbacks have one
    # (its card is never fetched here).
    agents = work / 'agents.toml'
    agents.write_text('[agents.far]\ncard_url = "https://far.example/.well-known/agent-card.json"\n')
    # The protocol checks send no identity: `anonymous` stands for it.
    env = watch_env(path, base, _store_env(store, str(state_dir)),
                    HARNESS_AGENT='conformance', HARNESS_DEFAULT_PARTICIPANT='anonymous',
                    HARNESS_AGENTS=str(agents))
    with open(log, 'wb') as out:
        proc = subprocess.Popen(
            [
                'cargo', 'lambda', 'watch',
                '--invoke-address', '127.0.0.1',
                '--invoke-port', str(port),
                # Deployed functions have no embedded store; these runs use it.
                '--features', 'embedded-store',
                # Other engineers edit the tree while this runs: no reloads mid-test.
                '--ignore-changes',
            ],
            cwd=ROOT,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    w = Watch(base=base, store=store, log=log,
              endpoint=env.get('AWS_ENDPOINT_URL_DYNAMODB') if store == 'dynamodb' else None,
              table=env.get('HARNESS_TABLE') if store == 'dynamodb' else None)
    try:
        wait_listening(proc, port, w)
        # The first request starts (and, on a cold target dir, builds) the function.
        try:
            resp = httpx.get(w.url('/.well-known/agent-card.json'), timeout=REQUEST_TIMEOUT_S)
        except httpx.HTTPError as e:
            pytest.fail(f'the agent card did not answer: {e!r}\n{w.log_tail()}')
        assert resp.status_code == 200, f'{resp.status_code} {resp.text}\n{w.log_tail()}'
        yield w
    finally:
        _stop(proc)
        shutil.rmtree(work, ignore_errors=True)


@pytest.fixture(scope='session')
def client(watch: Watch) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=watch.base, headers=HEADERS, timeout=REQUEST_TIMEOUT_S) as c:
        yield c


def _message(tag: str = 'tck-complete-task') -> dict[str, Any]:
    return {'messageId': f'{tag}-{uuid.uuid4()}', 'role': 'ROLE_USER', 'parts': [{'text': 'hi'}]}


def _from_function(resp: httpx.Response, watch: Watch) -> None:
    """The answer came from a function, not from the emulator's own 404."""
    try:
        body = resp.json()
    except ValueError:
        return
    if isinstance(body, dict) and body.get('title') in EMULATOR_TITLES:
        pytest.fail(f'the emulator answered, no function did: {body}\n{watch.log_tail()}')


def _error_reason(resp: httpx.Response) -> str | None:
    details = resp.json().get('error', {}).get('details', [])
    return next((d.get('reason') for d in details if 'reason' in d), None)


@pytest.fixture(scope='session')
def rest_task(client: httpx.Client, watch: Watch) -> dict[str, Any]:
    """A task SendMessage created over REST (POST /message:send → send-message)."""
    resp = client.post('/message:send', json={'message': _message()})
    _from_function(resp, watch)
    assert resp.status_code == 200, f'{resp.status_code} {resp.text}\n{watch.log_tail()}'
    body = resp.json()
    assert 'task' in body, body
    return body['task']


def _sse_events(resp: httpx.Response) -> list[dict[str, Any]]:
    events, data = [], []
    for line in resp.iter_lines():
        if line.startswith('data:'):
            data.append(line[5:].lstrip())
        elif line == '' and data:
            events.append(json.loads('\n'.join(data)))
            data = []
    if data:
        events.append(json.loads('\n'.join(data)))
    return events


def _state(event: dict[str, Any]) -> str | None:
    if 'task' in event:
        return event['task']['status']['state']
    if 'statusUpdate' in event:
        return event['statusUpdate']['status']['state']
    return None


# --------------------------------------------------------------------------- the router table


def _router() -> dict[str, Any]:
    manifest = tomllib.loads((ROOT / 'Cargo.toml').read_text())
    return manifest['workspace']['metadata']['lambda']['watch']['router']


def _lambda_names() -> set[str]:
    """Every Lambda function crate's package name (its binary)."""
    names = set()
    for crate in (ROOT / 'functions').iterdir():
        if crate.name in NOT_FUNCTIONS or not (crate / 'Cargo.toml').is_file():
            continue
        names.add(tomllib.loads((crate / 'Cargo.toml').read_text())['package']['name'])
    return names


def _function_names() -> set[str]:
    """The functions that answer HTTP (an API route or a Function URL)."""
    return _lambda_names() - EVENT_FUNCTIONS


def test_event_functions_are_crates_and_unrouted() -> None:
    assert EVENT_FUNCTIONS <= _lambda_names(), EVENT_FUNCTIONS - _lambda_names()
    routed = {route['function'] for routes in _router().values() for route in routes}
    assert not routed & EVENT_FUNCTIONS, f'event-driven functions in the router: {routed & EVENT_FUNCTIONS}'


def test_router_table_names_every_function() -> None:
    routed = set()
    for path, routes in _router().items():
        assert isinstance(routes, list), f'{path}: give the methods explicitly'
        for route in routes:
            assert route['method'] in {'GET', 'POST', 'DELETE'}, (path, route)
            routed.add(route['function'])
    functions = _function_names()
    assert routed <= functions, f'routes to unknown functions: {routed - functions}'
    assert functions - routed == PREFIX_ONLY


# (function, method, path, body); {task} is a task the test created.
EVERY_FUNCTION = [
    ('agent-card', 'GET', '/.well-known/agent-card.json', None),
    ('jsonrpc', 'POST', '/', {'jsonrpc': '2.0', 'id': 1, 'method': 'GetTask', 'params': {'id': '{task}'}}),
    ('send-message', 'POST', '/message:send', {'message': 'MESSAGE'}),
    ('send-streaming-message', 'POST', '/message:stream', {'message': 'MESSAGE'}),
    ('get-task', 'GET', '/tasks/{task}', None),
    ('list-tasks', 'GET', '/tasks', None),
    ('cancel-task', 'POST', '/tasks/{task}:cancel', None),
    ('subscribe-to-task', 'GET', '/lambda-url/subscribe-to-task/tasks/{task}:subscribe', None),
    ('create-push-config', 'POST', '/tasks/{task}/pushNotificationConfigs',
     {'id': 'every-function', 'url': 'https://example.com/hook'}),
    ('list-push-configs', 'GET', '/tasks/{task}/pushNotificationConfigs', None),
    ('get-push-config', 'GET', '/tasks/{task}/pushNotificationConfigs/every-function', None),
    ('delete-push-config', 'DELETE', '/tasks/{task}/pushNotificationConfigs/every-function', None),
    ('get-extended-agent-card', 'GET', '/extendedAgentCard', None),
    ('remote-callback', 'POST', '/remote/callback/made-up-reference', {'statusUpdate': {}}),
]


def test_every_function_listed() -> None:
    assert {f for f, *_ in EVERY_FUNCTION} == _function_names()


@pytest.mark.parametrize(
    'function,method,path,body', EVERY_FUNCTION, ids=[f for f, *_ in EVERY_FUNCTION]
)
def test_every_function_answers(
    client: httpx.Client, watch: Watch, rest_task: dict[str, Any],
    function: str, method: str, path: str, body: Any,
) -> None:
    """Each function starts under the emulator and answers its path with an A2A response
    (a result, or an A2A error such as TASK_NOT_CANCELABLE for a completed task)."""
    path = path.replace('{task}', rest_task['id'])
    if body is not None:
        body = json.loads(json.dumps(body).replace('{task}', rest_task['id']))
        if body.get('message') == 'MESSAGE':
            body['message'] = _message()
    resp = client.request(method, path, json=body)
    _from_function(resp, watch)
    if function == 'remote-callback':
        # No token: refused before anything is read.
        assert resp.status_code == 401, f'{resp.status_code} {resp.text}\n{watch.log_tail()}'
        assert resp.json() == {'status': 'unauthorized'}
    elif resp.status_code >= 300:
        # An A2A error from the function, never a bare 404 for an unrouted path.
        assert _error_reason(resp) not in (None, 'METHOD_NOT_FOUND'), (
            f'{function}: {resp.status_code} {resp.text}\n{watch.log_tail()}'
        )


# --------------------------------------------------------------------------- the operations


def test_agent_card(client: httpx.Client, watch: Watch) -> None:
    resp = client.get('/.well-known/agent-card.json')
    assert resp.status_code == 200, resp.text
    card = resp.json()
    assert card['name']
    urls = [i['url'] for i in card['supportedInterfaces']]
    assert urls and all(u.startswith(watch.base) for u in urls), urls


def test_send_message_rest_completes(rest_task: dict[str, Any]) -> None:
    assert rest_task['status']['state'] == COMPLETED, rest_task
    assert rest_task['history'][0]['parts'] == [{'text': 'hi'}]


def test_get_task_rest(client: httpx.Client, rest_task: dict[str, Any]) -> None:
    # Another function process (get-task) reads what send-message wrote.
    resp = client.get(f"/tasks/{rest_task['id']}")
    assert resp.status_code == 200, resp.text
    task = resp.json()
    assert task['id'] == rest_task['id']
    assert task['contextId'] == rest_task['contextId']
    assert task['status']['state'] == COMPLETED


def test_list_tasks_rest(client: httpx.Client, rest_task: dict[str, Any]) -> None:
    resp = client.get('/tasks', params={'contextId': rest_task['contextId']})
    assert resp.status_code == 200, resp.text
    assert rest_task['id'] in [t['id'] for t in resp.json()['tasks']]


def test_list_tasks_under_a_tenant(client: httpx.Client) -> None:
    resp = client.get('/acme/tasks')
    assert resp.status_code == 200, resp.text
    assert isinstance(resp.json()['tasks'], list)


def test_cancel_completed_task_is_refused(client: httpx.Client, rest_task: dict[str, Any]) -> None:
    resp = client.post(f"/tasks/{rest_task['id']}:cancel")
    assert resp.status_code == 400, resp.text
    assert _error_reason(resp) == 'TASK_NOT_CANCELABLE', resp.text


def test_jsonrpc_send_and_get(client: httpx.Client) -> None:
    resp = client.post(
        '/', json={'jsonrpc': '2.0', 'id': 1, 'method': 'SendMessage', 'params': {'message': _message()}}
    )
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert body.get('id') == 1 and 'result' in body, body
    task = body['result']['task']
    assert task['status']['state'] == COMPLETED

    resp = client.post(
        '/', json={'jsonrpc': '2.0', 'id': 'g', 'method': 'GetTask', 'params': {'id': task['id']}}
    )
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert body.get('id') == 'g' and body['result']['id'] == task['id'], body
    assert body['result']['status']['state'] == COMPLETED


def test_jsonrpc_get_unknown_task(client: httpx.Client) -> None:
    resp = client.post(
        '/', json={'jsonrpc': '2.0', 'id': 2, 'method': 'GetTask', 'params': {'id': str(uuid.uuid4())}}
    )
    assert resp.status_code == 200, resp.text
    assert resp.json()['error']['code'] == -32001, resp.text


def test_jsonrpc_streaming(client: httpx.Client) -> None:
    """SendStreamingMessage through the jsonrpc function's response streaming."""
    payload = {'jsonrpc': '2.0', 'id': 's', 'method': 'SendStreamingMessage', 'params': {'message': _message()}}
    with client.stream('POST', '/', json=payload) as resp:
        assert resp.status_code == 200, resp.read()
        assert resp.headers['content-type'].startswith('text/event-stream')
        events = _sse_events(resp)
    assert events, 'no SSE events'
    assert all(e.get('id') == 's' and 'result' in e for e in events), events
    states = [_state(e['result']) for e in events]
    assert states[-1] == COMPLETED, states


def test_rest_streaming(client: httpx.Client) -> None:
    """POST /message:stream through the send-streaming-message function."""
    with client.stream('POST', '/message:stream', json={'message': _message()}) as resp:
        assert resp.status_code == 200, resp.read()
        assert resp.headers['content-type'].startswith('text/event-stream')
        events = _sse_events(resp)
    assert events, 'no SSE events'
    assert _state(events[-1]) == COMPLETED, events


def test_push_config_lifecycle(client: httpx.Client, rest_task: dict[str, Any]) -> None:
    base = f"/tasks/{rest_task['id']}/pushNotificationConfigs"
    resp = client.post(base, json={'id': 'lifecycle', 'url': 'https://example.com/a2a-hook'})
    assert resp.status_code in (200, 201), resp.text
    assert resp.json()['id'] == 'lifecycle'
    resp = client.get(f'{base}/lifecycle')
    assert resp.status_code == 200, resp.text
    assert resp.json()['url'] == 'https://example.com/a2a-hook'
    resp = client.get(base)
    assert resp.status_code == 200, resp.text
    assert 'lifecycle' in [c['id'] for c in resp.json()['configs']]
    resp = client.delete(f'{base}/lifecycle')
    assert resp.status_code in (200, 204), resp.text
    resp = client.get(f'{base}/lifecycle')
    assert resp.status_code == 404, resp.text


def test_unrouted_path_is_the_emulators_404(client: httpx.Client) -> None:
    resp = client.get('/no/such/route/here')
    assert resp.status_code == 404
    assert resp.json().get('title') == 'Default function disabled', resp.text


# --------------------------------------------------------------------------- event-driven


def _invoke(watch: Watch, function: str, payload: Any) -> Any:
    """The emulator's Lambda Invoke API (synchronous; the first call builds the function)."""
    resp = httpx.post(watch.url(f'/2015-03-31/functions/{function}/invocations'),
                      json=payload, timeout=REQUEST_TIMEOUT_S)
    assert resp.status_code == 200, f'{function}: {resp.status_code} {resp.text}\n{watch.log_tail()}'
    return resp.json()


def _scheduled_event() -> dict[str, Any]:
    """What an EventBridge schedule sends (the sweeper reads none of it)."""
    return {
        'version': '0',
        'id': str(uuid.uuid4()),
        'detail-type': 'Scheduled Event',
        'source': 'aws.events',
        'account': '000000000000',
        'time': time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime()),
        'region': 'us-east-1',
        'resources': ['arn:aws:events:us-east-1:000000000000:rule/sweep'],
        'detail': {},
    }


def _task_image(task_id: str, **extra: Any) -> dict[str, Any]:
    return {'pk': {'S': f'TASK#{task_id}'}, 'sk': {'S': 'TASK'}, **extra}


def _record(event_name: str, image: dict[str, Any], seq: int) -> dict[str, Any]:
    """A stream record as the event source mapping delivers it."""
    key = {'pk': image['pk'], 'sk': image['sk']}
    change: dict[str, Any] = {
        'ApproximateCreationDateTime': time.time(),
        'Keys': key,
        'SequenceNumber': f'{seq:021d}',
        'SizeBytes': 100,
        'StreamViewType': 'NEW_AND_OLD_IMAGES',
    }
    change['OldImage' if event_name == 'REMOVE' else 'NewImage'] = image
    return {
        'eventID': str(uuid.uuid4()),
        'eventName': event_name,
        'eventVersion': '1.1',
        'eventSource': 'aws:dynamodb',
        'awsRegion': 'us-east-1',
        'dynamodb': change,
        'eventSourceARN': 'arn:aws:dynamodb:us-east-1:000000000000:table/t/stream/local',
    }


def _send_returning_immediately(client: httpx.Client, watch: Watch) -> dict[str, Any]:
    """A task SendMessage leaves runnable for another drive: in Lambda, returnImmediately
    does not run the agent after the answer, the write is the task's wake-up."""
    resp = client.post('/message:send', json={
        'message': _message(), 'configuration': {'returnImmediately': True}})
    _from_function(resp, watch)
    assert resp.status_code == 200, f'{resp.status_code} {resp.text}\n{watch.log_tail()}'
    task = resp.json()['task']
    assert task['status']['state'] != COMPLETED, task
    return task


def _task_state(client: httpx.Client, task_id: str) -> str:
    resp = client.get(f'/tasks/{task_id}')
    assert resp.status_code == 200, resp.text
    return resp.json()['status']['state']


def test_sweeper_answers(watch: Watch) -> None:
    """A scheduled invocation: the sweep (a Query on gsi2 on DynamoDB) finds nothing to
    wake, no drive's lease having run out."""
    body = _invoke(watch, 'sweeper', _scheduled_event())
    assert isinstance(body, dict) and isinstance(body.get('woken'), list), body


def test_resume_drives_only_runnable_unleased_tasks(
    client: httpx.Client, watch: Watch, rest_task: dict[str, Any],
) -> None:
    """The handler checks every record again (the filter is not its only guard), and
    drives the task of a record that asks for it."""
    task = _send_returning_immediately(client, watch)
    tid = task['id']
    ignored = [
        _record('REMOVE', _task_image(tid, wake={'N': '1'}), 1),
        _record('MODIFY', _task_image(tid), 3),
        _record('INSERT', {'pk': {'S': f'TASK#{tid}'}, 'sk': {'S': 'EV#00000000000000000001'},
                           'wake': {'N': '1'}}, 4),
    ]
    body = _invoke(watch, 'resume', {'Records': ignored})
    assert body == {'batchItemFailures': []}, body
    assert _task_state(client, tid) != COMPLETED

    # A finished task's record (a late or repeated delivery) is no failure, and no drive.
    body = _invoke(watch, 'resume', {'Records': [
        _record('MODIFY', _task_image(rest_task['id'], wake={'N': '1'}), 5)]})
    assert body == {'batchItemFailures': []}, body

    body = _invoke(watch, 'resume', {'Records': [_record('INSERT', _task_image(tid, wake={'N': '1'}), 6)]})
    assert body == {'batchItemFailures': []}, f'{body}\n{watch.log_tail()}'
    assert _task_state(client, tid) == COMPLETED

    # Delivered again (at least once): the task is done, nothing happens.
    body = _invoke(watch, 'resume', {'Records': [_record('INSERT', _task_image(tid, wake={'N': '1'}), 7)]})
    assert body == {'batchItemFailures': []}, body
    assert _task_state(client, tid) == COMPLETED


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b'=').decode()


def _callback(task_id: str, n: int) -> tuple[str, str]:
    """The callback reference the harness gives a remote agent for link `n` of `task_id`
    (the two sealed with AES-256-GCM) and its token (HMAC-SHA256 over the reference and
    an expiry), each under a key derived from the push key (common::remote::Remotes)."""
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    key = base64.b64decode(PUSH_KEY)
    derive = lambda label: hmac.new(key, label, hashlib.sha256).digest()  # noqa: E731
    nonce = os.urandom(12)
    sealed = AESGCM(derive(b'tiny-harness remote callback references v1')).encrypt(
        nonce, f'{n}\n{task_id}'.encode(), None)
    reference = 'r1.' + _b64(nonce + sealed)
    expires = int(time.time() * 1000) + 60_000
    tag = hmac.new(derive(b'tiny-harness remote callbacks v2'),
                   f'{reference}\n{expires}'.encode(), hashlib.sha256).digest()
    return reference, f'{expires}.{_b64(tag)}'


def test_remote_callback_takes_its_token_and_nothing_else(
    client: httpx.Client, watch: Watch, rest_task: dict[str, Any],
) -> None:
    """The remote-callback function under the emulator: a forged token and another link's
    token are refused; so is the link's own, as the task has no such link (nothing was
    delegated), and the task is unchanged."""
    task_id = rest_task['id']
    before = client.get(f'/tasks/{task_id}').json()
    reference, token = _callback(task_id, 1)
    for path, token in [(reference, 'forged'), (reference, _callback(task_id, 2)[1]),
                        (reference, token), (task_id, token)]:
        resp = client.post(f'/remote/callback/{path}', json={},
                           headers={'X-A2A-Notification-Token': token})
        _from_function(resp, watch)
        assert resp.status_code == 401, f'{resp.status_code} {resp.text}\n{watch.log_tail()}'
        assert resp.json() == {'status': 'unauthorized'}
    assert client.get(f'/tasks/{task_id}').json() == before
