"""The probe MCP server of the `mcp` tests (tests/it/mcp_python_servers.rs).

Written with the official Python SDK (`mcp`, pinned in requirements.txt)
and run over stdio, it answers what the pinned npm servers do not: an image
result, a result given only as `structuredContent` under an `outputSchema`,
progress notifications, a call that stays silent, a tool error, its own
process id (to see a restart), a process that exits in the middle of a
call, and a tool list that changes (`notifications/tools/list_changed`).

Run: `tests/mcp-servers/.venv/bin/python tests/mcp-servers/probe_server.py
[MARKER...]`. The arguments are ignored: a test passes a marker of its own,
to find the process by its command line.
"""

import os
from typing import Annotated

import anyio
from mcp.server.lowlevel.server import NotificationOptions
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.stdio import stdio_server
from mcp.types import CallToolResult, ImageContent
from pydantic import BaseModel

# A 1x1 opaque red PNG; the tests compare the image part with it byte for byte.
RED_PIXEL_PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR42mP4z8AAAAMBAQD3A0FDAAAAAElFTkSuQmCC"

server = MCPServer("agent-loop-probe", version="1.0.0")


def text_tool(description: str):
    """Registers a tool that answers text only: without `structured_output=False`
    the SDK lists an `outputSchema` for a `str` result and sends a
    `{"result": ...}` copy of the text as structured content."""
    return server.tool(description=description, structured_output=False)


@server.tool(description="A 1x1 red PNG, as an image content block.")
def image() -> ImageContent:
    return ImageContent(type="image", data=RED_PIXEL_PNG, mime_type="image/png")


class Sum(BaseModel):
    a: int
    b: int
    sum: int


# `Annotated[CallToolResult, Sum]`: the SDK lists `Sum`'s schema as the
# `outputSchema` and checks the result against it, but sends the result as
# built, so the answer has `structuredContent` and no text block.
@server.tool(description="Adds two integers; the answer is structured content only.")
def add(a: int, b: int) -> Annotated[CallToolResult, Sum]:
    total = Sum(a=a, b=b, sum=a + b)
    return CallToolResult(content=[], structured_content=total.model_dump())


@text_tool("Reports progress every `interval_s` seconds, `steps` times, then answers.")
async def progress(steps: int, interval_s: float, ctx: Context) -> str:
    for step in range(1, steps + 1):
        await anyio.sleep(interval_s)
        await ctx.report_progress(step, steps, f"step {step}")
    return f"done after {steps} steps"


@text_tool("Answers after `seconds` seconds, without any progress meanwhile.")
async def sleep(seconds: float) -> str:
    await anyio.sleep(seconds)
    return f"slept {seconds} s"


# The SDK answers a `ToolError` with an `isError: true` result whose text is
# "Error executing tool fail: <message>"; any other exception, a crash to it,
# with "Error executing tool fail" alone, keeping the message on the server.
@text_tool("Raises an error with `message`.")
def fail(message: str) -> str:
    raise ToolError(message)


@text_tool("This server's process id.")
def pid() -> str:
    return str(os.getpid())


@text_tool("Exits the process in the middle of the call, without answering.")
def crash() -> str:
    os._exit(1)


@text_tool("Adds a tool `name` answering `I am <name>`, and says the list changed.")
async def add_tool(name: str, ctx: Context) -> str:
    def added() -> str:
        return f"I am {name}"

    server.add_tool(added, name=name, description=f"Answers `I am {name}`.", structured_output=False)
    await ctx.session.send_tool_list_changed()
    # The client reads the notification before this answer; a moment more
    # lets its handler (a task of its own) count it before the turn goes on.
    await anyio.sleep(0.05)
    return f"added {name}"


@text_tool("Removes the tool `name`, and says the list changed.")
async def remove_tool(name: str, ctx: Context) -> str:
    server.remove_tool(name)
    await ctx.session.send_tool_list_changed()
    await anyio.sleep(0.05)
    return f"removed {name}"


async def main() -> None:
    # `MCPServer.run_stdio_async` declares no `listChanged` (the SDK's
    # capabilities come from the `NotificationOptions` given to its
    # low-level server), so this server runs that server itself, saying
    # that its tool list may change.
    lowlevel = server._lowlevel_server
    options = lowlevel.create_initialization_options(NotificationOptions(tools_changed=True))
    async with stdio_server() as (read_stream, write_stream):
        await lowlevel.run(read_stream, write_stream, options)


if __name__ == "__main__":
    anyio.run(main)
