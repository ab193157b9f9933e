/*
 * A stand-in for Kneron PLUS libkplus with the raw-node surface of kp_inference.h:
 *   kp_inf_raw_fixed_node_output_t *kp_generic_inference_retrieve_raw_fixed_node(
 *       uint32_t node_idx, uint8_t *raw_out_buffer);
 *   void kp_release_raw_fixed_node_output(kp_inf_raw_fixed_node_output_t *);
 * and the kp_struct.h (PLUS 3.x) declarations they use, declared as the header declares them:
 * every struct and union packed and 4-aligned, except the kp_scale_t union (natural, 8-aligned).
 * tests/data/abi/kp_struct-plus-3.1.1.json (the real header's numbers) is what the tests hold
 * these declarations to. The receive buffer is the fake kp package's own format (kp/_fake.py);
 * like the real call, the returned `data` points into it.
 *
 * Test hooks: fake_kplus_live_nodes(), fake_sizeof/fake_alignof/fake_offsetof/fake_fieldsize,
 * fake_kplus_constant().
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* kp_struct.h spells it out on each declaration. */
#define KP_PACKED __attribute__((packed, aligned(4)))

typedef struct KP_PACKED {
    uint32_t shape_npu_len;
    int32_t *shape_npu;
    uint32_t shape_onnx_len;
    int32_t *shape_onnx;
    uint32_t axis_permutation_len;
    int32_t *axis_permutation_onnx_to_npu;
} kp_tensor_shape_info_v1_t;

typedef struct KP_PACKED {
    uint32_t shape_len;
    int32_t *shape;
    uint32_t *stride_onnx;
    uint32_t *stride_npu;
} kp_tensor_shape_info_v2_t;

typedef union KP_PACKED {
    kp_tensor_shape_info_v1_t v1;
    kp_tensor_shape_info_v2_t v2;
} kp_tensor_shape_info_data_t;

typedef struct KP_PACKED {
    uint32_t version;
    kp_tensor_shape_info_data_t tensor_shape_info_data;
} kp_tensor_shape_info_t;

typedef union {
    int8_t scale_int8;
    int16_t scale_int16;
    int32_t scale_int32;
    int64_t scale_int64;
    uint8_t scale_uint8;
    uint16_t scale_uint16;
    uint32_t scale_uint32;
    uint64_t scale_uint64;
    uint16_t scale_bfloat16;
    float scale_float32;
    double scale_double64;
} kp_scale_t;

typedef struct KP_PACKED {
    int32_t radix;
    uint32_t scale_dtype;
    kp_scale_t scale;
} kp_quantized_fixed_point_descriptor_t;

typedef struct KP_PACKED {
    uint32_t quantized_axis;
    uint32_t quantized_fixed_point_descriptor_num;
    kp_quantized_fixed_point_descriptor_t *quantized_fixed_point_descriptor;
} kp_quantization_parameters_v1_t;

typedef union KP_PACKED {
    kp_quantization_parameters_v1_t v1;
} kp_quantization_parameters_data_t;

typedef struct KP_PACKED {
    uint32_t version;
    kp_quantization_parameters_data_t quantization_parameters_data;
} kp_quantization_parameters_t;

typedef struct KP_PACKED {
    uint32_t index;
    char *name;
    uint32_t data_layout;
    kp_tensor_shape_info_t tensor_shape_info;
    kp_quantization_parameters_t quantization_parameters;
} kp_tensor_descriptor_t;

typedef struct KP_PACKED {
    kp_tensor_descriptor_t tensor_descriptor;
} kp_inf_raw_fixed_node_metadata_t;

typedef struct KP_PACKED {
    kp_inf_raw_fixed_node_metadata_t metadata;
    uint32_t num_data;
    int8_t *data;
} kp_inf_raw_fixed_node_output_t;

#define FAKE_MAGIC 0x31504B46u /* "FKP1" */
#define KP_MODEL_TENSOR_SHAPE_INFO_VERSION_2 2
#define KP_MODEL_QUANTIZATION_PARAMS_VERSION_1 1

