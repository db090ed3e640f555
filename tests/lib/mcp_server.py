"""A test MCP server: the official Python MCP SDK's FastMCP over Streamable HTTP, served by
uvicorn on a free loopback port in a thread, behind a bearer-token check. Shared by the
interop suite (harness-local) and the cargo lambda watch suite (the resume function)."""

from __future__ import annotations

import socket
import threading
import time

from collections.abc import Iterator
from contextlib import contextmanager

import uvicorn

from mcp.server.fastmcp import FastMCP
from mcp.server.transport_security import TransportSecuritySettings


def free_port() -> int:
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def fastmcp(name: str) -> FastMCP:
    """A FastMCP server that accepts any Host header (the tests reach it on 127.0.0.1)."""
    return FastMCP(name, transport_security=TransportSecuritySettings(
        enable_dns_rebinding_protection=False))


class RequireToken:
    """Refuses HTTP requests without the bearer token; lets the lifespan through."""

    def __init__(self, app, token: str):
        self.app = app
        self.token = f'Bearer {token}'.encode()

    async def __call__(self, scope, receive, send):
        if scope['type'] == 'http':
            if dict(scope['headers']).get(b'authorization', b'') != self.token:
                await send({'type': 'http.response.start', 'status': 401,
                            'headers': [(b'content-type', b'text/plain')]})
                await send({'type': 'http.response.body', 'body': b'unauthorized'})
                return
        await self.app(scope, receive, send)


@contextmanager
def serve(mcp: FastMCP, token: str) -> Iterator[str]:
    """Serves `mcp` until the block ends; yields its Streamable HTTP URL."""
    port = free_port()
    app = RequireToken(mcp.streamable_http_app(), token)
    srv = uvicorn.Server(uvicorn.Config(app, host='127.0.0.1', port=port,
                                        log_level='warning', access_log=False))
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not srv.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError('the MCP server did not start')
        time.sleep(0.05)
    try:
        yield f'http://127.0.0.1:{port}/mcp'
    finally:
        srv.should_exit = True
        thread.join(10)
