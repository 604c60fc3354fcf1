/* torchscan._engine: the module definition (multi-phase init, module
 * state in state.c), its method table and its types. This is the top layer
 * of src/ext: the functions it lists live in reports.c, tables.c,
 * formulas.c, progress.c, timing.c and measure.c, the types in crawl.c,
 * hooks.c and counter.c (state.h lists the layers). */
#include "checkpoints.h"
#include "op_resolve.h"
#include "crawl.h"
#include "formulas.h"
#include "measure.h"
#include "progress.h"
#include "reports.h"
#include "tables.h"
#include "timing.h"

static PyMethodDef engine_methods[] = {
    {"describe_call",
     tsx_engine_describe_call,
     METH_VARARGS,
     "describe_call(args, kwargs) -> {'args': [...], 'kwargs': {...}}"},
    {"compare_reports",
     tsx_engine_compare_reports,
     METH_VARARGS,
     "compare_reports(before, after) -> ReportDiff (validated in C)."},
    {"diff_metrics",
     tsx_engine_diff_metrics,
     METH_VARARGS,
     "diff_metrics(before, after) -> {name: metric diff}."},
    {"gather_shape",
     tsx_engine_gather_shape,
     METH_O,
     "gather_shape(report) -> the shape the ranks of gather_reports must "
     "share (validated in C)."},
    {"gather_check",
     tsx_engine_gather_check,
     METH_VARARGS,
     "gather_check(statuses, ranks) -> None, or (exception type, message) "
     "that every rank raises."},
    {"gather_reports",
     tsx_engine_gather_reports,
     METH_VARARGS,
     "gather_reports(reports, ranks) -> GatheredReport (min, median, max "
     "and their ranks, sums, computed in C)."},
    {"format_summary",
     (PyCFunction)(void (*)(void))tsx_engine_format_summary,
     METH_VARARGS | METH_KEYWORDS,
     "format_summary(report, wrap_mode='mid', receptive_field=False, "
     "effective_rf_stats=False, max_depth=-1) -> str"},
    {"format_report",
     (PyCFunction)(void (*)(void))tsx_engine_format_report,
     METH_VARARGS | METH_KEYWORDS,
     "format_report(report, wrap_mode='mid', receptive_field=False, "
     "effective_rf_stats=False, max_depth=-1) -> str, the report checked "
     "first (as `torchscan table` checks it)"},
    {"inspect_checkpoint",
     tsx_engine_inspect_checkpoint,
     METH_O,
     "inspect_checkpoint(path) -> the checkpoint report (read in C, "
     "nothing executed)"},
    {"format_checkpoint",
     tsx_engine_format_checkpoint,
     METH_VARARGS,
     "format_checkpoint(report, max_depth) -> the table text"},
    {"match_checkpoint",
     tsx_engine_match_checkpoint,
     METH_VARARGS,
     "match_checkpoint(report, against) -> the match result"},
    {"format_name",
     tsx_engine_format_name,
     METH_VARARGS,
     "format_name(name, depth) -> the Layer cell text"},
    {"wrap_string",
     tsx_engine_wrap_string,
     METH_VARARGS,
     "wrap_string(s, max_len, delimiter, wrap, mode) -> str"},
    {"format_s",
     tsx_engine_format_s,
     METH_VARARGS,
     "format_s(s, min_w, max_w) -> str (-1: no width)"},
    {"unit_scale",
     tsx_engine_unit_scale,
     METH_O,
     "unit_scale(val) -> (scaled value, SI prefix)"},
    {"format_line",
     tsx_engine_format_line,
     METH_VARARGS,
     "format_line(layer, col_w, wrap_mode, receptive_field, "
     "effective_rf_stats) -> [cell, ...]"},
    {"limit_depth",
     tsx_engine_limit_depth,
     METH_VARARGS,
     "limit_depth(report, max_depth) -> a new report with the rows of "
     "depth <= max_depth"},
    {"module_estimates",
     tsx_engine_module_estimates,
     METH_VARARGS,
     "module_estimates(module, args, kwargs, output) -> {metric: (kind, "
     "value, message)} or None (no input or output tensor)"},
    {"incomplete",
     tsx_engine_incomplete,
     METH_O,
     "incomplete(report) -> (bool, message) for strict mode."},
    {"memory_peak",
     tsx_engine_memory_peak,
     METH_VARARGS,
     "memory_peak(event_tree_roots, allocation_tag) -> int | None"},
    {"render_benchmark_html",
     tsx_engine_render_benchmark_html,
     METH_VARARGS,
     "render_benchmark_html(report, title) -> HTML page (validated in C)."},
    {"render_analysis",
     tsx_engine_render_analysis,
     METH_VARARGS,
     "render_analysis(report, before, title, metric, format) -> the HTML "
     "page or SVG of an AnalysisReport (validated in C)."},
    {"time_workload",
     (PyCFunction)(void (*)(void))tsx_time_workload,
     METH_VARARGS | METH_KEYWORDS,
     "time_workload(workload, synchronize, warmup, min_run_time, "
     "min_repeats, work_units, work_unit) -> {'totals', 'measurement'}"},
    {"progress_start",
     tsx_engine_progress_start,
     METH_VARARGS,
     "progress_start(label, fd) -> a handle, or None when fd is not a "
     "terminal or another progress line is shown: a thread draws "
     "'torchscan: <label>, <elapsed>' after the first second"},
    {"progress_stop",
     tsx_engine_progress_stop,
     METH_O,
     "progress_stop(handle): stops the thread, blanks the line"},
    {"profile_rows",
     tsx_engine_profile_rows,
     METH_VARARGS,
     "profile_rows(key_averages, device_time_supported, limit) -> rows"},
    {"workload_totals",
     tsx_engine_workload_totals,
     METH_VARARGS,
     "workload_totals(measured, selected, work_unit, memory_scope=None, "
     "memory_method=None) -> totals"},
    {"workload_achieved",
     tsx_engine_workload_achieved,
     METH_VARARGS,
     "workload_achieved(totals, peak_flops) -> (totals, diagnostics): "
     "achieved FLOP/s and utilization"},
    {"workload_summary",
     tsx_engine_workload_summary,
     METH_O,
     "workload_summary(report) -> terminal summary text"},
    {"compare_benchmarks",
     tsx_engine_compare_benchmarks,
     METH_VARARGS,
     "compare_benchmarks(before, after, check) -> BenchmarkComparison"},
    {"_json_nomemory",
     tsx_engine_json_nomemory,
     METH_O,
     "_json_nomemory(n) -> the previous setting: the n-th allocation of "
     "jansson (the engine's JSON values) from now fails, once (a test "
     "hook; 0 turns it off)"},
    {"rss_parse",
     tsx_engine_rss_parse,
     METH_VARARGS,
     "rss_parse(line) -> (outcome, code, peak_bytes)"},
    {NULL, NULL, 0, NULL},
};

