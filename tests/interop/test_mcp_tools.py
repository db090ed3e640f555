"""MCP servers as the agent's tools, against the official Python MCP SDK's server.

A FastMCP server (PyPI `mcp==1.30.0`) over Streamable HTTP runs in this process behind a
bearer-token check, with a read-only tool (`lookup`), a tool with side effects (`append`,
no annotations: not idempotent) and a failing tool (`fail`); it logs every call it gets.
harness-local, on the scripted model, names it in `--mcp` with the token from an
environment variable:

1. the model calls each tool, and one with arguments that break `lookup`'s schema; the
   results reach its next input inside the untrusted block, the failure as an error result,
   and the task goes on and completes;
2. the schema-breaking call never reaches the server (its call log);
3. with a second server that is down at start-up, the task still runs with the first
   one's tools, and the model is told which tools are unavailable;
4. SIGKILL while a tool with side effects runs: after the restart the server has had one
   call and the model is told its outcome is unknown; the same with a read-only tool: it
   is called again once and the task completes with its result.
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
import threading
import time
import uuid

from pathlib import Path

import httpx
import pytest

from mcp.types import ToolAnnotations

from conftest import run_harness

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / 'lib'))
from mcp_server import fastmcp, free_port, serve  # noqa: E402


TOKEN = 'mcp-test-token'
WAIT_S = 30.0


GATE = threading.Event()


@pytest.fixture(scope='module')
def server():
    calls: list[tuple[str, dict]] = []
    mcp = fastmcp('test')

    @mcp.tool(annotations=ToolAnnotations(readOnlyHint=True))
    def lookup(word: str) -> str:
        """Looks a word up."""
        calls.append(('lookup', {'word': word}))
        return f'{word}: a small wooden building'

    @mcp.tool()
    def append(line: str) -> str:
        """Appends a line to the log (a side effect)."""
        calls.append(('append', {'line': line}))
        return f'appended {line!r}'

    async def gated() -> None:
        # Held until the test opens the gate (after it has killed the harness).
        while not GATE.is_set():
            await asyncio.sleep(0.02)

    @mcp.tool()
    async def slow_append(line: str) -> str:
        """Appends a line, slowly (a side effect)."""
        calls.append(('slow_append', {'line': line}))
        await gated()
        return f'appended {line!r}'

    @mcp.tool(annotations=ToolAnnotations(readOnlyHint=True))
    async def slow_lookup(word: str) -> str:
        """Looks a word up, slowly."""
        calls.append(('slow_lookup', {'word': word}))
        await gated()
        return f'{word}: looked up slowly'

    @mcp.tool()
    def fail() -> str:
        """Always fails."""
        calls.append(('fail', {}))
        raise ValueError('the tool broke')

    with serve(mcp, TOKEN) as url:
        yield url, calls


def _rpc(harness, method: str, params: dict) -> dict:
    return httpx.post(harness.base_url, timeout=WAIT_S,
                      headers={'A2A-Version': '1.0', 'X-Participant-Id': 'alice'},
                      json={'jsonrpc': '2.0', 'id': str(uuid.uuid4()), 'method': method,
                            'params': params}).json()


def _run(mcp_toml: str, turns: list) -> tuple[dict, list[dict]]:
    """harness-local with `mcp_toml` runs a task on `turns`; the task, and the requests
    its model was sent."""
    work = Path(tempfile.mkdtemp(prefix='harness-mcp-'))
    log = work / 'requests.jsonl'
    script = work / 'script.json'
    script.write_text(json.dumps({'request_log': str(log), 'turns': turns}))
    servers = work / 'mcp.toml'
    servers.write_text(mcp_toml)
    args = ['--agent', 'llm', '--model', f'scripted:{script}', '--mcp', str(servers)]
    with run_harness(args, MCP_TEST_TOKEN=TOKEN) as harness:
        headers = {'A2A-Version': '1.0', 'X-Participant-Id': 'alice'}
        rpc = lambda method, params: httpx.post(  # noqa: E731
            harness.base_url, headers=headers, timeout=WAIT_S,
            json={'jsonrpc': '2.0', 'id': str(uuid.uuid4()), 'method': method,
                  'params': params}).json()
        sent = rpc('SendMessage', {'message': {
            'messageId': str(uuid.uuid4()), 'role': 'ROLE_USER',
            'parts': [{'text': 'Use the tools'}]}})
        task_id = sent['result']['task']['id']
        deadline = time.monotonic() + WAIT_S
        while True:
            task = rpc('GetTask', {'id': task_id})['result']
            if task['status']['state'] in ('TASK_STATE_COMPLETED', 'TASK_STATE_FAILED'):
                break
            assert time.monotonic() < deadline, task
            time.sleep(0.1)
    return task, [json.loads(line) for line in log.read_text().splitlines() if line]


def _call(name: str, arguments: dict) -> dict:
    return {'name': name, 'arguments': arguments}


def test_the_models_calls_reach_the_server_and_their_results_the_model(server) -> None:
    url, calls = server
    calls.clear()
    toml = f'[mcp.test]\nurl = "{url}"\ntoken_env = "MCP_TEST_TOKEN"\n'
    task, requests = _run(toml, [
        {'tool_calls': [
            _call('test__lookup', {'word': 'shed'}),
            _call('test__append', {'line': 'painted'}),
            _call('test__fail', {}),
            _call('test__lookup', {'word': 5}),
        ]},
        {'text': 'Done with the tools.'},
    ])
    assert task['status']['state'] == 'TASK_STATE_COMPLETED', task
    # The tools were offered with their schemas, under the server's name.
    offered = {t['name']: t for t in requests[0]['tools']}
    assert offered['test__lookup']['parameters']['properties']['word']['type'] == 'string'
    # Each call's result is a tool result inside the untrusted block.
    results = {m['call_id']: m for m in requests[1]['messages'] if m.get('role') == 'tool'}
    assert 'shed: a small wooden building' in results['call-0-0']['content']
    assert "appended 'painted'" in results['call-0-1']['content']
    assert results['call-0-2']['is_error'] and '[mcp.tool_error]' in results['call-0-2']['content']
    assert 'the tool broke' in results['call-0-2']['content']
    assert results['call-0-3']['is_error'] and '[invalid_arguments]' in results['call-0-3']['content']
    for r in results.values():
        assert r['content'].startswith('<untrusted-'), r
    # The server saw each valid call once, and never the one that broke the schema.
    assert calls == [('lookup', {'word': 'shed'}), ('append', {'line': 'painted'}),
                     ('fail', {})], calls


def test_a_server_down_at_start_leaves_the_others_tools(server) -> None:
    url, calls = server
    down = f'http://127.0.0.1:{free_port()}/mcp'
    toml = (f'[mcp.test]\nurl = "{url}"\ntoken_env = "MCP_TEST_TOKEN"\n'
            f'[mcp.down]\nurl = "{down}"\n')
    task, requests = _run(toml, [
        {'tool_calls': [_call('test__lookup', {'word': 'shed'})]},
        {'text': 'Done.'},
    ])
    assert task['status']['state'] == 'TASK_STATE_COMPLETED', task
    names = {t['name'] for t in requests[0]['tools']}
    assert 'test__lookup' in names and not any(n.startswith('down__') for n in names)
    assert 'unavailable' in requests[0]['system'] and 'down__*' in requests[0]['system']


@pytest.mark.parametrize('tool,calls_after,says', [
    ('slow_append', 1, '[tool.outcome_unknown]'),
    ('slow_lookup', 2, 'looked up slowly'),
])
def test_a_crash_during_a_call(server, tool: str, calls_after: int, says: str) -> None:
    url, calls = server
    calls.clear()
    GATE.clear()
    work = Path(tempfile.mkdtemp(prefix='harness-mcp-crash-'))
    state = work / 'state'
    state.mkdir()
    log = work / 'requests.jsonl'
    script = work / 'script.json'
    arguments = {'line': 'painted'} if tool == 'slow_append' else {'word': 'shed'}
    script.write_text(json.dumps({'request_log': str(log), 'turns': [
        {'tool_calls': [{'name': f'test__{tool}', 'arguments': arguments}]},
        {'text': 'Done.'},
    ]}))
    servers = work / 'mcp.toml'
    servers.write_text(f'[mcp.test]\nurl = "{url}"\ntoken_env = "MCP_TEST_TOKEN"\n')
    args = ['--agent', 'llm', '--model', f'scripted:{script}', '--mcp', str(servers)]
    with run_harness(args, state_dir=state, MCP_TEST_TOKEN=TOKEN) as harness:
        sent = _rpc(harness, 'SendMessage', {
            'message': {'messageId': str(uuid.uuid4()), 'role': 'ROLE_USER',
                        'parts': [{'text': 'Use the tool'}]},
            'configuration': {'returnImmediately': True}})
        task_id = sent['result']['task']['id']
        deadline = time.monotonic() + WAIT_S
        while not calls:
            assert time.monotonic() < deadline, 'the tool was never called'
            time.sleep(0.02)
        harness.process.kill()
        harness.process.wait()
    GATE.set()
    with run_harness(args, state_dir=state, MCP_TEST_TOKEN=TOKEN) as harness:
        deadline = time.monotonic() + WAIT_S
        while True:
            task = _rpc(harness, 'GetTask', {'id': task_id})['result']
            if task['status']['state'] == 'TASK_STATE_COMPLETED':
                break
            assert time.monotonic() < deadline, task
            time.sleep(0.1)
    assert [c[0] for c in calls] == [tool] * calls_after, calls
    requests = [json.loads(line) for line in log.read_text().splitlines() if line]
    last = [r for r in requests if r['turn'] == 1][-1]
    result = [m for m in last['messages'] if m.get('role') == 'tool'][-1]
    assert says in result['content'], result
