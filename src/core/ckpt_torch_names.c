/* The names torch.save's pickles use, as torch 2.13 reads them: the
 * globals torch.load(weights_only=True) allows (torch/_weights_only_
 * unpickler.py: _get_allowed_globals), the dtypes and legacy storage
 * classes a pickle names, and the Python 2 module names protocol 2 pickles
 * write. Sorted tables, searched by bsearch (the module names, 18 of them,
 * in order). */
#include <stdlib.h>
#include <string.h>

#include "ckpt_internal.h"

/* ---- torch 2.13's weights_only allowlist, sorted ---- */

static const char *const allowed_globals[] = {
    "_codecs.encode",
    "builtins.bytearray",
    "builtins.complex",
    "builtins.set",
    "collections.Counter",
    "collections.OrderedDict",
    "torch.BFloat16Storage",
    "torch.BFloat16Tensor",
    "torch.BoolStorage",
    "torch.BoolTensor",
    "torch.ByteStorage",
    "torch.ByteTensor",
    "torch.CharStorage",
    "torch.CharTensor",
    "torch.ComplexDoubleStorage",
    "torch.ComplexFloatStorage",
    "torch.DoubleStorage",
    "torch.DoubleTensor",
    "torch.FloatStorage",
    "torch.FloatTensor",
    "torch.HalfStorage",
    "torch.HalfTensor",
    "torch.IntStorage",
    "torch.IntTensor",
    "torch.LongStorage",
    "torch.LongTensor",
    "torch.QInt32Storage",
    "torch.QInt8Storage",
    "torch.QUInt2x4Storage",
    "torch.QUInt4x2Storage",
    "torch.QUInt8Storage",
    "torch.ShortStorage",
    "torch.ShortTensor",
    "torch.Size",
    "torch.Tensor",
    "torch._tensor._rebuild_from_type_v2",
    "torch._utils._rebuild_device_tensor_from_cpu_tensor",
    "torch._utils._rebuild_device_tensor_from_numpy",
    "torch._utils._rebuild_meta_tensor_no_storage",
    "torch._utils._rebuild_nested_tensor",
    "torch._utils._rebuild_parameter",
    "torch._utils._rebuild_parameter_with_state",
    "torch._utils._rebuild_qtensor",
    "torch._utils._rebuild_sparse_tensor",
    "torch._utils._rebuild_tensor",
    "torch._utils._rebuild_tensor_v2",
    "torch._utils._rebuild_tensor_v3",
    "torch._utils._rebuild_wrapper_subclass",
    "torch.bfloat16",
    "torch.bits16",
    "torch.bits1x8",
    "torch.bits2x4",
    "torch.bits4x2",
    "torch.bits8",
    "torch.bool",
    "torch.complex128",
    "torch.complex32",
    "torch.complex64",
    "torch.cuda.BFloat16Storage",
    "torch.cuda.BFloat16Tensor",
    "torch.cuda.BoolStorage",
    "torch.cuda.BoolTensor",
    "torch.cuda.ByteStorage",
    "torch.cuda.ByteTensor",
    "torch.cuda.CharStorage",
    "torch.cuda.CharTensor",
    "torch.cuda.ComplexDoubleStorage",
    "torch.cuda.ComplexFloatStorage",
    "torch.cuda.DoubleStorage",
    "torch.cuda.DoubleTensor",
    "torch.cuda.FloatStorage",
    "torch.cuda.FloatTensor",
    "torch.cuda.HalfStorage",
    "torch.cuda.HalfTensor",
    "torch.cuda.IntStorage",
    "torch.cuda.IntTensor",
    "torch.cuda.LongStorage",
    "torch.cuda.LongTensor",
    "torch.cuda.ShortStorage",
    "torch.cuda.ShortTensor",
    "torch.cuda.sparse.BFloat16Tensor",
    "torch.cuda.sparse.ByteTensor",
    "torch.cuda.sparse.CharTensor",
    "torch.cuda.sparse.DoubleTensor",
    "torch.cuda.sparse.FloatTensor",
    "torch.cuda.sparse.HalfTensor",
    "torch.cuda.sparse.IntTensor",
    "torch.cuda.sparse.LongTensor",
    "torch.cuda.sparse.ShortTensor",
    "torch.device",
    "torch.float16",
    "torch.float32",
    "torch.float4_e2m1fn_x2",
    "torch.float64",
    "torch.float8_e4m3fn",
    "torch.float8_e4m3fnuz",
    "torch.float8_e5m2",
    "torch.float8_e5m2fnuz",
    "torch.float8_e8m0fnu",
    "torch.int1",
    "torch.int16",
    "torch.int2",
    "torch.int3",
    "torch.int32",
    "torch.int4",
    "torch.int5",
    "torch.int6",
    "torch.int64",
    "torch.int7",
    "torch.int8",
    "torch.nn.parameter.Parameter",
    "torch.per_channel_affine",
    "torch.per_channel_affine_float_qparams",
    "torch.per_channel_symmetric",
    "torch.per_tensor_affine",
    "torch.per_tensor_symmetric",
    "torch.qint32",
    "torch.qint8",
    "torch.quint2x4",
    "torch.quint4x2",
    "torch.quint8",
    "torch.serialization._get_layout",
    "torch.sparse.BFloat16Tensor",
    "torch.sparse.ByteTensor",
    "torch.sparse.CharTensor",
    "torch.sparse.DoubleTensor",
    "torch.sparse.FloatTensor",
    "torch.sparse.HalfTensor",
    "torch.sparse.IntTensor",
    "torch.sparse.LongTensor",
    "torch.sparse.ShortTensor",
    "torch.storage.TypedStorage",
    "torch.storage.UntypedStorage",
    "torch.uint1",
    "torch.uint16",
    "torch.uint2",
    "torch.uint3",
    "torch.uint32",
    "torch.uint4",
    "torch.uint5",
    "torch.uint6",
    "torch.uint64",
    "torch.uint7",
    "torch.uint8",
};