/* ---- module lifecycle ----------------------------------------------------
 */

/* A heap type of the module. CPython 3.11's PyType_FromModuleAndSpec can
 * return NULL without an exception when one of its allocations fails
 * (measured: 2 of 590 runs of one failing allocation at a time,
 * test_nomemory_ext.py); that failure is a MemoryError here. */
static PyTypeObject *
make_type(PyObject *module, PyType_Spec *spec)
{
    PyObject *type = PyType_FromModuleAndSpec(module, spec, NULL);
    if (type == NULL && !PyErr_Occurred()) {
        PyErr_NoMemory();
    }
    return (PyTypeObject *)type;
}

static int
engine_exec(PyObject *module)
{
    tsx_state *st = tsx_get_state(module);
    tsx_json_alloc_init();
    if (tsx_state_init(st) < 0) {
        return -1;
    }
    /* one at a time: a type made while the previous one's MemoryError is
     * pending clears it, and the module would fail without an exception */
    if ((st->crawl_type = make_type(module, &tsx_crawl_spec)) == NULL
        || (st->hook_type = make_type(module, &tsx_hook_spec)) == NULL
        || (st->counter_type = make_type(module, &tsx_counter_spec)) == NULL
        || PyModule_AddType(module, st->crawl_type) < 0
        || PyModule_AddType(module, st->counter_type) < 0
        || PyModule_AddStringConstant(
               module, "OPERATOR_METHOD", TS_OPERATOR_METHOD)
               < 0
        || tsx_measure_constants(module) < 0) {
        return -1;
    }
    return 0;
}

static int
engine_traverse(PyObject *module, visitproc visit, void *arg)
{
    tsx_state *st = tsx_get_state(module);
    int rc = tsx_state_traverse(st, visit, arg);
    return rc != 0 ? rc : tsx_op_cache_traverse(st, visit, arg);
}

/* Each layer frees the cache it keeps in the state, then the state its
 * own references. */
static int
engine_clear(PyObject *module)
{
    tsx_state *st = tsx_get_state(module);
    tsx_op_cache_free(st);
    tsx_meta_cache_free(st);
    tsx_convert_free(st);
    tsx_state_clear(st);
    return 0;
}

static void
engine_free(void *module)
{
    engine_clear((PyObject *)module);
}

static PyModuleDef_Slot engine_slots[] = {
    {Py_mod_exec, engine_exec},
    {0, NULL},
};

static struct PyModuleDef engine_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "torchscan._engine",
    .m_doc = "The C engine of TorchScan (internal; use the torchscan API).",
    .m_size = sizeof(tsx_state),
    .m_methods = engine_methods,
    .m_slots = engine_slots,
    .m_traverse = engine_traverse,
    .m_clear = engine_clear,
    .m_free = engine_free,
};

PyMODINIT_FUNC
PyInit__engine(void)
{
    return PyModuleDef_Init(&engine_def);
}
