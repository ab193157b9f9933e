/*
 * A stand-in for Horizon / D-Robotics libdnn (+ hb_sys on RDK X3/X5, + hb_ucp on RDK S100) with
 * the documented signatures and struct layouts (declared here from hb_dnn.h / hb_sys.h, or from
 * hobot/dnn/hb_dnn.h / hb_ucp.h / hb_ucp_sys.h when built with -DFAKE_ABI_S100). The layouts, enum
 * values and return codes are held to the headers' measured numbers (tests/data/abi) by
 * tests/adapters/test_hb_dnn_abi_facts.py through the fake_sizeof/alignof/offsetof/fieldsize and
 * fake_constant exports below.
 *
 * It serves one packed model "fake_identity" with one int8 input and two int8 outputs:
 *   input  validShape [1,3,4,5], stride [384,128,32,1] (W padded to 32), alignedByteSize 384
 *   out0   "identity": the input, W padded to 16: stride [192,64,16,1], SCALE per channel
 *   out1   "negated":  -input, W padded to 32, SHIFT 3 per channel on X3/X5 (NONE on S100)
 * Padding bytes are written as zero. The model file must start with "FAKE-HBM"; a file that
 * contains "models=2" packs a second model name, to exercise model selection.
 *
 * X3/X5 only, a file containing "nv12sep" packs "fake_nv12": one NV12_SEPARATE input "image"
 * (validShape [1,3,4,6], alignedShape [1,3,4,32], stride all 0 as the X3/X5 documentation says
 * of NV12 model inputs, alignedByteSize 192 = 128 of Y + 64 of UV) that reads Y from sysMem[0]
 * and UV from sysMem[1], and one U8 output "planes" (validShape [1,1,6,6], alignedShape
 * [1,1,6,16], stride 0, alignedByteSize 96): the 4 Y rows then the 2 UV rows, W cut to 6.
 *
 * Return codes are the headers' own: HB_DNN_INVALID_ARGUMENT / HB_DNN_INVALID_MODEL /
 * HB_DNN_RUN_TASK_FAILED / HB_DNN_TIMEOUT on X3/X5, HB_UCP_INVALID_ARGUMENT /
 * HB_UCP_MEM_ALLOC_FAIL / HB_UCP_TASK_TIMEOUT on S100.
 *
 * Test hooks: fake_dnn_set_fault(name), live counters, flush counters, layout exports.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef FAKE_ABI_S100
#define HB_UCP_INVALID_ARGUMENT (-100001)
#define HB_UCP_TASK_TIMEOUT (-200002)
#define HB_UCP_MEM_ALLOC_FAIL (-400001)
#define FAKE_ERR_INVALID HB_UCP_INVALID_ARGUMENT
#define FAKE_ERR_MODEL HB_UCP_INVALID_ARGUMENT
#define FAKE_ERR_FAULT HB_UCP_INVALID_ARGUMENT
#define FAKE_ERR_NOMEM HB_UCP_MEM_ALLOC_FAIL
#define FAKE_ERR_TIMEOUT HB_UCP_TASK_TIMEOUT
#else
#define HB_DNN_SUCCESS 0
#define HB_DNN_INVALID_ARGUMENT (-6000001)
#define HB_DNN_INVALID_MODEL (-6000002)
#define HB_DNN_INVALID_PACKED_DNN_HANDLE (-6000004)
#define HB_DNN_INVALID_DNN_HANDLE (-6000005)
#define HB_DNN_TIMEOUT (-6000008)
#define HB_DNN_INVALID_TASK_HANDLE (-6000011)
#define HB_DNN_RUN_TASK_FAILED (-6000012)
#define FAKE_ERR_INVALID HB_DNN_INVALID_ARGUMENT
#define FAKE_ERR_MODEL HB_DNN_INVALID_MODEL
#define FAKE_ERR_FAULT HB_DNN_RUN_TASK_FAILED
#define FAKE_ERR_NOMEM HB_DNN_RUN_TASK_FAILED
#define FAKE_ERR_TIMEOUT HB_DNN_TIMEOUT
#endif
/* A misaligned buffer is an invalid argument, not a handle error. */
#define FAKE_ERR_ALIGN FAKE_ERR_INVALID

#ifdef FAKE_ABI_S100

#define HB_DNN_TENSOR_MAX_DIMENSIONS (10)
typedef void *hbDNNPackedHandle_t;
typedef void *hbDNNHandle_t;
typedef void *hbUCPTaskHandle_t;

typedef struct hbUCPSysMem {
    uint64_t phyAddr;
    void *virAddr;
    uint64_t memSize;
} hbUCPSysMem;

typedef struct hbDNNTensorShape {
    int32_t dimensionSize[HB_DNN_TENSOR_MAX_DIMENSIONS];
    int32_t numDimensions;
} hbDNNTensorShape;

