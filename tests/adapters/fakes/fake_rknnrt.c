/*
 * A stand-in for Rockchip's librknnrt.so with the zero-copy surface of rknn_api.h: the same
 * function signatures and struct layouts (declared here from the documented header), serving one
 * tiny model: an int8 identity from a native input (NHWC with rows padded to w_stride when
 * C is 1, 3 or 4, else NC1HWC2) to a native NC1HWC2 output (C2 = 16, as on RK3588).
 *
 * The "model file" is text: "FAKE-RKNN channels=C height=H width=W" (defaults 3, 4, 5).
 * Test hooks (not part of the vendor API): fake_rknn_set_fault(name), counters of live
 * contexts/memories, fake_sizeof/fake_offsetof for the struct layout checks.
 *
 * Built by the test session: cc -shared -fPIC -o libfake_rknnrt.so fake_rknnrt.c
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RKNN_MAX_DIMS 16
#define RKNN_MAX_NAME_LEN 256

#define RKNN_SUCC 0
#define RKNN_ERR_FAIL -1
#define RKNN_ERR_TIMEOUT -2
#define RKNN_ERR_PARAM_INVALID -5
#define RKNN_ERR_MODEL_INVALID -6
#define RKNN_ERR_CTX_INVALID -7
#define RKNN_ERR_INPUT_INVALID -8
#define RKNN_ERR_OUTPUT_INVALID -9

#ifdef __arm__
typedef uint32_t rknn_context;
#else
typedef uint64_t rknn_context;
#endif

typedef enum _rknn_query_cmd {
    RKNN_QUERY_IN_OUT_NUM = 0,
    RKNN_QUERY_INPUT_ATTR = 1,
    RKNN_QUERY_OUTPUT_ATTR = 2,
    RKNN_QUERY_SDK_VERSION = 5,
    RKNN_QUERY_NATIVE_INPUT_ATTR = 8,
    RKNN_QUERY_NATIVE_OUTPUT_ATTR = 9,
    RKNN_QUERY_NATIVE_NHWC_INPUT_ATTR = 10,
    RKNN_QUERY_NATIVE_NHWC_OUTPUT_ATTR = 11,
} rknn_query_cmd;

typedef enum _rknn_tensor_type {
    RKNN_TENSOR_FLOAT32 = 0,
    RKNN_TENSOR_FLOAT16,
    RKNN_TENSOR_INT8,
    RKNN_TENSOR_UINT8,
    RKNN_TENSOR_INT16,
} rknn_tensor_type;

typedef enum _rknn_tensor_qnt_type {
    RKNN_TENSOR_QNT_NONE = 0,
    RKNN_TENSOR_QNT_DFP,
    RKNN_TENSOR_QNT_AFFINE_ASYMMETRIC,
} rknn_tensor_qnt_type;

typedef enum _rknn_tensor_format {
    RKNN_TENSOR_NCHW = 0,
    RKNN_TENSOR_NHWC,
    RKNN_TENSOR_NC1HWC2,
    RKNN_TENSOR_UNDEFINED,
} rknn_tensor_format;

typedef struct _rknn_input_output_num {
    uint32_t n_input;
    uint32_t n_output;
} rknn_input_output_num;

typedef struct _rknn_tensor_attr {
    uint32_t index;
    uint32_t n_dims;
    uint32_t dims[RKNN_MAX_DIMS];
    char name[RKNN_MAX_NAME_LEN];
    uint32_t n_elems;
    uint32_t size;
    rknn_tensor_format fmt;
    rknn_tensor_type type;
    rknn_tensor_qnt_type qnt_type;
    int8_t fl;
    int32_t zp;
    float scale;
    uint32_t w_stride;
    uint32_t size_with_stride;
    uint8_t pass_through;
    uint32_t h_stride;
} rknn_tensor_attr;

typedef struct _rknn_sdk_version {
    char api_version[256];
    char drv_version[256];
} rknn_sdk_version;

typedef struct _rknn_tensor_memory {
    void *virt_addr;
    uint64_t phys_addr;
    int32_t fd;
    int32_t offset;
    uint32_t size;
    uint32_t flags;
    void *priv_data;
} rknn_tensor_mem;

/* ---- fake state ---------------------------------------------------------------------------- */

