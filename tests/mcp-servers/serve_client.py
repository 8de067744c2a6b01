"""An MCP client of the official Python SDK, for tests/it/serve_mcp.rs: it
connects to the streamable-HTTP URL given as the first argument, lists the
tools, makes the calls given as a JSON list of [name, arguments] in the
second argument, and prints one JSON object: the tool names, and each
call's isError and text (its text contents joined)."""

import asyncio
import json
import sys

from mcp import Client


async def main(url: str, calls: list) -> None:
    async with Client(url) as client:
        listed = await client.list_tools()
        results = []
        for name, arguments in calls:
            result = await client.call_tool(name, arguments)
            text = "".join(
                block.text for block in result.content if getattr(block, "type", "") == "text"
            )
            results.append({"isError": bool(result.is_error), "text": text})
        print(json.dumps({"tools": [tool.name for tool in listed.tools], "results": results}))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], json.loads(sys.argv[2])))