typedef struct hbDNNQuantiScale {
    int32_t scaleLen;
    float *scaleData;
    int32_t zeroPointLen;
    int32_t *zeroPointData;
} hbDNNQuantiScale;

typedef enum { NONE, SCALE } hbDNNQuantiType;

typedef struct hbDNNTensorProperties {
    hbDNNTensorShape validShape;
    int32_t tensorType;
    hbDNNQuantiScale scale;
    hbDNNQuantiType quantiType;
    int32_t quantizeAxis;
    int64_t alignedByteSize;
    int64_t stride[HB_DNN_TENSOR_MAX_DIMENSIONS];
} hbDNNTensorProperties;

typedef struct hbDNNTensor {
    hbUCPSysMem sysMem;
    hbDNNTensorProperties properties;
} hbDNNTensor;

typedef struct hbUCPSchedParam {
    int32_t priority;
    int64_t customId;
    uint64_t backend;
    uint32_t deviceId;
} hbUCPSchedParam;

typedef hbUCPSysMem fake_mem_t;
typedef int64_t fake_stride_t;
typedef int32_t fake_zp_t;
typedef enum {
    HB_DNN_TENSOR_TYPE_S4, HB_DNN_TENSOR_TYPE_U4, HB_DNN_TENSOR_TYPE_S8, HB_DNN_TENSOR_TYPE_U8,
    HB_DNN_TENSOR_TYPE_F16, HB_DNN_TENSOR_TYPE_S16, HB_DNN_TENSOR_TYPE_U16, HB_DNN_TENSOR_TYPE_F32,
    HB_DNN_TENSOR_TYPE_S32, HB_DNN_TENSOR_TYPE_U32, HB_DNN_TENSOR_TYPE_F64, HB_DNN_TENSOR_TYPE_S64,
    HB_DNN_TENSOR_TYPE_U64, HB_DNN_TENSOR_TYPE_BOOL8
} fake_data_type;
typedef enum { HB_SYS_MEM_CACHE_INVALIDATE = 1, HB_SYS_MEM_CACHE_CLEAN = 2 } fake_flush_flag;
typedef enum { HB_UCP_CORE_ANY = 0, HB_UCP_BPU_CORE_0 = 1, HB_UCP_BPU_CORE_1 = 2,
               HB_UCP_BPU_CORE_ANY = 128 } fake_backend;

#else /* RDK X3 / X5 */

#define HB_DNN_TENSOR_MAX_DIMENSIONS 8
typedef void *hbPackedDNNHandle_t;
typedef void *hbDNNHandle_t;
typedef void *hbDNNTaskHandle_t;

typedef struct {
    uint64_t phyAddr;
    void *virAddr;
    uint32_t memSize;
} hbSysMem;

typedef struct {
    int32_t dimensionSize[HB_DNN_TENSOR_MAX_DIMENSIONS];
    int32_t numDimensions;
} hbDNNTensorShape;

typedef struct {
    int32_t shiftLen;
    uint8_t *shiftData;
} hbDNNQuantiShift;

typedef struct {
    int32_t scaleLen;
    float *scaleData;
    int32_t zeroPointLen;
    int8_t *zeroPointData;
} hbDNNQuantiScale;

typedef enum { NONE, SHIFT, SCALE } hbDNNQuantiType;

typedef struct {
    hbDNNTensorShape validShape;
    hbDNNTensorShape alignedShape;
    int32_t tensorLayout;
    int32_t tensorType;
    hbDNNQuantiShift shift;
    hbDNNQuantiScale scale;
    hbDNNQuantiType quantiType;
    int32_t quantizeAxis;
    int32_t alignedByteSize;
    int32_t stride[HB_DNN_TENSOR_MAX_DIMENSIONS];
} hbDNNTensorProperties;

typedef struct {
    hbSysMem sysMem[4];
    hbDNNTensorProperties properties;
} hbDNNTensor;

typedef struct {
    int32_t bpuCoreId;
    int32_t dspCoreId;
    int32_t priority;
    int32_t more;
    int64_t customId;
    int32_t reserved1;
    int32_t reserved2;
} hbDNNInferCtrlParam;

typedef hbSysMem fake_mem_t;
typedef int32_t fake_stride_t;
typedef int8_t fake_zp_t;
typedef enum {
    HB_DNN_IMG_TYPE_Y, HB_DNN_IMG_TYPE_NV12, HB_DNN_IMG_TYPE_NV12_SEPARATE, HB_DNN_IMG_TYPE_YUV444,
    HB_DNN_IMG_TYPE_RGB, HB_DNN_IMG_TYPE_BGR, HB_DNN_TENSOR_TYPE_S4, HB_DNN_TENSOR_TYPE_U4,
    HB_DNN_TENSOR_TYPE_S8, HB_DNN_TENSOR_TYPE_U8, HB_DNN_TENSOR_TYPE_F16, HB_DNN_TENSOR_TYPE_S16,
    HB_DNN_TENSOR_TYPE_U16, HB_DNN_TENSOR_TYPE_F32, HB_DNN_TENSOR_TYPE_S32, HB_DNN_TENSOR_TYPE_U32,
    HB_DNN_TENSOR_TYPE_F64, HB_DNN_TENSOR_TYPE_S64, HB_DNN_TENSOR_TYPE_U64, HB_DNN_TENSOR_TYPE_MAX
} hbDNNDataType;
typedef enum { HB_DNN_LAYOUT_NHWC = 0, HB_DNN_LAYOUT_NCHW = 2, HB_DNN_LAYOUT_NONE = 255 }
    hbDNNTensorLayout;