#define MAX_CTX 32
#define C2 16

typedef struct {
    int used;
    int c, h, w;
    rknn_tensor_attr in_logical, in_native, out_logical, out_native, out_native_nhwc;
    rknn_tensor_mem *in_mem, *out_mem;
    rknn_tensor_format out_fmt;
    int core_mask;
} fake_ctx;

static fake_ctx g_ctx[MAX_CTX];
static char g_fault[64];
static int g_live_mems;
static int g_sync_calls;
static int g_last_core_mask = -1;

void fake_rknn_set_fault(const char *name) {
    if (name == NULL) {
        g_fault[0] = '\0';
        return;
    }
    strncpy(g_fault, name, sizeof g_fault - 1);
    g_fault[sizeof g_fault - 1] = '\0';
}
static int fault(const char *name) { return strcmp(g_fault, name) == 0; }

int fake_rknn_live_mems(void) { return g_live_mems; }
int fake_rknn_sync_calls(void) { return g_sync_calls; }
int fake_rknn_last_core_mask(void) { return g_last_core_mask; }
int fake_rknn_live_contexts(void) {
    int n = 0;
    for (int i = 0; i < MAX_CTX; i++) n += g_ctx[i].used;
    return n;
}

static fake_ctx *lookup(rknn_context ctx) {
    if (ctx == 0 || ctx > MAX_CTX) return NULL;
    fake_ctx *c = &g_ctx[ctx - 1];
    return c->used ? c : NULL;
}

static uint32_t round_up(uint32_t v, uint32_t m) { return (v + m - 1) / m * m; }

static void set_attr(rknn_tensor_attr *a, const char *name, rknn_tensor_format fmt, uint32_t n_dims,
                     const uint32_t *dims, uint32_t n_elems, uint32_t size, uint32_t w_stride,
                     uint32_t size_with_stride) {
    memset(a, 0, sizeof *a);
    a->index = 0;
    a->n_dims = n_dims;
    memcpy(a->dims, dims, n_dims * sizeof(uint32_t));
    strncpy(a->name, name, RKNN_MAX_NAME_LEN - 1);
    a->n_elems = n_elems;
    a->size = size;
    a->fmt = fmt;
    a->type = RKNN_TENSOR_INT8;
    a->qnt_type = RKNN_TENSOR_QNT_AFFINE_ASYMMETRIC;
    a->fl = 0;
    a->zp = -14;
    a->scale = 0.5f;
    a->w_stride = w_stride;
    a->size_with_stride = size_with_stride;
    a->pass_through = 0;
    a->h_stride = 0;
}

static int native_input_is_nhwc(const fake_ctx *c) { return c->c == 1 || c->c == 3 || c->c == 4; }

static void build_model(fake_ctx *c) {
    uint32_t C = c->c, H = c->h, W = c->w, C1 = (C + C2 - 1) / C2;
    uint32_t nchw[4] = {1, C, H, W};
    uint32_t n_elems = C * H * W;
    set_attr(&c->in_logical, "input", RKNN_TENSOR_NCHW, 4, nchw, n_elems, n_elems, 0, n_elems);
    set_attr(&c->out_logical, "output", RKNN_TENSOR_NCHW, 4, nchw, n_elems, n_elems, 0, n_elems);
    if (native_input_is_nhwc(c)) {
        uint32_t nhwc[4] = {1, H, W, C};
        uint32_t w_stride = round_up(W, 16);
        set_attr(&c->in_native, "input", RKNN_TENSOR_NHWC, 4, nhwc, n_elems, n_elems, w_stride,
                 H * w_stride * C);
    } else {
        uint32_t nc1hwc2[5] = {1, C1, H, W, C2};
        uint32_t size = C1 * H * W * C2;
        set_attr(&c->in_native, "input", RKNN_TENSOR_NC1HWC2, 5, nc1hwc2, n_elems, size, W, size);
    }
    uint32_t nc1hwc2[5] = {1, C1, H, W, C2};
    uint32_t out_size = C1 * H * W * C2;
    set_attr(&c->out_native, "output", RKNN_TENSOR_NC1HWC2, 5, nc1hwc2, n_elems, out_size, 0,
             out_size);
    uint32_t nhwc[4] = {1, H, W, C};
    set_attr(&c->out_native_nhwc, "output", RKNN_TENSOR_NHWC, 4, nhwc, n_elems, n_elems, 0,
             n_elems);
}

