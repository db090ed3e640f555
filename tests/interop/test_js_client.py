"""Interop: the official A2A JS client (@a2a-js/sdk 1.3.0) against harness-local.

js/client_flow.mjs builds the SDK's own client (ClientFactory, transport chosen from
the agent card) for one binding and runs the whole flow through it: blocking and
streaming sends, GetTask, ListTasks paging, INPUT_REQUIRED then a reply resuming the
task (blocking and streamed), cancel seen by a subscriber, SubscribeToTask on a running
and on a waiting task, push-config create/get/list/delete with a delivery to a loopback
webhook, and the typed errors the SDK raises (TaskNotFoundError & co., with the JSON-RPC
code or HTTP status). Each step is one test per binding, so a failure names its step and
shows the step's HTTP exchanges.

The SDK is installed with `npm ci` from js/package-lock.json into
$HOME/.cache/harness/js-client/<lockfile hash>, outside the checkout; the install is the
only call that leaves the machine. Node.js and npm are required: their absence fails.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess

from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import HTTP_BINDINGS, run_harness


JS_DIR = Path(__file__).parent / 'js'
CACHE = Path.home() / '.cache' / 'harness' / 'js-client'
SDK_VERSION = '1.3.0'
RUN_TIMEOUT_S = 120
STEPS = [
    'card',
    'send_blocking',
    'send_message_response',
    'send_streaming',
    'get_task',
    'list_tasks',
    'input_required_then_reply',
    'streamed_reply_to_input_required',
    'cancel',
    'subscribe_running',
    'subscribe_waiting',
    'push_config_crud',
    'typed_errors',
]


def _require(tool: str) -> str:
    path = shutil.which(tool)
    if not path:
        pytest.fail(f'{tool} not found on PATH: the JS interop test needs Node.js (>= 20) '
                    'and npm', pytrace=False)
    return path


@pytest.fixture(scope='session')
def node() -> str:
    node = _require('node')
    version = subprocess.run([node, '--version'], capture_output=True, text=True).stdout
    if int(version.lstrip('v').split('.')[0]) < 20:
        pytest.fail(f'@a2a-js/sdk needs Node.js >= 20, found {version.strip()}', pytrace=False)
    return node


@pytest.fixture(scope='session')
def js_prefix() -> Path:
    """An `npm ci` of js/ in the cache, keyed by the lockfile; reused while it is unchanged."""
    lock = (JS_DIR / 'package-lock.json').read_bytes()
    key = hashlib.sha256(lock + (JS_DIR / 'package.json').read_bytes()).hexdigest()[:16]
    prefix = CACHE / key
    if (prefix / 'node_modules' / '@a2a-js' / 'sdk' / 'package.json').is_file():
        return prefix
    npm = _require('npm')
    staging = CACHE / f'{key}.tmp{os.getpid()}'
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    for name in ('package.json', 'package-lock.json'):
        shutil.copy(JS_DIR / name, staging / name)
    done = subprocess.run(
        [npm, 'ci', '--ignore-scripts', '--no-audit', '--no-fund', '--loglevel=error'],
        cwd=staging, capture_output=True, text=True, timeout=300,
    )
    if done.returncode != 0:
        shutil.rmtree(staging, ignore_errors=True)
        pytest.fail(f'npm ci of {JS_DIR} failed ({done.returncode}):\n{done.stderr[-3000:]}',
                    pytrace=False)
    try:
        staging.rename(prefix)
    except OSError:  # a concurrent run installed it first
        shutil.rmtree(staging, ignore_errors=True)
    for old in CACHE.iterdir():  # earlier lockfiles' installs
        if old.name != key and '.tmp' not in old.name:
            shutil.rmtree(old, ignore_errors=True)
    return prefix


@pytest.fixture(scope='module')
def harness() -> Iterator[str]:
    # The webhook receiver of the push step listens on loopback.
    with run_harness(['--push-allow-private-urls', 'true'],
                     HARNESS_DEFAULT_PARTICIPANT='anonymous') as server:
        yield server.base_url


@pytest.fixture(scope='module', params=HTTP_BINDINGS)
def report(request: pytest.FixtureRequest, node: str, js_prefix: Path, harness: str) -> dict:
    """One run of client_flow.mjs over the binding: its JSON report."""
    binding = request.param
    done = subprocess.run(
        [node, str(JS_DIR / 'client_flow.mjs'), harness, binding],
        env={**os.environ, 'A2A_JS_PREFIX': str(js_prefix)},
        capture_output=True, text=True, timeout=RUN_TIMEOUT_S,
    )
    try:
        result = json.loads(done.stdout)
    except ValueError:
        pytest.fail(f'client_flow.mjs {binding} exited {done.returncode} without a report:\n'
                    f'{done.stdout[-2000:]}\n{done.stderr[-3000:]}', pytrace=False)
    failed = [name for name, step in result['steps'].items() if not step['ok']]
    assert done.returncode == (1 if failed else 0), done.stderr
    return result


def test_report_is_from_the_pinned_sdk_and_covers_every_step(report: dict):
    assert report['sdk'] == SDK_VERSION
    assert list(report['steps']) == STEPS


@pytest.mark.parametrize('step', STEPS)
def test_step(report: dict, step: str):
    result = report['steps'].get(step)
    assert result is not None, f'the report has no step {step!r}'
    if not result['ok']:
        pytest.fail(
            f"{report['binding']} / {step}: {result['error']}"
            + (f"\ncause: {result['cause']}" if result.get('cause') else '')
            + '\n--- HTTP exchanges of the step ---\n'
            + json.dumps(result['exchanges'], indent=1)[-6000:],
            pytrace=False,
        )
