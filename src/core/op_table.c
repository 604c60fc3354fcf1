/* The operator table: one entry per aten packet name, sorted by strcmp
 * (byte order) for ts_op_lookup's binary search in op_formulas.c (the tests
 * check the order and uniqueness). Data only: the formula functions it
 * points to are in op_formulas_*.c, declared in op_formulas_internal.h.
 *
 * Three kinds of entries share the table:
 *  - native formulas (TS_OPF_NATIVE, op_formulas_native.c) replicate
 *    torch.utils.flop_counter of torch 2.13 count for count, quirks
 *    included, because contract 1.4 takes the counts of those operators from
 *    FlopCounterMode;
 *  - supplemental formulas implement contract 2.2 (torchscan_flops_v1) for
 *    operators FlopCounterMode lacks, behind the reference's guards (dense
 *    layout, real arithmetic, integer work excluded), and extend the same
 *    convention to the operators that training steps run (TS_OPF_EXTENSION:
 *    gradients, losses, optimizers; op_formulas_elementwise.c,
 *    op_formulas_layers.c, op_formulas_pooling.c, op_formulas_losses.c,
 *    op_formulas_optim.c);
 *  - ignored operators (contract 1.4 ignore list, plus the same categories
 *    for operators it does not name) carry no formula, only the reason string
 *    reported in ignored_operators.
 *
 * Every count is built with checked int64 arithmetic: a count that does not
 * fit is TS_EOVERFLOW, never a wrapped number.
 */
#include "op_formulas_internal.h"

/* clang-format off: it would split these one-line initializers. */
// clang-format off
/* FlopCounterMode parity, contract 2.2, TorchScan's extension of
 * torchscan_flops_v1, and ignored operators (contract list / extension). */
#define NATIVE(name, fn, text, notes) \
    {name, fn, NULL, TS_OPF_NATIVE | TS_OPF_MATRIX, text, notes}
/* fused attention by the attention convention; NATIVE_ATTENTION where
 * FlopCounterMode counts the packet (its matrix products) */
#define ATTN_FLAGS (TS_OPF_ATTENTION | TS_OPF_MATRIX)
#define NATIVE_ATTENTION(name, fn, text, notes) \
    {name, fn, NULL, TS_OPF_NATIVE | ATTN_FLAGS, text, notes}
#define NATIVE_SDPA(name, fn, text, notes) \
    {name, fn, NULL, TS_OPF_NATIVE | ATTN_FLAGS | TS_OPF_SDPA_FORWARD, text, notes}
#define SDPA(name, fn, text, notes) \
    {name, fn, NULL, ATTN_FLAGS | TS_OPF_SDPA_FORWARD, text, notes}
#define EXT_SDPA(name, fn, text, notes) \
    {name,                                \
     fn,                                  \
     NULL,                                \
     TS_OPF_EXTENSION | ATTN_FLAGS | TS_OPF_SDPA_FORWARD, \
     text,                                \
     notes}
#define NATIVE_SDPA_BW(name, fn, text, notes) \
    {name, fn, NULL, TS_OPF_NATIVE | ATTN_FLAGS | TS_OPF_SDPA_BACKWARD, text, notes}
#define EXT_SDPA_BW(name, fn, text, notes) \
    {name, fn, NULL, TS_OPF_EXTENSION | ATTN_FLAGS | TS_OPF_SDPA_BACKWARD, text, notes}
#define EXT_ATTENTION(name, fn, text, notes) \
    {name, fn, NULL, TS_OPF_EXTENSION | ATTN_FLAGS, text, notes}
#define SUPP(name, fn, text, notes) {name, fn, NULL, 0u, text, notes}
#define EXT(name, fn, text, notes) \
    {name, fn, NULL, TS_OPF_EXTENSION, text, notes}
#define IGNORED(name, reason) {name, NULL, reason, 0u, NULL, NULL}
#define IGNORED_EXT(name, reason) \
    {name, NULL, reason, TS_OPF_EXTENSION, NULL, NULL}
/* torch.distributed's collectives: 0 FLOPs, bytes moved */
#define COLL(name, fn, text) \
    {name, fn, NULL, TS_OPF_COLLECTIVE, text, T_COLL_NOTES}
// clang-format on

#define VIEW "Metadata-only tensor view."
#define MOVE "Data movement is excluded from FLOPs."
#define ALLOC "Tensor allocation is excluded from FLOPs."
#define CREATE "Tensor creation is excluded from FLOPs."
/* Profiler annotations (record_function, optimizer steps) mark a region;
 * they do no arithmetic. */
#define MARK "Profiler annotation: no arithmetic."
#define RANDOM "Random number generation is excluded from FLOPs."
/* linalg functions check LAPACK's info codes through this operator */
#define CHECKS "Checks a linear-algebra result for errors: no arithmetic."
/* _c10d_functional's waits and autograd wrappers around a collective */
#define COLL_BOOK "Collective bookkeeping: no arithmetic, no data moved."

/* Collectives (torchscan_collective_bytes_v1): the bytes moved are the
 * message size as nccl-tests reports it, so that they read like a
 * benchmark's sizes; no FLOPs, whatever the reduction. */
#define T_COLL_NOTES                                                       \
    "0 FLOPs: the reduction arithmetic of all_reduce, reduce_scatter and " \
    "reduce runs inside the communication backend, not in operators this " \
    "process dispatches. The bytes go to bytes_moved, never to FLOPs."
#define T_COLL_REDUCE "0; bytes_moved = the reduced tensor(s)"
#define T_COLL_GATHER "0; bytes_moved = the gathered output (all ranks' parts)"
#define T_COLL_SCATTER \
    "0; bytes_moved = the input before scattering (all ranks' parts)"
#define T_COLL_BCAST "0; bytes_moved = the tensor(s) broadcast"
#define T_COLL_A2A "0; bytes_moved = the larger of input and output"
#define T_COLL_ROOTED                                                    \
    "0; bytes_moved = the larger of input and output (the root's whole " \
    "buffer; a non-root rank's own part)"
#define T_COLL_P2P "0; bytes_moved = the tensor(s) sent or received"
#define T_COLL_BARRIER "0; bytes_moved = 0 (synchronisation only)"

#define T_MM "2*m*n*k (FlopCounterMode)"
/* TorchScan's reading of the contract's dtype rule for cumsum */
#define T_CUMSUM                                                           \
    "The adds run in the output dtype (dtype= when given, as for sum and " \
    "mean): cumsum(x, dtype=torch.int32) counts 0 whatever x is (the "     \
    "reference counts a floating x). A Mixture-of-Experts router's "       \
    "offsets count the same on CPU (float counts) and CUDA/meta."
#define T_BMM "2*b*m*n*k (FlopCounterMode)"
#define T_CONV                                                              \
    "2*batch*w[0]*w[1]*prod(kernel)*prod(output spatial; input spatial if " \
    "transposed); w[1] is c_in/groups (FlopCounterMode)"
#define T_ATTN_FWD                                                      \
    "2*scores*(d_q + d_v) + scores*(6 + masks + 2*[dropout]) - 2*rows " \
    "(the attention convention)"
#define T_ATTN_BWD                                                      \
    "2*scores*(3*d_q + 2*d_v) + scores*(6 + masks + 2*[dropout]) + "    \
    "rows*(2*d_v - 1) + (h_q - h_kv)*b*s_k*(d_q + d_v) (the attention " \
    "convention)"
#define N_SDPA_BW                                                           \
    "A backward kernel of scaled_dot_product_attention: by_operator lists " \
    "it as aten.scaled_dot_product_attention_backward, as the math path's " \
    "gradients grouped into one backward, so that a training step counts "  \
    "the same whichever path ran; matrix_product_flops keeps the kernel's " \
    "name. "
#define N_SDPA                                                                \
    "A forward kernel of scaled_dot_product_attention: by_operator lists it " \
    "as aten.scaled_dot_product_attention, the call it computes, so that "    \
    "the same call counts the same whichever kernel ran; "                    \
    "matrix_product_flops keeps the kernel's name. "
#define N_FCM                                                              \
    "The products, 2*scores*(d_q + d_v) forward and 2*scores*(3*d_q + "    \
    "2*d_v) backward, are FlopCounterMode's count of this packet, listed " \
    "in matrix_product_flops."
#define N_MASKS(list) "masks: one per score for each of " list "."
#define N_RAW                                                                \
    "On (batch, seq, heads, dim) inputs; variable-length calls (sequence "   \
    "offsets) are unsupported: their sizes are the offsets' values. "        \
    "matrix_product_flops holds FlopCounterMode's count, which reads these " \
    "dense inputs as (b, h, s, d); the total counts the true products. "
#define T_ADD "out*(1 + [alpha != 1])"
#define T_UNIT "out"
#define T_IN(n) n "*N (N = input elements)"
#define T_POOL_MAX "out*(K - 1), K = kernel volume (k^rank for one value)"
#define T_POOL_AVG "out*K, K = kernel volume (k^rank for one value)"
#define T_AMAX \
    "visits - out; visits = lead dims * prod(L + O - gcd(L, O)) per axis"
#define T_AAVG "visits = lead dims * prod(L + O - gcd(L, O)) per axis"
#define T_BN                                                 \
    "2N + 2C + A*N; training: + 4N + C*(3*[running_mean] + " \
    "5*[running_var]); empty input unsupported"
#define T_BN_VENDOR_BWD \
    "9N + [weight]*C (training, all three gradients); empty input 0"

