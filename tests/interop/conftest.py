"""Fixtures for the a2a-sdk interop suite.

A session fixture starts the harness-local binary on a free loopback port
with the conformance agent, waits for its agent card, and stops it at the
end. Every test is parametrized over the three bindings the card advertises
('JSONRPC', 'HTTP+JSON' and 'GRPC') through the ``binding`` fixture. Over gRPC the
client's channel records each call's outcome (the response message, or the status with
its google.rpc.Status details) as the HTTP bindings record their JSON bodies.

Binary lookup: $HARNESS_BIN, else $CARGO_TARGET_DIR/debug/harness-local with
CARGO_TARGET_DIR defaulting to $HOME/.cache/harness/target.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request

from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import httpx
import pytest

from google.protobuf import json_format
from google.protobuf.message import Message as ProtoMessage
from google.rpc import error_details_pb2, status_pb2  # noqa: F401 - registers ErrorInfo's type
from a2a.client import Client, ClientConfig, create_client
from a2a.client.transports.grpc import GrpcTransport
from a2a.client.transports.jsonrpc import JsonRpcTransport
from a2a.client.transports.rest import RestTransport
from a2a.utils.grpc_status import status_from_call


# The HTTP bindings; the other clients of the suite (JS, the Rust CLI) speak only these.
HTTP_BINDINGS = ['JSONRPC', 'HTTP+JSON']
BINDINGS = [*HTTP_BINDINGS, 'GRPC']
TRANSPORTS = {'JSONRPC': JsonRpcTransport, 'HTTP+JSON': RestTransport, 'GRPC': GrpcTransport}
READY_TIMEOUT_S = 20.0
HTTP_TIMEOUT_S = 30.0


def harness_binary() -> Path:
    explicit = os.environ.get('HARNESS_BIN')
    if explicit:
        return Path(explicit)
    target = os.environ.get('CARGO_TARGET_DIR') or str(
        Path.home() / '.cache' / 'harness' / 'target'
    )
    return Path(target) / 'debug' / 'harness-local'


def _free_loopback_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def _tail(path: Path, n: int = 60) -> str:
    try:
        return '\n'.join(path.read_text(errors='replace').splitlines()[-n:])
    except OSError:
        return '<no log>'


@dataclass
class HarnessServer:
    base_url: str  # 'http://127.0.0.1:<port>/'
    port: int
    state_dir: Path
    log_path: Path
    process: subprocess.Popen


@contextlib.contextmanager
def run_harness(extra_args: list[str], state_dir: Path | None = None,
                **settings: str) -> Iterator[HarnessServer]:
    """harness-local with the conformance agent (unless `extra_args` name another) on a
    free loopback port and a fresh state directory, `extra_args` and `settings` (environment variables) added; stopped
    on exit."""
    binary = harness_binary()
    if not binary.is_file() or not os.access(binary, os.X_OK):
        pytest.fail(
            f'harness-local binary not found at {binary} '
            '(set HARNESS_BIN or build it into $CARGO_TARGET_DIR/debug)',
            pytrace=False,
        )

    workdir = Path(tempfile.mkdtemp(prefix='harness-interop-'))
    if state_dir is None:
        # A fresh store, unless the test restarts a harness on its own.
        state_dir = workdir / 'state'
        state_dir.mkdir()
    log_path = workdir / 'server.log'
    port = _free_loopback_port()
    listen = f'127.0.0.1:{port}'

    env = dict(os.environ)
    # Settings that would point the card elsewhere, gate every call or change identity.
    for name in ('HARNESS_PUBLIC_URL', 'HARNESS_REQUIRED_EXTENSIONS', 'HARNESS_AUTH',
                 'HARNESS_JWKS_URL', 'HARNESS_DEFAULT_PARTICIPANT'):
        env.pop(name, None)
    env.update(
        HARNESS_LISTEN=listen,
        HARNESS_STATE_DIR=str(state_dir),
        HARNESS_RATE_LIMIT_PER_MINUTE='100000',
        **settings,
    )
    env.setdefault('RUST_LOG', 'info')
    cmd = [
        str(binary),
        '--listen', listen,
        '--state-dir', str(state_dir),
        *([] if '--agent' in extra_args else ['--agent', 'conformance']),
        '--rate-limit-per-minute', '100000',
        *extra_args,
    ]
    log_file = open(log_path, 'wb')  # noqa: SIM115 - closed in teardown
    proc = subprocess.Popen(
        cmd, env=env, stdout=log_file, stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
    )

    base_url = f'http://{listen}/'
    card_url = f'http://{listen}/.well-known/agent-card.json'
    deadline = time.monotonic() + READY_TIMEOUT_S
    last_err: object = None
    ready = False
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            break
        try:
            with urllib.request.urlopen(card_url, timeout=2) as resp:
                if resp.status == 200:
                    ready = True
                    break
                last_err = f'HTTP {resp.status}'
        except (urllib.error.URLError, ConnectionError, OSError) as e:
            last_err = e
        time.sleep(0.1)

    if not ready:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        log_file.close()
        pytest.fail(
            f'harness-local did not serve {card_url} within '
            f'{READY_TIMEOUT_S:.0f}s (exit={proc.returncode}, '
            f'last error={last_err!r})\ncommand: {" ".join(cmd)}\n'
            f'--- server log tail ---\n{_tail(log_path)}',
            pytrace=False,
        )

    server = HarnessServer(base_url, port, state_dir, log_path, proc)
    try:
        yield server
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        log_file.close()


@pytest.fixture(scope='session')
def harness_server() -> Iterator[HarnessServer]:
    # The protocol suite sends no identity: it stands for one participant.
    with run_harness([], HARNESS_DEFAULT_PARTICIPANT='anonymous') as server:
        yield server


@pytest.fixture(scope='session')
def base_url(harness_server: HarnessServer) -> str:
    return harness_server.base_url


@pytest.fixture(params=BINDINGS)
def binding(request: pytest.FixtureRequest) -> str:
    return request.param


@dataclass
class WireRecord:
    method: str
    url: str
    status: int | grpc.StatusCode  # the HTTP status, or the gRPC status code
    content_type: str
    request_json: Any
    body: Any  # parsed JSON body, or None if not JSON; over gRPC the response as ProtoJSON
    # gRPC only: the response message, and the google.rpc.Status of a failed call.
    message: ProtoMessage | None = None
    rpc_status: status_pb2.Status | None = None


@dataclass
class Wire:
    """Non-streaming HTTP exchanges seen by the SDK client (JSON bodies); over gRPC the
    unary calls and the streams that failed."""

    records: list[WireRecord] = field(default_factory=list)

    def last(self) -> WireRecord:
        assert self.records, 'no HTTP exchange was recorded'
        return self.records[-1]


def _make_httpx_client(wire: Wire) -> httpx.AsyncClient:
    async def on_response(response: httpx.Response) -> None:
        ctype = response.headers.get('content-type', '')
        if 'text/event-stream' in ctype:
            return  # reading here would consume the stream
        await response.aread()
        try:
            body = json.loads(response.content) if response.content else None
        except ValueError:
            body = None
        try:
            req_json = json.loads(response.request.content or b'null')
        except ValueError:
            req_json = None
        wire.records.append(
            WireRecord(
                method=response.request.method,
                url=str(response.request.url),
                status=response.status_code,
                content_type=ctype,
                request_json=req_json,
                body=body,
            )
        )

    return httpx.AsyncClient(
        timeout=HTTP_TIMEOUT_S, event_hooks={'response': [on_response]}
    )


def grpc_target(url: str) -> str:
    """The card's GRPC interface URL ('http://127.0.0.1:PORT') as a gRPC target."""
    scheme, sep, rest = url.partition('://')
    assert sep and scheme == 'http', f'a plaintext interface URL is expected, got {url}'
    return rest.rstrip('/')


