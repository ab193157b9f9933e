/*
 * A stand-in for Rockchip's librknnrt.so: the zero-copy surface of rknn_api.h (what rknn_native
 * calls) and the normal API (what RKNNLite 2.5.0 resolves by ctypes: rknn_init, rknn_destroy,
 * rknn_query, rknn_inputs_set, rknn_run, rknn_outputs_get, rknn_outputs_release,
 * rknn_set_core_mask, rknn_set_input_shapes), with the header's signatures. The struct layouts and
 * constant values are held to the measured facts in tests/data/abi/rknn_api-2.3.2.json by
 * tests/adapters/test_abi_rknn.py (rknn_input, rknn_output and the *_extend structs are not in
 * that file: declared from the 2.3.2 header's field lists).
 *
 * The model it serves is tiny: an int8 identity from a native input (NHWC with rows padded to
 * w_stride when C is 1, 3 or 4, else NC1HWC2) to a native NC1HWC2 output (C2 = 16, as on RK3588).
 * The "model file" is text: "FAKE-RKNN channels=C height=H width=W" (defaults 3, 4, 5).
 *
 * Either text may sit in the real file's container (the model data of an "RKNN" file).
 *
 * Or a described identity, written by the tests' fake compile step: "FAKE-RKNN-DESCRIBED" and
 * one line per query, "<QUERY> name=.. fmt=.. type=.. qnt_type=.. zp=.. scale=.. dims=a,b,..
 * n_elems=.. size=.. w_stride=.. size_with_stride=..", QUERY one of INPUT_ATTR, OUTPUT_ATTR,
 * NATIVE_INPUT_ATTR, NATIVE_OUTPUT_ATTR, NATIVE_NHWC_INPUT_ATTR, NATIVE_NHWC_OUTPUT_ATTR (enums by
 * their rknn_api.h numbers). The logical N, C, H, W are INPUT_ATTR's dims. rknn_run then copies
 * every element from the native input, placed as NATIVE_INPUT_ATTR describes it, to the output
 * memory, placed as the attribute of the format it was set with describes it (NC1HWC2 planes
 * flattened or not, NHWC rows of w_stride), requantized from the input's zp/scale to the
 * output's (a UINT8 input holds the values themselves, mean 0 and scale 1, as an image does);
 * every other output byte is zero. Its own loops, not the host codec, so a diff of what comes
 * back checks the codec against a second reading of the same attributes.
 *
 * Test hooks (not part of the vendor API):
 *   fake_rknn_set_fault(name)          make one call fail
 *   fake_rknn_set_soc(name)            the SoC the runtime runs on (core masks; default rk3588)
 *   fake_rknn_set_attr(cmd, attr)      report this rknn_tensor_attr for query `cmd` (INPUT_ATTR,
 *                                      OUTPUT_ATTR, NATIVE_*) in every context made after it, as a
 *                                      real runtime reports a real model's tensors; rknn_run then
 *                                      writes a known pattern (fake_rknn_pattern) to each output
 *   fake_rknn_clear_attrs()            back to the built-in model
 *   FAKE_RKNN_TRACE=PATH (environment) a line per core mask set and per rknn_inputs_set is
 *                                      appended to PATH, and each rknn_inputs_set buffer is written
 *                                      to PATH.input<i> as it came: what a vendor layer calling this
 *                                      library (RKNNLite, in its own process) handed over
 *   FAKE_RKNN_FAULT=NAME (environment) fake_rknn_set_fault(NAME) at rknn_init, for a caller in
 *                                      another process; besides the call names, a described
 *                                      model takes "dirty-padding" (output bytes outside the
 *                                      tensor not zero) and "swapped-pixels" (the first two pixels
 *                                      of every output row exchanged)
 *   counters of live contexts/memories; fake_sizeof/fake_alignof/fake_offsetof/
 *   fake_fieldsize/fake_constant for the ABI checks.
 *
 * Plain portable C99 (no word-size or endianness assumption beyond what the header makes), so the
 * same file builds for the host and for aarch64/armhf:
 *   cc -shared -fPIC -o libfake_rknnrt.so fake_rknnrt.c
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
#define RKNN_ERR_DEVICE_UNAVAILABLE -3
#define RKNN_ERR_MALLOC_FAIL -4
#define RKNN_ERR_PARAM_INVALID -5
#define RKNN_ERR_MODEL_INVALID -6
#define RKNN_ERR_CTX_INVALID -7
#define RKNN_ERR_INPUT_INVALID -8
#define RKNN_ERR_OUTPUT_INVALID -9
#define RKNN_ERR_DEVICE_UNMATCH -10
#define RKNN_ERR_INCOMPATILE_PRE_COMPILE_MODEL -11
#define RKNN_ERR_INCOMPATILE_OPTIMIZATION_LEVEL_VERSION -12
#define RKNN_ERR_TARGET_PLATFORM_UNMATCH -13

#define RKNN_TENSOR_MEMORY_FLAGS_ALLOC_INSIDE 1

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
    RKNN_TENSOR_UINT16,
    RKNN_TENSOR_INT32,
    RKNN_TENSOR_UINT32,
    RKNN_TENSOR_INT64,
    RKNN_TENSOR_BOOL,
    RKNN_TENSOR_INT4,
    RKNN_TENSOR_BFLOAT16,
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

typedef enum _rknn_core_mask {
    RKNN_NPU_CORE_AUTO = 0,
    RKNN_NPU_CORE_0 = 1,
    RKNN_NPU_CORE_1 = 2,
    RKNN_NPU_CORE_2 = 4,
    RKNN_NPU_CORE_0_1 = 3,
    RKNN_NPU_CORE_0_1_2 = 7,
    RKNN_NPU_CORE_ALL = 0xffff,
} rknn_core_mask;

typedef enum _rknn_mem_sync_mode {
    RKNN_MEMORY_SYNC_TO_DEVICE = 0x1,
    RKNN_MEMORY_SYNC_FROM_DEVICE = 0x2,
    RKNN_MEMORY_SYNC_BIDIRECTIONAL = 0x3,
} rknn_mem_sync_mode;

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

/* Normal API structs (rknn_api.h 2.3.2 field lists; not in the measured facts file). */
typedef struct _rknn_input {
    uint32_t index;
    void *buf;
    uint32_t size;
    uint8_t pass_through;
    rknn_tensor_type type;
    rknn_tensor_format fmt;
} rknn_input;

