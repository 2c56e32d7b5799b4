# codexec's matplotlib backend (MPLBACKEND=module://codexec_figures): Agg, whose show() saves the
# open figures as PNG files in $CODEXEC_FIGURES_DIR and closes them, for the server to return as
# MCP image content. matplotlib loads it only once pyplot makes a figure: code that never imports
# matplotlib pays nothing. Figures still open when the program ends are saved too (atexit); a
# session's driver calls save_figures() after each send.
import atexit
import os

from matplotlib.backend_bases import FigureManagerBase
from matplotlib.backends.backend_agg import FigureCanvasAgg

FigureCanvas = FigureCanvasAgg
FigureManager = FigureManagerBase

_saved = 0


def save_figures():
    """Save every open pyplot figure to the figures directory, in the order made, and close it."""
    global _saved
    import sys

    pyplot = sys.modules.get("matplotlib.pyplot")
    folder = os.environ.get("CODEXEC_FIGURES_DIR")
    if pyplot is None or not folder:
        return
    numbers = pyplot.get_fignums()
    if not numbers:
        return
    os.makedirs(folder, exist_ok=True)
    for number in numbers:
        _saved += 1
        try:
            pyplot.figure(number).savefig(os.path.join(folder, "figure-%03d.png" % _saved), format="png")
        except Exception as error:  # one bad figure must not cost the others, nor the run
            print("codexec: could not save figure %d: %s" % (number, error), file=sys.stderr)
    pyplot.close("all")


def show(*args, **kwargs):
    save_figures()


atexit.register(save_figures)
