"""The reference server the benchmark compares against: the official Python A2A server
(PyPI `a2a-sdk[http-server]==1.3.0`, the one the original harness sits on), built the way
its README and the SDK's own route factories build one, with an agent that completes every
task at once.

- JSON-RPC at `/`, HTTP+JSON routes, the well-known agent card; streaming on, push off.
- `DefaultRequestHandlerV2` with the in-memory task store (the SDK's fastest store).
- Served by uvicorn (one worker, its default event loop), as the SDK documents.

    python tests/bench/reference_server.py --port 9100

Prints `reference serving http://127.0.0.1:PORT` once it is listening.
"""

from __future__ import annotations

import argparse
import sys

import uvicorn
from starlette.applications import Starlette

from a2a.helpers.proto_helpers import new_task_from_user_message
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandlerV2
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes, create_rest_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill, Part


class CompleteAtOnce(AgentExecutor):
    """Every task: created, then completed with one text message, nothing else."""

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        task = context.current_task
        if task is None:
            task = new_task_from_user_message(context.message)
            await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        await updater.complete(updater.new_agent_message([Part(text='done')]))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        task = context.current_task
        if task is not None:
            await TaskUpdater(event_queue, task.id, task.context_id).cancel()


def card(url: str) -> AgentCard:
    return AgentCard(
        name='reference',
        description='a2a-sdk 1.3.0 reference server for benchmarks',
        version='1.0.0',
        supported_interfaces=[
            AgentInterface(url=url, protocol_binding='JSONRPC', protocol_version='1.0'),
            AgentInterface(url=url, protocol_binding='HTTP+JSON', protocol_version='1.0'),
        ],
        capabilities=AgentCapabilities(streaming=True, push_notifications=False),
        default_input_modes=['text/plain'],
        default_output_modes=['text/plain'],
        skills=[AgentSkill(id='complete', name='complete', description='completes every task at once',
                           tags=['bench'])],
    )


def app(url: str) -> Starlette:
    agent_card = card(url)
    handler = DefaultRequestHandlerV2(
        agent_executor=CompleteAtOnce(),
        task_store=InMemoryTaskStore(),
        agent_card=agent_card,
    )
    routes = [
        *create_agent_card_routes(agent_card),
        *create_jsonrpc_routes(handler, '/'),
        *create_rest_routes(handler),
    ]
    return Starlette(routes=routes)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    p.add_argument('--port', type=int, required=True)
    args = p.parse_args()
    url = f'http://127.0.0.1:{args.port}'
    config = uvicorn.Config(app(url), host='127.0.0.1', port=args.port, log_level='warning',
                            access_log=False)
    server = uvicorn.Server(config)
    print(f'reference serving {url}', flush=True)
    server.run()
    return 0


if __name__ == '__main__':
    sys.exit(main())