/* ---- rknn_api.h --------------------------------------------------------------------------- */

int rknn_init(rknn_context *context, void *model, uint32_t size, uint32_t flag, void *extend) {
    (void)flag;
    (void)extend;
    if (context == NULL || model == NULL) return RKNN_ERR_PARAM_INVALID;
    if (fault("init")) return RKNN_ERR_FAIL;
    char text[256];
    size_t n = size < sizeof text - 1 ? size : sizeof text - 1;
    memcpy(text, model, n);
    text[n] = '\0';
    if (strncmp(text, "FAKE-RKNN", 9) != 0) return RKNN_ERR_MODEL_INVALID;
    for (int i = 0; i < MAX_CTX; i++) {
        if (g_ctx[i].used) continue;
        fake_ctx *c = &g_ctx[i];
        memset(c, 0, sizeof *c);
        c->used = 1;
        c->c = 3;
        c->h = 4;
        c->w = 5;
        const char *p;
        if ((p = strstr(text, "channels="))) c->c = atoi(p + 9);
        if ((p = strstr(text, "height="))) c->h = atoi(p + 7);
        if ((p = strstr(text, "width="))) c->w = atoi(p + 6);
        if (c->c <= 0 || c->h <= 0 || c->w <= 0) {
            c->used = 0;
            return RKNN_ERR_MODEL_INVALID;
        }
        build_model(c);
        *context = (rknn_context)(i + 1);
        return RKNN_SUCC;
    }
    return RKNN_ERR_FAIL;
}

int rknn_destroy(rknn_context context) {
    fake_ctx *c = lookup(context);
    if (c == NULL) return RKNN_ERR_CTX_INVALID;
    c->used = 0;
    return fault("destroy") ? RKNN_ERR_FAIL : RKNN_SUCC;
}

int rknn_query(rknn_context context, rknn_query_cmd cmd, void *info, uint32_t size) {
    fake_ctx *c = lookup(context);
    if (c == NULL) return RKNN_ERR_CTX_INVALID;
    if (info == NULL) return RKNN_ERR_PARAM_INVALID;
    if (fault("query")) return RKNN_ERR_FAIL;
    if (cmd == RKNN_QUERY_IN_OUT_NUM) {
        if (size != sizeof(rknn_input_output_num)) return RKNN_ERR_PARAM_INVALID;
        rknn_input_output_num *io = info;
        io->n_input = 1;
        io->n_output = 1;
        return RKNN_SUCC;
    }
    if (cmd == RKNN_QUERY_SDK_VERSION) {
        if (size != sizeof(rknn_sdk_version)) return RKNN_ERR_PARAM_INVALID;
        rknn_sdk_version *v = info;
        memset(v, 0, sizeof *v);
        strcpy(v->api_version, "2.3.0 (fake)");
        strcpy(v->drv_version, "0.9.8 (fake)");
        return RKNN_SUCC;
    }
    /* Every attribute query takes exactly one rknn_tensor_attr: a wrong struct size is caught. */
    if (size != sizeof(rknn_tensor_attr)) return RKNN_ERR_PARAM_INVALID;
    rknn_tensor_attr *attr = info;
    if (attr->index != 0) return RKNN_ERR_PARAM_INVALID;
    const rknn_tensor_attr *src = NULL;
    switch (cmd) {
    case RKNN_QUERY_INPUT_ATTR: src = &c->in_logical; break;
    case RKNN_QUERY_OUTPUT_ATTR: src = &c->out_logical; break;
    case RKNN_QUERY_NATIVE_INPUT_ATTR: src = &c->in_native; break;
    case RKNN_QUERY_NATIVE_OUTPUT_ATTR: src = &c->out_native; break;
    case RKNN_QUERY_NATIVE_NHWC_OUTPUT_ATTR: src = &c->out_native_nhwc; break;
    default: return RKNN_ERR_PARAM_INVALID;
    }
    memcpy(attr, src, sizeof *attr);
    return RKNN_SUCC;
}