def grpc_channel(url: str) -> grpc.aio.Channel:
    """ClientConfig.grpc_channel_factory: a plaintext channel to the card's GRPC URL."""
    return grpc.aio.insecure_channel(grpc_target(url))


class _GrpcRecorder:
    """Records unary calls and failed streams on the wire, as the httpx hook records
    JSON responses (a stream that fails before its first event is the gRPC form of an
    error response)."""

    def __init__(self, wire: Wire, target: str):
        self.wire = wire
        self.target = target

    def record(self, details, request, code: grpc.StatusCode,
               message: ProtoMessage | None = None,
               status: status_pb2.Status | None = None) -> None:
        method = details.method.decode() if isinstance(details.method, bytes) else details.method
        body = None
        if message is not None:
            # Every field, defaults included: proto3 has no absent field to tell apart.
            body = json_format.MessageToDict(message, always_print_fields_with_no_presence=True)
        self.wire.records.append(WireRecord(
            method=method, url=self.target, status=code, content_type='application/grpc',
            request_json=json_format.MessageToDict(request), body=body, message=message,
            rpc_status=status,
        ))

    def interceptors(self) -> list[grpc.aio.ClientInterceptor]:
        # One object per kind: the channel files an interceptor under its first kind only.
        return [_RecordUnary(self), _RecordStream(self)]