typedef enum { HB_SYS_MEM_CACHE_INVALIDATE = 1, HB_SYS_MEM_CACHE_CLEAN = 2 } hbSysMemFlushFlag;
typedef enum { HB_BPU_CORE_ANY = 0, HB_BPU_CORE_0 = 1, HB_BPU_CORE_1 = 2 } hbBPUCore;
#define LAYOUT_NCHW HB_DNN_LAYOUT_NCHW

#endif

/* ---- fake state ---------------------------------------------------------------------------- */

static char g_fault[64];
static int g_live_allocs, g_live_tasks, g_live_handles;
static int g_flush_clean, g_flush_invalidate;
static int g_last_core = -1;

void fake_dnn_set_fault(const char *name) {
    if (name == NULL) {
        g_fault[0] = '\0';
        return;
    }
    strncpy(g_fault, name, sizeof g_fault - 1);
    g_fault[sizeof g_fault - 1] = '\0';
}
static int fault(const char *name) { return strcmp(g_fault, name) == 0; }
int fake_dnn_live_allocs(void) { return g_live_allocs; }
int fake_dnn_live_tasks(void) { return g_live_tasks; }
int fake_dnn_live_handles(void) { return g_live_handles; }
int fake_dnn_flush_count(int flag) { return flag == 1 ? g_flush_invalidate : g_flush_clean; }
int fake_dnn_last_core(void) { return g_last_core; }

typedef struct {
    int models;
    int nv12;
} fake_packed;

static const char *k_names[2] = {"fake_identity", "fake_other"};
static const char *k_nv12_names[1] = {"fake_nv12"};
static int g_model_token; /* the dnn handle points here */

static float k_scale[3] = {0.5f, 0.25f, 0.125f};
static fake_zp_t k_zero_point[3] = {0, 1, -1};
#ifndef FAKE_ABI_S100
static uint8_t k_shift[3] = {3, 3, 3};
#endif

enum { C = 3, H = 4, W = 5 };

static void shape4(hbDNNTensorShape *s, int32_t n, int32_t c, int32_t h, int32_t w) {
    memset(s, 0, sizeof *s);
    s->numDimensions = 4;
    s->dimensionSize[0] = n;
    s->dimensionSize[1] = c;
    s->dimensionSize[2] = h;
    s->dimensionSize[3] = w;
}

/* NCHW int8 with W padded to `wpad`. */
static void props_for(hbDNNTensorProperties *p, int wpad, int kind) {
    memset(p, 0, sizeof *p);
    shape4(&p->validShape, 1, C, H, W);
    p->tensorType = HB_DNN_TENSOR_TYPE_S8;
    p->stride[3] = 1;
    p->stride[2] = wpad;
    p->stride[1] = (fake_stride_t)H * wpad;
    p->stride[0] = (fake_stride_t)C * H * wpad;
    p->alignedByteSize = p->stride[0];
    p->quantizeAxis = 1;
#ifndef FAKE_ABI_S100
    shape4(&p->alignedShape, 1, C, H, wpad);
    p->tensorLayout = LAYOUT_NCHW;
#endif
    if (kind == 1) { /* identity output: SCALE per channel */
        p->quantiType = SCALE;
        p->scale.scaleLen = 3;
        p->scale.scaleData = k_scale;
        p->scale.zeroPointLen = 3;
        p->scale.zeroPointData = k_zero_point;
    } else if (kind == 2) { /* negated output */
#ifdef FAKE_ABI_S100
        p->quantiType = NONE;
#else
        p->quantiType = SHIFT;
        p->shift.shiftLen = 3;
        p->shift.shiftData = k_shift;
#endif
    } else {
        p->quantiType = NONE;
    }
}

/* ---- the NV12_SEPARATE model (X3/X5) -------------------------------------------------------- */

static int g_nv12_token; /* the dnn handle of "fake_nv12" points here */
enum { NV_H = 4, NV_W = 6, NV_ROW = 32, NV_OUT_ROW = 16 };