rknn_tensor_mem *rknn_create_mem(rknn_context ctx, uint32_t size) {
    if (lookup(ctx) == NULL || size == 0 || fault("create_mem")) return NULL;
    rknn_tensor_mem *mem = calloc(1, sizeof *mem);
    void *buf = NULL;
    if (mem == NULL || posix_memalign(&buf, 64, size) != 0) {
        free(mem);
        return NULL;
    }
    memset(buf, 0xCD, size); /* never-written bytes stand out */
    mem->virt_addr = buf;
    mem->phys_addr = (uint64_t)(uintptr_t)buf;
    mem->fd = -1;
    mem->offset = 0;
    mem->size = size;
    mem->flags = 1; /* RKNN_TENSOR_MEMORY_FLAGS_ALLOC_INSIDE */
    g_live_mems++;
    return mem;
}

int rknn_destroy_mem(rknn_context ctx, rknn_tensor_mem *mem) {
    (void)ctx;
    if (mem == NULL) return RKNN_ERR_PARAM_INVALID;
    free(mem->virt_addr);
    free(mem);
    g_live_mems--;
    return fault("destroy_mem") ? RKNN_ERR_FAIL : RKNN_SUCC;
}

int rknn_set_io_mem(rknn_context ctx, rknn_tensor_mem *mem, rknn_tensor_attr *attr) {
    fake_ctx *c = lookup(ctx);
    if (c == NULL) return RKNN_ERR_CTX_INVALID;
    if (mem == NULL || attr == NULL) return RKNN_ERR_PARAM_INVALID;
    if (fault("set_io_mem")) return RKNN_ERR_FAIL;
    if (strcmp(attr->name, "input") == 0) {
        /* This fake serves only pass-through (native) inputs. */
        if (!attr->pass_through) return RKNN_ERR_INPUT_INVALID;
        if (mem->size < c->in_native.size_with_stride) return RKNN_ERR_INPUT_INVALID;
        c->in_mem = mem;
        return RKNN_SUCC;
    }
    if (strcmp(attr->name, "output") == 0) {
        const rknn_tensor_attr *want =
            attr->fmt == RKNN_TENSOR_NHWC ? &c->out_native_nhwc : &c->out_native;
        if (mem->size < want->size_with_stride) return RKNN_ERR_OUTPUT_INVALID;
        c->out_mem = mem;
        c->out_fmt = attr->fmt;
        return RKNN_SUCC;
    }
    return RKNN_ERR_PARAM_INVALID;
}

int rknn_set_core_mask(rknn_context ctx, int core_mask) {
    fake_ctx *c = lookup(ctx);
    if (c == NULL) return RKNN_ERR_CTX_INVALID;
    switch (core_mask) {
    case 0: case 1: case 2: case 4: case 3: case 7: case 0xffff: break;
    default: return RKNN_ERR_PARAM_INVALID;
    }
    c->core_mask = core_mask;
    g_last_core_mask = core_mask;
    return RKNN_SUCC;
}

int rknn_mem_sync(rknn_context ctx, rknn_tensor_mem *mem, int mode) {
    if (lookup(ctx) == NULL) return RKNN_ERR_CTX_INVALID;
    if (mem == NULL || (mode & 3) == 0) return RKNN_ERR_PARAM_INVALID;
    g_sync_calls++;
    return RKNN_SUCC;
}

