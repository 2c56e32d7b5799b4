# Warm-pool driver: a pre-started Python that waits for one program, runs it as __main__ exactly
# like `python script.py args`, and exits. Used once, then discarded: no state outlives the run.
# Protocol on fd 3: the driver says "R\n" once warmed up; the server sends a header, "<bytes>
# <fields>\n", then the job: an end mark, the script path and its arguments, each ended by a NUL;
# the end mark goes on stdout and stderr after the program's last output. When the program is over
# (threads joined, atexit run, output flushed) the driver writes its exit status back as
# "<status>\n", so the server need not wait for the interpreter's teardown and the sandbox's exit;
# then it leaves without finalization once the channel ends (the server's half-close, or its kill
# of a sandbox it holds stopped: then the teardown comes after the result).
# Code mode (CODEXEC_BRIDGE_SOCKET and _TOKEN in the environment, taken out of it before the job):
# its API is put in builtins and as `import codexec` as stand-ins that load codemode/codexec_bridge.py
# on first use (which connects then), and the program may `await` at its top level.
import os
import sys


def _run(os=os, sys=sys, here=os.path.dirname(os.path.abspath(__file__))):
    # Everything the driver needs lives in this frame: the program's __main__ is emptied below.
    def main(script, namespace):
        """Run the program; its exit status as the interpreter would compute it."""
        try:
            with open(script, "rb") as source:
                code = compile(source.read(), script, "exec", flags)
            if code.co_flags & 0x80:  # CO_COROUTINE: a top-level await (code mode)
                import asyncio

                asyncio.run(eval(code, namespace))
            else:
                exec(code, namespace)
            return 0
        except SystemExit as stop:
            return exit_status(stop.code)
        except BaseException as error:  # reported as the interpreter would, minus the driver's frame
            error.__traceback__ = error.__traceback__.tb_next
            sys.excepthook(type(error), error, error.__traceback__)
            # Python dies of the signal itself after an unhandled ^C; the server reports it as 128+2.
            return 130 if isinstance(error, KeyboardInterrupt) else 1

    def exit_status(code):
        if code is None:
            return 0
        if isinstance(code, int):
            return code & 0xFF
        try:
            print(code, file=sys.stderr)
        except Exception:
            pass
        return 1

    def finalize(status):
        """What interpreter shutdown does that a program can see: join threads, atexit, flush."""
        threading = sys.modules.get("threading")
        if threading is not None:
            try:
                threading._shutdown()
            except BaseException:
                pass
        import atexit

        atexit._run_exitfuncs()
        for stream in (sys.stdout, sys.stderr):
            try:
                if stream is not None:
                    stream.flush()
            except Exception:
                status = 120  # as the interpreter does when flushing stdout fails at exit
        return status

    def code_mode(path, token):
        """Code mode's API as stand-ins: the first use of any loads the real one (codexec_bridge)."""
        import builtins
        import types

        loaded = []

        def load():
            if not loaded:
                sys.path.insert(0, os.path.join(here, "codemode"))
                try:
                    import codexec_bridge
                finally:
                    del sys.path[0]
                codexec_bridge.configure(path, token)
                codexec_bridge.install()  # the real API replaces the stand-ins where they were put
                loaded.append(codexec_bridge)
            return loaded[0]

        def stand_in(name):
            async def helper(*args, **kwargs):
                return await getattr(load(), name)(*args, **kwargs)

            helper.__name__ = helper.__qualname__ = name
            return helper

        class LLM:
            def __getattr__(self, name):
                return getattr(load().llm, name)

        api = types.ModuleType("codexec")
        api.__getattr__ = lambda name: getattr(load(), name)  # BridgeError, once asked for
        for name in ("call_mcp_tool", "discover_mcp_tools", "search_tools", "get_tool_schema"):
            setattr(builtins, name, stand_in(name))
            setattr(api, name, getattr(builtins, name))
        builtins.llm = api.llm = LLM()
        sys.modules["codexec"] = api

    import fcntl

    bridge = os.environ.pop("CODEXEC_BRIDGE_SOCKET", None), os.environ.pop("CODEXEC_BRIDGE_TOKEN", None)
    flags = 0
    if bridge[0] and bridge[1]:
        code_mode(*bridge)
        flags = 0x2000  # ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
    del bridge

    # The program gets a pristine __main__: none of this driver's names. Cleared now, and the steps
    # after the job rehearsed on dummies: the pages they write to are copied (copy-on-write, in a
    # fork of the zygote) before the job, not after it. The first compile() initialises the
    # compiler (~1 ms).
    namespace = vars(sys.modules["__main__"])
    for name in [n for n in namespace if n not in ("__name__", "__builtins__")]:
        del namespace[name]
    b"a\0b".split(b"\0")[1].decode("utf-8", "surrogateescape")
    sys.path[0] = sys.path[0] or os.path.dirname("")
    with open(os.devnull, "rb") as source:
        exec(compile(source.read(), "<warm-up>", "exec", flags), {})
    for stream in (sys.stdout, sys.stderr):
        if stream is not None:
            stream.write("")
            stream.flush()

    # Out of the program's way: a high, close-on-exec descriptor that its children never inherit.
    control = fcntl.fcntl(3, fcntl.F_DUPFD_CLOEXEC, 200)
    os.close(3)
    # The real stdout and stderr, whatever the program later does to fds 1 and 2: the end mark
    # goes there.
    outputs = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 201) for fd in (1, 2)]
    os.write(control, b"R\n")  # warmed up: waiting for the job
    # Read by its length: the server's half-close after it comes only once its event loop turns.
    data, size = b"", None
    while size is None or len(data) < size:
        chunk = os.read(control, 65536)
        if not chunk:
            return  # the pool shut down without a (whole) job
        data += chunk
        if size is None and b"\n" in data:
            head, data = data.split(b"\n", 1)
            size = int(head.split(b" ")[0])  # "<bytes> <fields>"
    end_mark, script, *args = data[:size].split(b"\0")[:-1]
    script, *args = [part.decode("utf-8", "surrogateescape") for part in (script, *args)]
    sys.argv = [script, *args]
    sys.path[0] = os.path.dirname(script)
    namespace.update(__file__=script, __doc__=None, __package__=None, __spec__=None, __loader__=None)
    leader = os.getpid()
    del fcntl, chunk, data, args
    status = finalize(main(script, namespace))
    if os.getpid() == leader:  # a fork of the program that finished the script only exits
        # Output is flushed: the end mark after it tells the server it has all of it. The marks and
        # the status go out back to back, so the server finds them all when it wakes up: on this
        # VM, with the server idle, a second wake-up cost ~0.7 ms (profiled). Closing the streams
        # then lets the server see their end without waiting for the interpreter's teardown.
        for fd in outputs:
            try:
                if end_mark:
                    os.write(fd, end_mark)
            except OSError:
                pass  # no mark: the server waits for the streams' end instead
        try:
            os.write(control, b"%d\n" % status)
            reported = True
        except OSError:
            reported = False  # the program closed our channel: the server waits for the exit
        for fd in (1, 2, *outputs):
            try:
                os.close(fd)
            except OSError:
                pass
        try:  # until the channel ends: the server's half-close, or its kill of the stopped sandbox
            while reported and os.read(control, 4096):
                pass
        except OSError:
            pass
    os._exit(status)


if __name__ == "__main__":
    _run()