#ifndef FAKE_ABI_S100
static void nv12_props(hbDNNTensorProperties *p, int output) {
    memset(p, 0, sizeof *p); /* stride all 0: NV12 model inputs report none (X3/X5 docs) */
    p->tensorLayout = HB_DNN_LAYOUT_NCHW;
    p->quantiType = NONE;
    if (output) {
        shape4(&p->validShape, 1, 1, NV_H * 3 / 2, NV_W);
        shape4(&p->alignedShape, 1, 1, NV_H * 3 / 2, NV_OUT_ROW);
        p->tensorType = HB_DNN_TENSOR_TYPE_U8;
        p->alignedByteSize = NV_H * 3 / 2 * NV_OUT_ROW;
    } else {
        shape4(&p->validShape, 1, 3, NV_H, NV_W);
        shape4(&p->alignedShape, 1, 3, NV_H, NV_ROW);
        p->tensorType = HB_DNN_IMG_TYPE_NV12_SEPARATE;
        p->alignedByteSize = NV_H * NV_ROW + NV_H / 2 * NV_ROW;
    }
}
#endif

static int is_model(void *dnn) { return dnn == &g_model_token || dnn == &g_nv12_token; }

/* ---- model API ----------------------------------------------------------------------------- */

const char *hbDNNGetVersion(void) {
#ifdef FAKE_ABI_S100
    return "3.7.3 (fake)";
#else
    return "1.22.6 (fake)";
#endif
}

int32_t hbDNNInitializeFromFiles(void **packed, const char **files, int32_t count) {
    if (packed == NULL || files == NULL || count != 1) return FAKE_ERR_INVALID;
    if (fault("init")) return FAKE_ERR_FAULT;
    FILE *f = fopen(files[0], "rb");
    if (f == NULL) return FAKE_ERR_MODEL;
    char head[128] = {0};
    size_t n = fread(head, 1, sizeof head - 1, f);
    fclose(f);
    head[n] = '\0';
    if (strncmp(head, "FAKE-HBM", 8) != 0) return FAKE_ERR_MODEL;
    int nv12 = strstr(head, "nv12sep") != NULL;
#ifdef FAKE_ABI_S100
    if (nv12) return FAKE_ERR_MODEL; /* S100 has no image tensor types */
#endif
    fake_packed *p = calloc(1, sizeof *p);
    p->models = strstr(head, "models=2") ? 2 : 1;
    p->nv12 = nv12;
    *packed = p;
    g_live_handles++;
    return 0;
}

int32_t hbDNNRelease(void *packed) {
    if (packed == NULL) return FAKE_ERR_INVALID;
    free(packed);
    g_live_handles--;
    return fault("release") ? FAKE_ERR_FAULT : 0;
}

int32_t hbDNNGetModelNameList(const char ***names, int32_t *count, void *packed) {
    if (names == NULL || count == NULL || packed == NULL) return FAKE_ERR_INVALID;
    fake_packed *p = packed;
    *names = p->nv12 ? k_nv12_names : k_names;
    *count = p->nv12 ? 1 : p->models;
    return 0;
}

int32_t hbDNNGetModelHandle(void **dnn, void *packed, const char *name) {
    if (dnn == NULL || packed == NULL || name == NULL) return FAKE_ERR_INVALID;
    fake_packed *p = packed;
    if (p->nv12) {
        if (strcmp(name, k_nv12_names[0]) != 0) return FAKE_ERR_INVALID;
        *dnn = &g_nv12_token;
        return 0;
    }
    for (int i = 0; i < p->models; i++)
        if (strcmp(name, k_names[i]) == 0) {
            *dnn = &g_model_token;
            return 0;
        }
    return FAKE_ERR_INVALID;
}

int32_t hbDNNGetInputCount(int32_t *count, void *dnn) {
    if (count == NULL || !is_model(dnn)) return FAKE_ERR_INVALID;
    *count = 1;
    return 0;
}

int32_t hbDNNGetOutputCount(int32_t *count, void *dnn) {
    if (count == NULL || !is_model(dnn)) return FAKE_ERR_INVALID;
    *count = dnn == &g_nv12_token ? 1 : 2;
    return 0;
}

int32_t hbDNNGetInputName(const char **name, void *dnn, int32_t index) {
    if (name == NULL || !is_model(dnn) || index != 0) return FAKE_ERR_INVALID;
    *name = dnn == &g_nv12_token ? "image" : "data";
    return 0;
}

int32_t hbDNNGetOutputName(const char **name, void *dnn, int32_t index) {
    if (name == NULL || !is_model(dnn)) return FAKE_ERR_INVALID;
    if (dnn == &g_nv12_token) {
        if (index != 0) return FAKE_ERR_INVALID;
        *name = "planes";
        return 0;
    }
    if (index < 0 || index > 1) return FAKE_ERR_INVALID;
    *name = index == 0 ? "identity" : "negated";
    return 0;
}

