/* The operator table's public face (op_formulas.h): ts_op_lookup's binary
 * search over the sorted table in op_table.c, and docs/operator-flops.md as
 * generated from that table (ts_op_docs_markdown). The formulas themselves
 * are in op_formulas_*.c.
 */
#include <stdio.h>
#include <stdlib.h>

#include "op_formulas_internal.h"
#include "text_buf.h"

const ts_op_entry *
ts_op_lookup(const char *packet_name)
{
    size_t lo = 0, hi = ts_opf_table_len;
    if (packet_name == NULL) {
        return NULL;
    }
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int cmp = strcmp(packet_name, ts_opf_table[mid].name);
        if (cmp == 0) {
            return &ts_opf_table[mid];
        }
        if (cmp < 0) {
            hi = mid;
        }
        else {
            lo = mid + 1;
        }
    }
    return NULL;
}

size_t
ts_op_table(const ts_op_entry **entries)
{
    if (entries != NULL) {
        *entries = ts_opf_table;
    }
    return ts_opf_table_len;
}

/* ==== documentation =====================================================
 * docs/operator-flops.md is this function's output (tools/op_docs.c prints
 * it; test_op_formulas checks the checked-in file against it), so the docs
 * cannot drift from the formulas. */

typedef ts_text_buf md_buf;

static void
md_put(md_buf *b, const char *s, size_t n)
{
    ts_text_put_n(b, s, n);
}

static void
md_puts(md_buf *b, const char *s)
{
    ts_text_put(b, s);
}

/* Table-cell text: characters that Markdown would read as emphasis, table
 * separators or escapes are escaped. Underscores are left alone: GitHub
 * Markdown does not read them as emphasis inside words. */
static void
md_cell(md_buf *b, const char *s)
{
    for (; s != NULL && *s != '\0'; s++) {
        if (*s == '*' || *s == '|' || *s == '\\') {
            md_put(b, "\\", 1);
        }
        md_put(b, s, 1);
    }
}

/* A code span: no escaping inside, except the table separator. */
static void
md_code(md_buf *b, const char *s)
{
    md_puts(b, "`");
    for (; *s != '\0'; s++) {
        if (*s == '|') {
            md_put(b, "\\", 1);
        }
        md_put(b, s, 1);
    }
    md_puts(b, "`");
}

/* The in-place variant "aten.x_" of a packet "aten.x" with the same
 * formula, text and flags (or the same ignore reason) shares its row. */
static bool
is_variant_of(const ts_op_entry *v, const ts_op_entry *base)
{
    size_t n = strlen(base->name);
    return strlen(v->name) == n + 1 && strncmp(v->name, base->name, n) == 0
           && v->name[n] == '_' && v->formula == base->formula
           && v->flags == base->flags
           && (v->formula != NULL
                   ? v->formula_text != NULL && base->formula_text != NULL
                         && strcmp(v->formula_text, base->formula_text) == 0
                   : strcmp(v->ignore_reason, base->ignore_reason) == 0);
}

static const char *
convention_of(const ts_op_entry *e)
{
    if ((e->flags & TS_OPF_ATTENTION) != 0) {
        if ((e->flags & TS_OPF_NATIVE) != 0) {
            return "attention convention; its products FlopCounterMode's";
        }
        return (e->flags & TS_OPF_EXTENSION) != 0
                   ? "attention convention, TorchScan extension"
                   : "attention convention (contract 2.2)";
    }
    if ((e->flags & TS_OPF_NATIVE) != 0) {
        return "FlopCounterMode";
    }
    if ((e->flags & TS_OPF_COLLECTIVE) != 0) {
        return TS_COLLECTIVE_CONVENTION " (0 FLOPs, bytes moved)";
    }
    if ((e->flags & TS_OPF_EXTENSION) != 0) {
        return e->formula != NULL ? "torchscan_flops_v1, TorchScan extension"
                                  : "TorchScan extension of the ignore list";
    }
    return e->formula != NULL ? "torchscan_flops_v1 (contract 2.2)"
                              : "contract 1.4 ignore list";
}