typedef struct _rknn_output {
    uint8_t want_float;
    uint8_t is_prealloc;
    uint32_t index;
    void *buf;
    uint32_t size;
} rknn_output;

typedef struct _rknn_init_extend {
    rknn_context ctx;
    int32_t real_model_offset;
    uint32_t real_model_size;
    int32_t model_buffer_fd;
    uint32_t model_buffer_flags;
    uint8_t reserved[112];
} rknn_init_extend;

typedef struct _rknn_run_extend {
    uint64_t frame_id;
    int32_t non_block;
    int32_t timeout_ms;
    int32_t fence_fd;
} rknn_run_extend;

typedef struct _rknn_output_extend {
    uint64_t frame_id;
} rknn_output_extend;

/* ---- fake state ---------------------------------------------------------------------------- */

#define MAX_CTX 32
#define C2 16

/* The attribute sets a context answers, by query. */
enum { A_INPUT, A_OUTPUT, A_NATIVE_INPUT, A_NATIVE_OUTPUT, A_NHWC_INPUT, A_NHWC_OUTPUT, A_COUNT };

static int slot_of(int cmd) {
    switch (cmd) {
    case RKNN_QUERY_INPUT_ATTR: return A_INPUT;
    case RKNN_QUERY_OUTPUT_ATTR: return A_OUTPUT;
    case RKNN_QUERY_NATIVE_INPUT_ATTR: return A_NATIVE_INPUT;
    case RKNN_QUERY_NATIVE_OUTPUT_ATTR: return A_NATIVE_OUTPUT;
    case RKNN_QUERY_NATIVE_NHWC_INPUT_ATTR: return A_NHWC_INPUT;
    case RKNN_QUERY_NATIVE_NHWC_OUTPUT_ATTR: return A_NHWC_OUTPUT;
    default: return -1;
    }
}

typedef struct {
    int used;
    int c, h, w;
    int from_report; /* attributes loaded by fake_rknn_set_attr */
    int described;   /* a FAKE-RKNN-DESCRIBED model: the identity through its attributes */
    int n;           /* batch of a described model */
    rknn_tensor_attr attr[A_COUNT];
    rknn_tensor_mem *in_mem, *out_mem; /* zero-copy */
    rknn_tensor_format out_fmt;
    uint8_t *in_buf, *out_buf; /* normal API: the runtime's own native buffers */
    int core_mask;
} fake_ctx;

static fake_ctx g_ctx[MAX_CTX];
static char g_fault[64];
static char g_soc[32] = "rk3588";
static rknn_tensor_attr g_report[A_COUNT];
static int g_report_set[A_COUNT];
static int g_live_mems;
static int g_sync_calls;
static int g_last_core_mask = -1;

static void copy_name(char *dst, size_t cap, const char *src) {
    if (src == NULL) src = "";
    strncpy(dst, src, cap - 1);
    dst[cap - 1] = '\0';
}

void fake_rknn_set_fault(const char *name) { copy_name(g_fault, sizeof g_fault, name); }
static int fault(const char *name) { return strcmp(g_fault, name) == 0; }

/* FAKE_RKNN_TRACE: the calls a caller in another process made, for its tests to read. */
static void trace(const char *fmt, long a, long b, long c, long d) {
    const char *path = getenv("FAKE_RKNN_TRACE");
    if (path == NULL || *path == '\0') return;
    FILE *f = fopen(path, "a");
    if (f == NULL) return;
    fprintf(f, fmt, a, b, c, d);
    fputc('\n', f);
    fclose(f);
}

static void trace_buffer(uint32_t index, const void *buf, uint32_t size) {
    const char *path = getenv("FAKE_RKNN_TRACE");
    if (path == NULL || *path == '\0') return;
    char name[4096];
    snprintf(name, sizeof name, "%s.input%u", path, (unsigned)index);
    FILE *f = fopen(name, "wb");
    if (f == NULL) return;
    fwrite(buf, 1, size, f);
    fclose(f);
}

void fake_rknn_set_soc(const char *name) { copy_name(g_soc, sizeof g_soc, name ? name : "rk3588"); }

int fake_rknn_set_attr(int cmd, const rknn_tensor_attr *attr) {
    int slot = slot_of(cmd);
    if (slot < 0) return RKNN_ERR_PARAM_INVALID;
    if (attr == NULL) {
        g_report_set[slot] = 0;
        return RKNN_SUCC;
    }
    memcpy(&g_report[slot], attr, sizeof *attr);
    g_report_set[slot] = 1;
    return RKNN_SUCC;
}

void fake_rknn_clear_attrs(void) { memset(g_report_set, 0, sizeof g_report_set); }

/* The byte rknn_run writes at offset i of an output of a context with reported attributes: a
 * function of the input bytes, so a test knows every byte the "device" produced. */
uint8_t fake_rknn_pattern(const uint8_t *in, uint32_t in_size, uint32_t i) {
    uint8_t x = in_size ? in[i % in_size] : 0;
    return (uint8_t)(x + 7u * i + 1u);
}

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

/* What the zero-copy API allocates for a tensor: size_with_stride, or size where a runtime leaves
 * size_with_stride 0. */