int rknn_run(rknn_context ctx, void *extend) {
    (void)extend;
    fake_ctx *c = lookup(ctx);
    if (c == NULL) return RKNN_ERR_CTX_INVALID;
    if (fault("run")) return RKNN_ERR_FAIL;
    if (fault("timeout")) return RKNN_ERR_TIMEOUT;
    if (c->in_mem == NULL || c->out_mem == NULL) return RKNN_ERR_INPUT_INVALID;
    const int8_t *in = c->in_mem->virt_addr;
    int8_t *out = c->out_mem->virt_addr;
    uint32_t C = c->c, H = c->h, W = c->w;
    uint32_t in_ws = c->in_native.w_stride;
    memset(out, 0, c->out_mem->size); /* channel padding of NC1HWC2 is zero */
    for (uint32_t ch = 0; ch < C; ch++)
        for (uint32_t y = 0; y < H; y++)
            for (uint32_t x = 0; x < W; x++) {
                size_t src = native_input_is_nhwc(c)
                                 ? ((size_t)y * in_ws + x) * C + ch
                                 : (((size_t)(ch / C2) * H + y) * W + x) * C2 + ch % C2;
                size_t dst = c->out_fmt == RKNN_TENSOR_NHWC
                                 ? ((size_t)y * W + x) * C + ch
                                 : (((size_t)(ch / C2) * H + y) * W + x) * C2 + ch % C2;
                out[dst] = in[src];
            }
    return RKNN_SUCC;
}

/* ---- layout exports for the tests ---------------------------------------------------------- */

#define SZ(T) {#T, sizeof(T)}
static const struct {
    const char *name;
    size_t size;
} k_sizes[] = {
    SZ(rknn_input_output_num), SZ(rknn_tensor_attr), SZ(rknn_tensor_mem), SZ(rknn_sdk_version),
    SZ(rknn_context),
};

#define OFF(T, F) {#T, #F, offsetof(T, F)}
static const struct {
    const char *type, *field;
    size_t offset;
} k_offsets[] = {
    OFF(rknn_input_output_num, n_input), OFF(rknn_input_output_num, n_output),
    OFF(rknn_tensor_attr, index), OFF(rknn_tensor_attr, n_dims), OFF(rknn_tensor_attr, dims),
    OFF(rknn_tensor_attr, name), OFF(rknn_tensor_attr, n_elems), OFF(rknn_tensor_attr, size),
    OFF(rknn_tensor_attr, fmt), OFF(rknn_tensor_attr, type), OFF(rknn_tensor_attr, qnt_type),
    OFF(rknn_tensor_attr, fl), OFF(rknn_tensor_attr, zp), OFF(rknn_tensor_attr, scale),
    OFF(rknn_tensor_attr, w_stride), OFF(rknn_tensor_attr, size_with_stride),
    OFF(rknn_tensor_attr, pass_through), OFF(rknn_tensor_attr, h_stride),
    OFF(rknn_tensor_mem, virt_addr), OFF(rknn_tensor_mem, phys_addr), OFF(rknn_tensor_mem, fd),
    OFF(rknn_tensor_mem, offset), OFF(rknn_tensor_mem, size), OFF(rknn_tensor_mem, flags),
    OFF(rknn_tensor_mem, priv_data),
    OFF(rknn_sdk_version, api_version), OFF(rknn_sdk_version, drv_version),
};

long fake_sizeof(const char *type) {
    for (size_t i = 0; i < sizeof k_sizes / sizeof k_sizes[0]; i++)
        if (strcmp(k_sizes[i].name, type) == 0) return (long)k_sizes[i].size;
    return -1;
}

long fake_offsetof(const char *type, const char *field) {
    for (size_t i = 0; i < sizeof k_offsets / sizeof k_offsets[0]; i++)
        if (strcmp(k_offsets[i].type, type) == 0 && strcmp(k_offsets[i].field, field) == 0)
            return (long)k_offsets[i].offset;
    return -1;
}
