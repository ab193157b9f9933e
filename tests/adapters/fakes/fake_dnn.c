/*
 * A stand-in for Horizon / D-Robotics libdnn (+ hb_sys on RDK X3/X5, + hb_ucp on RDK S100) with
 * the documented signatures and struct layouts (declared here from hb_dnn.h / hb_sys.h, or from
 * hobot/dnn/hb_dnn.h / hb_ucp.h / hb_ucp_sys.h when built with -DFAKE_ABI_S100).
 *
 * It serves one packed model "fake_identity" with one int8 input and two int8 outputs:
 *   input  validShape [1,3,4,5], stride [384,128,32,1] (W padded to 32), alignedByteSize 384
 *   out0   "identity": the input, W padded to 16: stride [192,64,16,1], SCALE per channel
 *   out1   "negated":  -input, W padded to 32, SHIFT 3 per channel on X3/X5 (NONE on S100)
 * Padding bytes are written as zero. The model file must start with "FAKE-HBM"; a file that
 * contains "models=2" packs a second model name, to exercise model selection.
 *
 * Test hooks: fake_dnn_set_fault(name), live counters, flush counters, fake_sizeof/offsetof.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define FAKE_ERR_INVALID -6000001
#define FAKE_ERR_MODEL -6000002
#define FAKE_ERR_FAULT -6000003
#define FAKE_ERR_TIMEOUT -6000004
#define FAKE_ERR_ALIGN -6000005

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
#define TYPE_S8 2

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
#define TYPE_S8 8
#define LAYOUT_NCHW 2

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
} fake_packed;

static const char *k_names[2] = {"fake_identity", "fake_other"};
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
    p->tensorType = TYPE_S8;
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
    fake_packed *p = calloc(1, sizeof *p);
    p->models = strstr(head, "models=2") ? 2 : 1;
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
    *names = k_names;
    *count = ((fake_packed *)packed)->models;
    return 0;
}

int32_t hbDNNGetModelHandle(void **dnn, void *packed, const char *name) {
    if (dnn == NULL || packed == NULL || name == NULL) return FAKE_ERR_INVALID;
    for (int i = 0; i < ((fake_packed *)packed)->models; i++)
        if (strcmp(name, k_names[i]) == 0) {
            *dnn = &g_model_token;
            return 0;
        }
    return FAKE_ERR_INVALID;
}

int32_t hbDNNGetInputCount(int32_t *count, void *dnn) {
    if (count == NULL || dnn != &g_model_token) return FAKE_ERR_INVALID;
    *count = 1;
    return 0;
}

int32_t hbDNNGetOutputCount(int32_t *count, void *dnn) {
    if (count == NULL || dnn != &g_model_token) return FAKE_ERR_INVALID;
    *count = 2;
    return 0;
}

int32_t hbDNNGetInputName(const char **name, void *dnn, int32_t index) {
    if (name == NULL || dnn != &g_model_token || index != 0) return FAKE_ERR_INVALID;
    *name = "data";
    return 0;
}

int32_t hbDNNGetOutputName(const char **name, void *dnn, int32_t index) {
    if (name == NULL || dnn != &g_model_token || index < 0 || index > 1) return FAKE_ERR_INVALID;
    *name = index == 0 ? "identity" : "negated";
    return 0;
}

int32_t hbDNNGetInputTensorProperties(hbDNNTensorProperties *p, void *dnn, int32_t index) {
    if (p == NULL || dnn != &g_model_token || index != 0) return FAKE_ERR_INVALID;
    if (fault("properties")) return FAKE_ERR_FAULT;
    props_for(p, 32, 0);
    return 0;
}

int32_t hbDNNGetOutputTensorProperties(hbDNNTensorProperties *p, void *dnn, int32_t index) {
    if (p == NULL || dnn != &g_model_token || index < 0 || index > 1) return FAKE_ERR_INVALID;
    if (fault("properties")) return FAKE_ERR_FAULT;
    props_for(p, index == 0 ? 16 : 32, index + 1);
    return 0;
}

/* ---- memory -------------------------------------------------------------------------------- */

/* Allocations are 64-byte aligned; the "misalign" fault hands out base + 16. The base pointer is
 * kept just before the returned address so that free finds it. */
static int fake_alloc(fake_mem_t *mem, uint64_t size) {
    if (mem == NULL || size == 0) return FAKE_ERR_INVALID;
    if (fault("alloc")) return FAKE_ERR_FAULT;
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
        return FAKE_ERR_INVALID;
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
        dnn != &g_model_token)
        return FAKE_ERR_INVALID;
    if (*task != NULL) return FAKE_ERR_INVALID; /* a new task starts from a null handle */
    if (fault("infer")) return FAKE_ERR_FAULT;
    g_last_core = ctrl->bpuCoreId;
    hbDNNTensor *out = *output;
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

#define SZ(T) {#T, sizeof(T)}
#define OFF(T, F) {#T, #F, offsetof(T, F)}

#ifdef FAKE_ABI_S100
static const struct {
    const char *name;
    size_t size;
} k_sizes[] = {
    SZ(hbDNNTensorShape), SZ(hbDNNQuantiScale), SZ(hbDNNTensorProperties), SZ(hbUCPSysMem),
    SZ(hbDNNTensor), SZ(hbUCPSchedParam),
};
static const struct {
    const char *type, *field;
    size_t offset;
} k_offsets[] = {
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
};
#else
static const struct {
    const char *name;
    size_t size;
} k_sizes[] = {
    SZ(hbDNNTensorShape), SZ(hbDNNQuantiShift), SZ(hbDNNQuantiScale), SZ(hbDNNTensorProperties),
    SZ(hbSysMem), SZ(hbDNNTensor), SZ(hbDNNInferCtrlParam),
};
static const struct {
    const char *type, *field;
    size_t offset;
} k_offsets[] = {
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
};
#endif

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