class _RecordUnary(grpc.aio.UnaryUnaryClientInterceptor):
    def __init__(self, recorder: _GrpcRecorder):
        self.recorder = recorder

    async def intercept_unary_unary(self, continuation, details, request):
        call = await continuation(details, request)
        try:
            response = await call
        except grpc.aio.AioRpcError as e:
            self.recorder.record(details, request, e.code(), status=status_from_call(e))
        else:
            self.recorder.record(details, request, grpc.StatusCode.OK, message=response)
        return call


class _RecordStream(grpc.aio.UnaryStreamClientInterceptor):
    def __init__(self, recorder: _GrpcRecorder):
        self.recorder = recorder

    async def intercept_unary_stream(self, continuation, details, request):
        call = await continuation(details, request)

        async def events():
            try:
                async for event in call:
                    yield event
            except grpc.aio.AioRpcError as e:
                self.recorder.record(details, request, e.code(), status=status_from_call(e))
                raise

        return events()


class ClientMaker:
    """Builds SDK clients bound to one protocol binding."""

    def __init__(self, base_url: str, binding: str):
        self.base_url = base_url
        self.binding = binding
        self.wire = Wire()
        self._httpx: list[httpx.AsyncClient] = []
        self._clients: list[Client] = []

    async def __call__(self, *, streaming: bool) -> Client:
        httpx_client = _make_httpx_client(self.wire)
        self._httpx.append(httpx_client)

        def recorded_channel(url: str) -> grpc.aio.Channel:
            target = grpc_target(url)
            recorder = _GrpcRecorder(self.wire, target)
            return grpc.aio.insecure_channel(target, interceptors=recorder.interceptors())

        config = ClientConfig(
            supported_protocol_bindings=[self.binding],
            streaming=streaming,
            httpx_client=httpx_client,
            grpc_channel_factory=recorded_channel,
        )
        client = await create_client(self.base_url, client_config=config)
        self._clients.append(client)
        # Make sure the parametrization is real: the factory picked the
        # transport of the binding we asked for.
        transport = getattr(client, '_transport', None)
        while hasattr(transport, '_base'):  # e.g. TenantTransportDecorator
            transport = transport._base
        expected = TRANSPORTS[self.binding]
        assert isinstance(transport, expected), (
            f'asked for {self.binding}, SDK chose {type(transport).__name__}'
        )
        return client

    async def aclose(self) -> None:
        for c in self._clients:
            try:
                await c.close()
            except Exception:  # noqa: BLE001
                pass
        for h in self._httpx:
            await h.aclose()


@pytest.fixture
async def make_client(base_url: str, binding: str) -> AsyncIterator[ClientMaker]:
    maker = ClientMaker(base_url, binding)
    try:
        yield maker
    finally:
        await maker.aclose()


@pytest.fixture
async def client(make_client: ClientMaker) -> Client:
    """Non-streaming client: send_message uses SendMessage / message:send."""
    return await make_client(streaming=False)


@pytest.fixture
async def streaming_client(make_client: ClientMaker) -> Client:
    """Streaming client: send_message uses SendStreamingMessage / message:stream."""
    return await make_client(streaming=True)


@pytest.fixture
def wire(make_client: ClientMaker) -> Wire:
    return make_client.wire
