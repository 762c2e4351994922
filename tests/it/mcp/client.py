"""A real MCP client (the official Python SDK, `mcp`) that tests/it/mcp.rs
drives: it starts the server given on its command line over stdio, then
answers one JSON request per stdin line with one JSON line on stdout:

  {"op": "tools"}                              -> {"tools": [{"name", "description", "input_schema"}]}
  {"op": "call", "tool": T, "args": {...}}     -> {"is_error", "structured", "text"}
  {"op": "resources"}                          -> {"resources": [{"uri", "name", "mime_type"}]}
  {"op": "read", "uri": U}                     -> {"contents": [{"uri", "mime_type", "text"}]}

Any failure of the SDK itself is answered as {"exception": "..."}.
Usage: python client.py <server program> [server args...]
"""

import asyncio
import json
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


def dump(model):
    return model.model_dump(mode="json", by_alias=False, exclude_none=True)


async def answer(session, req):
    op = req["op"]
    if op == "tools":
        result = await session.list_tools()
        return {"tools": [
            {"name": t.name, "description": t.description, "input_schema": t.input_schema}
            for t in result.tools
        ]}
    if op == "call":
        result = await session.call_tool(req["tool"], req.get("args", {}))
        texts = [c.text for c in result.content if getattr(c, "type", None) == "text"]
        return {
            "is_error": bool(result.is_error),
            "structured": result.structured_content,
            "text": "\n".join(texts),
        }
    if op == "resources":
        result = await session.list_resources()
        return {"resources": [
            {"uri": str(r.uri), "name": r.name, "mime_type": r.mime_type} for r in result.resources
        ]}
    if op == "read":
        result = await session.read_resource(req["uri"])
        return {"contents": [
            {"uri": str(c.uri), "mime_type": c.mime_type, "text": getattr(c, "text", None)}
            for c in result.contents
        ]}
    raise ValueError(f"unknown op {op!r}")


async def main():
    params = StdioServerParameters(command=sys.argv[1], args=sys.argv[2:])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            print(json.dumps({"ready": init.server_info.name}), flush=True)
            loop = asyncio.get_running_loop()
            while True:
                line = await loop.run_in_executor(None, sys.stdin.readline)
                if not line:
                    return
                if not line.strip():
                    continue
                try:
                    out = await answer(session, json.loads(line))
                except Exception as e:  # the test reads what went wrong
                    out = {"exception": f"{type(e).__name__}: {e}"}
                print(json.dumps(out), flush=True)


asyncio.run(main())
