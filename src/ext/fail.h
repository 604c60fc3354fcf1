/* tsx_fail: how the binding raises for anything but an engine status (those
 * go through convert.c's tsx_raise / tsx_raise_status). A bad argument, a
 * value of the wrong type, a module tree too deep, a broken invariant: the
 * check raises where it checks, through this one helper (its only caller of
 * PyErr_FormatV; tools/check_ext_layers.py refuses PyErr_SetString and
 * PyErr_Format anywhere else). Inline, so it adds no call between layers:
 * every file may use it. */
#ifndef TSX_FAIL_H
#define TSX_FAIL_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdarg.h>

/* Raises `type` with a message in PyUnicode_FromFormat's formats. Returns
 * NULL. */
static inline PyObject *
tsx_fail(PyObject *type, const char *format, ...)
{
    va_list args;
    va_start(args, format);
    PyErr_FormatV(type, format, args);
    va_end(args);
    return NULL;
}

#endif
