# Code mode for one-shot python runs: runs the program (argv[1], with its arguments) as __main__
# with codexec_bridge's API installed (builtins and `import codexec`) and top-level `await` allowed.
import ast
import asyncio
import builtins
import inspect
import os
import sys
import traceback
import types

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import codexec_bridge  # noqa: E402  (from this directory; it takes the socket and token from the environment)

del sys.path[0]


def _main():
    script, *args = sys.argv[1:]
    codexec_bridge.install()
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