int32_t hbDNNGetInputTensorProperties(hbDNNTensorProperties *p, void *dnn, int32_t index) {
    if (p == NULL || !is_model(dnn) || index != 0) return FAKE_ERR_INVALID;
    if (fault("properties")) return FAKE_ERR_FAULT;
#ifndef FAKE_ABI_S100
    if (dnn == &g_nv12_token) {
        nv12_props(p, 0);
        return 0;
    }
#endif
    props_for(p, 32, 0);
    return 0;
}

int32_t hbDNNGetOutputTensorProperties(hbDNNTensorProperties *p, void *dnn, int32_t index) {
    if (p == NULL || !is_model(dnn)) return FAKE_ERR_INVALID;
    if (fault("properties")) return FAKE_ERR_FAULT;
#ifndef FAKE_ABI_S100
    if (dnn == &g_nv12_token) {
        if (index != 0) return FAKE_ERR_INVALID;
        nv12_props(p, 1);
        return 0;
    }
#endif
    if (index < 0 || index > 1) return FAKE_ERR_INVALID;
    props_for(p, index == 0 ? 16 : 32, index + 1);
    return 0;
}

/* ---- memory -------------------------------------------------------------------------------- */

/* Allocations are 64-byte aligned; the "misalign" fault hands out base + 16. The base pointer is
 * kept just before the returned address so that free finds it. */
static int fake_alloc(fake_mem_t *mem, uint64_t size) {
    if (mem == NULL || size == 0) return FAKE_ERR_INVALID;
    if (fault("alloc")) return FAKE_ERR_NOMEM;
    size_t shift = fault("misalign") ? 16 : 0;
    void *base = NULL;
    if (posix_memalign(&base, 64, size + 64 + shift) != 0) return FAKE_ERR_FAULT;
    uint8_t *addr = (uint8_t *)base + 64 + shift;
    ((void **)addr)[-1] = base;
    memset(addr, 0xCD, size); /* never-written bytes stand out */
    mem->virAddr = addr;
    mem->phyAddr = (uint64_t)(uintptr_t)addr;
    mem->memSize = size;
    g_live_allocs++;
    return 0;
}

static int fake_flush(const fake_mem_t *mem, int32_t flag) {
    if (mem == NULL || mem->virAddr == NULL) return FAKE_ERR_INVALID;
    if (fault("flush")) return FAKE_ERR_FAULT;
    if (flag == 1)
        g_flush_invalidate++;
    else if (flag == 2)
        g_flush_clean++;
    else
        return FAKE_ERR_INVALID;
    return 0;
}

static int fake_free(fake_mem_t *mem) {
    if (mem == NULL || mem->virAddr == NULL) return FAKE_ERR_INVALID;
    free(((void **)mem->virAddr)[-1]);
    mem->virAddr = NULL;
    g_live_allocs--;
    return fault("free") ? FAKE_ERR_FAULT : 0;
}

/* ---- inference ----------------------------------------------------------------------------- */

typedef struct {
    int done;
    int status;
} fake_task;

static int check_mem(const fake_mem_t *mem, int64_t need) {
    if (mem->virAddr == NULL || (int64_t)mem->memSize < need) return FAKE_ERR_INVALID;
    if (((uintptr_t)mem->virAddr % 32) != 0) return FAKE_ERR_ALIGN;
    return 0;
}

static int compute(const fake_mem_t *in, const hbDNNTensorProperties *in_p, fake_mem_t *out0,
                   fake_mem_t *out1) {
    hbDNNTensorProperties o0, o1;
    props_for(&o0, 16, 1);
    props_for(&o1, 32, 2);
    int rc;
    if ((rc = check_mem(in, in_p->alignedByteSize)) != 0) return rc;
    if ((rc = check_mem(out0, o0.alignedByteSize)) != 0) return rc;
    if ((rc = check_mem(out1, o1.alignedByteSize)) != 0) return rc;
    const int8_t *src = in->virAddr;
    int8_t *d0 = out0->virAddr, *d1 = out1->virAddr;
    memset(d0, 0, (size_t)o0.alignedByteSize);
    memset(d1, 0, (size_t)o1.alignedByteSize);
    for (int c = 0; c < C; c++)
        for (int h = 0; h < H; h++)
            for (int w = 0; w < W; w++) {
                int8_t v = src[c * in_p->stride[1] + h * in_p->stride[2] + w * in_p->stride[3]];
                d0[c * o0.stride[1] + h * o0.stride[2] + w] = v;
                d1[c * o1.stride[1] + h * o1.stride[2] + w] = (int8_t)-v;
            }
    return 0;
}

#ifndef FAKE_ABI_S100
/* NV12_SEPARATE: Y rows from sysMem[0], interleaved UV rows from sysMem[1], NV_ROW bytes apart;
 * the output holds them one after the other, rows cut to NV_W and padded to NV_OUT_ROW. */