static uint32_t mem_size(const rknn_tensor_attr *a) {
    return a->size_with_stride ? a->size_with_stride : a->size;
}

static void set_attr(rknn_tensor_attr *a, const char *name, rknn_tensor_format fmt, uint32_t n_dims,
                     const uint32_t *dims, uint32_t n_elems, uint32_t size, uint32_t w_stride,
                     uint32_t size_with_stride) {
    memset(a, 0, sizeof *a);
    a->index = 0;
    a->n_dims = n_dims;
    memcpy(a->dims, dims, n_dims * sizeof(uint32_t));
    copy_name(a->name, RKNN_MAX_NAME_LEN, name);
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

static int native_input_is_nhwc(const fake_ctx *c) { return c->attr[A_NATIVE_INPUT].fmt == RKNN_TENSOR_NHWC; }

static void build_model(fake_ctx *c) {
    uint32_t C = c->c, H = c->h, W = c->w, C1 = (C + C2 - 1) / C2;
    uint32_t nchw[4] = {1, C, H, W};
    uint32_t n_elems = C * H * W;
    uint32_t nhwc[4] = {1, H, W, C};
    uint32_t w_stride = round_up(W, 16);
    set_attr(&c->attr[A_INPUT], "input", RKNN_TENSOR_NCHW, 4, nchw, n_elems, n_elems, 0, n_elems);
    set_attr(&c->attr[A_OUTPUT], "output", RKNN_TENSOR_NCHW, 4, nchw, n_elems, n_elems, 0, n_elems);
    set_attr(&c->attr[A_NHWC_INPUT], "input", RKNN_TENSOR_NHWC, 4, nhwc, n_elems, n_elems, w_stride,
             H * w_stride * C);
    if (C == 1 || C == 3 || C == 4) {
        memcpy(&c->attr[A_NATIVE_INPUT], &c->attr[A_NHWC_INPUT], sizeof(rknn_tensor_attr));
    } else {
        uint32_t nc1hwc2[5] = {1, C1, H, W, C2};
        uint32_t size = C1 * H * W * C2;
        set_attr(&c->attr[A_NATIVE_INPUT], "input", RKNN_TENSOR_NC1HWC2, 5, nc1hwc2, n_elems, size,
                 W, size);
    }
    uint32_t nc1hwc2[5] = {1, C1, H, W, C2};
    uint32_t out_size = C1 * H * W * C2;
    set_attr(&c->attr[A_NATIVE_OUTPUT], "output", RKNN_TENSOR_NC1HWC2, 5, nc1hwc2, n_elems,
             out_size, 0, out_size);
    set_attr(&c->attr[A_NHWC_OUTPUT], "output", RKNN_TENSOR_NHWC, 4, nhwc, n_elems, n_elems, 0,
             n_elems);
}

static void free_buffers(fake_ctx *c) {
    free(c->in_buf);
    free(c->out_buf);
    c->in_buf = c->out_buf = NULL;
}

/* ---- described models ---------------------------------------------------------------------- */

static int slot_of_name(const char *name) {
    static const struct { const char *name; int cmd; } k[] = {
        {"INPUT_ATTR", RKNN_QUERY_INPUT_ATTR},
        {"OUTPUT_ATTR", RKNN_QUERY_OUTPUT_ATTR},
        {"NATIVE_INPUT_ATTR", RKNN_QUERY_NATIVE_INPUT_ATTR},
        {"NATIVE_OUTPUT_ATTR", RKNN_QUERY_NATIVE_OUTPUT_ATTR},
        {"NATIVE_NHWC_INPUT_ATTR", RKNN_QUERY_NATIVE_NHWC_INPUT_ATTR},
        {"NATIVE_NHWC_OUTPUT_ATTR", RKNN_QUERY_NATIVE_NHWC_OUTPUT_ATTR},
    };
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++)
        if (strcmp(k[i].name, name) == 0) return slot_of(k[i].cmd);
    return -1;
}

/* The next token of *p split at any of `delims` (strtok_r is POSIX, not C99). */
static char *next_token(char **p, const char *delims) {
    char *start = *p + strspn(*p, delims);
    if (*start == '\0') {
        *p = start;
        return NULL;
    }
    char *end = start + strcspn(start, delims);
    if (*end != '\0') *end++ = '\0';
    *p = end;
    return start;
}

/* One "<QUERY> key=value ..." line into its attribute; 0 on success. */
static int parse_attr_line(char *line, rknn_tensor_attr *attrs, int *seen) {
    char *save = line;
    char *word = next_token(&save, " \t");
    if (word == NULL) return 0; /* a blank line */
    int slot = slot_of_name(word);
    if (slot < 0) return -1;
    rknn_tensor_attr *a = &attrs[slot];
    memset(a, 0, sizeof *a);
    while ((word = next_token(&save, " \t")) != NULL) {
        char *eq = strchr(word, '=');
        if (eq == NULL) return -1;
        *eq = '\0';
        const char *key = word, *value = eq + 1;
        if (strcmp(key, "name") == 0) copy_name(a->name, RKNN_MAX_NAME_LEN, value);
        else if (strcmp(key, "fmt") == 0) a->fmt = (rknn_tensor_format)atoi(value);
        else if (strcmp(key, "type") == 0) a->type = (rknn_tensor_type)atoi(value);
        else if (strcmp(key, "qnt_type") == 0) a->qnt_type = (rknn_tensor_qnt_type)atoi(value);
        else if (strcmp(key, "zp") == 0) a->zp = atoi(value);
        else if (strcmp(key, "scale") == 0) a->scale = strtof(value, NULL);
        else if (strcmp(key, "n_elems") == 0) a->n_elems = (uint32_t)strtoul(value, NULL, 10);
        else if (strcmp(key, "size") == 0) a->size = (uint32_t)strtoul(value, NULL, 10);
        else if (strcmp(key, "w_stride") == 0) a->w_stride = (uint32_t)strtoul(value, NULL, 10);
        else if (strcmp(key, "size_with_stride") == 0)
            a->size_with_stride = (uint32_t)strtoul(value, NULL, 10);
        else if (strcmp(key, "dims") == 0) {
            const char *p = value;
            a->n_dims = 0;
            while (*p && a->n_dims < RKNN_MAX_DIMS) {
                char *end;
                a->dims[a->n_dims++] = (uint32_t)strtoul(p, &end, 10);
                p = *end == ',' ? end + 1 : end;
                if (end == p && *p) return -1;
            }
        } else return -1;
    }
    seen[slot] = 1;
    return 0;
}