static int g_live_nodes;
int fake_kplus_live_nodes(void) { return g_live_nodes; }

static uint32_t rd32(const uint8_t **p) {
    uint32_t v;
    memcpy(&v, *p, 4);
    *p += 4;
    return v;
}

void kp_release_raw_fixed_node_output(kp_inf_raw_fixed_node_output_t *node) {
    if (node == NULL) return;
    kp_tensor_descriptor_t *d = &node->metadata.tensor_descriptor;
    kp_tensor_shape_info_v2_t *v2 = &d->tensor_shape_info.tensor_shape_info_data.v2;
    free(d->name);
    free(v2->shape);
    free(v2->stride_npu);
    free(v2->stride_onnx);
    free(d->quantization_parameters.quantization_parameters_data.v1.quantized_fixed_point_descriptor);
    free(node);
    g_live_nodes--;
}

kp_inf_raw_fixed_node_output_t *kp_generic_inference_retrieve_raw_fixed_node(uint32_t node_idx,
                                                                             uint8_t *raw) {
    if (raw == NULL) return NULL;
    const uint8_t *p = raw;
    if (rd32(&p) != FAKE_MAGIC) return NULL;
    uint32_t count = rd32(&p);
    if (node_idx >= count) return NULL;
    for (uint32_t i = 0;; i++) {
        uint32_t index = rd32(&p), layout = rd32(&p), n = rd32(&p);
        const uint8_t *shape = p, *stride_npu = p + 4 * n, *stride_onnx = p + 8 * n;
        p += 12 * n;
        uint32_t axis = rd32(&p), nq = rd32(&p);
        const uint8_t *quant = p;
        p += 12 * nq;
        uint32_t name_len = rd32(&p);
        const uint8_t *name = p;
        p += name_len;
        uint32_t data_len = rd32(&p);
        const uint8_t *data = p;
        p += data_len;
        p += (4 - ((uintptr_t)(p - raw) % 4)) % 4;
        if (i != node_idx) continue;

        kp_inf_raw_fixed_node_output_t *out = calloc(1, sizeof *out);
        kp_tensor_descriptor_t *d = &out->metadata.tensor_descriptor;
        kp_tensor_shape_info_v2_t *v2 = &d->tensor_shape_info.tensor_shape_info_data.v2;
        kp_quantization_parameters_v1_t *q =
            &d->quantization_parameters.quantization_parameters_data.v1;
        d->index = index;
        d->data_layout = layout;
        d->name = calloc(1, name_len + 1);
        memcpy(d->name, name, name_len);
        d->tensor_shape_info.version = KP_MODEL_TENSOR_SHAPE_INFO_VERSION_2;
        v2->shape_len = n;
        v2->shape = malloc(4 * (n ? n : 1));
        v2->stride_npu = malloc(4 * (n ? n : 1));
        v2->stride_onnx = malloc(4 * (n ? n : 1));
        memcpy(v2->shape, shape, 4 * n);
        memcpy(v2->stride_npu, stride_npu, 4 * n);
        memcpy(v2->stride_onnx, stride_onnx, 4 * n);
        d->quantization_parameters.version = KP_MODEL_QUANTIZATION_PARAMS_VERSION_1;
        q->quantized_axis = axis;
        q->quantized_fixed_point_descriptor_num = nq;
        q->quantized_fixed_point_descriptor = calloc(nq ? nq : 1, sizeof(*q->quantized_fixed_point_descriptor));
        for (uint32_t k = 0; k < nq; k++) {
            kp_quantized_fixed_point_descriptor_t *e = &q->quantized_fixed_point_descriptor[k];
            memcpy(&e->radix, quant + 12 * k, 4);
            memcpy(&e->scale_dtype, quant + 12 * k + 4, 4);
            memcpy(&e->scale.scale_float32, quant + 12 * k + 8, 4);
        }
        out->num_data = data_len;
        out->data = (int8_t *)data; /* points into the caller's buffer, as documented */
        g_live_nodes++;
        return out;
    }
}