static int compute_nv12(const hbDNNTensor *in, hbDNNTensor *out) {
    if (in->properties.tensorType != HB_DNN_IMG_TYPE_NV12_SEPARATE) return FAKE_ERR_INVALID;
    int rc;
    if ((rc = check_mem(&in->sysMem[0], NV_H * NV_ROW)) != 0) return rc;
    if ((rc = check_mem(&in->sysMem[1], NV_H / 2 * NV_ROW)) != 0) return rc;
    if ((rc = check_mem(&out->sysMem[0], NV_H * 3 / 2 * NV_OUT_ROW)) != 0) return rc;
    const uint8_t *y = in->sysMem[0].virAddr, *uv = in->sysMem[1].virAddr;
    uint8_t *d = out->sysMem[0].virAddr;
    memset(d, 0, NV_H * 3 / 2 * NV_OUT_ROW);
    for (int r = 0; r < NV_H; r++) memcpy(d + r * NV_OUT_ROW, y + r * NV_ROW, NV_W);
    for (int r = 0; r < NV_H / 2; r++)
        memcpy(d + (NV_H + r) * NV_OUT_ROW, uv + r * NV_ROW, NV_W);
    return 0;
}
#endif

static void *new_task(int status) {
    fake_task *t = calloc(1, sizeof *t);
    t->status = status;
    g_live_tasks++;
    return t;
}

static int wait_task(void *task, int32_t timeout) {
    if (task == NULL) return FAKE_ERR_INVALID;
    if (fault("timeout")) {
        /* Pretend the BPU hangs: sleep out the whole timeout, then fail. */
        struct timespec ts = {timeout / 1000, (long)(timeout % 1000) * 1000000L};
        nanosleep(&ts, NULL);
        return FAKE_ERR_TIMEOUT;
    }
    if (fault("slow_fail")) {
        /* A failure that takes the whole timeout is still a failure, not a timeout. */
        struct timespec ts = {timeout / 1000, (long)(timeout % 1000) * 1000000L};
        nanosleep(&ts, NULL);
        return FAKE_ERR_FAULT;
    }
    if (fault("wait")) return FAKE_ERR_FAULT;
    return ((fake_task *)task)->status;
}

static int release_task(void *task) {
    if (task == NULL) return FAKE_ERR_INVALID;
    free(task);
    g_live_tasks--;
    return 0;
}

#ifdef FAKE_ABI_S100

int32_t hbUCPMallocCached(hbUCPSysMem *mem, uint64_t size, int32_t deviceId) {
    (void)deviceId;
    return fake_alloc(mem, size);
}
int32_t hbUCPMemFlush(const hbUCPSysMem *mem, int32_t flag) { return fake_flush(mem, flag); }
int32_t hbUCPFree(hbUCPSysMem *mem) { return fake_free(mem); }
const char *hbUCPGetVersion(void) { return "3.13.6 (fake)"; }

int32_t hbDNNInferV2(hbUCPTaskHandle_t *task, hbDNNTensor *output, const hbDNNTensor *input,
                     void *dnn) {
    if (task == NULL || output == NULL || input == NULL || dnn != &g_model_token)
        return FAKE_ERR_INVALID; /* (no NV12_SEPARATE model on S100) */
    if (*task != NULL) return FAKE_ERR_INVALID; /* a new task starts from a null handle */
    if (fault("infer")) return FAKE_ERR_FAULT;
    int rc = compute(&input[0].sysMem, &input[0].properties, &output[0].sysMem, &output[1].sysMem);
    if (rc != 0) return rc;
    *task = new_task(0);
    return 0;
}

int32_t hbUCPSubmitTask(hbUCPTaskHandle_t task, hbUCPSchedParam *param) {
    if (task == NULL || param == NULL) return FAKE_ERR_INVALID;
    if (fault("submit")) return FAKE_ERR_FAULT;
    g_last_core = (int)param->backend;
    return 0;
}
int32_t hbUCPWaitTaskDone(hbUCPTaskHandle_t task, int32_t timeout) {
    return wait_task(task, timeout);
}
int32_t hbUCPReleaseTask(hbUCPTaskHandle_t task) { return release_task(task); }

#else

int32_t hbSysAllocCachedMem(hbSysMem *mem, uint32_t size) { return fake_alloc(mem, size); }
int32_t hbSysFlushMem(hbSysMem *mem, int32_t flag) { return fake_flush(mem, flag); }
int32_t hbSysFreeMem(hbSysMem *mem) { return fake_free(mem); }

int32_t hbDNNInfer(hbDNNTaskHandle_t *task, hbDNNTensor **output, const hbDNNTensor *input,
                   void *dnn, hbDNNInferCtrlParam *ctrl) {
    if (task == NULL || output == NULL || *output == NULL || input == NULL || ctrl == NULL ||
        !is_model(dnn))
        return FAKE_ERR_INVALID;
    if (*task != NULL) return FAKE_ERR_INVALID; /* a new task starts from a null handle */
    if (fault("infer")) return FAKE_ERR_FAULT;
    g_last_core = ctrl->bpuCoreId;
    hbDNNTensor *out = *output;
    if (dnn == &g_nv12_token) {
        int rc = compute_nv12(&input[0], &out[0]);
        if (rc != 0) return rc;
        *task = new_task(0);
        return 0;
    }
    int rc = compute(&input[0].sysMem[0], &input[0].properties, &out[0].sysMem[0],
                     &out[1].sysMem[0]);
    if (rc != 0) return rc;
    *task = new_task(0);
    return 0;
}

