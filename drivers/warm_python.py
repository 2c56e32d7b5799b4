# Warm-pool driver: a pre-started Python that waits for one program, runs it as __main__ exactly
# like `python script.py args`, and exits. Used once, then discarded: no state outlives the run.
# Protocol on fd 3: the script path and its arguments, NUL-separated, then end of file.
import os
import sys


def _run(os=os, sys=sys):
    data = b""
    while True:
        chunk = os.read(3, 65536)
        if not chunk:
            break
        data += chunk
    os.close(3)
    if not data:
        return  # the pool shut down without a job
    script, *args = [part.decode("utf-8", "surrogateescape") for part in data.split(b"\0")]
    sys.argv = [script, *args]
    sys.path[0] = os.path.dirname(script)
    with open(script, "rb") as source:
        code = compile(source.read(), script, "exec")
    # The program gets a pristine __main__: none of this driver's names.
    namespace = vars(sys.modules["__main__"])
    for name in [n for n in namespace if n not in ("__name__", "__builtins__")]:
        del namespace[name]
    namespace.update(__file__=script, __doc__=None, __package__=None, __spec__=None, __loader__=None)
    try:
        exec(code, namespace)
    except SystemExit:
        raise
    except BaseException as error:  # print as the interpreter would, without this driver's frame
        import traceback

        traceback.print_exception(type(error), error, error.__traceback__.tb_next)
        sys.stderr.flush()
        os._exit(130 if isinstance(error, KeyboardInterrupt) else 1)


_run()
