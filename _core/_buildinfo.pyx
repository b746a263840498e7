"""How this copy of the core was compiled (for ``malleo --version``)."""
import cython

cdef extern from *:
    """
    #ifndef MALLEO_DEBUG_DIRECTIVES
    #define MALLEO_DEBUG_DIRECTIVES 0
    #endif
    #ifndef MALLEO_COUNT
    #define MALLEO_COUNT 0
    #endif
    """
    int MALLEO_DEBUG_DIRECTIVES
    int MALLEO_COUNT


def is_compiled():
    """True: this module only exists as a compiled extension."""
    return cython.compiled


def debug_directives():
    """True when built with MALLEO_CYTHON_DEBUG=1 (boundscheck, initializedcheck on)."""
    return bool(MALLEO_DEBUG_DIRECTIVES)


BUILD_INFO = "compiled Cython core ({} directives{}, Cython {})".format(
    "debug" if MALLEO_DEBUG_DIRECTIVES else "release",
    ", kept-pass counters (MALLEO_COUNT=1)" if MALLEO_COUNT else "", cython.__version__
)
