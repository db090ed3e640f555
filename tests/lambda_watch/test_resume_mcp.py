"""An MCP server's tool, called by the agent under `cargo lambda watch`, its bearer token
from the environment.

A FastMCP server (tests/lib/mcp_server.py, PyPI `mcp`) runs in this process behind a
bearer-token check. The functions get `HARNESS_MCP` (a TOML file naming the server with
`token_env = "MCP_TEST_TOKEN"`), the token in `MCP_TEST_TOKEN` and `HARNESS_WEBHOOK_ALLOW`
for loopback (the SSRF guard refuses it otherwise). A blocking SendMessage goes to the
send-message function, which in Lambda never runs the agent: it leaves the task runnable
and answers once the resume function, fed the table's stream by stream_tool.py, has driven
it; the resume function lists the server's tools at its cold start and calls the one the
scripted model asks for. The answer carries the completed task, the server logged the
call (it refuses any request without the token), the result reached the model's next
input inside the untrusted block, and the token is in neither the functions' log nor the
task's item.

Needs HARNESS_TEST_DYNAMODB_ENDPOINT (tests/run starts DynamoDB Local); skipped without it
unless HARNESS_TEST_REQUIRE_DYNAMODB is set.
"""

from __future__ import annotations

import json
import sys
import uuid

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from mcp.types import ToolAnnotations

from test_cargo_lambda_watch import COMPLETED, HEADERS, REQUEST_TIMEOUT_S, _dynamodb
from test_resume_help_reply import Llm, llm_deployment, send_while_streaming

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / 'lib'))
from mcp_server import fastmcp, serve  # noqa: E402


TOKEN = 'mcp-watch-token-7f3a'
TURNS = [
    {'tool_calls': [{'name': 'docs__lookup', 'arguments': {'word': 'shed'}}]},
    {'text': 'Looked it up.'},
]


@pytest.fixture(scope='module')
def server() -> Iterator[tuple[str, list[dict]]]:
    calls: list[dict] = []
    mcp = fastmcp('docs')

    @mcp.tool(annotations=ToolAnnotations(readOnlyHint=True))
    def lookup(word: str) -> str:
        """Looks a word up."""
        calls.append({'word': word})
        return f'{word}: a small wooden building'

    with serve(mcp, TOKEN) as url:
        yield url, calls


@pytest.fixture(scope='module')
def deployment(server, tmp_path_factory) -> Iterator[Llm]:
    url, _ = server
    servers = tmp_path_factory.mktemp('mcp') / 'mcp.toml'
    servers.write_text(f'[mcp.docs]\nurl = "{url}"\ntoken_env = "MCP_TEST_TOKEN"\n')
    with llm_deployment(TURNS, HARNESS_MCP=str(servers), MCP_TEST_TOKEN=TOKEN,
                        HARNESS_WEBHOOK_ALLOW='127.0.0.1/32') as d:
        yield d


def test_the_resume_function_calls_the_mcp_tool_with_the_token_from_the_environment(
    server, deployment: Llm,
) -> None:
    _, calls = server
    headers = {**HEADERS, 'X-Participant-Id': 'alice'}
    message = {'messageId': f'm-{uuid.uuid4()}', 'role': 'ROLE_USER',
               'parts': [{'text': 'What is a shed?'}]}
    with httpx.Client(base_url=deployment.watch.base, headers=headers,
                      timeout=REQUEST_TIMEOUT_S) as client:
        task, delivered = send_while_streaming(client, deployment, message)
    log = deployment.watch.log_tail(400)
    assert task['status']['state'] == COMPLETED, f'{task}\n{log}'
    assert delivered >= 1, 'the resume function drove it'
    # The server had the call, so the request carried the token (it refuses any without).
    assert calls == [{'word': 'shed'}], f'{calls}\n{log}'

    requests = deployment.requests()
    assert [r['turn'] for r in requests] == [0, 1], requests
    assert 'docs__lookup' in {t['name'] for t in requests[0]['tools']}
    results = [m for m in requests[1]['messages'] if m.get('role') == 'tool']
    assert len(results) == 1 and not results[0].get('is_error'), results
    assert results[0]['content'].startswith('<untrusted-'), results[0]
    assert 'shed: a small wooden building' in results[0]['content'], results[0]

    # The token reached the server and nowhere else: not the log, not the stored task.
    item = _dynamodb(deployment.endpoint, 'GetItem', {
        'TableName': deployment.table,
        'Key': {'pk': {'S': f'TASK#{task["id"]}'}, 'sk': {'S': 'TASK'}}})
    assert item.get('Item'), item
    assert TOKEN not in json.dumps(item)
    assert TOKEN not in deployment.watch.log.read_text(errors='replace')
