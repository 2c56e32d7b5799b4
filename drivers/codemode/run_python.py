# Code mode for python runs: runs the program (argv[1], with its arguments) as __main__ with the
# async builtins call_mcp_tool, discover_mcp_tools, search_tools, get_tool_schema and llm (ask,
# think) (also as `import codexec`), and top-level `await` allowed. They talk to codexec's bridge over the run's
# Unix socket (CODEXEC_BRIDGE_SOCKET) with the run's token (CODEXEC_BRIDGE_TOKEN).
import ast
import asyncio
import builtins
import inspect
import json
import os
import socket
import sys
import threading
import traceback
import types

_path = os.environ.pop("CODEXEC_BRIDGE_SOCKET", None)
_token = os.environ.pop("CODEXEC_BRIDGE_TOKEN", None)
_lock = threading.Lock()
_state = {"socket": None, "file": None, "id": 0}


class BridgeError(Exception):
    """A code-mode call that failed; `code` says how (TOOL_NOT_ALLOWED, TOOL_NOT_FOUND, …)."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


def _request(method, params):
    if not _path or not _token:
        raise BridgeError("NOT_AVAILABLE", "codexec bridge: this run was started without code mode")
    with _lock:
        if _state["socket"] is None:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.connect(_path)
            _state["socket"] = sock
            _state["file"] = sock.makefile("rwb")
            _state["file"].write((json.dumps({"token": _token}) + "\n").encode())
        _state["id"] += 1
        ident = _state["id"]
        stream = _state["file"]
        stream.write((json.dumps({"id": ident, "method": method, "params": params}) + "\n").encode())
        stream.flush()
        line = stream.readline()
    if not line:
        raise BridgeError("NOT_AVAILABLE", "codexec bridge: the connection closed")
    message = json.loads(line)
    if message.get("error"):
        raise BridgeError(message["error"]["code"], message["error"]["message"])
    return message["result"]


def _value(name, outcome):
    texts = [item.get("text", "") for item in outcome["content"] if item.get("type") == "text"]
    if outcome.get("isError"):
        raise BridgeError("TOOL_ERROR", f"{name} failed: " + "\n".join(texts))
    if "structuredContent" in outcome:
        return outcome["structuredContent"]
    if len(texts) == 1 and len(outcome["content"]) == 1:
        try:
            return json.loads(texts[0])
        except ValueError:
            return texts[0]
    return outcome["content"]


async def call_mcp_tool(name, args=None):
    return _value(name, await asyncio.to_thread(_request, "call", {"name": name, "args": args or {}}))


async def discover_mcp_tools(search=None):
    return await asyncio.to_thread(_request, "discover", {} if search is None else {"search": search})


async def search_tools(query, limit=10):
    return await asyncio.to_thread(_request, "search", {"query": query, "limit": limit})


async def get_tool_schema(name):
    return await asyncio.to_thread(_request, "schema", {"name": name})


class _LLM:
    """The client's model, through codexec (enable_sampling): a prompt in, its text out."""

    async def ask(self, prompt):
        return await asyncio.to_thread(_request, "sample", {"messages": [{"role": "user", "content": str(prompt)}]})

    async def think(self, messages, system_prompt=None, max_tokens=None):
        params = {"messages": messages}
        if system_prompt is not None:
            params["systemPrompt"] = system_prompt
        if max_tokens is not None:
            params["maxTokens"] = max_tokens
        return await asyncio.to_thread(_request, "sample", params)


llm = _LLM()


def _main():
    script, *args = sys.argv[1:]
    api = types.ModuleType("codexec")
    for function in (call_mcp_tool, discover_mcp_tools, search_tools, get_tool_schema):
        setattr(builtins, function.__name__, function)
        setattr(api, function.__name__, function)
    builtins.llm = llm
    api.llm = llm
    api.BridgeError = BridgeError
    sys.modules["codexec"] = api
    sys.argv = [script, *args]
    sys.path[0] = os.path.dirname(script)
    main = types.ModuleType("__main__")
    main.__file__ = script
    main.__builtins__ = builtins
    sys.modules["__main__"] = main
    with open(script, "rb") as source:
        code = compile(source.read(), script, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True)
    try:
        if code.co_flags & inspect.CO_COROUTINE:
            asyncio.run(eval(code, main.__dict__))
        else:
            exec(code, main.__dict__)
    except SystemExit:
        raise
    except BaseException as error:  # the program's own traceback, without this runner's frame
        traceback.print_exception(type(error), error, error.__traceback__.tb_next)
        sys.exit(1)


_main()