int32_t hbDNNWaitTaskDone(hbDNNTaskHandle_t task, int32_t timeout) {
    return wait_task(task, timeout);
}
int32_t hbDNNReleaseTask(hbDNNTaskHandle_t task) { return release_task(task); }

#endif

/* ---- layout exports for the tests ---------------------------------------------------------- */

#define SZ(T) {#T, sizeof(T), _Alignof(T)}
#define OFF(T, F) {#T, #F, offsetof(T, F), sizeof(((T *)0)->F)}
#define K(N) {#N, (long)(N)}

static const struct {
    const char *name;
    size_t size, align;
} k_sizes[] = {
#ifdef FAKE_ABI_S100
    SZ(hbDNNTensorShape), SZ(hbDNNQuantiScale), SZ(hbDNNTensorProperties), SZ(hbUCPSysMem),
    SZ(hbDNNTensor), SZ(hbUCPSchedParam), SZ(hbDNNQuantiType),
#else
    SZ(hbDNNTensorShape), SZ(hbDNNQuantiShift), SZ(hbDNNQuantiScale), SZ(hbDNNTensorProperties),
    SZ(hbSysMem), SZ(hbDNNTensor), SZ(hbDNNInferCtrlParam), SZ(hbDNNQuantiType),
#endif
};

static const struct {
    const char *type, *field;
    size_t offset, size;
} k_offsets[] = {
#ifdef FAKE_ABI_S100
    OFF(hbDNNTensorShape, dimensionSize), OFF(hbDNNTensorShape, numDimensions),
    OFF(hbDNNQuantiScale, scaleLen), OFF(hbDNNQuantiScale, scaleData),
    OFF(hbDNNQuantiScale, zeroPointLen), OFF(hbDNNQuantiScale, zeroPointData),
    OFF(hbDNNTensorProperties, validShape), OFF(hbDNNTensorProperties, tensorType),
    OFF(hbDNNTensorProperties, scale), OFF(hbDNNTensorProperties, quantiType),
    OFF(hbDNNTensorProperties, quantizeAxis), OFF(hbDNNTensorProperties, alignedByteSize),
    OFF(hbDNNTensorProperties, stride),
    OFF(hbUCPSysMem, phyAddr), OFF(hbUCPSysMem, virAddr), OFF(hbUCPSysMem, memSize),
    OFF(hbDNNTensor, sysMem), OFF(hbDNNTensor, properties),
    OFF(hbUCPSchedParam, priority), OFF(hbUCPSchedParam, customId),
    OFF(hbUCPSchedParam, backend), OFF(hbUCPSchedParam, deviceId),
#else
    OFF(hbDNNTensorShape, dimensionSize), OFF(hbDNNTensorShape, numDimensions),
    OFF(hbDNNQuantiShift, shiftLen), OFF(hbDNNQuantiShift, shiftData),
    OFF(hbDNNQuantiScale, scaleLen), OFF(hbDNNQuantiScale, scaleData),
    OFF(hbDNNQuantiScale, zeroPointLen), OFF(hbDNNQuantiScale, zeroPointData),
    OFF(hbDNNTensorProperties, validShape), OFF(hbDNNTensorProperties, alignedShape),
    OFF(hbDNNTensorProperties, tensorLayout), OFF(hbDNNTensorProperties, tensorType),
    OFF(hbDNNTensorProperties, shift), OFF(hbDNNTensorProperties, scale),
    OFF(hbDNNTensorProperties, quantiType), OFF(hbDNNTensorProperties, quantizeAxis),
    OFF(hbDNNTensorProperties, alignedByteSize), OFF(hbDNNTensorProperties, stride),
    OFF(hbSysMem, phyAddr), OFF(hbSysMem, virAddr), OFF(hbSysMem, memSize),
    OFF(hbDNNTensor, sysMem), OFF(hbDNNTensor, properties),
    OFF(hbDNNInferCtrlParam, bpuCoreId), OFF(hbDNNInferCtrlParam, dspCoreId),
    OFF(hbDNNInferCtrlParam, priority), OFF(hbDNNInferCtrlParam, more),
    OFF(hbDNNInferCtrlParam, customId), OFF(hbDNNInferCtrlParam, reserved1),
    OFF(hbDNNInferCtrlParam, reserved2),
#endif
};