/* Rows of one section: counted (formula != NULL) or ignored entries. */
static void
md_rows(md_buf *b, const ts_op_entry *t, size_t n, bool counted)
{
    for (size_t i = 0; i < n; i++) {
        if ((t[i].formula != NULL) != counted
            || (i > 0 && is_variant_of(&t[i], &t[i - 1]))) {
            continue;
        }
        md_puts(b, "| ");
        md_code(b, t[i].name);
        /* Variants sort right after their base ('_' follows the name's
         * end), so they are the next entries. */
        for (size_t j = i + 1; j < n && is_variant_of(&t[j], &t[i]); j++) {
            md_puts(b, ", ");
            md_code(b, t[j].name);
        }
        md_puts(b, " | ");
        if (counted) {
            md_code(b, t[i].formula_text);
            md_puts(b, " | ");
            md_cell(b, convention_of(&t[i]));
            md_puts(b, " | ");
            md_cell(b, t[i].notes);
        }
        else {
            md_cell(b, t[i].ignore_reason);
            md_puts(b, " | ");
            md_cell(b, convention_of(&t[i]));
        }
        md_puts(b, " |\n");
    }
}

char *
ts_op_docs_markdown(void)
{
    md_buf b = {NULL, 0, 0, false};
    size_t n = ts_opf_table_len;
    size_t native = 0, contract = 0, extension = 0, collective = 0;
    size_t ignored = 0;
    char line[256];

    for (size_t i = 0; i < n; i++) {
        const ts_op_entry *e = &ts_opf_table[i];
        if (e->formula == NULL) {
            ignored++;
        }
        else if ((e->flags & TS_OPF_NATIVE) != 0) {
            native++;
        }
        else if ((e->flags & TS_OPF_COLLECTIVE) != 0) {
            collective++;
        }
        else if ((e->flags & TS_OPF_EXTENSION) != 0) {
            extension++;
        }
        else {
            contract++;
        }
    }
    md_puts(
        &b,
        "# Operator FLOP formulas\n"
        "\n"
        "<!-- Generated from the formula table in src/core/op_table.c "
        "by tools/op_docs.c; do not edit.\n"
        "     Regenerate: build-c/torchscan-op-docs > "
        "docs/operator-flops.md -->\n"
        "\n"
        "`measure_flops`, and the operator report of `crawl_module`, "
        "count every aten operator a workload runs with the formula of "
        "its operator packet below; operators of other namespaces, such "
        "as torchvision's, are keyed the same way by their qualified "
        "packet name (`torchvision.nms`). In-place and `out=` overloads share "
        "their packet's formula; in-place packets (`aten.add_`) are "
        "listed with their functional packet. An operator that is "
        "neither counted nor ignored gives an `uncounted_operator` "
        "diagnostic and a `partial` total; an argument a formula cannot "
        "honour gives `unsupported_operator_formula`, never a guess.\n"
        "\n"
        "Counting convention `torchscan_flops_v1`: each scalar add, "
        "multiply, divide, exp, sqrt, erf, comparison or selection "
        "counts 1, sigmoid 4, tanh 6, and a multiply-add of a matrix "
        "product 2. Views, copies, fills, allocation, random number "
        "generation, integer and boolean arithmetic count nothing. On "
        "matrix products and convolutions the counts are PyTorch's "
        "`FlopCounterMode`'s, and so are the matrix products of fused "
        "attention, to which the attention convention below adds the rest "
        "of the kernel's work. A report's `matrix_product_flops` lists, "
        "per operator, the matrix products of the operators marked "
        "FlopCounterMode or attention convention below, counted as "
        "`FlopCounterMode` counts them, so that parity with it stays "
        "checkable. Why these counts differ from module FLOPs: "
        "[methodology.md](methodology.md).\n"
        "\n"
        "Symbols: `N` input elements, `out` output elements, `rows` "
        "rows of a row-wise operator (N / width), `C` channels, `K` "
        "kernel volume, `T` loss targets, `[x]` is 1 when x holds and 0 "
        "otherwise. Training-step operators (gradients, losses, "
        "optimizers) count the arithmetic of their gradient or update "
        "formula per element; see the notes.\n"
        "\n"
        "## Attention\n"
        "\n"
        "Every scaled-dot-product attention kernel, the fused transformer "
        "kernels and the composite `aten.scaled_dot_product_attention` "
        "count one attention by one formula, the one contract 2.2 gives "
        "the CPU kernel, so that a call counts the same whichever kernel "
        "PyTorch picked (CPU flash, CUDA flash, memory-efficient, cuDNN, "
        "or the math decomposition that runs on meta tensors, which the "
        "operator counter recognises as one call: "
        "[methodology.md](methodology.md)), and every backward of an SDPA "
        "call counts the backward below, whichever kernel ran (the math "
        "path's gradients are grouped after the forward they follow). "
        "`by_operator` lists the forward as "
        "`aten.scaled_dot_product_attention` and the backward as "
        "`aten.scaled_dot_product_attention_backward` (no operator has that "
        "name: it stands for the backward of the composite call); "
        "`matrix_product_flops` keeps the name of the operator that ran the "
        "products. For B batches, `h_q` query "
        "heads over `h_kv` key/value heads, `s_q` queries, `s_k` keys, "
        "query/key width `d_q` and value width `d_v`: `rows = "
        "B*h_q*s_q` softmax rows and `scores = rows*s_k`.\n"
        "\n"
        "| part | forward | backward |\n"
        "| --- | --- | --- |\n"
        "| matrix products (`FlopCounterMode`'s, in "
        "`matrix_product_flops`) | `2*scores*(d_q + d_v)` | "
        "`2*scores*(3*d_q + 2*d_v)` |\n"
        "| scaling | `scores` | `2*scores` (the recomputed scores, dS) "
        "|\n"
        "| softmax | `5*scores - 2*rows` (max, subtract, exp, sum, divide) "
        "| `4*scores` (P recomputed from logsumexp: subtract, exp; "
        "dS = P*(dP - D)) + `rows*(2*d_v - 1)` (D = rowsum(dO*O)) |\n"
        "| masking | `scores` per mask: causal, attention mask or bias, "
        "sliding window; ALiBi 2 | the same |\n"
        "| dropout | `2*scores` when `dropout_p > 0` | `2*scores` |\n"
        "| grouped-query heads | none (broadcast) | "
        "`(h_q - h_kv)*B*s_k*(d_q + d_v)` (dK, dV summed per group) |\n"
        "\n"
        "Forward: `2*scores*(d_q + d_v) + scores*(6 + masks + "
        "2*[dropout]) - 2*rows`. Backward: `2*scores*(3*d_q + 2*d_v) + "
        "scores*(6 + masks + 2*[dropout]) + rows*(2*d_v - 1) + "
        "(h_q - h_kv)*B*s_k*(d_q + d_v)`.\n"
        "\n");
    md_puts(
        &b,
        "## Collectives\n"
        "\n"
        "Collectives of `torch.distributed` (`c10d.*`, which the "
        "process-group API dispatches, `_c10d_functional.*`, which DTensor, "
        "tensor parallelism and functional collectives dispatch, "
        "`_dtensor.shard_dim_alltoall`) follow the convention "
        "`" TS_COLLECTIVE_CONVENTION
        "`: they count 0 FLOPs, and the "
        "bytes they move go to a field of their own, `bytes_moved` per "
        "operator in the FlopReport's `collectives` and "
        "`collective_bytes` in its totals, never to FLOPs. The bytes are "
        "the message size as nccl-tests reports it: the reduced or "
        "broadcast tensor, the whole gathered output, the whole input a "
        "reduce-scatter scatters, the larger buffer of an all-to-all; a "
        "list of tensors (coalesced calls) counts as the sum of its "
        "tensors, and a barrier moves 0 bytes. The reduction arithmetic "
        "of all_reduce, reduce_scatter and reduce (the sums) runs inside "
        "the communication backend and is not counted; arithmetic that "
        "wraps a collective in operators of its own (DDP's averaging of "
        "gradients, a multiply by 1/world_size) is counted like any "
        "operator. See [distributed.md](distributed.md).\n"
        "\n");
    snprintf(line,
             sizeof line,
             "%zu operator packets: %zu counted (%zu FlopCounterMode, %zu "
             "contract 2.2, %zu TorchScan extensions, %zu collectives), %zu "
             "ignored.\n\n",
             n,
             native + contract + extension + collective,
             native,
             contract,
             extension,
             collective,
             ignored);
    md_puts(&b, line);
    md_puts(&b,
            "## Counted operators\n"
            "\n"
            "| operator | formula | convention | notes |\n"
            "| --- | --- | --- | --- |\n");
    md_rows(&b, ts_opf_table, n, true);
    md_puts(&b,
            "\n"
            "## Ignored operators\n"
            "\n"
            "Listed in `ignored_operators` with their call count and reason; "
            "they never make a total partial.\n"
            "\n"
            "| operator | reason | convention |\n"
            "| --- | --- | --- |\n");
    md_rows(&b, ts_opf_table, n, false);
    if (b.failed) {
        free(b.data);
        return NULL;
    }
    return b.data;
}