/* A FAKE-RKNN-DESCRIBED model into c->attr; RKNN_SUCC or RKNN_ERR_MODEL_INVALID. */
static int load_described(fake_ctx *c, const void *model, uint32_t size) {
    char *text = malloc((size_t)size + 1);
    if (text == NULL) return RKNN_ERR_MALLOC_FAIL;
    memcpy(text, model, size);
    text[size] = '\0';
    int seen[A_COUNT] = {0};
    char *save = text;
    int bad = 0;
    char *line = next_token(&save, "\n"); /* the magic */
    while (!bad && (line = next_token(&save, "\n")) != NULL)
        bad = parse_attr_line(line, c->attr, seen) != 0;
    free(text);
    for (int s = 0; s < A_COUNT; s++) bad |= !seen[s];
    const rknn_tensor_attr *in = &c->attr[A_INPUT];
    if (bad || in->n_dims != 4) return RKNN_ERR_MODEL_INVALID;
    c->n = (int)in->dims[0];
    c->c = (int)in->dims[1];
    c->h = (int)in->dims[2];
    c->w = (int)in->dims[3];
    c->described = 1;
    return RKNN_SUCC;
}

static uint32_t type_size(rknn_tensor_type t) {
    switch (t) {
    case RKNN_TENSOR_INT8: case RKNN_TENSOR_UINT8: case RKNN_TENSOR_BOOL: return 1;
    case RKNN_TENSOR_FLOAT16: case RKNN_TENSOR_INT16: case RKNN_TENSOR_UINT16:
    case RKNN_TENSOR_BFLOAT16: return 2;
    default: return 4;
    }
}

/* The element offset of logical (n, ch, y, x) in a buffer laid out as `a` describes it. */
static size_t described_index(const fake_ctx *c, const rknn_tensor_attr *a, uint32_t n,
                              uint32_t ch, uint32_t y, uint32_t x) {
    size_t C = (size_t)c->c, H = (size_t)c->h, W = (size_t)c->w;
    if (a->fmt == RKNN_TENSOR_NHWC) {
        size_t ws = a->w_stride ? a->w_stride : W;
        size_t cs = a->n_dims == 4 ? a->dims[3] : C; /* channels as reported (padded or not) */
        return (((size_t)n * H + y) * ws + x) * cs + ch;
    }
    if (a->fmt == RKNN_TENSOR_NC1HWC2 && a->n_dims == 5) {
        size_t c1 = a->dims[1], c2 = a->dims[4];
        size_t plane = (size_t)a->dims[2] * a->dims[3]; /* H x W, or 1 x ceil4(H*W) flattened */
        return ((((size_t)n * c1 + ch / c2) * plane) + (size_t)y * W + x) * c2 + ch % c2;
    }
    return (((size_t)n * C + ch) * H + y) * W + x; /* NCHW, UNDEFINED: logical order */
}

static double element(const uint8_t *buf, size_t i, const rknn_tensor_attr *a) {
    switch (a->type) {
    case RKNN_TENSOR_UINT8: return (double)buf[i]; /* the values themselves */
    case RKNN_TENSOR_INT8: {
        double q = (double)(int8_t)buf[i];
        return a->qnt_type == RKNN_TENSOR_QNT_AFFINE_ASYMMETRIC ? (q - a->zp) * a->scale : q;
    }
    default: return 0.0;
    }
}

static void store(uint8_t *buf, size_t i, const rknn_tensor_attr *a, double v) {
    double q = a->qnt_type == RKNN_TENSOR_QNT_AFFINE_ASYMMETRIC ? v / a->scale + a->zp : v;
    double lo = a->type == RKNN_TENSOR_UINT8 ? 0.0 : -128.0;
    double hi = a->type == RKNN_TENSOR_UINT8 ? 255.0 : 127.0;
    q = q < lo ? lo : q > hi ? hi : q;
    long r = (long)(q < 0 ? q - 0.5 : q + 0.5);
    buf[i] = (uint8_t)(a->type == RKNN_TENSOR_UINT8 ? (uint8_t)r : (uint8_t)(int8_t)r);
}

/* The identity of a described model: every element, input layout to output layout. */
static void compute_described(const fake_ctx *c, const uint8_t *in, uint8_t *out,
                              uint32_t out_size, const rknn_tensor_attr *oa) {
    const rknn_tensor_attr *ia = &c->attr[A_NATIVE_INPUT];
    uint32_t ie = type_size(ia->type), oe = type_size(oa->type);
    memset(out, fault("dirty-padding") ? 0x5A : 0, out_size);
    int swap = fault("swapped-pixels") && c->w > 1;
    for (uint32_t n = 0; n < (uint32_t)c->n; n++)
        for (uint32_t ch = 0; ch < (uint32_t)c->c; ch++)
            for (uint32_t y = 0; y < (uint32_t)c->h; y++)
                for (uint32_t x = 0; x < (uint32_t)c->w; x++) {
                    size_t i = described_index(c, ia, n, ch, y, x);
                    uint32_t ox = swap && x < 2 ? 1 - x : x;
                    size_t o = described_index(c, oa, n, ch, y, ox);
                    if ((o + 1) * oe > out_size) continue;
                    if (ie == 2 && oe == 2) { /* float16 to float16: the bits */
                        memcpy(out + 2 * o, in + 2 * i, 2);
                    } else if (ie == 1 && oe == 1) {
                        store(out, o, oa, element(in, i, ia));
                    }
                }
}