/* Every enum value and return code the fake declares, under the header's names. */
static const struct {
    const char *name;
    long value;
} k_constants[] = {
    K(HB_DNN_TENSOR_MAX_DIMENSIONS), K(HB_SYS_MEM_CACHE_INVALIDATE), K(HB_SYS_MEM_CACHE_CLEAN),
    K(NONE), K(SCALE),
    K(HB_DNN_TENSOR_TYPE_S4), K(HB_DNN_TENSOR_TYPE_U4), K(HB_DNN_TENSOR_TYPE_S8),
    K(HB_DNN_TENSOR_TYPE_U8), K(HB_DNN_TENSOR_TYPE_F16), K(HB_DNN_TENSOR_TYPE_S16),
    K(HB_DNN_TENSOR_TYPE_U16), K(HB_DNN_TENSOR_TYPE_F32), K(HB_DNN_TENSOR_TYPE_S32),
    K(HB_DNN_TENSOR_TYPE_U32), K(HB_DNN_TENSOR_TYPE_F64), K(HB_DNN_TENSOR_TYPE_S64),
    K(HB_DNN_TENSOR_TYPE_U64),
#ifdef FAKE_ABI_S100
    K(HB_DNN_TENSOR_TYPE_BOOL8), K(HB_UCP_INVALID_ARGUMENT), K(HB_UCP_TASK_TIMEOUT),
    K(HB_UCP_MEM_ALLOC_FAIL), K(HB_UCP_CORE_ANY), K(HB_UCP_BPU_CORE_0), K(HB_UCP_BPU_CORE_1),
    K(HB_UCP_BPU_CORE_ANY),
#else
    K(SHIFT), K(HB_DNN_TENSOR_TYPE_MAX),
    K(HB_DNN_IMG_TYPE_Y), K(HB_DNN_IMG_TYPE_NV12), K(HB_DNN_IMG_TYPE_NV12_SEPARATE),
    K(HB_DNN_IMG_TYPE_YUV444), K(HB_DNN_IMG_TYPE_RGB), K(HB_DNN_IMG_TYPE_BGR),
    K(HB_DNN_LAYOUT_NHWC), K(HB_DNN_LAYOUT_NCHW), K(HB_DNN_LAYOUT_NONE),
    K(HB_BPU_CORE_ANY), K(HB_BPU_CORE_0), K(HB_BPU_CORE_1),
    K(HB_DNN_SUCCESS), K(HB_DNN_INVALID_ARGUMENT), K(HB_DNN_INVALID_MODEL),
    K(HB_DNN_INVALID_PACKED_DNN_HANDLE), K(HB_DNN_INVALID_DNN_HANDLE), K(HB_DNN_TIMEOUT),
    K(HB_DNN_INVALID_TASK_HANDLE), K(HB_DNN_RUN_TASK_FAILED),
#endif
};

/* The codes the fake returns, by meaning, so the tests can see which header code each is. */
long fake_dnn_code(const char *meaning) {
    if (strcmp(meaning, "invalid") == 0) return FAKE_ERR_INVALID;
    if (strcmp(meaning, "model") == 0) return FAKE_ERR_MODEL;
    if (strcmp(meaning, "fault") == 0) return FAKE_ERR_FAULT;
    if (strcmp(meaning, "nomem") == 0) return FAKE_ERR_NOMEM;
    if (strcmp(meaning, "timeout") == 0) return FAKE_ERR_TIMEOUT;
    if (strcmp(meaning, "align") == 0) return FAKE_ERR_ALIGN;
    return 0;
}

#define COUNT(A) (sizeof A / sizeof A[0])

long fake_sizeof(const char *type) {
    for (size_t i = 0; i < COUNT(k_sizes); i++)
        if (strcmp(k_sizes[i].name, type) == 0) return (long)k_sizes[i].size;
    return -1;
}

long fake_alignof(const char *type) {
    for (size_t i = 0; i < COUNT(k_sizes); i++)
        if (strcmp(k_sizes[i].name, type) == 0) return (long)k_sizes[i].align;
    return -1;
}

long fake_offsetof(const char *type, const char *field) {
    for (size_t i = 0; i < COUNT(k_offsets); i++)
        if (strcmp(k_offsets[i].type, type) == 0 && strcmp(k_offsets[i].field, field) == 0)
            return (long)k_offsets[i].offset;
    return -1;
}

long fake_fieldsize(const char *type, const char *field) {
    for (size_t i = 0; i < COUNT(k_offsets); i++)
        if (strcmp(k_offsets[i].type, type) == 0 && strcmp(k_offsets[i].field, field) == 0)
            return (long)k_offsets[i].size;
    return -1;
}

/* The number of constants, and the name and value of the i-th. */
int fake_constant_count(void) { return (int)COUNT(k_constants); }
const char *fake_constant_name(int i) {
    return i >= 0 && i < (int)COUNT(k_constants) ? k_constants[i].name : NULL;
}
long fake_constant_value(int i) {
    return i >= 0 && i < (int)COUNT(k_constants) ? k_constants[i].value : 0;
}