static int
cmp_text(const void *key, const void *entry)
{
    return strcmp((const char *)key, *(const char *const *)entry);
}

bool
ck_global_allowed(const char *name)
{
    return bsearch(name,
                   allowed_globals,
                   sizeof allowed_globals / sizeof allowed_globals[0],
                   sizeof allowed_globals[0],
                   cmp_text)
           != NULL;
}

size_t
ck_allowed_globals(const char *const **names)
{
    *names = allowed_globals;
    return sizeof allowed_globals / sizeof allowed_globals[0];
}

/* ---- torch dtypes: name (after "torch.") and bytes per element, sorted ----
 */
static const ck_torch_dtype torch_dtypes[] = {
    {"bfloat16", "torch.bfloat16", 2},
    {"bits16", "torch.bits16", 2},
    {"bits1x8", "torch.bits1x8", 1},
    {"bits2x4", "torch.bits2x4", 1},
    {"bits4x2", "torch.bits4x2", 1},
    {"bits8", "torch.bits8", 1},
    {"bool", "torch.bool", 1},
    {"complex128", "torch.complex128", 16},
    {"complex32", "torch.complex32", 4},
    {"complex64", "torch.complex64", 8},
    {"float16", "torch.float16", 2},
    {"float32", "torch.float32", 4},
    {"float4_e2m1fn_x2", "torch.float4_e2m1fn_x2", 1},
    {"float64", "torch.float64", 8},
    {"float8_e4m3fn", "torch.float8_e4m3fn", 1},
    {"float8_e4m3fnuz", "torch.float8_e4m3fnuz", 1},
    {"float8_e5m2", "torch.float8_e5m2", 1},
    {"float8_e5m2fnuz", "torch.float8_e5m2fnuz", 1},
    {"float8_e8m0fnu", "torch.float8_e8m0fnu", 1},
    {"int1", "torch.int1", 1},
    {"int16", "torch.int16", 2},
    {"int2", "torch.int2", 1},
    {"int3", "torch.int3", 1},
    {"int32", "torch.int32", 4},
    {"int4", "torch.int4", 1},
    {"int5", "torch.int5", 1},
    {"int6", "torch.int6", 1},
    {"int64", "torch.int64", 8},
    {"int7", "torch.int7", 1},
    {"int8", "torch.int8", 1},
    {"qint32", "torch.qint32", 4},
    {"qint8", "torch.qint8", 1},
    {"quint2x4", "torch.quint2x4", 1},
    {"quint4x2", "torch.quint4x2", 1},
    {"quint8", "torch.quint8", 1},
    {"uint1", "torch.uint1", 1},
    {"uint16", "torch.uint16", 2},
    {"uint2", "torch.uint2", 1},
    {"uint3", "torch.uint3", 1},
    {"uint32", "torch.uint32", 4},
    {"uint4", "torch.uint4", 1},
    {"uint5", "torch.uint5", 1},
    {"uint6", "torch.uint6", 1},
    {"uint64", "torch.uint64", 8},
    {"uint7", "torch.uint7", 1},
    {"uint8", "torch.uint8", 1},
};