/* ---- rknn_api.h: context and queries ------------------------------------------------------- */

int rknn_init(rknn_context *context, void *model, uint32_t size, uint32_t flag,
              rknn_init_extend *extend) {
    (void)flag;
    (void)extend;
    if (context == NULL || model == NULL) return RKNN_ERR_PARAM_INVALID;
    if (fault("init")) return RKNN_ERR_FAIL;
    /* A model in the real file's container (what rknn-toolkit2 2.5.0 writes: "RKNN", the
     * file-format version at byte 8, the model data's length at 16, the data from byte 64, then
     * the model info): the fake reads its text from the model data. */
    if (size >= 72 && memcmp(model, "RKNN", 4) == 0) {
        uint64_t data_len;
        memcpy(&data_len, (const uint8_t *)model + 16, sizeof data_len);
        if (data_len > size - 64) return RKNN_ERR_MODEL_INVALID;
        model = (uint8_t *)model + 64;
        size = (uint32_t)data_len;
    }
    char text[256];
    size_t n = size < sizeof text - 1 ? size : sizeof text - 1;
    memcpy(text, model, n);
    text[n] = '\0';
    if (strncmp(text, "FAKE-RKNN", 9) != 0) return RKNN_ERR_MODEL_INVALID;
    const char *env_fault = getenv("FAKE_RKNN_FAULT");
    if (env_fault != NULL) fake_rknn_set_fault(env_fault);
    for (int i = 0; i < MAX_CTX; i++) {
        if (g_ctx[i].used) continue;
        fake_ctx *c = &g_ctx[i];
        memset(c, 0, sizeof *c);
        if (strncmp(text, "FAKE-RKNN-DESCRIBED", 19) == 0) {
            int ret = load_described(c, model, size);
            if (ret != RKNN_SUCC) return ret;
            c->used = 1;
            *context = (rknn_context)(i + 1);
            return RKNN_SUCC;
        }
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
        for (int s = 0; s < A_COUNT; s++) {
            if (!g_report_set[s]) continue;
            memcpy(&c->attr[s], &g_report[s], sizeof(rknn_tensor_attr));
            c->from_report = 1;
        }
        *context = (rknn_context)(i + 1);
        return RKNN_SUCC;
    }
    return RKNN_ERR_FAIL;
}

int rknn_destroy(rknn_context context) {
    fake_ctx *c = lookup(context);
    if (c == NULL) return RKNN_ERR_CTX_INVALID;
    free_buffers(c);
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
    int slot = slot_of((int)cmd);
    if (slot < 0) return RKNN_ERR_PARAM_INVALID;
    memcpy(attr, &c->attr[slot], sizeof *attr);
    return RKNN_SUCC;
}

int rknn_set_core_mask(rknn_context ctx, rknn_core_mask core_mask) {
    fake_ctx *c = lookup(ctx);
    if (c == NULL) return RKNN_ERR_CTX_INVALID;
    int three = strcmp(g_soc, "rk3588") == 0;
    int two = strcmp(g_soc, "rk3576") == 0;
    switch ((int)core_mask) {
    case RKNN_NPU_CORE_AUTO: break;
    case RKNN_NPU_CORE_0: case RKNN_NPU_CORE_1: case RKNN_NPU_CORE_0_1: case RKNN_NPU_CORE_ALL:
        if (!three && !two) return RKNN_ERR_PARAM_INVALID;
        break;
    case RKNN_NPU_CORE_2: case RKNN_NPU_CORE_0_1_2:
        /* Core 2 exists on RK3588 only: RK3576 has two cores (RKNNLite 2.5.0 remaps these). */
        if (!three) return RKNN_ERR_PARAM_INVALID;
        break;
    default: return RKNN_ERR_PARAM_INVALID;
    }
    c->core_mask = (int)core_mask;
    g_last_core_mask = (int)core_mask;
    trace("core_mask %ld", (long)core_mask, 0, 0, 0);
    return RKNN_SUCC;
}

int rknn_set_input_shapes(rknn_context ctx, uint32_t n_inputs, rknn_tensor_attr attr[]) {
    fake_ctx *c = lookup(ctx);
    if (c == NULL) return RKNN_ERR_CTX_INVALID;
    if (n_inputs != 1 || attr == NULL) return RKNN_ERR_PARAM_INVALID;
    /* A static-shape model: only its own shape is accepted. */
    const rknn_tensor_attr *have = &c->attr[A_INPUT];
    if (attr[0].n_dims != have->n_dims ||
        memcmp(attr[0].dims, have->dims, have->n_dims * sizeof(uint32_t)) != 0)
        return RKNN_ERR_PARAM_INVALID;
    return RKNN_SUCC;
}

/* ---- zero-copy API ------------------------------------------------------------------------- */

