/* Prints docs/operator-flops.md, generated from the operator formula table:
 *
 *   build-c/torchscan-op-docs > docs/operator-flops.md
 *
 * test_op_formulas fails when the checked-in file differs from this output.
 */
#include <stdio.h>
#include <stdlib.h>

#include "torchscan/op_formulas.h"

int
main(void)
{
    char *text = ts_op_docs_markdown();
    int rc;
    if (text == NULL) {
        fputs("torchscan-op-docs: out of memory\n", stderr);
        return 1;
    }
    rc = fputs(text, stdout) < 0 || fflush(stdout) != 0 ? 1 : 0;
    free(text);
    return rc;
}
