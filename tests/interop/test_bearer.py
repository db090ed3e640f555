"""The official a2a-sdk client against harness-local in `jwt` mode, on the three bindings.

The server verifies tokens signed by the key in its state directory, minted by
`harness-local token <participant>` (the flow in common/docs/identity.md). The client
learns from the card that a bearer token is required and adds it through the SDK's own
AuthInterceptor, from a credential store keyed by session, as an application would
(over gRPC the SDK sends it as `authorization` metadata).
"""

from __future__ import annotations

import subprocess

from collections.abc import AsyncIterator, Iterator

import httpx
import pytest

from a2a.client import A2ACardResolver, Client, ClientCallContext, ClientConfig, create_client
from a2a.client.auth.credentials import InMemoryContextCredentialStore
from a2a.client.auth.interceptor import AuthInterceptor
from a2a.types import TaskState

from conftest import HarnessServer, grpc_channel, harness_binary, run_harness
from test_a2a_sdk import send_request, user_message

TASK_KEY = 'io.github.madarauchiha-314.tiny-harness/task'
SESSION = 'alice-session'


@pytest.fixture(scope='module')
def jwt_server() -> Iterator[HarnessServer]:
    with run_harness(['--auth', 'jwt']) as server:
        yield server


def mint(server: HarnessServer, participant: str) -> str:
    """`harness-local token <participant>` on the server's state directory."""
    out = subprocess.run(
        [str(harness_binary()), 'token', participant, '--state-dir', str(server.state_dir)],
        check=True, capture_output=True, text=True, timeout=30,
    )
    token = out.stdout.strip()
    assert token.count('.') == 2, out.stdout
    assert 'Authorization: Bearer' in out.stderr, out.stderr
    return token


@pytest.fixture  # over each of conftest's BINDINGS
async def authed(jwt_server: HarnessServer, binding: str) -> AsyncIterator[Client]:
    store = InMemoryContextCredentialStore()
    await store.set_credentials(SESSION, 'bearer', mint(jwt_server, 'alice'))
    async with httpx.AsyncClient(timeout=30) as h:
        config = ClientConfig(supported_protocol_bindings=[binding], httpx_client=h,
                              streaming=False, grpc_channel_factory=grpc_channel)
        client = await create_client(jwt_server.base_url, client_config=config,
                                     interceptors=[AuthInterceptor(store)])
        try:
            yield client
        finally:
            await client.close()


async def test_the_card_asks_for_a_bearer_jwt(jwt_server: HarnessServer):
    async with httpx.AsyncClient(timeout=10) as h:
        card = await A2ACardResolver(h, jwt_server.base_url).get_agent_card()
    scheme = card.security_schemes['bearer'].http_auth_security_scheme
    assert (scheme.scheme, scheme.bearer_format) == ('Bearer', 'JWT')
    assert [list(r.schemes) for r in card.security_requirements] == [['bearer']]


async def test_the_sdk_client_completes_a_task_with_a_bearer_token(authed: Client):
    context = ClientCallContext(state={'sessionId': SESSION})
    events = [e async for e in authed.send_message(
        send_request(user_message('tck-complete-task')), context=context)]
    assert len(events) == 1
    task = events[0].task
    assert task.status.state == TaskState.TASK_STATE_COMPLETED
    # The token's subject is the task's reporter.
    participants = task.metadata[TASK_KEY]['participants']
    assert participants[0]['id'] == 'alice', participants
    assert participants[0]['role'] == 'reporter', participants


async def test_without_the_token_the_sdk_client_is_refused(authed: Client, binding: str):
    # No session: the interceptor has no credential to add.
    with pytest.raises(Exception) as refused:
        async for _ in authed.send_message(send_request(user_message('tck-complete-task'))):
            pass
    expected = 'UNAUTHENTICATED' if binding == 'GRPC' else '401'
    assert expected in str(refused.value), repr(refused.value)