const ts_op_entry ts_opf_table[] = {
    IGNORED_EXT("_c10d_functional._wrap_tensor_autograd", COLL_BOOK),
    COLL("_c10d_functional.all_gather_into_tensor",
         ts_opf_collective_gather,
         T_COLL_GATHER),
    COLL("_c10d_functional.all_gather_into_tensor_coalesced",
         ts_opf_collective_gather,
         T_COLL_GATHER),
    COLL("_c10d_functional.all_gather_into_tensor_out",
         ts_opf_collective_gather,
         T_COLL_GATHER),
    COLL("_c10d_functional.all_reduce", ts_opf_collective, T_COLL_REDUCE),
    COLL("_c10d_functional.all_reduce_", ts_opf_collective, T_COLL_REDUCE),
    COLL("_c10d_functional.all_reduce_coalesced",
         ts_opf_collective,
         T_COLL_REDUCE),
    COLL("_c10d_functional.all_reduce_coalesced_",
         ts_opf_collective,
         T_COLL_REDUCE),
    COLL("_c10d_functional.all_to_all_single", ts_opf_collective, T_COLL_A2A),
    COLL("_c10d_functional.batch_p2p_ops", ts_opf_collective, T_COLL_P2P),
    COLL("_c10d_functional.broadcast", ts_opf_collective, T_COLL_BCAST),
    COLL("_c10d_functional.broadcast_", ts_opf_collective, T_COLL_BCAST),
    COLL("_c10d_functional.irecv", ts_opf_collective, T_COLL_P2P),
    COLL("_c10d_functional.isend", ts_opf_collective, T_COLL_P2P),
    COLL("_c10d_functional.reduce_scatter_tensor",
         ts_opf_collective,
         T_COLL_SCATTER),
    COLL("_c10d_functional.reduce_scatter_tensor_coalesced",
         ts_opf_collective,
         T_COLL_SCATTER),
    COLL("_c10d_functional.reduce_scatter_tensor_out",
         ts_opf_collective,
         T_COLL_SCATTER),
    IGNORED_EXT("_c10d_functional.wait_tensor", COLL_BOOK),
    COLL("_c10d_functional_autograd.all_gather_into_tensor",
         ts_opf_collective_gather,
         T_COLL_GATHER),
    COLL("_c10d_functional_autograd.all_to_all_single",
         ts_opf_collective,
         T_COLL_A2A),
    COLL("_c10d_functional_autograd.reduce_scatter_tensor",
         ts_opf_collective,
         T_COLL_SCATTER),
    COLL("_dtensor.shard_dim_alltoall", ts_opf_collective, T_COLL_A2A),
    SUPP(
        "aten._adaptive_avg_pool2d", ts_opf_adaptive_avg_pool2d, T_AAVG, NULL),
    EXT("aten._adaptive_avg_pool2d_backward",
        ts_opf_adaptive_avg_pool2d_backward,
        "visits + grad_output elements",
        "One division per window and one add per visit (visits as in the "
        "forward)."),
    SUPP(
        "aten._adaptive_avg_pool3d", ts_opf_adaptive_avg_pool3d, T_AAVG, NULL),
    EXT("aten._adaptive_avg_pool3d_backward",
        ts_opf_adaptive_avg_pool3d_backward,
        "visits + grad_output elements",
        "One division per window and one add per visit (visits as in the "
        "forward)."),
    IGNORED_EXT("aten._conj", VIEW),
    NATIVE(
        "aten._convolution",
        ts_opf_convolution,
        T_CONV,
        "Counts 2 per multiply-add of the full window (2K per output), where "
        "module FLOPs count 2K - 1 plus the bias (docs/methodology.md)."),
    NATIVE_ATTENTION(
        "aten._efficient_attention_backward",
        ts_opf_efficient_attention_backward,
        T_ATTN_BWD,
        N_RAW N_MASKS("custom_mask_type != 0, bias, window_size")),
    NATIVE_ATTENTION(
        "aten._efficient_attention_forward",
        ts_opf_efficient_attention_forward,
        T_ATTN_FWD,
        N_RAW N_MASKS("custom_mask_type != 0, bias, window_size")),
    IGNORED_EXT("aten._efficientzerotensor", CREATE),
    EXT("aten._embedding_bag",
        ts_opf_embedding_bag,
        "max(0, L*D - out) + [mean]*out + [per_sample_weights]*L*D",
        "L looked-up rows of width D reduced into the bags (adds for "
        "sum/mean, comparisons for max), a division per output for mean, a "
        "multiply per element with per_sample_weights."),
    EXT("aten._embedding_bag_backward",
        ts_opf_embedding_bag_backward,
        "sum/mean: L*D*(1 + [per_sample_weights] + [scale_grad_by_freq]) + "
        "[mean]*grad; max: grad elements",
        "Each bag gradient row is added into every looked-up row (max: the "
        "argmax rows only); mean divides the bag gradient by its size first."),
    EXT("aten._embedding_bag_forward_only",
        ts_opf_embedding_bag,
        "max(0, L*D - out) + [mean]*out + [per_sample_weights]*L*D",
        "L looked-up rows of width D reduced into the bags (adds for "
        "sum/mean, comparisons for max), a division per output for mean, a "
        "multiply per element with per_sample_weights."),
    NATIVE_ATTENTION("aten._flash_attention_backward",
                     ts_opf_flash_attention_backward,
                     T_ATTN_BWD,
                     N_RAW N_MASKS("is_causal, a window_size_left or _right")),
    NATIVE_ATTENTION("aten._flash_attention_forward",
                     ts_opf_flash_attention_forward,
                     T_ATTN_FWD,
                     N_RAW N_MASKS("is_causal, a window_size_left or _right; "
                                   "alibi_slopes 2")),
    EXT("aten._foreach_abs",
        ts_opf_foreach_unit,
        "N",
        "One operation per element of the first list, as the scalar "
        "operator."),
    EXT("aten._foreach_abs_",
        ts_opf_foreach_unit,
        "N",
        "One operation per element of the first list, as the scalar "
        "operator."),
    EXT("aten._foreach_add",
        ts_opf_foreach_add,
        "N*(1 + [alpha != 1]); N = elements of the first list",
        "aten.add applied to each tensor of the list."),
    EXT("aten._foreach_add_",
        ts_opf_foreach_add,
        "N*(1 + [alpha != 1]); N = elements of the first list",
        "aten.add applied to each tensor of the list."),
    EXT("aten._foreach_addcdiv",
        ts_opf_foreach_addc,
        "N*(2 + [value != 1])",
        "aten.addcmul/addcdiv per tensor; per-tensor scalars (ScalarList, "
        "Tensor overloads) count as a multiply."),
    EXT("aten._foreach_addcdiv_",
        ts_opf_foreach_addc,
        "N*(2 + [value != 1])",
        "aten.addcmul/addcdiv per tensor; per-tensor scalars (ScalarList, "
        "Tensor overloads) count as a multiply."),
    EXT("aten._foreach_addcmul",
        ts_opf_foreach_addc,
        "N*(2 + [value != 1])",
        "aten.addcmul/addcdiv per tensor; per-tensor scalars (ScalarList, "
        "Tensor overloads) count as a multiply."),
    EXT("aten._foreach_addcmul_",
        ts_opf_foreach_addc,
        "N*(2 + [value != 1])",
        "aten.addcmul/addcdiv per tensor; per-tensor scalars (ScalarList, "
        "Tensor overloads) count as a multiply."),
    EXT("aten._foreach_clamp_max",
        ts_opf_foreach_unit,
        "N",
        "One operation per element of the first list, as the scalar "
        "operator."),
    EXT("aten._foreach_clamp_max_",
        ts_opf_foreach_unit,
        "N",
        "One operation per element of the first list, as the scalar "
        "operator."),
    EXT("aten._foreach_clamp_min",
        ts_opf_foreach_unit,
        "N",
        "One operation per element of the first list, as the scalar "
        "operator."),
    EXT("aten._foreach_clamp_min_",
        ts_opf_foreach_unit,
        "N",
        "One operation per element of the first list, as the scalar "
        "operator."),
    IGNORED_EXT("aten._foreach_copy_", MOVE),
    EXT("aten._foreach_div",
        ts_opf_foreach_unit,
        "N",
        "One operation per element of the first list, as the scalar "
        "operator."),
    EXT("aten._foreach_div_",
        ts_opf_foreach_unit,
        "N",
        "One operation per element of the first list, as the scalar "
        "operator."),
    EXT("aten._foreach_exp",
        ts_opf_foreach_unit,
        "N",
        "One operation per element of the first list, as the scalar "
        "operator."),
    EXT("aten._foreach_exp_",
        ts_opf_foreach_unit,
        "N",
        "One operation per element of the first list, as the scalar "
        "operator."),
    EXT("aten._foreach_lerp",
        ts_opf_foreach_lerp,
        "3*N",
        "aten.lerp per tensor."),
    EXT("aten._foreach_lerp_",
        ts_opf_foreach_lerp,
        "3*N",
        "aten.lerp per tensor."),
    EXT("aten._foreach_log",
        ts_opf_foreach_unit,
        "N",
        "One operation per element of the first list, as the scalar "
        "operator."),
    EXT("aten._foreach_log_",
        ts_opf_foreach_unit,
        "N",
        "One operation per element of the first list, as the scalar "
        "operator."),
    EXT("aten._foreach_maximum",
        ts_opf_foreach_unit,
        "N",
        "One operation per element of the first list, as the scalar "
        "operator."),
    EXT("aten._foreach_maximum_",
        ts_opf_foreach_unit,
        "N",
        "One operation per element of the first list, as the scalar "
        "operator."),
    EXT("aten._foreach_minimum",
        ts_opf_foreach_unit,
        "N",
        "One operation per element of the first list, as the scalar "
        "operator."),
    EXT("aten._foreach_minimum_",
        ts_opf_foreach_unit,
        "N",
        "One operation per element of the first list, as the scalar "
        "operator."),
    EXT("aten._foreach_mul",
        ts_opf_foreach_unit,
        "N",
        "One operation per element of the first list, as the scalar "
        "operator."),
    EXT("aten._foreach_mul_",
        ts_opf_foreach_unit,
        "N",
        "One operation per element of the first list, as the scalar "
        "operator."),
    EXT("aten._foreach_neg",
        ts_opf_foreach_unit,
        "N",
        "One operation per element of the first list, as the scalar "
        "operator."),
    EXT("aten._foreach_neg_",
        ts_opf_foreach_unit,
        "N",
        "One operation per element of the first list, as the scalar "
        "operator."),
    EXT("aten._foreach_norm",
        ts_opf_foreach_norm,
        "2N (order 2) or 2N - tensors (order 1 or +/-inf)",
        "aten.norm per tensor; other orders unsupported."),
    EXT("aten._foreach_reciprocal",
        ts_opf_foreach_unit,
        "N",
        "One operation per element of the first list, as the scalar "
        "operator."),
    EXT("aten._foreach_reciprocal_",
        ts_opf_foreach_unit,
        "N",
        "One operation per element of the first list, as the scalar "
        "operator."),
    EXT("aten._foreach_sign",
        ts_opf_foreach_unit,
        "N",
        "One operation per element of the first list, as the scalar "
        "operator."),
    EXT("aten._foreach_sign_",
        ts_opf_foreach_unit,
        "N",
        "One operation per element of the first list, as the scalar "
        "operator."),
    EXT("aten._foreach_sqrt",
        ts_opf_foreach_unit,
        "N",
        "One operation per element of the first list, as the scalar "
        "operator."),
    EXT("aten._foreach_sqrt_",
        ts_opf_foreach_unit,
        "N",
        "One operation per element of the first list, as the scalar "
        "operator."),
    EXT("aten._foreach_sub",
        ts_opf_foreach_add,
        "N*(1 + [alpha != 1]); N = elements of the first list",
        "aten.add applied to each tensor of the list."),
    EXT("aten._foreach_sub_",
        ts_opf_foreach_add,
        "N*(1 + [alpha != 1]); N = elements of the first list",
        "aten.add applied to each tensor of the list."),
    IGNORED_EXT("aten._foreach_zero_", MOVE),
    EXT("aten._fused_adam_",
        ts_opf_fused_adam,
        "N*(12 + [beta2 != 0] + [wd != 0]*(1 + [wd != 1]) + [amsgrad] + "
        "[maximize] + [grad_scale])",
        "torch.optim.Adam's for-loop arithmetic per element: lerp 3, mul + "
        "addcmul 3 + [beta2 != 0], sqrt/div/add 3, addcdiv 3, L2 weight decay "
        "grad + wd*param. Step counters are a separate aten._foreach_add_."),
    EXT("aten._fused_adamw_",
        ts_opf_fused_adamw,
        "N*(12 + [beta2 != 0] + [wd != 0] + [amsgrad] + [maximize] + "
        "[grad_scale])",
        "As aten._fused_adam_ with decoupled weight decay param*(1 - lr*wd) "
        "(1)."),
    SUPP("aten._fused_rms_norm",
         ts_opf_rms_norm,
         "(3 + [weight])*N + 2*rows",
         NULL),
    EXT("aten._fused_sgd_",
        ts_opf_fused_sgd,
        "N*([maximize] + [grad_scale] + [wd != 0]*(1 + [wd != 1]) + [momentum "
        "!= 0]*([not first step]*(2 + [dampening != 0]) + [nesterov]*(1 + "
        "[momentum != 1])) + 1 + [lr != -1])",
        "torch.optim.SGD's for-loop arithmetic per parameter element, so "
        "fused, foreach and for-loop steps count the same."),
    SUPP("aten._grouped_mm",
         ts_opf_grouped_mm,
         "2*prod(a)*n for a (M, K) or (G, M, K) and b (G, K, n) or (K, n); "
         "2*M*K*n for a (G, M, K), b (K, n)",
         "The contract covers 2-D packed rows with 3-D experts; TorchScan "
         "adds the other layouts PyTorch accepts, which the backward of "
         "Mixture-of-Experts layers runs: a ragged K (the experts' weight "
         "gradient, 2-D x 2-D), a ragged n (3-D x 2-D) and batched experts "
         "(3-D x 3-D). Rows past the last offset are counted: which rows the "
         "offsets cover is data."),
    EXT("aten._index_put_impl_",
        ts_opf_index_put,
        "values elements with accumulate=True; 0 otherwise",
        "Without accumulate a scatter (data movement). values must have the "
        "full rank of the indexed positions (broadcast to a higher rank is "
        "unsupported)."),
    IGNORED_EXT("aten._linalg_check_errors", CHECKS),
    IGNORED_EXT("aten._local_scalar_dense", MOVE),
    SUPP("aten._log_softmax", ts_opf_log_softmax, "4*N - rows", NULL),
    EXT("aten._log_softmax_backward_data",
        ts_opf_softmax_backward,
        "4*N - rows",
        "dy - exp(y)*rowsum(dy): row sums, exp, multiply, subtract."),
    SUPP("aten._native_batch_norm_legit",
         ts_opf_native_batch_norm_legit,
         T_BN,
         NULL),
    SUPP("aten._native_batch_norm_legit_no_training",
         ts_opf_native_batch_norm_no_training,
         "2N + 2C + A*N (eval); empty input unsupported",
         NULL),
    {"aten._native_multi_head_attention",
     ts_opf_native_mha,
     NULL,
     TS_OPF_MATRIX,
     "8BLE^2 + 3BLE*[B > 1 and L > 1] + 4BL^2E + 5*scores - 2*rows + "
     "(need_weights ? BLE + scores*[average_attn_weights] : scores*(1 + "
     "[mask]))",
     "Counted as nn.MultiheadAttention's other path (the path of meta "
     "tensors and training) counts the same call, so that a model counts "
     "the same whichever runs: projections 8BLE^2 (biases not counted, as "
     "addmm's), plus the input projection's bias adds where that path runs "
     "them apart (F.linear on the transposed batch-first input is mm and add "
     "unless B or L is 1); without returned weights the attention by the "
     "attention convention (that path runs scaled_dot_product_attention); "
     "with them, the arithmetic that path runs to return them: the query "
     "scaled before the product, the mask added inside baddbmm (not "
     "counted, as FlopCounterMode's baddbmm), the weights averaged over "
     "heads. matrix_product_flops: 8BLE^2 + 4BL^2E."},
    SUPP("aten._prelu_kernel", ts_opf_in4, T_IN("4"), NULL),
    EXT("aten._prelu_kernel_backward",
        ts_opf_prelu_backward,
        "3*N",
        "grad or weight*grad (2, as leaky_relu_backward) and x*grad for the "
        "weight gradient (1); its reduction to the weight shape is a separate "
        "sum."),
    IGNORED_EXT("aten._reshape_alias", VIEW),
    SUPP("aten._safe_softmax",
         ts_opf_safe_softmax,
         "5*N - 2*rows + 2*out",
         NULL),
    IGNORED_EXT("aten._sample_dirichlet", RANDOM),
    NATIVE_SDPA("aten._scaled_dot_product_cudnn_attention",
                ts_opf_cudnn_sdpa,
                T_ATTN_FWD,
                N_SDPA N_FCM " " N_MASKS("is_causal, attn_bias")),
    NATIVE_SDPA_BW("aten._scaled_dot_product_cudnn_attention_backward",
                   ts_opf_cudnn_sdpa_backward,
                   T_ATTN_BWD,
                   N_SDPA_BW N_FCM " " N_MASKS("is_causal, attn_bias")),
    NATIVE_SDPA("aten._scaled_dot_product_efficient_attention",
                ts_opf_efficient_sdpa,
                T_ATTN_FWD,
                N_SDPA N_FCM " " N_MASKS("is_causal, attn_bias")),
    NATIVE_SDPA_BW("aten._scaled_dot_product_efficient_attention_backward",
                   ts_opf_efficient_sdpa_backward,
                   T_ATTN_BWD,
                   N_SDPA_BW N_FCM " " N_MASKS("is_causal, attn_bias")),
    NATIVE_SDPA("aten._scaled_dot_product_flash_attention",
                ts_opf_flash_sdpa,
                T_ATTN_FWD,
                N_SDPA N_FCM " " N_MASKS("is_causal")),
    NATIVE_SDPA_BW("aten._scaled_dot_product_flash_attention_backward",
                   ts_opf_flash_sdpa_backward,
                   T_ATTN_BWD,
                   N_SDPA_BW N_FCM " " N_MASKS("is_causal")),
    SDPA("aten._scaled_dot_product_flash_attention_for_cpu",
         ts_opf_cpu_attention,
         T_ATTN_FWD,
         N_SDPA "Contract 2.2's formula for this kernel, which defines the "
                "convention; TorchScan adds dropout (2 per score), which the "
                "contract refuses. FlopCounterMode has no formula for this "
                "kernel. " N_MASKS("is_causal, attn_mask")),
    EXT_SDPA_BW(
        "aten._scaled_dot_product_flash_attention_for_cpu_backward",
        ts_opf_cpu_attention_backward,
        T_ATTN_BWD,
        N_SDPA_BW
        "FlopCounterMode's five SDPA-backward products, "
        "probabilities recomputed from logsumexp (scale, mask, "
        "subtract, exp), rowsum(dO*O), dS = P*(dP - D) and its "
        "scaling, and the sums of dK/dV over grouped query heads. " N_MASKS(
            "is_causal, attn_mask")),
    EXT_SDPA("aten._scaled_dot_product_fused_attention_overrideable",
             ts_opf_overrideable_sdpa,
             T_ATTN_FWD,
             N_SDPA
             "The kernel other backends (XPU, PrivateUse1) register. " N_MASKS(
                 "is_causal, attn_bias")),
    EXT_SDPA_BW(
        "aten._scaled_dot_product_fused_attention_overrideable_backward",
        ts_opf_overrideable_sdpa_backward,
        T_ATTN_BWD,
        N_SDPA_BW N_MASKS("is_causal, attn_bias")),
    NATIVE("aten._scaled_mm",
           ts_opf_mm,
           "2*m*n*k; scales and bias not counted (FlopCounterMode)",
           NULL),
    NATIVE("aten._slow_conv2d_forward",
           ts_opf_slow_conv2d_forward,
           "2*batch*w[0]*w[1]*prod(kernel)*prod(output spatial) "
           "(FlopCounterMode's conv formula; its own call raises TypeError "
           "here)",
           NULL),
    SUPP("aten._softmax", ts_opf_softmax, "5*N - 2*rows", NULL),
    EXT("aten._softmax_backward_data",
        ts_opf_softmax_backward,
        "4*N - rows",
        "y*(dy - rowsum(dy*y)): multiply, row sums, subtract, multiply."),
    IGNORED_EXT("aten._standard_gamma", RANDOM),
    IGNORED("aten._to_copy", MOVE),
    {"aten._transformer_encoder_layer_fwd",
     ts_opf_encoder_layer,
     NULL,
     TS_OPF_MATRIX,
     "MHA (no weights) + 4*hidden*E + (5*hidden GELU or hidden ReLU) + "
     "18N + 4*rows",
     "The attention as _native_multi_head_attention counts it without "
     "returned weights (the attention convention, and the input "
     "projection's bias adds when B and L are both > 1), so that the layer "
     "counts what nn.TransformerEncoderLayer's other path counts. "
     "matrix_product_flops: the attention's and the feed-forward's "
     "products."},
    EXT("aten._unique2",
        ts_opf_unique,
        "N*ceil(log2 N) + max(0, N - 1)",
        "A sort of the N flattened keys and a comparison of each adjacent "
        "pair; inverse indices and counts are integer work. Integer and "
        "boolean keys count 0."),
    EXT("aten._unsafe_index",
        ts_opf_lookup,
        "0 (lookup)",
        "Every output element is an input element an index selects: no "
        "arithmetic. Counted 0 by an explicit formula (shown in by_operator) "
        "because its gradient accumulates and is counted."),
    EXT("aten._unsafe_index_put",
        ts_opf_index_put,
        "values elements with accumulate=True; 0 otherwise",
        "Without accumulate a scatter (data movement). values must have the "
        "full rank of the indexed positions (broadcast to a higher rank is "
        "unsupported)."),
    IGNORED("aten._unsafe_view", VIEW),
    EXT("aten._upsample_nearest_exact1d",
        ts_opf_lookup,
        "0 (lookup)",
        "Each output copies the nearest source element; the source index is "
        "integer work."),
    EXT("aten._upsample_nearest_exact1d_backward",
        ts_opf_upsample_nearest_backward,
        "grad_output - grad_input elements",
        "Gradients sharing a source element are summed."),
    EXT("aten._upsample_nearest_exact2d",
        ts_opf_lookup,
        "0 (lookup)",
        "Each output copies the nearest source element; the source index is "
        "integer work."),
    EXT("aten._upsample_nearest_exact2d_backward",
        ts_opf_upsample_nearest_backward,
        "grad_output - grad_input elements",
        "Gradients sharing a source element are summed."),
    EXT("aten._upsample_nearest_exact3d",
        ts_opf_lookup,
        "0 (lookup)",
        "Each output copies the nearest source element; the source index is "
        "integer work."),
    EXT("aten._upsample_nearest_exact3d_backward",
        ts_opf_upsample_nearest_backward,
        "grad_output - grad_input elements",
        "Gradients sharing a source element are summed."),
    EXT("aten._weight_norm_interface",
        ts_opf_weight_norm,
        "3N + R; R = v.size(dim) norms (1 when dim = -1)",
        "w = g * v / ||v|| (torch.nn.utils.weight_norm, wav2vec2's "
        "positional convolution), the norm over every dimension but dim: the "
        "2-norms as aten.norm counts them (2N), g / norm (R), the product "
        "with v (N). The same count as torch's decomposition v * (g / "
        "norm_except_dim(v)), which runs where the fused kernel does not."),
    EXT("aten._weight_norm_interface_backward",
        ts_opf_weight_norm_backward,
        "5N + 3R; R norms as in the forward",
        "Per norm row, as the CPU kernel: s = sum(grad_w * v) (2N - R), "
        "grad_g = s / norm (R), a = g / norm (R), b = a * grad_g / norm (2R), "
        "grad_v = a * grad_w - b * v (3N)."),
    SUPP("aten.abs", ts_opf_unit, T_UNIT, NULL),
    SUPP("aten.abs_", ts_opf_unit, T_UNIT, NULL),
    SUPP("aten.adaptive_max_pool2d", ts_opf_adaptive_max_pool2d, T_AMAX, NULL),
    EXT("aten.adaptive_max_pool2d_backward",
        ts_opf_scatter_grad,
        "grad_output elements",
        "Each gradient element is added into the position its index names."),
    SUPP("aten.adaptive_max_pool3d", ts_opf_adaptive_max_pool3d, T_AMAX, NULL),
    EXT("aten.adaptive_max_pool3d_backward",
        ts_opf_scatter_grad,
        "grad_output elements",
        "Each gradient element is added into the position its index names."),
    SUPP("aten.add", ts_opf_add, T_ADD, NULL),
    SUPP("aten.add_", ts_opf_add, T_ADD, NULL),
    SUPP("aten.addcdiv", ts_opf_addc, "out*(2 + [value != 1])", NULL),
    SUPP("aten.addcdiv_", ts_opf_addc, "out*(2 + [value != 1])", NULL),
    SUPP("aten.addcmul", ts_opf_addc, "out*(2 + [value != 1])", NULL),
    SUPP("aten.addcmul_", ts_opf_addc, "out*(2 + [value != 1])", NULL),
    NATIVE("aten.addmm",
           ts_opf_addmm,
           "2*m*n*k of mat1 @ mat2; bias and scaling not counted "
           "(FlopCounterMode)",
           "The bias add and the beta/alpha scaling are not counted, as in "
           "FlopCounterMode; module FLOPs of nn.Linear count the bias "
           "(docs/methodology.md)."),
    IGNORED("aten.alias", VIEW),
    EXT("aten.all",
        ts_opf_all_any,
        "N for a floating input; 0 for boolean/integer",
        "A floating element is tested against zero (1); combining the tests "
        "is boolean work."),
    EXT("aten.amax",
        ts_opf_extreme_reduction,
        "max(0, N - out)",
        "Comparisons, as the max/min reductions; the index bookkeeping of "
        "argmax is integer work."),
    EXT("aten.amin",
        ts_opf_extreme_reduction,
        "max(0, N - out)",
        "Comparisons, as the max/min reductions; the index bookkeeping of "
        "argmax is integer work."),
    EXT("aten.any",
        ts_opf_all_any,
        "N for a floating input; 0 for boolean/integer",
        "A floating element is tested against zero (1); combining the tests "
        "is boolean work."),
    IGNORED_EXT("aten.arange", CREATE),
    EXT("aten.argmax",
        ts_opf_extreme_reduction,
        "max(0, N - out)",
        "Comparisons, as the max/min reductions; the index bookkeeping of "
        "argmax is integer work."),
    EXT("aten.argmin",
        ts_opf_extreme_reduction,
        "max(0, N - out)",
        "Comparisons, as the max/min reductions; the index bookkeeping of "
        "argmax is integer work."),
    IGNORED("aten.as_strided", VIEW),
    IGNORED_EXT("aten.as_strided_", VIEW),
    SUPP("aten.avg_pool2d", ts_opf_avg_pool2d, T_POOL_AVG, NULL),
    EXT("aten.avg_pool2d_backward",
        ts_opf_avg_pool2d_backward,
        "grad_output*(K + 1)",
        "Divide by the window divisor, add into the K window positions."),
    SUPP("aten.avg_pool3d", ts_opf_avg_pool3d, T_POOL_AVG, NULL),
    EXT("aten.avg_pool3d_backward",
        ts_opf_avg_pool3d_backward,
        "grad_output*(K + 1)",
        "Divide by the window divisor, add into the K window positions."),
    NATIVE("aten.baddbmm",
           ts_opf_baddbmm,
           "2*b*m*n*k of batch1 @ batch2; bias and scaling not counted "
           "(FlopCounterMode)",
           "The added tensor and the scaling are not counted, as in "
           "FlopCounterMode."),
    IGNORED_EXT("aten.bernoulli", RANDOM),
    IGNORED_EXT("aten.bernoulli_", RANDOM),
    EXT("aten.binary_cross_entropy",
        ts_opf_binary_cross_entropy,
        "(9 + [weight])*N + reduction",
        "The CPU kernel's (t - 1)*max(log1p(-p), -100) - t*max(log(p), -100); "
        "reduction: sum N - 1, mean N."),
    EXT("aten.binary_cross_entropy_backward",
        ts_opf_binary_cross_entropy_backward,
        "(6 + [weight] + [mean])*N",
        "grad*(p - t)/max((1 - p)*p, eps)."),
    EXT("aten.binary_cross_entropy_with_logits",
        ts_opf_bce_with_logits,
        "(10 + 3*[pos_weight] + [weight])*N + reduction",
        "(1 - t)*x - log_sigmoid(x) with log_sigmoid 7; pos_weight scales the "
        "log-sigmoid term by (pos_weight - 1)*t + 1. The gradient runs as "
        "ordinary operators."),
    IGNORED_EXT("aten.binomial", RANDOM),
    EXT("aten.bitwise_and",
        ts_opf_boolean,
        "0",
        "Integer/boolean arithmetic is excluded by torchscan_flops_v1."),
    EXT("aten.bitwise_and_",
        ts_opf_boolean,
        "0",
        "Integer/boolean arithmetic is excluded by torchscan_flops_v1."),
    EXT("aten.bitwise_not",
        ts_opf_boolean,
        "0",
        "Integer/boolean arithmetic is excluded by torchscan_flops_v1."),
    EXT("aten.bitwise_not_",
        ts_opf_boolean,
        "0",
        "Integer/boolean arithmetic is excluded by torchscan_flops_v1."),
    EXT("aten.bitwise_or",
        ts_opf_boolean,
        "0",
        "Integer/boolean arithmetic is excluded by torchscan_flops_v1."),
    EXT("aten.bitwise_or_",
        ts_opf_boolean,
        "0",
        "Integer/boolean arithmetic is excluded by torchscan_flops_v1."),
    EXT("aten.bitwise_xor",
        ts_opf_boolean,
        "0",
        "Integer/boolean arithmetic is excluded by torchscan_flops_v1."),
    NATIVE("aten.bmm", ts_opf_bmm, T_BMM, NULL),
    IGNORED("aten.cat", MOVE),
    IGNORED_EXT("aten.cauchy_", RANDOM),
    EXT("aten.ceil",
        ts_opf_unit,
        T_UNIT,
        "One rounding per output element (convention for elementwise "
        "rounding); integer inputs count 0."),
    EXT("aten.ceil_",
        ts_opf_unit,
        T_UNIT,
        "One rounding per output element (convention for elementwise "
        "rounding); integer inputs count 0."),
    SUPP("aten.celu", ts_opf_in7, T_IN("7"), NULL),
    SUPP("aten.celu_", ts_opf_in7, T_IN("7"), NULL),
    SUPP("aten.clamp", ts_opf_clamp, "out*([min given] + [max given])", NULL),
    SUPP("aten.clamp_", ts_opf_clamp, "out*([min given] + [max given])", NULL),
    SUPP("aten.clamp_max", ts_opf_unit, T_UNIT, NULL),
    SUPP("aten.clamp_max_", ts_opf_unit, T_UNIT, NULL),
    SUPP("aten.clamp_min", ts_opf_unit, T_UNIT, NULL),
    SUPP("aten.clamp_min_", ts_opf_unit, T_UNIT, NULL),
    IGNORED("aten.clone", MOVE),
    IGNORED_EXT("aten.constant_pad_nd", MOVE),
    IGNORED("aten.contiguous", MOVE),
    NATIVE(
        "aten.convolution",
        ts_opf_convolution,
        T_CONV,
        "Counts 2 per multiply-add of the full window (2K per output), where "
        "module FLOPs count 2K - 1 plus the bias (docs/methodology.md)."),
    NATIVE("aten.convolution_backward",
           ts_opf_convolution_backward,
           "[output_mask[0]] conv count of grad_input + [output_mask[1]] conv "
           "count of grad_weight (FlopCounterMode)",
           NULL),
    NATIVE(
        "aten.convolution_overrideable",
        ts_opf_convolution,
        T_CONV,
        "Counts 2 per multiply-add of the full window (2K per output), where "
        "module FLOPs count 2K - 1 plus the bias (docs/methodology.md)."),
    IGNORED("aten.copy_", MOVE),
    SUPP("aten.cos", ts_opf_unit, T_UNIT, NULL),
    SUPP("aten.cos_", ts_opf_unit, T_UNIT, NULL),
    EXT("aten.cudnn_batch_norm",
        ts_opf_native_batch_norm,
        T_BN,
        "cuDNN's BatchNorm on CUDA: the arguments of native_batch_norm, "
        "counted as it is."),
    EXT("aten.cudnn_batch_norm_backward",
        ts_opf_vendor_batch_norm_backward,
        T_BN_VENDOR_BWD,
        "Follows a training forward only and returns all three gradients: "
        "native_batch_norm_backward with train and output_mask (1, 1, 1)."),
    NATIVE("aten.cudnn_convolution",
           ts_opf_cudnn_convolution,
           T_CONV "; argument 6 (benchmark) is read as transposed, as "
                  "FlopCounterMode does",
           NULL),
    SUPP("aten.cumsum", ts_opf_cumsum, "N - N/width along dim", T_CUMSUM),
    SUPP("aten.cumsum_", ts_opf_cumsum, "N - N/width along dim", T_CUMSUM),
    IGNORED("aten.detach", VIEW),
    IGNORED_EXT("aten.detach_", VIEW),
    IGNORED_EXT("aten.diagonal", VIEW),
    SUPP("aten.div",
         ts_opf_div,
         "out (true division); rounding_mode unsupported",
         "Integer inputs promote to floating and count. A rounding_mode has "
         "no convention: unsupported."),
    SUPP("aten.div_",
         ts_opf_div,
         "out (true division); rounding_mode unsupported",
         NULL),
    SUPP("aten.dot", ts_opf_dot, "2*prod(first operand)", NULL),
    SUPP("aten.elu",
         ts_opf_elu,
         "(6 + [scale != 1] + [input_scale != 1])*N",
         NULL),
    SUPP("aten.elu_",
         ts_opf_elu,
         "(6 + [scale != 1] + [input_scale != 1])*N",
         NULL),
    EXT("aten.elu_backward",
        ts_opf_elu_backward,
        "7*out (from the input) or 6*out (from the result)",
        "The CPU kernel's expression with both branches evaluated: "
        "comparison, selection, exp(x*input_scale) scaled by the gradient, or "
        "grad*scale."),
    EXT("aten.embedding",
        ts_opf_lookup,
        "0 (lookup)",
        "Every output element is an input element an index selects: no "
        "arithmetic. Counted 0 by an explicit formula (shown in by_operator) "
        "because its gradient accumulates and is counted."),
    EXT("aten.embedding_dense_backward",
        ts_opf_embedding_backward,
        "(1 + [scale_grad_by_freq])*grad_output elements",
        "Each gradient row is added into its table row; scale_grad_by_freq "
        "divides by the index frequency first. padding_idx rows are counted "
        "(their positions are data)."),
    IGNORED("aten.empty", ALLOC),
    IGNORED("aten.empty_like", ALLOC),
    IGNORED_EXT("aten.empty_permuted", ALLOC),
    IGNORED("aten.empty_strided", ALLOC),
    EXT("aten.eq",
        ts_opf_unit,
        "out",
        "One comparison per output element; integer/boolean operands count "
        "0."),
    EXT("aten.eq_",
        ts_opf_unit,
        "out",
        "One comparison per output element; integer/boolean operands count "
        "0."),
    EXT("aten.erf",
        ts_opf_unit_promoting,
        "out",
        "erf counts 1 in torchscan_flops_v1; integer inputs promote to "
        "floating."),
    EXT("aten.erf_",
        ts_opf_unit_promoting,
        "out",
        "erf counts 1 in torchscan_flops_v1; integer inputs promote to "
        "floating."),
    SUPP("aten.exp",
         ts_opf_unit_promoting,
         "out (integer inputs promote to floating)",
         NULL),
    SUPP("aten.exp_",
         ts_opf_unit_promoting,
         "out (integer inputs promote to floating)",
         NULL),
    IGNORED("aten.expand", VIEW),
    IGNORED_EXT("aten.exponential_", RANDOM),
    IGNORED_EXT("aten.eye", CREATE),
    IGNORED("aten.fill_", MOVE),
    IGNORED_EXT("aten.flip", MOVE),
    EXT("aten.floor",
        ts_opf_unit,
        T_UNIT,
        "One rounding per output element (convention for elementwise "
        "rounding); integer inputs count 0."),
    EXT("aten.floor_",
        ts_opf_unit,
        T_UNIT,
        "One rounding per output element (convention for elementwise "
        "rounding); integer inputs count 0."),
    EXT("aten.floor_divide",
        ts_opf_floor_divide,
        "2*out",
        "floor(a / b): a divide and a rounding per output element. Integer "
        "operands (index arithmetic, such as a Mixture-of-Experts router's "
        "token index // top_k) count 0."),
    EXT("aten.floor_divide_",
        ts_opf_floor_divide,
        "2*out",
        "floor(a / b): a divide and a rounding per output element. Integer "
        "operands (index arithmetic, such as a Mixture-of-Experts router's "
        "token index // top_k) count 0."),
    IGNORED("aten.full", CREATE),
    IGNORED("aten.full_like", CREATE),
    EXT("aten.gather",
        ts_opf_lookup,
        "0 (lookup)",
        "Every output element is an input element an index selects: no "
        "arithmetic. Counted 0 by an explicit formula (shown in by_operator) "
        "because its gradient accumulates and is counted."),
    EXT("aten.ge",
        ts_opf_unit,
        "out",
        "One comparison per output element; integer/boolean operands count "
        "0."),
    EXT("aten.ge_",
        ts_opf_unit,
        "out",
        "One comparison per output element; integer/boolean operands count "
        "0."),
    SUPP("aten.gelu",
         ts_opf_gelu,
         "5*out (exact) or 14*out (tanh)",
         "Any other approximate value is unsupported."),
    SUPP("aten.gelu_", ts_opf_gelu, "5*out (exact) or 14*out (tanh)", NULL),
    EXT("aten.gelu_backward",
        ts_opf_gelu_backward,
        "11*out (exact) or 23*out (tanh)",
        "The CPU kernel's expression: exact cdf (4) + pdf (4) + grad*(cdf + "
        "x*pdf) (3); tanh: x^2, x^3, inner, tanh (6), and the product rule "
        "(23). Other approximate values unsupported."),
    IGNORED_EXT("aten.geometric_", RANDOM),
    SUPP("aten.glu", ts_opf_silu, "5*out", NULL),
    EXT("aten.glu_backward",
        ts_opf_glu_backward,
        "9*grad_output",
        "s = sigmoid(b) (4), da = grad*s (1), db = grad*a*s*(1 - s) (4)."),
    EXT("aten.grid_sampler_2d",
        ts_opf_grid_sampler_2d,
        "points*(4 + taps*pad + P) + points*C*E; points = N*Ho*Wo; "
        "bilinear P=8, E=7, taps=1; nearest P=2, E=0, taps=1; bicubic "
        "P=54, E=35, taps=16; pad: zeros 0, border 4, reflection 18",
        "Per grid point: both coordinates unnormalized (a multiply-add "
        "each), padded (border: 2 clamps per axis; reflection: |x - min|, "
        "fmod, floor of a division, the reflected side and 2 clamps per "
        "axis), interpolation weights (bilinear: 2 fractions, 2 "
        "complements, 4 products; nearest: 2 roundings; bicubic: 2 floors, "
        "2 fractions, 25 per axis for the 4 cubic coefficients). Per channel: "
        "bilinear 4 products and 3 adds; bicubic five 4-tap cubic "
        "interpolations (7 each). Bounds masks and indices are integer "
        "work; points outside the input count like the others."),
    EXT("aten.gt",
        ts_opf_unit,
        "out",
        "One comparison per output element; integer/boolean operands count "
        "0."),
    EXT("aten.gt_",
        ts_opf_unit,
        "out",
        "One comparison per output element; integer/boolean operands count "
        "0."),
    SUPP("aten.hardshrink", ts_opf_in3, T_IN("3"), NULL),
    EXT("aten.hardshrink_backward",
        ts_opf_shrink_backward,
        "2*out",
        "grad where |x| > lambd: two bound tests with the selection folded "
        "in."),
    SUPP("aten.hardsigmoid", ts_opf_in4, T_IN("4"), NULL),
    SUPP("aten.hardsigmoid_", ts_opf_in4, T_IN("4"), NULL),
    EXT("aten.hardsigmoid_backward",
        ts_opf_hardsigmoid_backward,
        "3*out",
        "grad/6 inside (-3, 3): two bound tests and a multiply."),
    SUPP("aten.hardswish", ts_opf_in5, T_IN("5"), NULL),
    SUPP("aten.hardswish_", ts_opf_in5, T_IN("5"), NULL),
    EXT("aten.hardswish_backward",
        ts_opf_hardswish_backward,
        "5*out",
        "grad*(x/3 + 0.5) inside [-3, 3]: two bound tests, divide, add, "
        "multiply."),
    SUPP("aten.hardtanh", ts_opf_in2, T_IN("2"), NULL),
    SUPP("aten.hardtanh_", ts_opf_in2, T_IN("2"), NULL),
    EXT("aten.hardtanh_backward",
        ts_opf_hardtanh_backward,
        "2*out",
        "grad inside (min, max): the two bound tests of hardtanh (2) with the "
        "selection folded in."),
    EXT("aten.histc",
        ts_opf_histc,
        "0 (counting)",
        "Each element's bin, (x - min)*bins/(max - min), is an index that "
        "addresses a counter and each count an integer increment: index "
        "work, excluded as a lookup's index is, for floating and integer "
        "inputs alike (Mixture-of-Experts routers histogram float expert ids "
        "on CPU and integer ids on CUDA and meta; they count the same). "
        "Listed in by_operator with 0."),
    EXT("aten.huber_loss",
        ts_opf_smooth_l1_loss,
        "8N + reduction",
        "Both branches of |x - t| < b ? quadratic : linear: subtract, abs, "
        "comparison, 3 per branch, selection."),
    EXT("aten.huber_loss_backward",
        ts_opf_smooth_l1_loss_backward,
        "7N",
        "d = x - t clipped to [-b, b] by two comparisons and a selection, "
        "scaled by grad*norm and divided by b."),
    EXT("aten.index",
        ts_opf_lookup,
        "0 (lookup)",
        "Every output element is an input element an index selects: no "
        "arithmetic. Counted 0 by an explicit formula (shown in by_operator) "
        "because its gradient accumulates and is counted."),
    EXT("aten.index_put",
        ts_opf_index_put,
        "values elements with accumulate=True; 0 otherwise",
        "Without accumulate a scatter (data movement). values must have the "
        "full rank of the indexed positions (broadcast to a higher rank is "
        "unsupported)."),
    EXT("aten.index_put_",
        ts_opf_index_put,
        "values elements with accumulate=True; 0 otherwise",
        "Without accumulate a scatter (data movement). values must have the "
        "full rank of the indexed positions (broadcast to a higher rank is "
        "unsupported)."),
    EXT("aten.index_select",
        ts_opf_lookup,
        "0 (lookup)",
        "Every output element is an input element an index selects: no "
        "arithmetic. Counted 0 by an explicit formula (shown in by_operator) "
        "because its gradient accumulates and is counted."),
    EXT("aten.le",
        ts_opf_unit,
        "out",
        "One comparison per output element; integer/boolean operands count "
        "0."),
    EXT("aten.le_",
        ts_opf_unit,
        "out",
        "One comparison per output element; integer/boolean operands count "
        "0."),
    SUPP("aten.leaky_relu", ts_opf_in4, T_IN("4"), NULL),
    SUPP("aten.leaky_relu_", ts_opf_in4, T_IN("4"), NULL),
    EXT("aten.leaky_relu_backward",
        ts_opf_leaky_relu_backward,
        "2*out",
        "grad or grad*slope: a masked selection and a multiply."),
    EXT("aten.lerp",
        ts_opf_lerp,
        "3*out",
        "self + weight*(end - self): subtract, multiply, add."),
    EXT("aten.lerp_",
        ts_opf_lerp,
        "3*out",
        "self + weight*(end - self): subtract, multiply, add."),
    IGNORED("aten.lift_fresh", CREATE),
    IGNORED("aten.lift_fresh_copy", CREATE),
    SUPP("aten.linalg_vector_norm",
         ts_opf_norm,
         "2N (order 2 or None) or max(0, 2N - out) (order 1 or +/-inf)",
         NULL),
    IGNORED_EXT("aten.linspace", CREATE),
    SUPP("aten.log", ts_opf_unit, T_UNIT, NULL),
    EXT("aten.log2",
        ts_opf_unit,
        T_UNIT,
        "One logarithm per output element, as aten.log."),
    EXT("aten.log2_",
        ts_opf_unit,
        T_UNIT,
        "One logarithm per output element, as aten.log."),
    SUPP("aten.log_", ts_opf_unit, T_UNIT, NULL),
    IGNORED_EXT("aten.log_normal_", RANDOM),
    EXT("aten.log_sigmoid_backward",
        ts_opf_log_sigmoid_backward,
        "8*out",
        "(max_deriv - sign*z/(1 + z))*grad with z saved by the forward; the "
        "two selections and the comparison count 1 each."),
    SUPP("aten.log_sigmoid_forward", ts_opf_in7, T_IN("7"), NULL),
    IGNORED_EXT("aten.logspace", CREATE),
    EXT("aten.logsumexp",
        ts_opf_logsumexp,
        "4N",
        "Stable: max (N - O), subtract, exp, sum (N - O), log and add back "
        "(2O)."),
    EXT("aten.lt",
        ts_opf_unit,
        "out",
        "One comparison per output element; integer/boolean operands count "
        "0."),
    EXT("aten.lt_",
        ts_opf_unit,
        "out",
        "One comparison per output element; integer/boolean operands count "
        "0."),
    SUPP("aten.masked_fill",
         ts_opf_masked_fill,
         "out (dtype of the input)",
         "Counts 0 when the input is integer or boolean."),
    SUPP("aten.masked_fill_",
         ts_opf_masked_fill,
         "out (dtype of the input)",
         NULL),
    SUPP("aten.max",
         ts_opf_extremum,
         "out (with a second tensor) or max(0, N - out) (reduction)",
         NULL),
    SUPP("aten.max_pool2d_with_indices", ts_opf_max_pool2d, T_POOL_MAX, NULL),
    EXT("aten.max_pool2d_with_indices_backward",
        ts_opf_scatter_grad,
        "grad_output elements",
        "Each gradient element is added into the position its index names."),
    SUPP("aten.max_pool3d_with_indices", ts_opf_max_pool3d, T_POOL_MAX, NULL),
    EXT("aten.max_pool3d_with_indices_backward",
        ts_opf_scatter_grad,
        "grad_output elements",
        "Each gradient element is added into the position its index names."),
    SUPP("aten.maximum", ts_opf_unit, T_UNIT, NULL),
    SUPP("aten.mean",
         ts_opf_mean,
         "max(0, N - out) + out; empty rows unsupported",
         "dtype as for sum."),
    SUPP("aten.min",
         ts_opf_extremum,
         "out (with a second tensor) or max(0, N - out) (reduction)",
         NULL),
    SUPP("aten.minimum", ts_opf_unit, T_UNIT, NULL),
    EXT("aten.miopen_batch_norm",
        ts_opf_native_batch_norm,
        T_BN,
        "MIOpen's BatchNorm on ROCm: the arguments of native_batch_norm, "
        "counted as it is."),
    EXT("aten.miopen_batch_norm_backward",
        ts_opf_vendor_batch_norm_backward,
        T_BN_VENDOR_BWD,
        "As cudnn_batch_norm_backward."),
    SUPP("aten.mish", ts_opf_in10, T_IN("10"), NULL),
    SUPP("aten.mish_", ts_opf_in10, T_IN("10"), NULL),
    EXT("aten.mkldnn_rnn_layer",
        ts_opf_mkldnn_lstm,
        "rows*(8H*(I + R) + 32H + 8H*[biases]); rows = steps*batch",
        "One direction of one nn.LSTM layer on CPU (oneDNN). Gates 2*4H*(I + "
        "R) + 4H, biases 8H, cell 28H (3 sigmoids, tanh, c and h updates). "
        "LSTM (mode 2) only."),
    EXT("aten.mkldnn_rnn_layer_backward",
        ts_opf_mkldnn_lstm_backward,
        "rows*(16H*(I + R) + 23H + 4H*[biases])",
        "Four matrix products (dx, dW_ih, dh, dW_hh), the cell and gate "
        "gradients from the saved gates (23H), the bias gradient sum (4H). "
        "LSTM only."),
    NATIVE("aten.mm", ts_opf_mm, T_MM, NULL),
    EXT("aten.mse_loss",
        ts_opf_mse_loss,
        "2N + [reduction != none]*(N - 1) + [mean]",
        "Difference and square per element, then the reduction."),
    EXT("aten.mse_loss_backward",
        ts_opf_mse_loss_backward,
        "3N",
        "(self - target)*norm*grad, norm = 2 or 2/N (a scalar)."),
    SUPP("aten.mul", ts_opf_unit, T_UNIT, NULL),
    SUPP("aten.mul_", ts_opf_unit, T_UNIT, NULL),
    IGNORED_EXT("aten.multinomial", RANDOM),
    SUPP("aten.mv", ts_opf_dot, "2*prod(first operand)", NULL),
    IGNORED("aten.narrow", VIEW),
    SUPP("aten.native_batch_norm",
         ts_opf_native_batch_norm,
         T_BN,
         "A = number of affine tensors given (weight, bias)."),
    EXT("aten.native_batch_norm_backward",
        ts_opf_batch_norm_backward,
        "[grad_weight or training grad_input]*(4N - C) + [grad_bias or "
        "training grad_input]*(N - C) + [grad_input]*(training: 4N + (2 + "
        "[weight])*C; eval: N + (3 + [weight])*C)",
        "x^ = (x - mean)*invstd (2N) and sum(dy*x^) (2N - C); sum(dy) (N - "
        "C); training grad_input w*invstd*(dy - mean(dy) - x^*mean(dy*x^)) "
        "(4N, per-channel means 2C); eval grad_input dy*w*invstd (N, invstd "
        "from running_var 3C). C = channels."),
    EXT("aten.native_dropout",
        ts_opf_native_dropout,
        "2*N in training; 0 with train=False",
        "Multiply by the mask and by 1/(1-p); drawing the mask is random "
        "number generation (excluded, see bernoulli). Equals the CPU path "
        "bernoulli_ + div_ + mul."),
    EXT("aten.native_dropout_backward",
        ts_opf_native_dropout_backward,
        "2*out",
        "grad * mask * scale."),
    SUPP("aten.native_group_norm",
         ts_opf_group_norm,
         "6N + 2*batch*groups + A*N",
         NULL),
    EXT("aten.native_group_norm_backward",
        ts_opf_group_norm_backward,
        "[grad_input or grad_weight]*2N + [grad_input]*(7 + [weight])*N + "
        "[grad_weight]*(2N - C) + [grad_bias]*(N - C)",
        "As native_layer_norm_backward over batch*group rows, with "
        "per-channel weight and bias gradients (sums over batch and space)."),
    SUPP("aten.native_layer_norm",
         ts_opf_layer_norm,
         "6N + 2*rows + A*N",
         "A = number of affine tensors given (weight, bias); rows = N / "
         "prod(normalized_shape)."),
    EXT("aten.native_layer_norm_backward",
        ts_opf_layer_norm_backward,
        "[grad_input or grad_weight]*2N + [grad_input]*(7 + [weight])*N + "
        "[grad_weight]*(2N - W) + [grad_bias]*(N - W)",
        "x^ recomputed (2N); grad_input rstd*(dy^ - mean(dy^) - "
        "x^*mean(dy^*x^)) with dy^ = dy*w; W = prod(normalized_shape); "
        "weight/bias gradients are column sums over the rows."),
    EXT("aten.ne",
        ts_opf_unit,
        "out",
        "One comparison per output element; integer/boolean operands count "
        "0."),
    EXT("aten.ne_",
        ts_opf_unit,
        "out",
        "One comparison per output element; integer/boolean operands count "
        "0."),
    SUPP("aten.neg", ts_opf_unit, T_UNIT, NULL),
    SUPP("aten.neg_", ts_opf_unit, T_UNIT, NULL),
    IGNORED_EXT("aten.new_empty", ALLOC),
    IGNORED_EXT("aten.new_empty_strided", ALLOC),
    IGNORED_EXT("aten.new_full", CREATE),
    IGNORED_EXT("aten.new_ones", CREATE),
    IGNORED_EXT("aten.new_zeros", CREATE),
    EXT("aten.nll_loss2d_backward",
        ts_opf_nll_loss_backward,
        "T*(1 + [weight] + [mean])",
        "-grad (*weight) (/total_weight) written at each target position of a "
        "zero-filled gradient."),
    EXT("aten.nll_loss2d_forward",
        ts_opf_nll_loss,
        "T*(1 + [weight]) + [reduction != none]*(T - 1) + [mean]*(1 + "
        "[weight]*(T - 1)); T = target elements",
        "Picking the target log-probability is a lookup (0); negate and "
        "weight per target, then reduce. Ignored targets are counted (their "
        "positions are data)."),
    EXT("aten.nll_loss_backward",
        ts_opf_nll_loss_backward,
        "T*(1 + [weight] + [mean])",
        "-grad (*weight) (/total_weight) written at each target position of a "
        "zero-filled gradient."),
    EXT("aten.nll_loss_forward",
        ts_opf_nll_loss,
        "T*(1 + [weight]) + [reduction != none]*(T - 1) + [mean]*(1 + "
        "[weight]*(T - 1)); T = target elements",
        "Picking the target log-probability is a lookup (0); negate and "
        "weight per target, then reduce. Ignored targets are counted (their "
        "positions are data)."),
    EXT("aten.nonzero",
        ts_opf_all_any,
        "N for a floating input; 0 for boolean/integer",
        "One comparison with zero per floating input element, as aten.any; "
        "a boolean mask (the usual input) counts 0, and writing the "
        "indices is integer work."),
    SUPP("aten.norm",
         ts_opf_norm,
         "2N (order 2 or None) or max(0, 2N - out) (order 1 or +/-inf)",
         NULL),
    IGNORED_EXT("aten.normal", RANDOM),
    IGNORED_EXT("aten.normal_", RANDOM),
    IGNORED_EXT("aten.normal_functional", RANDOM),
    IGNORED("aten.ones", CREATE),
    IGNORED("aten.ones_like", CREATE),
    IGNORED("aten.permute", VIEW),
    IGNORED_EXT("aten.poisson", RANDOM),
    EXT("aten.pow",
        ts_opf_pow,
        "out*cost(n) for an integer scalar exponent n: cost = floor(log2|n|) "
        "+ popcount(|n|) - 1, +1 if n < 0; out for +-0.5",
        "Square-and-multiply, as the CPU kernel specialises x^2, x^3, x^-1, "
        "x^-2; x^0 and x^1 are fills/copies (0). Contract 2.2 gives the "
        "exponent 2 (out). Other real exponents (exp(y*log x)) and tensor "
        "exponents are unsupported."),
    EXT("aten.pow_",
        ts_opf_pow,
        "out*cost(n) for an integer scalar exponent n: cost = floor(log2|n|) "
        "+ popcount(|n|) - 1, +1 if n < 0; out for +-0.5",
        "Square-and-multiply, as the CPU kernel specialises x^2, x^3, x^-1, "
        "x^-2; x^0 and x^1 are fills/copies (0). Contract 2.2 gives the "
        "exponent 2 (out). Other real exponents (exp(y*log x)) and tensor "
        "exponents are unsupported."),
    SUPP("aten.prelu", ts_opf_in4, T_IN("4"), NULL),
    IGNORED_EXT("aten.rand", RANDOM),
    IGNORED_EXT("aten.rand_like", RANDOM),
    IGNORED_EXT("aten.randint", RANDOM),
    IGNORED_EXT("aten.randint_like", RANDOM),
    IGNORED_EXT("aten.randn", RANDOM),
    IGNORED_EXT("aten.randn_like", RANDOM),
    IGNORED_EXT("aten.random_", RANDOM),
    IGNORED_EXT("aten.randperm", RANDOM),
    SUPP("aten.reciprocal", ts_opf_unit, T_UNIT, NULL),
    SUPP("aten.reciprocal_", ts_opf_unit, T_UNIT, NULL),
    IGNORED_EXT("aten.reflection_pad1d", MOVE),
    IGNORED_EXT("aten.reflection_pad2d", MOVE),
    IGNORED_EXT("aten.reflection_pad3d", MOVE),
    SUPP("aten.relu", ts_opf_unit, T_UNIT, NULL),
    SUPP("aten.relu_", ts_opf_unit, T_UNIT, NULL),
    EXT("aten.remainder",
        ts_opf_remainder,
        "4*out",
        "a - b*floor(a/b): divide, floor, multiply, subtract. Integer "
        "operands (index arithmetic) count 0."),
    EXT("aten.remainder_",
        ts_opf_remainder,
        "4*out",
        "a - b*floor(a/b): divide, floor, multiply, subtract. Integer "
        "operands (index arithmetic) count 0."),
    IGNORED_EXT("aten.repeat", MOVE),
    IGNORED_EXT("aten.replication_pad1d", MOVE),
    IGNORED_EXT("aten.replication_pad2d", MOVE),
    IGNORED_EXT("aten.replication_pad3d", MOVE),
    SUPP("aten.rms_norm", ts_opf_rms_norm, "(3 + [weight])*N + 2*rows", NULL),
    IGNORED_EXT("aten.roll", MOVE),
    EXT("aten.round",
        ts_opf_round,
        "out*(1 + 2*[decimals != 0])",
        "One rounding per output element; with decimals, a multiply by "
        "10^decimals before and a divide after. Integer inputs count 0."),
    EXT("aten.round_",
        ts_opf_round,
        "out*(1 + 2*[decimals != 0])",
        "One rounding per output element; with decimals, a multiply by "
        "10^decimals before and a divide after. Integer inputs count 0."),
    SUPP("aten.rrelu_with_noise",
         ts_opf_rrelu,
         "4*N in eval; training unsupported",
         NULL),
    SUPP("aten.rrelu_with_noise_",
         ts_opf_rrelu,
         "4*N in eval; training unsupported",
         NULL),
    SUPP("aten.rsqrt",
         ts_opf_unit_promoting,
         "out (integer inputs promote to floating)",
         NULL),
    SUPP("aten.rsqrt_",
         ts_opf_unit_promoting,
         "out (integer inputs promote to floating)",
         NULL),
    SUPP("aten.rsub", ts_opf_add, T_ADD, "other - alpha*self, as sub."),
    IGNORED("aten.scalar_tensor", CREATE),
    EXT_ATTENTION("aten.scaled_dot_product_attention",
                  ts_opf_sdpa_composite,
                  "2*scores*(d_q + d_v) + scores*(6 + [is_causal] + "
                  "[attn_mask] + 2*[dropout_p > 0]) - 2*rows (the attention "
                  "convention); rows = query elements / d_q",
                  "One attention call, whichever kernel ran: the composite "
                  "operator itself where a dispatch mode sees it (under "
                  "inference_mode), the forward kernel it picked, or its "
                  "math decomposition (q and k scaled, bmm, _safe_softmax, "
                  "bmm), which the operator counter recognises and counts "
                  "as one call (docs/methodology.md)."),
    EXT("aten.scatter",
        ts_opf_scatter,
        "0; index elements with reduce='add' or 'multiply'",
        "A plain scatter moves data; other reduce values are unsupported."),
    EXT("aten.scatter_",
        ts_opf_scatter,
        "0; index elements with reduce='add' or 'multiply'",
        "A plain scatter moves data; other reduce values are unsupported."),
    EXT("aten.scatter_add",
        ts_opf_scatter_add,
        "index elements",
        "One add per index element."),
    EXT("aten.scatter_add_",
        ts_opf_scatter_add,
        "index elements",
        "One add per index element."),
    IGNORED("aten.select", VIEW),
    IGNORED_EXT("aten.select_backward", MOVE),
    IGNORED_EXT("aten.select_scatter", MOVE),
    EXT("aten.sgn",
        ts_opf_sign,
        "out",
        "One comparison-selection per element; complex sgn (a division by the "
        "magnitude) is unsupported."),
    EXT("aten.sgn_",
        ts_opf_sign,
        "out",
        "One comparison-selection per element; complex sgn (a division by the "
        "magnitude) is unsupported."),
    SUPP("aten.sigmoid", ts_opf_sigmoid, "4*out", NULL),
    SUPP("aten.sigmoid_", ts_opf_sigmoid, "4*out", NULL),
    EXT("aten.sigmoid_backward",
        ts_opf_sigmoid_tanh_backward,
        "3*out",
        "grad*y*(1 - y) from the saved output."),
    EXT("aten.sign",
        ts_opf_sign,
        "out",
        "One comparison-selection per element; complex sgn (a division by the "
        "magnitude) is unsupported."),
    EXT("aten.sign_",
        ts_opf_sign,
        "out",
        "One comparison-selection per element; complex sgn (a division by the "
        "magnitude) is unsupported."),
    SUPP("aten.silu", ts_opf_silu, "5*out", NULL),
    SUPP("aten.silu_", ts_opf_silu, "5*out", NULL),
    SUPP("aten.sin", ts_opf_unit, T_UNIT, NULL),
    SUPP("aten.sin_", ts_opf_unit, T_UNIT, NULL),
    IGNORED("aten.slice", VIEW),
    IGNORED_EXT("aten.slice_backward", MOVE),
    IGNORED_EXT("aten.slice_scatter", MOVE),
    EXT("aten.smooth_l1_loss",
        ts_opf_smooth_l1_loss,
        "8N + reduction",
        "Both branches of |x - t| < b ? quadratic : linear: subtract, abs, "
        "comparison, 3 per branch, selection."),
    EXT("aten.smooth_l1_loss_backward",
        ts_opf_smooth_l1_loss_backward,
        "7N",
        "d = x - t clipped to [-b, b] by two comparisons and a selection, "
        "scaled by grad*norm and divided by b."),
    SUPP("aten.softplus", ts_opf_in7, T_IN("7"), NULL),
    EXT("aten.softplus_backward",
        ts_opf_softplus_backward,
        "7*out",
        "z = exp(x*beta); x*beta > threshold ? grad : grad*z/(z + 1), as "
        "softplus counts 7."),
    SUPP("aten.softshrink", ts_opf_in5, T_IN("5"), NULL),
    EXT("aten.softshrink_backward",
        ts_opf_shrink_backward,
        "2*out",
        "grad where |x| > lambd: two bound tests with the selection folded "
        "in."),
    EXT("aten.sort",
        ts_opf_sort,
        "N*ceil(log2 n), n = size along dim",
        "Comparisons of a comparison sort: n*ceil(log2 n) per row of n keys "
        "(any overload, stable or not). Integer and boolean keys count 0."),
    IGNORED("aten.split", MOVE),
    IGNORED("aten.split_with_sizes", MOVE),
    SUPP("aten.sqrt",
         ts_opf_unit_promoting,
         "out (integer inputs promote to floating)",
         NULL),
    SUPP("aten.sqrt_",
         ts_opf_unit_promoting,
         "out (integer inputs promote to floating)",
         NULL),
    IGNORED("aten.squeeze", VIEW),
    IGNORED("aten.squeeze_", VIEW),
    IGNORED_EXT("aten.stack", MOVE),
    EXT("aten.std",
        ts_opf_std,
        "4N + out",
        "var and a square root per output."),
    EXT("aten.std_mean",
        ts_opf_std,
        "4N + out",
        "var and a square root per output."),
    SUPP("aten.sub", ts_opf_add, T_ADD, NULL),
    SUPP("aten.sub_", ts_opf_add, T_ADD, NULL),
    SUPP("aten.sum",
         ts_opf_sum,
         "max(0, N - out)",
         "dtype from the dtype= argument, else out=, else the input; integer "
         "sums count 0."),
    IGNORED("aten.t", VIEW),
    IGNORED_EXT("aten.t_", VIEW),
    SUPP("aten.tanh", ts_opf_tanh, "6*out", NULL),
    SUPP("aten.tanh_", ts_opf_tanh, "6*out", NULL),
    EXT("aten.tanh_backward",
        ts_opf_sigmoid_tanh_backward,
        "3*out",
        "grad*(1 - y*y) from the saved output."),
    SUPP("aten.threshold", ts_opf_in2, T_IN("2"), NULL),
    SUPP("aten.threshold_", ts_opf_in2, T_IN("2"), NULL),
    EXT("aten.threshold_backward",
        ts_opf_threshold_backward,
        "out",
        "grad where x > threshold: one masked selection, as relu counts 1."),
    IGNORED("aten.to", MOVE),
    EXT("aten.topk",
        ts_opf_topk,
        "N*(floor(log2 k) + 1), k = 0: 0",
        "Each of the n keys of a row is compared once per level of a "
        "binary heap of the k best (floor(log2 k) + 1 levels): n for k = 1, "
        "a max. Integer and boolean keys count 0."),
    IGNORED("aten.transpose", VIEW),
    IGNORED_EXT("aten.transpose_", VIEW),
    EXT("aten.tril",
        ts_opf_masked_fill,
        "out (0 for integer/boolean input)",
        "Positional masking: one selection per element, as masked_fill; the "
        "position test is integer work."),
    EXT("aten.tril_",
        ts_opf_masked_fill,
        "out (0 for integer/boolean input)",
        "Positional masking: one selection per element, as masked_fill; the "
        "position test is integer work."),
    IGNORED_EXT("aten.tril_indices", CREATE),
    EXT("aten.triu",
        ts_opf_masked_fill,
        "out (0 for integer/boolean input)",
        "Positional masking: one selection per element, as masked_fill; the "
        "position test is integer work."),
    EXT("aten.triu_",
        ts_opf_masked_fill,
        "out (0 for integer/boolean input)",
        "Positional masking: one selection per element, as masked_fill; the "
        "position test is integer work."),
    IGNORED_EXT("aten.triu_indices", CREATE),
    EXT("aten.trunc",
        ts_opf_unit,
        T_UNIT,
        "One rounding per output element (convention for elementwise "
        "rounding); integer inputs count 0."),
    EXT("aten.trunc_",
        ts_opf_unit,
        T_UNIT,
        "One rounding per output element (convention for elementwise "
        "rounding); integer inputs count 0."),
    IGNORED("aten.unbind", VIEW),
    IGNORED_EXT("aten.unfold", VIEW),
    IGNORED_EXT("aten.uniform", RANDOM),
    IGNORED_EXT("aten.uniform_", RANDOM),
    IGNORED_EXT("aten.unsafe_split", MOVE),
    IGNORED_EXT("aten.unsafe_split_with_sizes", MOVE),
    IGNORED("aten.unsqueeze", VIEW),
    IGNORED_EXT("aten.unsqueeze_", VIEW),
    EXT("aten.upsample_bicubic2d",
        ts_opf_upsample_bicubic2d,
        "35*out",
        "Four 4-tap cubic interpolations along the rows and one along the "
        "column (4 multiplies, 3 adds each); coefficients and indices are "
        "per output row or column (not counted), as for "
        "upsample_bilinear2d."),
    EXT("aten.upsample_bilinear2d",
        ts_opf_upsample_bilinear2d,
        "9*out",
        "h0*(w0*a + w1*b) + h1*(w0*c + w1*d), as the CPU kernel evaluates "
        "it."),
    EXT("aten.upsample_bilinear2d_backward",
        ts_opf_upsample_bilinear2d_backward,
        "12*grad_output",
        "4 taps, each a two-weight product and an add."),
    EXT("aten.upsample_linear1d",
        ts_opf_upsample_linear1d,
        "3*out",
        "w0*x0 + w1*x1; weights and indices are per output column (not "
        "counted)."),
    EXT("aten.upsample_linear1d_backward",
        ts_opf_upsample_linear1d_backward,
        "4*grad_output",
        "2 taps, each a weight multiply and an add."),
    EXT("aten.upsample_nearest1d",
        ts_opf_lookup,
        "0 (lookup)",
        "Each output copies the nearest source element; the source index is "
        "integer work."),
    EXT("aten.upsample_nearest1d_backward",
        ts_opf_upsample_nearest_backward,
        "grad_output - grad_input elements",
        "Gradients sharing a source element are summed."),
    EXT("aten.upsample_nearest2d",
        ts_opf_lookup,
        "0 (lookup)",
        "Each output copies the nearest source element; the source index is "
        "integer work."),
    EXT("aten.upsample_nearest2d_backward",
        ts_opf_upsample_nearest_backward,
        "grad_output - grad_input elements",
        "Gradients sharing a source element are summed."),
    EXT("aten.upsample_nearest3d",
        ts_opf_lookup,
        "0 (lookup)",
        "Each output copies the nearest source element; the source index is "
        "integer work."),
    EXT("aten.upsample_nearest3d_backward",
        ts_opf_upsample_nearest_backward,
        "grad_output - grad_input elements",
        "Gradients sharing a source element are summed."),
    EXT("aten.upsample_trilinear3d",
        ts_opf_upsample_trilinear3d,
        "21*out",
        "Two bilinear planes (9 each) blended (3)."),
    EXT("aten.upsample_trilinear3d_backward",
        ts_opf_upsample_trilinear3d_backward,
        "32*grad_output",
        "8 taps, each a three-weight product and an add."),
    EXT("aten.var",
        ts_opf_var,
        "4N",
        "mean (N - O adds, O divisions), subtract, square, sum (N - O), "
        "divide by the corrected count (O); var_mean returns the mean it "
        "computed."),
    EXT("aten.var_mean",
        ts_opf_var,
        "4N",
        "mean (N - O adds, O divisions), subtract, square, sum (N - O), "
        "divide by the corrected count (O); var_mean returns the mean it "
        "computed."),
    SUPP("aten.vdot", ts_opf_dot, "2*prod(first operand)", NULL),
    IGNORED("aten.view", VIEW),
    IGNORED_EXT("aten.view_as_complex", VIEW),
    IGNORED_EXT("aten.view_as_real", VIEW),
    SUPP("aten.where",
         ts_opf_where,
         T_UNIT,
         "where(condition) alone returns indices: unsupported."),
    EXT("aten.xlogy",
        ts_opf_xlogy,
        "4*out",
        "x == 0 ? 0 : x*log(y), with a NaN test on y; integer inputs promote "
        "to floating."),
    EXT("aten.xlogy_",
        ts_opf_xlogy,
        "4*out",
        "x == 0 ? 0 : x*log(y), with a NaN test on y; integer inputs promote "
        "to floating."),
    IGNORED("aten.zero_", MOVE),
    IGNORED("aten.zeros", CREATE),
    IGNORED("aten.zeros_like", CREATE),
    COLL("c10d._allgather_base_", ts_opf_collective, T_COLL_GATHER),
    COLL("c10d._reduce_scatter_base_", ts_opf_collective, T_COLL_SCATTER),
    COLL("c10d.allgather_", ts_opf_collective, T_COLL_GATHER),
    COLL("c10d.allgather_coalesced_", ts_opf_collective, T_COLL_GATHER),
    COLL("c10d.allgather_into_tensor_coalesced_",
         ts_opf_collective,
         T_COLL_GATHER),
    COLL("c10d.allreduce_", ts_opf_collective, T_COLL_REDUCE),
    COLL("c10d.allreduce_coalesced_", ts_opf_collective, T_COLL_REDUCE),
    COLL("c10d.alltoall_", ts_opf_collective, T_COLL_A2A),
    COLL("c10d.alltoall_base_", ts_opf_collective, T_COLL_A2A),
    COLL("c10d.barrier", ts_opf_barrier, T_COLL_BARRIER),
    COLL("c10d.broadcast_", ts_opf_collective, T_COLL_BCAST),
    COLL("c10d.gather_", ts_opf_collective, T_COLL_ROOTED),
    COLL("c10d.monitored_barrier_", ts_opf_barrier, T_COLL_BARRIER),
    COLL("c10d.recv_", ts_opf_collective, T_COLL_P2P),
    COLL("c10d.recv_any_source_", ts_opf_collective, T_COLL_P2P),
    COLL("c10d.reduce_", ts_opf_collective, T_COLL_REDUCE),
    COLL("c10d.reduce_scatter_", ts_opf_collective, T_COLL_SCATTER),
    COLL("c10d.reduce_scatter_tensor_coalesced_",
         ts_opf_collective,
         T_COLL_SCATTER),
    COLL("c10d.scatter_", ts_opf_collective, T_COLL_ROOTED),
    COLL("c10d.send", ts_opf_collective, T_COLL_P2P),
    /* FSDP2's copies into and out of its all-gather and reduce-scatter
     * buffers */
    IGNORED_EXT("fsdp.all_gather_copy_in", MOVE),
    IGNORED_EXT("fsdp.chunk_cat", MOVE),
    IGNORED_EXT("fsdp.copy_", MOVE),
    IGNORED_EXT("fsdp.split_with_sizes_copy", MOVE),
    IGNORED_EXT("profiler._record_function_enter", MARK),
    IGNORED_EXT("profiler._record_function_enter_new", MARK),
    IGNORED_EXT("profiler._record_function_exit", MARK),
    EXT("torchvision.deform_conv2d",
        ts_opf_deform_conv2d,
        "B*Cin*kh*kw*Ho*Wo*(17 + [use_mask]) + 2*B*Cout*(Cin/g)*kh*kw*Ho*Wo "
        "+ B*Cout*Ho*Wo",
        "torchvision's CPU kernel: every column of the deformable im2col is "
        "read at its offset position (2 adds) by bilinear interpolation (2 "
        "fractions, 2 complements, 4 weights, 4 multiplies, 3 adds) and "
        "scaled by its mask value with use_mask; the grouped matrix product "
        "as aten.convolution's FlopCounterMode count; the bias add the "
        "kernel always makes."),
    EXT("torchvision.nms",
        ts_opf_nms,
        "N*ceil(log2 N) + 3*N + 13*N*(N - 1)/2, N boxes",
        "torchvision's CPU kernel: sort the scores, box areas (3 each), then "
        "the IoU test of every pair of sorted boxes (4 max/min, 2 "
        "subtracts and 2 clamps for the intersection's sides, its area, "
        "the union's add and subtract, the divide, the comparison with the "
        "threshold: 13), counted as if no box were suppressed: the kernel "
        "skips pairs of suppressed boxes, a saving that depends on the "
        "boxes' values."),
    EXT("torchvision.ps_roi_align",
        ts_opf_ps_roi_align,
        "out*(16*S + 1); S = sampling_ratio^2 samples per bin",
        "Position-sensitive: each output element reads its own channel, so "
        "each sample computes its weights (8), weights and sums the 4 taps "
        "(7) and accumulates (1); a divide per output. sampling_ratio <= 0: "
        "0 samples per bin at least (a lower bound, "
        "incomplete_operator_formula)."),
    EXT("torchvision.ps_roi_pool",
        ts_opf_roi_pool,
        "0, a lower bound (incomplete_operator_formula) unless there is no "
        "bin",
        "Each bin takes the mean of the feature-map elements its ROI "
        "covers, and how many depends on the ROI coordinates (tensor "
        "values), which shapes do not give."),
    EXT("torchvision.roi_align",
        ts_opf_roi_align,
        "K*ph*pw*S*(8 + 8*C) + K*C*ph*pw; S = sampling_ratio^2 samples per "
        "bin, K ROIs, C channels",
        "torchvision's CPU kernel: each sample point's 4 bilinear weights "
        "once for all channels (2 fractions, 2 complements, 4 products), "
        "per channel and sample 4 multiplies and 4 adds, and a divide per "
        "output by the sample count; samples outside the map count like "
        "the others. With sampling_ratio <= 0 the samples per bin come from "
        "each ROI's size (tensor values): counted with the fewest a bin can "
        "take (1; 0 when aligned) and marked incomplete_operator_formula."),
    EXT("torchvision.roi_pool",
        ts_opf_roi_pool,
        "0, a lower bound (incomplete_operator_formula) unless there is no "
        "bin",
        "Each bin takes the max of the feature-map elements its ROI "
        "covers, and how many depends on the ROI coordinates (tensor "
        "values), which shapes do not give."),
};

const size_t ts_opf_table_len = sizeof ts_opf_table / sizeof ts_opf_table[0];

#undef NATIVE
#undef ATTN_FLAGS
#undef NATIVE_ATTENTION
#undef NATIVE_SDPA
#undef SDPA
#undef EXT_SDPA
#undef EXT_ATTENTION
#undef SUPP
#undef EXT
#undef IGNORED
#undef IGNORED_EXT
#undef COLL