rknn_tensor_mem *rknn_create_mem(rknn_context ctx, uint32_t size) {
    if (lookup(ctx) == NULL || size == 0 || fault("create_mem")) return NULL;
    rknn_tensor_mem *mem = calloc(1, sizeof *mem);
    void *buf = malloc(size);
    if (mem == NULL || buf == NULL) {
        free(mem);
        free(buf);
        return NULL;
    }
    memset(buf, 0xCD, size); /* never-written bytes stand out */
    mem->virt_addr = buf;
    mem->phys_addr = (uint64_t)(uintptr_t)buf;
    mem->fd = -1;
    mem->offset = 0;
    mem->size = size;
    mem->flags = RKNN_TENSOR_MEMORY_FLAGS_ALLOC_INSIDE;
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
    if (strcmp(attr->name, c->attr[A_NATIVE_INPUT].name) == 0) {
        /* This fake serves only pass-through (native) inputs on the zero-copy path. */
        if (!attr->pass_through) return RKNN_ERR_INPUT_INVALID;
        if (mem->size < mem_size(&c->attr[A_NATIVE_INPUT])) return RKNN_ERR_INPUT_INVALID;
        c->in_mem = mem;
        return RKNN_SUCC;
    }
    if (strcmp(attr->name, c->attr[A_NATIVE_OUTPUT].name) == 0) {
        const rknn_tensor_attr *want =
            attr->fmt == RKNN_TENSOR_NHWC ? &c->attr[A_NHWC_OUTPUT] : &c->attr[A_NATIVE_OUTPUT];
        if (mem->size < mem_size(want)) return RKNN_ERR_OUTPUT_INVALID;
        c->out_mem = mem;
        c->out_fmt = attr->fmt;
        return RKNN_SUCC;
    }
    return RKNN_ERR_PARAM_INVALID;
}

int rknn_mem_sync(rknn_context ctx, rknn_tensor_mem *mem, rknn_mem_sync_mode mode) {
    if (lookup(ctx) == NULL) return RKNN_ERR_CTX_INVALID;
    if (mem == NULL || ((int)mode & RKNN_MEMORY_SYNC_BIDIRECTIONAL) == 0)
        return RKNN_ERR_PARAM_INVALID;
    g_sync_calls++;
    return RKNN_SUCC;
}

/* ---- the computation ----------------------------------------------------------------------- */

static size_t in_index(const fake_ctx *c, uint32_t ch, uint32_t y, uint32_t x) {
    const rknn_tensor_attr *a = &c->attr[A_NATIVE_INPUT];
    if (native_input_is_nhwc(c)) return ((size_t)y * a->w_stride + x) * (size_t)c->c + ch;
    return (((size_t)(ch / C2) * c->h + y) * c->w + x) * C2 + ch % C2;
}

static size_t out_index(const fake_ctx *c, rknn_tensor_format fmt, uint32_t ch, uint32_t y,
                        uint32_t x) {
    if (fmt == RKNN_TENSOR_NHWC) return ((size_t)y * c->w + x) * (size_t)c->c + ch;
    return (((size_t)(ch / C2) * c->h + y) * c->w + x) * C2 + ch % C2;
}

static void compute(const fake_ctx *c, const uint8_t *in, uint32_t in_size, uint8_t *out,
                    uint32_t out_size, rknn_tensor_format out_fmt) {
    if (c->from_report) {
        for (uint32_t i = 0; i < out_size; i++) out[i] = fake_rknn_pattern(in, in_size, i);
        return;
    }
    memset(out, 0, out_size); /* channel padding of NC1HWC2 is zero */
    for (uint32_t ch = 0; ch < (uint32_t)c->c; ch++)
        for (uint32_t y = 0; y < (uint32_t)c->h; y++)
            for (uint32_t x = 0; x < (uint32_t)c->w; x++)
                out[out_index(c, out_fmt, ch, y, x)] = in[in_index(c, ch, y, x)];
}

int rknn_run(rknn_context ctx, rknn_run_extend *extend) {
    fake_ctx *c = lookup(ctx);
    if (c == NULL) return RKNN_ERR_CTX_INVALID;
    if (fault("run")) return RKNN_ERR_FAIL;
    if (fault("timeout")) return RKNN_ERR_TIMEOUT;
    const rknn_tensor_attr *nin = &c->attr[A_NATIVE_INPUT], *nout = &c->attr[A_NATIVE_OUTPUT];
    if (c->described) {
        /* Zero-copy only: the output memory was set with the native or the NHWC attribute. */
        if (c->in_mem == NULL || c->out_mem == NULL) return RKNN_ERR_INPUT_INVALID;
        const rknn_tensor_attr *oa =
            c->out_fmt == RKNN_TENSOR_NHWC ? &c->attr[A_NHWC_OUTPUT] : nout;
        compute_described(c, c->in_mem->virt_addr, c->out_mem->virt_addr, c->out_mem->size, oa);
    } else if (c->in_mem != NULL && c->out_mem != NULL) {
        compute(c, c->in_mem->virt_addr, mem_size(nin), c->out_mem->virt_addr, c->out_mem->size,
                c->out_fmt);
    } else if (c->in_buf != NULL) {
        free(c->out_buf);
        c->out_buf = malloc(mem_size(nout));
        if (c->out_buf == NULL) return RKNN_ERR_MALLOC_FAIL;
        compute(c, c->in_buf, mem_size(nin), c->out_buf, mem_size(nout), RKNN_TENSOR_NC1HWC2);
    } else {
        return RKNN_ERR_INPUT_INVALID;
    }
    if (extend != NULL) extend->frame_id++;
    return RKNN_SUCC;
}

/* ---- normal API (what RKNNLite calls) ------------------------------------------------------ */

