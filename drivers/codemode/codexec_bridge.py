# Code mode for python: the async API call_mcp_tool, discover_mcp_tools, search_tools,
# get_tool_schema and llm (ask, think), talking to codexec's bridge over the run's (or session's)
# Unix socket (CODEXEC_BRIDGE_SOCKET) with its token (CODEXEC_BRIDGE_TOKEN). install() puts it in
# builtins and as `import codexec`; run_python.py (one-shot runs) and python_driver.py (sessions)
# call it; a warm driver (warm_python.py) loads it on the first use of its stand-ins and passes the
# socket and token with configure(). asyncio, socket and threading are imported on the first call:
# a run that never calls pays for none of them.
import builtins
import json
import os
import sys
import types

_path = os.environ.pop("CODEXEC_BRIDGE_SOCKET", None)
_token = os.environ.pop("CODEXEC_BRIDGE_TOKEN", None)
_lock = None
_state = {"socket": None, "file": None, "id": 0}


def configure(path, token):
    """The channel to use (a warm driver took it from its environment before the program ran)."""
    global _path, _token
    _path, _token = path, token


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
            import socket

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


def _in_thread(method, params):
    """The request on a worker thread, so that the program's event loop keeps turning."""
    global _lock
    import asyncio

    if _lock is None:
        import threading

        _lock = threading.Lock()
    return asyncio.to_thread(_request, method, params)


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
    return _value(name, await _in_thread("call", {"name": name, "args": args or {}}))


async def discover_mcp_tools(search=None):
    return await _in_thread("discover", {} if search is None else {"search": search})


async def search_tools(query, limit=10):
    return await _in_thread("search", {"query": query, "limit": limit})


async def get_tool_schema(name):
    return await _in_thread("schema", {"name": name})


class _LLM:
    """The client's model, through codexec (enable_sampling): a prompt in, its text out."""

    async def ask(self, prompt):
        return await _in_thread("sample", {"messages": [{"role": "user", "content": str(prompt)}]})

    async def think(self, messages, system_prompt=None, max_tokens=None):
        params = {"messages": messages}
        if system_prompt is not None:
            params["systemPrompt"] = system_prompt
        if max_tokens is not None:
            params["maxTokens"] = max_tokens
        return await _in_thread("sample", params)


llm = _LLM()


def install():
    """The API as builtins and as the module `codexec`."""
    api = types.ModuleType("codexec")
    for function in (call_mcp_tool, discover_mcp_tools, search_tools, get_tool_schema):
        setattr(builtins, function.__name__, function)
        setattr(api, function.__name__, function)
    builtins.llm = llm
    api.llm = llm
    api.BridgeError = BridgeError
    sys.modules["codexec"] = api