static int
cmp_torch_dtype(const void *key, const void *entry)
{
    return strcmp((const char *)key, ((const ck_torch_dtype *)entry)->name);
}

const ck_torch_dtype *
ck_dtype_of_global(const char *name)
{
    if (strncmp(name, "torch.", 6) != 0) {
        return NULL;
    }
    return bsearch(name + 6,
                   torch_dtypes,
                   sizeof torch_dtypes / sizeof torch_dtypes[0],
                   sizeof torch_dtypes[0],
                   cmp_torch_dtype);
}

/* Legacy storage classes: torch.FloatStorage -> float32 ... */
static const struct storage_class {
    const char *name, *dtype;
} storage_classes[] = {
    {"BFloat16Storage", "bfloat16"},
    {"BoolStorage", "bool"},
    {"ByteStorage", "uint8"},
    {"CharStorage", "int8"},
    {"ComplexDoubleStorage", "complex128"},
    {"ComplexFloatStorage", "complex64"},
    {"DoubleStorage", "float64"},
    {"FloatStorage", "float32"},
    {"HalfStorage", "float16"},
    {"IntStorage", "int32"},
    {"LongStorage", "int64"},
    {"QInt32Storage", "qint32"},
    {"QInt8Storage", "qint8"},
    {"QUInt2x4Storage", "quint2x4"},
    {"QUInt4x2Storage", "quint4x2"},
    {"QUInt8Storage", "quint8"},
    {"ShortStorage", "int16"},
};

static int
cmp_storage_class(const void *key, const void *entry)
{
    return strcmp((const char *)key,
                  ((const struct storage_class *)entry)->name);
}

const ck_torch_dtype *
ck_dtype_of_storage(const char *name)
{
    const struct storage_class *c;
    const char *last = strrchr(name, '.');
    if (strcmp(name, "torch.storage.UntypedStorage") == 0
        || strcmp(name, "torch.UntypedStorage") == 0) {
        return ck_dtype_of_global("torch.uint8");
    }
    if (last == NULL || (strncmp(name, "torch.", 6) != 0)) {
        return NULL;
    }
    c = bsearch(last + 1,
                storage_classes,
                sizeof storage_classes / sizeof storage_classes[0],
                sizeof storage_classes[0],
                cmp_storage_class);
    if (c == NULL) {
        return NULL;
    }
    return bsearch(c->dtype,
                   torch_dtypes,
                   sizeof torch_dtypes / sizeof torch_dtypes[0],
                   sizeof torch_dtypes[0],
                   cmp_torch_dtype);
}

/* Python 2 module names that protocol 2 pickles write and Python 3 (and
 * torch.load) read as their Python 3 modules: _compat_pickle's
 * IMPORT_MAPPING, the entries a checkpoint may name. Sorted. */
static const struct {
    const char *py2, *py3;
} module_names[] = {
    {"ConfigParser", "configparser"},
    {"Queue", "queue"},
    {"SocketServer", "socketserver"},
    {"StringIO", "io"},
    {"UserDict", "collections"},
    {"UserList", "collections"},
    {"UserString", "collections"},
    {"__builtin__", "builtins"},
    {"cPickle", "pickle"},
    {"cStringIO", "io"},
    {"commands", "subprocess"},
    {"copy_reg", "copyreg"},
    {"exceptions", "builtins"},
    {"httplib", "http.client"},
    {"repr", "reprlib"},
    {"urllib2", "urllib.request"},
    {"urlparse", "urllib.parse"},
    {"whichdb", "dbm"},
};

const char *
ck_py3_module(const char *module, size_t *n)
{
    for (size_t k = 0; k < sizeof module_names / sizeof module_names[0]; k++) {
        if (strlen(module_names[k].py2) == *n
            && memcmp(module_names[k].py2, module, *n) == 0) {
            *n = strlen(module_names[k].py3);
            return module_names[k].py3;
        }
    }
    return module;
}