int rknn_inputs_set(rknn_context ctx, uint32_t n_inputs, rknn_input inputs[]) {
    fake_ctx *c = lookup(ctx);
    if (c == NULL) return RKNN_ERR_CTX_INVALID;
    if (n_inputs != 1 || inputs == NULL || inputs[0].index != 0 || inputs[0].buf == NULL)
        return RKNN_ERR_PARAM_INVALID;
    if (fault("inputs_set")) return RKNN_ERR_FAIL;
    const rknn_tensor_attr *nin = &c->attr[A_NATIVE_INPUT];
    const rknn_input *in = &inputs[0];
    trace("inputs_set index=%ld pass_through=%ld type=%ld size=%ld", (long)in->index,
          (long)in->pass_through, (long)in->type, (long)in->size);
    trace_buffer(in->index, in->buf, in->size);
    uint8_t *buf = malloc(mem_size(nin));
    if (buf == NULL) return RKNN_ERR_MALLOC_FAIL;
    memset(buf, 0, mem_size(nin));
    const uint8_t *src = in->buf;
    if (in->pass_through) {
        /* The normal API checks a pass-through buffer against attr.size (rows of W); it lays
         * NHWC rows out to w_stride itself. */
        if (in->size != nin->size || in->type != nin->type) {
            free(buf);
            return RKNN_ERR_PARAM_INVALID;
        }
        if (!c->from_report && native_input_is_nhwc(c)) {
            size_t row = (size_t)c->w * (size_t)c->c, stride = (size_t)nin->w_stride * c->c;
            for (uint32_t y = 0; y < (uint32_t)c->h; y++)
                memcpy(buf + y * stride, src + y * row, row);
        } else {
            memcpy(buf, src, nin->size);
        }
    } else {
        /* Logical int8 or float32 in NCHW/NHWC; float32 is quantized with the input's zp/scale. */
        uint32_t n = (uint32_t)(c->c * c->h * c->w);
        uint32_t item = in->type == RKNN_TENSOR_FLOAT32 ? 4 : 1;
        if (c->from_report || (in->type != RKNN_TENSOR_INT8 && in->type != RKNN_TENSOR_FLOAT32) ||
            (in->fmt != RKNN_TENSOR_NCHW && in->fmt != RKNN_TENSOR_NHWC) || in->size != n * item) {
            free(buf);
            return RKNN_ERR_PARAM_INVALID;
        }
        for (uint32_t ch = 0; ch < (uint32_t)c->c; ch++)
            for (uint32_t y = 0; y < (uint32_t)c->h; y++)
                for (uint32_t x = 0; x < (uint32_t)c->w; x++) {
                    size_t k = in->fmt == RKNN_TENSOR_NCHW
                                   ? ((size_t)ch * c->h + y) * c->w + x
                                   : ((size_t)y * c->w + x) * c->c + ch;
                    int8_t q;
                    if (item == 4) {
                        float v;
                        memcpy(&v, src + 4 * k, 4);
                        float r = v / nin->scale + (float)nin->zp;
                        r = r < -128.f ? -128.f : r > 127.f ? 127.f : r;
                        q = (int8_t)(r < 0 ? r - 0.5f : r + 0.5f);
                    } else {
                        q = (int8_t)src[k];
                    }
                    buf[in_index(c, ch, y, x)] = (uint8_t)q;
                }
    }
    free(c->in_buf);
    c->in_buf = buf;
    return RKNN_SUCC;
}

int rknn_outputs_get(rknn_context ctx, uint32_t n_outputs, rknn_output outputs[],
                     rknn_output_extend *extend) {
    fake_ctx *c = lookup(ctx);
    if (c == NULL) return RKNN_ERR_CTX_INVALID;
    if (n_outputs != 1 || outputs == NULL || outputs[0].index != 0) return RKNN_ERR_PARAM_INVALID;
    if (c->out_buf == NULL) return RKNN_ERR_OUTPUT_INVALID;
    rknn_output *o = &outputs[0];
    const rknn_tensor_attr *lout = &c->attr[A_OUTPUT];
    uint32_t n = c->from_report ? lout->n_elems : (uint32_t)(c->c * c->h * c->w);
    uint32_t item = o->want_float ? 4 : 1;
    uint32_t need = n * item;
    uint8_t *dst;
    if (o->is_prealloc) {
        if (o->buf == NULL || o->size < need) return RKNN_ERR_PARAM_INVALID;
        dst = o->buf;
    } else {
        dst = malloc(need);
        if (dst == NULL) return RKNN_ERR_MALLOC_FAIL;
        o->buf = dst;
    }
    o->size = need;
    /* NCHW from the native output (as rknn_outputs_get converts it); a context with reported
     * attributes hands the first n_elems native bytes on as they are. */
    for (uint32_t k = 0; k < n; k++) {
        uint8_t q;
        if (c->from_report) {
            q = k < mem_size(&c->attr[A_NATIVE_OUTPUT]) ? c->out_buf[k] : 0;
        } else {
            uint32_t x = k % (uint32_t)c->w, y = (k / (uint32_t)c->w) % (uint32_t)c->h,
                     ch = k / (uint32_t)(c->w * c->h);
            q = c->out_buf[out_index(c, RKNN_TENSOR_NC1HWC2, ch, y, x)];
        }
        if (o->want_float) {
            float v = ((float)(int8_t)q - (float)lout->zp) * lout->scale;
            memcpy(dst + 4 * k, &v, 4);
        } else {
            dst[k] = q;
        }
    }
    if (extend != NULL) extend->frame_id = 0;
    return RKNN_SUCC;
}

int rknn_outputs_release(rknn_context ctx, uint32_t n_outputs, rknn_output outputs[]) {
    if (lookup(ctx) == NULL) return RKNN_ERR_CTX_INVALID;
    if (outputs == NULL) return RKNN_ERR_PARAM_INVALID;
    for (uint32_t i = 0; i < n_outputs; i++) {
        if (!outputs[i].is_prealloc) {
            free(outputs[i].buf);
            outputs[i].buf = NULL;
        }
    }
    return RKNN_SUCC;
}

/* ---- layout exports for the ABI tests ------------------------------------------------------ */

/* _Alignof without C11: the offset of T after a lone char. */
#define ALIGN_OF(T) offsetof(struct { char c; T t; }, t)
#define SZ(T) {#T, sizeof(T), ALIGN_OF(T)}
static const struct {
    const char *name;
    size_t size, align;
} k_sizes[] = {
    SZ(rknn_input_output_num), SZ(rknn_tensor_attr), SZ(rknn_tensor_mem), SZ(rknn_sdk_version),
    SZ(rknn_context), SZ(rknn_core_mask), SZ(rknn_mem_sync_mode), SZ(rknn_query_cmd),
    SZ(rknn_tensor_format), SZ(rknn_tensor_type), SZ(rknn_tensor_qnt_type), SZ(rknn_input),
    SZ(rknn_output), SZ(rknn_init_extend), SZ(rknn_run_extend), SZ(rknn_output_extend),
};