/* ---- layout exports for the tests ---------------------------------------------------------- */

#define SZ(T) {#T, sizeof(T), _Alignof(T)}
#define OFF(T, F) {#T, #F, offsetof(T, F), sizeof(((T *)0)->F)}
static const struct {
    const char *name;
    size_t size, align;
} k_sizes[] = {
    SZ(kp_tensor_shape_info_v1_t), SZ(kp_tensor_shape_info_v2_t), SZ(kp_tensor_shape_info_data_t),
    SZ(kp_tensor_shape_info_t), SZ(kp_scale_t), SZ(kp_quantized_fixed_point_descriptor_t),
    SZ(kp_quantization_parameters_v1_t), SZ(kp_quantization_parameters_data_t),
    SZ(kp_quantization_parameters_t), SZ(kp_tensor_descriptor_t),
    SZ(kp_inf_raw_fixed_node_metadata_t), SZ(kp_inf_raw_fixed_node_output_t),
};
static const struct {
    const char *type, *field;
    size_t offset, size;
} k_offsets[] = {
    OFF(kp_tensor_shape_info_v1_t, shape_npu_len), OFF(kp_tensor_shape_info_v1_t, shape_npu),
    OFF(kp_tensor_shape_info_v1_t, shape_onnx_len), OFF(kp_tensor_shape_info_v1_t, shape_onnx),
    OFF(kp_tensor_shape_info_v1_t, axis_permutation_len),
    OFF(kp_tensor_shape_info_v1_t, axis_permutation_onnx_to_npu),
    OFF(kp_tensor_shape_info_v2_t, shape_len), OFF(kp_tensor_shape_info_v2_t, shape),
    OFF(kp_tensor_shape_info_v2_t, stride_onnx), OFF(kp_tensor_shape_info_v2_t, stride_npu),
    OFF(kp_tensor_shape_info_t, version), OFF(kp_tensor_shape_info_t, tensor_shape_info_data),
    OFF(kp_quantized_fixed_point_descriptor_t, radix),
    OFF(kp_quantized_fixed_point_descriptor_t, scale_dtype),
    OFF(kp_quantized_fixed_point_descriptor_t, scale),
    OFF(kp_quantization_parameters_v1_t, quantized_axis),
    OFF(kp_quantization_parameters_v1_t, quantized_fixed_point_descriptor_num),
    OFF(kp_quantization_parameters_v1_t, quantized_fixed_point_descriptor),
    OFF(kp_quantization_parameters_t, version),
    OFF(kp_quantization_parameters_t, quantization_parameters_data),
    OFF(kp_tensor_descriptor_t, index), OFF(kp_tensor_descriptor_t, name),
    OFF(kp_tensor_descriptor_t, data_layout), OFF(kp_tensor_descriptor_t, tensor_shape_info),
    OFF(kp_tensor_descriptor_t, quantization_parameters),
    OFF(kp_inf_raw_fixed_node_metadata_t, tensor_descriptor),
    OFF(kp_inf_raw_fixed_node_output_t, metadata), OFF(kp_inf_raw_fixed_node_output_t, num_data),
    OFF(kp_inf_raw_fixed_node_output_t, data),
};
#define CONST(N) {#N, N}
static const struct {
    const char *name;
    long value;
} k_constants[] = {
    CONST(KP_MODEL_TENSOR_SHAPE_INFO_VERSION_2),
    CONST(KP_MODEL_QUANTIZATION_PARAMS_VERSION_1),
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

/* The value of a constant the fake uses, or -9999 for a name it does not know. */
long fake_kplus_constant(const char *name) {
    for (size_t i = 0; i < sizeof k_constants / sizeof k_constants[0]; i++)
        if (strcmp(k_constants[i].name, name) == 0) return k_constants[i].value;
    return -9999;
}