#define OFF(T, F) {#T, #F, offsetof(T, F), sizeof(((T *)0)->F)}
static const struct {
    const char *type, *field;
    size_t offset, size;
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

#define K(N) {#N, (long)(N)}
static const struct {
    const char *name;
    long value;
} k_constants[] = {
    K(RKNN_SUCC), K(RKNN_ERR_FAIL), K(RKNN_ERR_TIMEOUT), K(RKNN_ERR_DEVICE_UNAVAILABLE),
    K(RKNN_ERR_MALLOC_FAIL), K(RKNN_ERR_PARAM_INVALID), K(RKNN_ERR_MODEL_INVALID),
    K(RKNN_ERR_CTX_INVALID), K(RKNN_ERR_INPUT_INVALID), K(RKNN_ERR_OUTPUT_INVALID),
    K(RKNN_ERR_DEVICE_UNMATCH), K(RKNN_ERR_INCOMPATILE_PRE_COMPILE_MODEL),
    K(RKNN_ERR_INCOMPATILE_OPTIMIZATION_LEVEL_VERSION), K(RKNN_ERR_TARGET_PLATFORM_UNMATCH),
    K(RKNN_MAX_DIMS), K(RKNN_MAX_NAME_LEN), K(RKNN_TENSOR_MEMORY_FLAGS_ALLOC_INSIDE),
    K(RKNN_QUERY_IN_OUT_NUM), K(RKNN_QUERY_INPUT_ATTR), K(RKNN_QUERY_OUTPUT_ATTR),
    K(RKNN_QUERY_SDK_VERSION), K(RKNN_QUERY_NATIVE_INPUT_ATTR), K(RKNN_QUERY_NATIVE_OUTPUT_ATTR),
    K(RKNN_QUERY_NATIVE_NHWC_INPUT_ATTR), K(RKNN_QUERY_NATIVE_NHWC_OUTPUT_ATTR),
    K(RKNN_TENSOR_FLOAT32), K(RKNN_TENSOR_FLOAT16), K(RKNN_TENSOR_INT8), K(RKNN_TENSOR_UINT8),
    K(RKNN_TENSOR_INT16), K(RKNN_TENSOR_UINT16), K(RKNN_TENSOR_INT32), K(RKNN_TENSOR_UINT32),
    K(RKNN_TENSOR_INT64), K(RKNN_TENSOR_BOOL), K(RKNN_TENSOR_INT4), K(RKNN_TENSOR_BFLOAT16),
    K(RKNN_TENSOR_QNT_NONE), K(RKNN_TENSOR_QNT_DFP), K(RKNN_TENSOR_QNT_AFFINE_ASYMMETRIC),
    K(RKNN_TENSOR_NCHW), K(RKNN_TENSOR_NHWC), K(RKNN_TENSOR_NC1HWC2), K(RKNN_TENSOR_UNDEFINED),
    K(RKNN_NPU_CORE_AUTO), K(RKNN_NPU_CORE_0), K(RKNN_NPU_CORE_1), K(RKNN_NPU_CORE_2),
    K(RKNN_NPU_CORE_0_1), K(RKNN_NPU_CORE_0_1_2), K(RKNN_NPU_CORE_ALL),
    K(RKNN_MEMORY_SYNC_TO_DEVICE), K(RKNN_MEMORY_SYNC_FROM_DEVICE),
    K(RKNN_MEMORY_SYNC_BIDIRECTIONAL),
};

long fake_sizeof(const char *type) {
    for (size_t i = 0; i < sizeof k_sizes / sizeof k_sizes[0]; i++)
        if (strcmp(k_sizes[i].name, type) == 0) return (long)k_sizes[i].size;
    return -1;
}

long fake_alignof(const char *type) {
    for (size_t i = 0; i < sizeof k_sizes / sizeof k_sizes[0]; i++)
        if (strcmp(k_sizes[i].name, type) == 0) return (long)k_sizes[i].align;
    return -1;
}

long fake_offsetof(const char *type, const char *field) {
    for (size_t i = 0; i < sizeof k_offsets / sizeof k_offsets[0]; i++)
        if (strcmp(k_offsets[i].type, type) == 0 && strcmp(k_offsets[i].field, field) == 0)
            return (long)k_offsets[i].offset;
    return -1;
}

long fake_fieldsize(const char *type, const char *field) {
    for (size_t i = 0; i < sizeof k_offsets / sizeof k_offsets[0]; i++)
        if (strcmp(k_offsets[i].type, type) == 0 && strcmp(k_offsets[i].field, field) == 0)
            return (long)k_offsets[i].size;
    return -1;
}

/* The value of a constant the fake declares; *found = 0 when it declares none of that name. */
long fake_constant(const char *name, int *found) {
    for (size_t i = 0; i < sizeof k_constants / sizeof k_constants[0]; i++)
        if (strcmp(k_constants[i].name, name) == 0) {
            *found = 1;
            return k_constants[i].value;
        }
    *found = 0;
    return 0;
}

/* The names of the constants and structs the fake declares, for the tests to walk. */
const char *fake_constant_name(int i) {
    return i >= 0 && (size_t)i < sizeof k_constants / sizeof k_constants[0] ? k_constants[i].name
                                                                            : NULL;
}
const char *fake_struct_name(int i) {
    return i >= 0 && (size_t)i < sizeof k_sizes / sizeof k_sizes[0] ? k_sizes[i].name : NULL;
}
