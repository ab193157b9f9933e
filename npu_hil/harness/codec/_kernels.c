/*
 * harness.codec._kernels: fast strided byte copies for the layout engine.
 *
 * Plain C against the CPython C API only (no numpy headers), so the build
 * needs nothing but a C compiler and Python's headers.
 *
 * The one operation is an N-d copy between two strided views of raw memory:
 *
 *     dst[i0, ..., ik] = src[i0, ..., ik]     (elements of `itemsize` bytes)
 *
 * with non-negative byte strides on both sides.  The copy is planned first:
 *
 *   1. size-1 dims are dropped, and the element becomes a trailing byte dim
 *      (stride 1 on both sides);
 *   2. dims contiguous with each other on both sides are merged, repeatedly,
 *      so e.g. H and W of a plane become one dim, and a run of bytes that is
 *      contiguous on both sides becomes one "unit" of E bytes, moved whole;
 *   3. the dim with the smallest dst stride (D) and the one with the smallest
 *      src stride (S) are picked.  If they are the same dim the copy is a row
 *      copy along it.  Otherwise it is a 2-d transpose of D and S, repeated
 *      over the remaining ("outer") dims, done by one of:
 *        - IL : interleave.  D has K <= 8 units per pixel in dst, S walks
 *               contiguous src planes.  Constant-K loops the compiler
 *               vectorises; a pixel with a gap (K units in a wider pixel,
 *               e.g. RGB in 4-byte pixels) is staged in a dense block and
 *               written out with byte-masked stores (AVX-512BW) or one
 *               fixed-size move per pixel, never touching the gap.
 *        - DIL: deinterleave, the mirror image (on baseline x86, where SSE2
 *               has no byte shuffle, 3/5/6/7 channels go through a network
 *               of zips instead).
 *        - BT : blocked transpose: 16x16-byte register transposes (two side
 *               by side with AVX2), cache-tiled.
 *        - GEN: tiled scalar loop, for everything else.
 *
 * The vectorised kernels are compiled once per instruction-set level (the
 * "kernel pass" at the end of this file is included once per level with a
 * different target) and picked at import from what the CPU supports: SSE2 /
 * NEON baseline, AVX2, AVX2 + AVX-512BW masked stores.  No -march is needed.
 *
 * The GIL is released while copying.  Nothing outside the dst view is ever
 * written; nothing outside the src view's byte range is ever read.
 */

#ifndef FC_KERNEL_PASS

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <string.h>

#define FC_MAX_RANK 10
#define FC_MAX_DIMS (FC_MAX_RANK + 1)

#if defined(__GNUC__) || defined(__clang__)
#define FC_GNU 1
#define FC_INLINE static inline __attribute__((always_inline))
#define FC_NOINLINE static __attribute__((noinline))
#define FC_RESTRICT __restrict__
#define FC_MAYBE_UNUSED __attribute__((unused))
#define FC_ALIGN64 __attribute__((aligned(64)))
#else
#define FC_GNU 0
#define FC_INLINE static inline
#define FC_NOINLINE static
#define FC_RESTRICT
#define FC_MAYBE_UNUSED
#define FC_ALIGN64
#endif

#if FC_GNU && (defined(__x86_64__) || defined(__i386__)) &&                   \
    (defined(__clang__) || __GNUC__ >= 8)
#define FC_X86_DISPATCH 1
#include <immintrin.h>
#else
#define FC_X86_DISPATCH 0
#endif

#define FC_CAT2(a, b) a##_##b
#define FC_CAT(a, b) FC_CAT2(a, b)

/* Bytes staged per chunk by the kernels that go through a dense block. */
#define FC_STAGE 8192

/* ------------------------------------------------------------------------ */
/* Unaligned unit loads and stores                                           */
/* ------------------------------------------------------------------------ */

typedef uint8_t fc_u8;
#if FC_GNU
typedef uint16_t fc_u16 __attribute__((aligned(1), may_alias));
typedef uint32_t fc_u32 __attribute__((aligned(1), may_alias));
typedef uint64_t fc_u64 __attribute__((aligned(1), may_alias));
#define FC_LD(T, p) (*(const fc_##T *)(const void *)(p))
#define FC_ST(T, p, v) (*(fc_##T *)(void *)(p) = (v))
#else
typedef uint16_t fc_u16;
typedef uint32_t fc_u32;
typedef uint64_t fc_u64;
#define FC_LD(T, p) fc_ld_##T(p)
#define FC_ST(T, p, v) fc_st_##T((p), (v))
#define FC_DEF_LDST(T)                                                        \
    static inline fc_##T fc_ld_##T(const void *p)                             \
    {                                                                         \
        fc_##T v;                                                             \
        memcpy(&v, p, sizeof v);                                              \
        return v;                                                             \
    }                                                                         \
    static inline void fc_st_##T(void *p, fc_##T v) { memcpy(p, &v, sizeof v); }
FC_DEF_LDST(u8)
FC_DEF_LDST(u16)
FC_DEF_LDST(u32)
FC_DEF_LDST(u64)
#endif

/* ------------------------------------------------------------------------ */
/* Plan                                                                      */
/* ------------------------------------------------------------------------ */

typedef struct {
    Py_ssize_t n;  /* extent */
    Py_ssize_t ds; /* dst byte stride */
    Py_ssize_t ss; /* src byte stride */
} fc_dim;

enum { FC_EMPTY, FC_MEMCPY, FC_ROWS, FC_T2D };
enum { FC_GEN, FC_IL, FC_DIL, FC_BT };

typedef struct {
    int kind;
    int sub;      /* FC_T2D only */
    Py_ssize_t E; /* unit size in bytes */
    fc_dim D;     /* inner dim with the smallest dst stride */
    fc_dim S;     /* FC_T2D: inner dim with the smallest src stride */
    int nouter;
    fc_dim outer[FC_MAX_DIMS]; /* outermost first */
} fc_plan;

/* a * b for non-negative operands, or -1 when it overflows. */
static Py_ssize_t
fc_mul(Py_ssize_t a, Py_ssize_t b)
{
    if (b != 0 && a > PY_SSIZE_T_MAX / b)
        return -1;
    return a * b;
}

static void
fc_make_plan(fc_plan *p, int rank, const Py_ssize_t *shape, const Py_ssize_t *ds,
             const Py_ssize_t *ss, Py_ssize_t itemsize)
{
    fc_dim d[FC_MAX_DIMS + 1];
    int nd = 0, i, j, iD, iS;

    memset(p, 0, sizeof *p);
    for (i = 0; i < rank; i++) {
        if (shape[i] == 0) {
            p->kind = FC_EMPTY;
            return;
        }
    }
    for (i = 0; i < rank; i++) {
        if (shape[i] == 1)
            continue;
        d[nd].n = shape[i];
        d[nd].ds = ds[i];
        d[nd].ss = ss[i];
        nd++;
    }
    /* The element itself: itemsize bytes, contiguous on both sides. */
    d[nd].n = itemsize;
    d[nd].ds = 1;
    d[nd].ss = 1;
    nd++;

    /* Merge dim i (outer) into dim j (inner) when j's extent is exactly i's
     * stride on both sides: a*ds_i + b*ds_j == (a*n_j + b)*ds_j. */
again:
    for (i = 0; i < nd; i++) {
        for (j = 0; j < nd; j++) {
            if (i == j)
                continue;
            if (fc_mul(d[j].n, d[j].ds) == d[i].ds && fc_mul(d[j].n, d[j].ss) == d[i].ss &&
                fc_mul(d[j].n, d[i].n) > 0) {
                d[j].n *= d[i].n;
                d[i] = d[--nd];
                goto again;
            }
        }
    }

    /* The unit: the dim contiguous on both sides (there is always one, of
     * size 1 when itemsize == 1 and nothing merged into it). */
    p->E = 1;
    for (i = 0; i < nd; i++) {
        if (d[i].ds == 1 && d[i].ss == 1) {
            p->E = d[i].n;
            d[i] = d[--nd];
            break;
        }
    }
    if (nd == 0) {
        p->kind = FC_MEMCPY;
        return;
    }

    /* Sort by dst stride, largest first: the outer loops walk dst in order. */
    for (i = 1; i < nd; i++) {
        fc_dim t = d[i];
        for (j = i; j > 0 && d[j - 1].ds < t.ds; j--)
            d[j] = d[j - 1];
        d[j] = t;
    }

    /* D: smallest non-zero dst stride; S: smallest non-zero src stride
     * (zero-stride, i.e. broadcast, dims are better left to outer loops). */
    iD = -1;
    iS = -1;
    for (i = 0; i < nd; i++) {
        if (d[i].ds > 0 && (iD < 0 || d[i].ds <= d[iD].ds))
            iD = i;
        if (d[i].ss > 0 && (iS < 0 || d[i].ss < d[iS].ss))
            iS = i;
    }
    if (iD < 0)
        iD = nd - 1;
    if (iS < 0)
        iS = iD;
    p->D = d[iD];
    p->S = d[iS];
    p->nouter = 0;
    for (i = 0; i < nd; i++) {
        if (i != iD && i != iS)
            p->outer[p->nouter++] = d[i];
    }
    if (iD == iS) {
        p->kind = FC_ROWS;
        return;
    }
    p->kind = FC_T2D;
    p->sub = FC_GEN;
    {
        Py_ssize_t E = p->E;
        int typed = (E == 1 || E == 2 || E == 4 || E == 8);
        if (typed && p->D.ds == E && p->S.ss == E) {
            if (p->D.n <= 8)
                p->sub = FC_IL;
            else if (p->S.n <= 8 && p->S.n * E < 16)
                p->sub = FC_DIL;
            else
                p->sub = FC_BT;
        }
    }
}

/* ------------------------------------------------------------------------ */
/* Row copy: one dim, both sides strided, a unit of E bytes per step         */
/* ------------------------------------------------------------------------ */

#define FC_DEF_ROW(T)                                                         \
    FC_NOINLINE void fc_row_##T(char *FC_RESTRICT dst, const char *FC_RESTRICT src, \
                                Py_ssize_t n, Py_ssize_t ds, Py_ssize_t ss)   \
    {                                                                         \
        for (Py_ssize_t i = 0; i < n; i++)                                    \
            FC_ST(T, dst + i * ds, FC_LD(T, src + i * ss));                   \
    }
FC_DEF_ROW(u8)
FC_DEF_ROW(u16)
FC_DEF_ROW(u32)
FC_DEF_ROW(u64)

FC_NOINLINE void
fc_row_mem(char *FC_RESTRICT dst, const char *FC_RESTRICT src, Py_ssize_t E, Py_ssize_t n,
           Py_ssize_t ds, Py_ssize_t ss)
{
    for (Py_ssize_t i = 0; i < n; i++)
        memcpy(dst + i * ds, src + i * ss, (size_t)E);
}

static void
fc_rows(const fc_plan *p, char *dst, const char *src)
{
    const fc_dim *D = &p->D;
    switch (p->E) {
    case 1:
        fc_row_u8(dst, src, D->n, D->ds, D->ss);
        break;
    case 2:
        fc_row_u16(dst, src, D->n, D->ds, D->ss);
        break;
    case 4:
        fc_row_u32(dst, src, D->n, D->ds, D->ss);
        break;
    case 8:
        fc_row_u64(dst, src, D->n, D->ds, D->ss);
        break;
    default:
        fc_row_mem(dst, src, p->E, D->n, D->ds, D->ss);
        break;
    }
}

/* ------------------------------------------------------------------------ */
/* Generic tiled 2-d copy                                                    */
/*   dst[d*dD + s*dS] = src[d*sD + s*sS],  d < nD, s < nS                    */
/* ------------------------------------------------------------------------ */

#define FC_GEN_TILE 64

#define FC_DEF_GEN(T)                                                         \
    FC_NOINLINE void fc_gen_##T(char *FC_RESTRICT dst, const char *FC_RESTRICT src, \
                                Py_ssize_t nD, Py_ssize_t dD, Py_ssize_t sD,  \
                                Py_ssize_t nS, Py_ssize_t dS, Py_ssize_t sS)  \
    {                                                                         \
        for (Py_ssize_t s0 = 0; s0 < nS; s0 += FC_GEN_TILE) {                 \
            Py_ssize_t s1 = s0 + FC_GEN_TILE < nS ? s0 + FC_GEN_TILE : nS;    \
            for (Py_ssize_t d0 = 0; d0 < nD; d0 += FC_GEN_TILE) {             \
                Py_ssize_t d1 = d0 + FC_GEN_TILE < nD ? d0 + FC_GEN_TILE : nD; \
                for (Py_ssize_t s = s0; s < s1; s++) {                        \
                    char *dr = dst + s * dS;                                  \
                    const char *sr = src + s * sS;                            \
                    for (Py_ssize_t d = d0; d < d1; d++)                      \
                        FC_ST(T, dr + d * dD, FC_LD(T, sr + d * sD));         \
                }                                                             \
            }                                                                 \
        }                                                                     \
    }
FC_DEF_GEN(u8)
FC_DEF_GEN(u16)
FC_DEF_GEN(u32)
FC_DEF_GEN(u64)

FC_NOINLINE void
fc_gen_mem(char *FC_RESTRICT dst, const char *FC_RESTRICT src, Py_ssize_t E, Py_ssize_t nD,
           Py_ssize_t dD, Py_ssize_t sD, Py_ssize_t nS, Py_ssize_t dS, Py_ssize_t sS)
{
    for (Py_ssize_t s0 = 0; s0 < nS; s0 += FC_GEN_TILE) {
        Py_ssize_t s1 = s0 + FC_GEN_TILE < nS ? s0 + FC_GEN_TILE : nS;
        for (Py_ssize_t d0 = 0; d0 < nD; d0 += FC_GEN_TILE) {
            Py_ssize_t d1 = d0 + FC_GEN_TILE < nD ? d0 + FC_GEN_TILE : nD;
            for (Py_ssize_t s = s0; s < s1; s++)
                for (Py_ssize_t d = d0; d < d1; d++)
                    memcpy(dst + d * dD + s * dS, src + d * sD + s * sS, (size_t)E);
        }
    }
}

static void
fc_gen(Py_ssize_t E, char *dst, const char *src, Py_ssize_t nD, Py_ssize_t dD, Py_ssize_t sD,
       Py_ssize_t nS, Py_ssize_t dS, Py_ssize_t sS)
{
    if (nD <= 0 || nS <= 0)
        return;
    switch (E) {
    case 1:
        fc_gen_u8(dst, src, nD, dD, sD, nS, dS, sS);
        break;
    case 2:
        fc_gen_u16(dst, src, nD, dD, sD, nS, dS, sS);
        break;
    case 4:
        fc_gen_u32(dst, src, nD, dD, sD, nS, dS, sS);
        break;
    case 8:
        fc_gen_u64(dst, src, nD, dD, sD, nS, dS, sS);
        break;
    default:
        fc_gen_mem(dst, src, E, nD, dD, sD, nS, dS, sS);
        break;
    }
}

/* ------------------------------------------------------------------------ */
/* Blocked byte planes of 16-bit values                                      */
/* ------------------------------------------------------------------------ */

/* Layouts whose two byte slots sit one block apart (KL730 4W4C8BHL: 4 low
 * bytes, then their 4 high bytes 16 bytes on; 16W1C8BHL: 16 and 16) are
 * placed by one strided copy when the slots are first arranged that way: each
 * row of n values becomes ceil(n / B) blocks of 2B bytes, the B first-slot
 * bytes then the B second-slot bytes (the last block's unused bytes are left
 * as they are).  Modes as split16 (0 plain, 1 KL730 15-bit) and 2, the plain
 * bytes with bit 0 dropped (kl15); `swap` puts the high byte in the first
 * slot.  The scalar loop does whatever the vector loops leave, from value
 * `from` of each row on. */

FC_INLINE void
fc_blk_split1(uint16_t v, int mode, int swap, uint8_t *first, uint8_t *second)
{
    uint8_t lo = mode == 1 ? (uint8_t)((v >> 1) & 0x7F) : (uint8_t)(v & (mode ? 0xFE : 0xFF));
    uint8_t hi = (uint8_t)(v >> 8);
    *first = swap ? hi : lo;
    *second = swap ? lo : hi;
}

FC_INLINE uint16_t
fc_blk_join1(uint8_t first, uint8_t second, int mode, int swap)
{
    unsigned lo = swap ? second : first, hi = swap ? first : second;
    if (mode == 1)
        return (uint16_t)(((lo & 0x7F) << 1) | (hi << 8));
    return (uint16_t)((mode ? lo & 0xFE : lo) | (hi << 8));
}

static void
fc_blk_scalar(uint16_t *values, uint8_t *blocks, Py_ssize_t rows, Py_ssize_t n, Py_ssize_t B,
              int mode, int swap, int join, Py_ssize_t from)
{
    /* from: a multiple of B; a split zeroes the unused bytes of a partial block, so the
     * blocks can be placed whole where those bytes are padding */
    Py_ssize_t r, k, j, nb = (n + B - 1) / B;
    for (r = 0; r < rows; r++) {
        uint16_t *v = values + r * n;
        uint8_t *b = blocks + r * nb * 2 * B;
        for (k = from / B; k < nb; k++) {
            uint16_t *vk = v + k * B;
            uint8_t *at = b + k * 2 * B;
            Py_ssize_t m = n - k * B < B ? n - k * B : B;
            for (j = 0; j < m; j++) {
                if (join)
                    vk[j] = fc_blk_join1(at[j], at[B + j], mode, swap);
                else
                    fc_blk_split1(vk[j], mode, swap, at + j, at + B + j);
            }
            if (!join && m < B) {
                memset(at + m, 0, (size_t)(B - m));
                memset(at + B + m, 0, (size_t)(B - m));
            }
        }
    }
}

FC_MAYBE_UNUSED static void
fc_split_blk_plain(uint16_t *values, uint8_t *blocks, Py_ssize_t rows, Py_ssize_t n,
                   Py_ssize_t B, int mode, int swap)
{
    fc_blk_scalar(values, blocks, rows, n, B, mode, swap, 0, 0);
}

FC_MAYBE_UNUSED static void
fc_join_blk_plain(uint16_t *values, uint8_t *blocks, Py_ssize_t rows, Py_ssize_t n,
                  Py_ssize_t B, int mode, int swap)
{
    fc_blk_scalar(values, blocks, rows, n, B, mode, swap, 1, 0);
}

/* ------------------------------------------------------------------------ */
/* Byte-masked stores (x86 with AVX-512BW/VL only)                           */
/* ------------------------------------------------------------------------ */

/* Copy nbytes from tmp to dst, writing only the first KE bytes of each
 * P-byte pixel (32 % P == 0).  Masked-off bytes are neither written nor
 * faulted on, so pixel gaps and the bytes past the last pixel stay as they
 * are. */
typedef void (*fc_masked_fn)(char *dst, const char *tmp, Py_ssize_t nbytes, Py_ssize_t P,
                             Py_ssize_t KE);

#if FC_X86_DISPATCH
__attribute__((target("avx2,avx512f,avx512bw,avx512vl"))) static void
fc_masked_store_avx512(char *dst, const char *tmp, Py_ssize_t nbytes, Py_ssize_t P,
                       Py_ssize_t KE)
{
    uint32_t m = 0;
    Py_ssize_t i = 0;
    for (int b = 0; b < 32; b++) {
        if (b % P < KE)
            m |= (uint32_t)1 << b;
    }
    for (; i + 32 <= nbytes; i += 32) {
        __m256i v = _mm256_loadu_si256((const __m256i *)(const void *)(tmp + i));
        _mm256_mask_storeu_epi8(dst + i, (__mmask32)m, v);
    }
    if (i < nbytes) {
        __mmask32 t = (__mmask32)(m & (((uint32_t)1 << (nbytes - i)) - 1));
        __m256i v = _mm256_maskz_loadu_epi8(t, tmp + i);
        _mm256_mask_storeu_epi8(dst + i, t, v);
    }
}
#endif

/* Set with the kernel table; NULL where the CPU (or the chosen level) has
 * no byte-masked stores. */
static fc_masked_fn fc_masked_store = NULL;

/* ------------------------------------------------------------------------ */
/* Kernel table, one per instruction-set level                               */
/* ------------------------------------------------------------------------ */

/* il(dst, src, n, P, plane, K):  dst[i*P + k*E] = src[k*plane + i*E]
 * dil(dst, src, n, P, plane, K): dst[k*plane + i*E] = src[i*P + k*E]
 * bt(dst, src, nD, sD, nS, dS):  dst[d*E + s*dS] = src[d*sD + s*E]     */
typedef void (*fc_ildil_fn)(char *, const char *, Py_ssize_t, Py_ssize_t, Py_ssize_t, int);
typedef void (*fc_bt_fn)(char *, const char *, Py_ssize_t, Py_ssize_t, Py_ssize_t, Py_ssize_t);
/* split_blk / join_blk(values, blocks, rows, n, B, mode, swap): see fc_blk_scalar. */
typedef void (*fc_blk_fn)(uint16_t *, uint8_t *, Py_ssize_t, Py_ssize_t, Py_ssize_t, int, int);
/* row_small(dst, src, E, n, ds, ss): n units of E bytes, 2 <= E <= 2 * FC_ROW_WIDE. */
typedef void (*fc_rowsm_fn)(char *, const char *, Py_ssize_t, Py_ssize_t, Py_ssize_t, Py_ssize_t);

/* Widest move of the small-unit row copies. */
#define FC_ROW_WIDE 64

typedef struct {
    const char *name;
    int masked; /* uses byte-masked stores for gapped interleaves */
    fc_ildil_fn il[4], dil[4];
    fc_bt_fn bt[4]; /* NULL: no vector transpose, use GEN */
    fc_bt_fn bt_far_src[2]; /* bt[0], bt[1] when the src rows are the farther apart */
    fc_blk_fn split_blk, join_blk;
    fc_rowsm_fn row_small;
} fc_isa;

#define FC_KERNEL_PASS 1

/* Baseline: SSE2 on x86_64, NEON on aarch64, plain C elsewhere. */
#define FC_SFX base
#define FC_PASS_NAME "base"
#define FC_PASS_WIDE 0
#define FC_PASS_MASKED 0
#include "_kernels.c"
#undef FC_SFX
#undef FC_PASS_NAME
#undef FC_PASS_WIDE
#undef FC_PASS_MASKED

#if FC_X86_DISPATCH
/* AVX2: 256-bit vectors, 16 registers.  (Build with -DFC_AVX2_WIDE=0 for
 * 128-bit transposes at this level: within noise on the one machine
 * measured, where the two spill registers alike.) */
#ifndef FC_AVX2_WIDE
#define FC_AVX2_WIDE 1
#endif
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2")
#endif
#define FC_SFX avx2
#define FC_PASS_NAME "avx2"
#define FC_PASS_WIDE FC_AVX2_WIDE
#define FC_PASS_MASKED 0
#include "_kernels.c"
#undef FC_SFX
#undef FC_PASS_NAME
#undef FC_PASS_WIDE
#undef FC_PASS_MASKED
#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

/* AVX-512BW/VL: the same 256-bit kernels with 32 registers (the register
 * transposes stop spilling), and byte-masked stores for gapped pixels. */
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,avx512f,avx512bw,avx512vl"))), \
                             apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,avx512f,avx512bw,avx512vl,prefer-vector-width=256")
#endif
#define FC_SFX avx512
#define FC_PASS_NAME "avx512"
#define FC_PASS_WIDE 1
#define FC_PASS_MASKED 1
#include "_kernels.c"
#undef FC_SFX
#undef FC_PASS_NAME
#undef FC_PASS_WIDE
#undef FC_PASS_MASKED
#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
#endif

#undef FC_KERNEL_PASS

static const fc_isa *fc_active = &fc_isa_base;

/* The best level this CPU runs, capped at `cap` ("base", "avx2", "avx512";
 * NULL for no cap). */
static const fc_isa *
fc_pick_isa(const char *cap)
{
    const fc_isa *best = &fc_isa_base;
#if FC_X86_DISPATCH
    int want_avx2 = cap == NULL || strcmp(cap, "avx2") == 0 || strcmp(cap, "avx512") == 0;
    int want_512 = cap == NULL || strcmp(cap, "avx512") == 0;
    __builtin_cpu_init();
    if (want_avx2 && __builtin_cpu_supports("avx2")) {
        best = &fc_isa_avx2;
        if (want_512 && __builtin_cpu_supports("avx512f") &&
            __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl"))
            best = &fc_isa_avx512;
    }
#else
    (void)cap;
#endif
    return best;
}

static void
fc_set_isa(const fc_isa *isa)
{
    fc_active = isa;
#if FC_X86_DISPATCH
    fc_masked_store = isa->masked ? fc_masked_store_avx512 : NULL;
#else
    fc_masked_store = NULL;
#endif
}

/* ------------------------------------------------------------------------ */
/* Execution                                                                 */
/* ------------------------------------------------------------------------ */

static int
fc_log2_unit(Py_ssize_t E)
{
    switch (E) {
    case 1:
        return 0;
    case 2:
        return 1;
    case 4:
        return 2;
    case 8:
        return 3;
    default:
        return -1;
    }
}

static void
fc_t2d(const fc_isa *isa, const fc_plan *p, char *dst, const char *src)
{
    const fc_dim *D = &p->D, *S = &p->S;
    const Py_ssize_t E = p->E;
    const int u = fc_log2_unit(E);

    /* A tiny transpose (KL730 HL entries: 4 pixels of 3 channels between
     * two 16-byte halves) is all dispatch and staging on the vector paths:
     * the scalar loop does it in a few stores. */
    if (D->n * S->n <= 64) {
        fc_gen(E, dst, src, D->n, D->ds, D->ss, S->n, S->ds, S->ss);
        return;
    }
    if (u >= 0) {
        switch (p->sub) {
        case FC_IL: /* K = D.n units per pixel, pixels along S */
            isa->il[u](dst, src, S->n, S->ds, D->ss, (int)D->n);
            return;
        case FC_DIL: /* K = S.n units per pixel, pixels along D */
            isa->dil[u](dst, src, D->n, D->ss, S->ds, (int)S->n);
            return;
        case FC_BT:
            if (u <= 1 && isa->bt_far_src[u] != NULL && D->ss >= S->ds) {
                isa->bt_far_src[u](dst, src, D->n, D->ss, S->n, S->ds);
                return;
            }
            if (isa->bt[u] != NULL) {
                isa->bt[u](dst, src, D->n, D->ss, S->n, S->ds);
                return;
            }
            break;
        default:
            break;
        }
    }
    fc_gen(E, dst, src, D->n, D->ds, D->ss, S->n, S->ds, S->ss);
}

static void
fc_execute(const fc_isa *isa, const fc_plan *p, char *dst, const char *src)
{
    Py_ssize_t idx[FC_MAX_DIMS];
    int k;
    const int small = fc_log2_unit(p->E) < 0 && p->E >= 2 && p->E <= 2 * FC_ROW_WIDE;

    if (p->kind == FC_EMPTY)
        return;
    if (p->kind == FC_MEMCPY) {
        memcpy(dst, src, (size_t)p->E);
        return;
    }
    for (k = 0; k < p->nouter; k++)
        idx[k] = 0;
    for (;;) {
        if (p->kind == FC_ROWS && small)
            isa->row_small(dst, src, p->E, p->D.n, p->D.ds, p->D.ss);
        else if (p->kind == FC_ROWS)
            fc_rows(p, dst, src);
        else
            fc_t2d(isa, p, dst, src);
        for (k = p->nouter - 1; k >= 0; k--) {
            const fc_dim *o = &p->outer[k];
            dst += o->ds;
            src += o->ss;
            if (++idx[k] < o->n)
                break;
            dst -= o->ds * o->n;
            src -= o->ss * o->n;
            idx[k] = 0;
        }
        if (k < 0)
            return;
    }
}

/* ------------------------------------------------------------------------ */
/* Python interface                                                          */
/* ------------------------------------------------------------------------ */

/* Parse a tuple/list of Py_ssize_t into out; returns its length or -1. */
static int
fc_parse_ints(PyObject *obj, Py_ssize_t *out, const char *what, int allow_negative)
{
    PyObject *seq = PySequence_Fast(obj, what);
    Py_ssize_t n, i;

    if (seq == NULL)
        return -1;
    n = PySequence_Size(seq);
    if (n < 0) {
        Py_DECREF(seq);
        return -1;
    }
    if (n > FC_MAX_RANK) {
        PyErr_Format(PyExc_ValueError, "%s: rank %zd exceeds the maximum of %d", what, n,
                     FC_MAX_RANK);
        Py_DECREF(seq);
        return -1;
    }
    for (i = 0; i < n; i++) {
        /* The stable ABI's item access (PySequence_Fast_GET_ITEM is a macro over the list and
           tuple structs, which the limited API hides): a new reference, dropped at once. */
        PyObject *item = PySequence_GetItem(seq, i);
        Py_ssize_t v;

        if (item == NULL) {
            Py_DECREF(seq);
            return -1;
        }
        v = PyNumber_AsSsize_t(item, PyExc_OverflowError);
        Py_DECREF(item);
        if (v == -1 && PyErr_Occurred()) {
            Py_DECREF(seq);
            return -1;
        }
        if (v < 0 && !allow_negative) {
            PyErr_Format(PyExc_ValueError, "%s: negative value %zd", what, v);
            Py_DECREF(seq);
            return -1;
        }
        out[i] = v;
    }
    Py_DECREF(seq);
    return (int)n;
}

/* Highest byte offset touched by a view (0 for an empty one); -1 on overflow. */
static Py_ssize_t
fc_extent(int rank, const Py_ssize_t *shape, const Py_ssize_t *strides, Py_ssize_t itemsize)
{
    Py_ssize_t hi = itemsize - 1;
    for (int i = 0; i < rank; i++) {
        Py_ssize_t t;
        if (shape[i] == 0)
            return 0;
#if FC_GNU
        if (__builtin_mul_overflow(shape[i] - 1, strides[i], &t) ||
            __builtin_add_overflow(hi, t, &hi))
            return -1;
#else
        if (strides[i] != 0 && shape[i] - 1 > PY_SSIZE_T_MAX / strides[i])
            return -1;
        t = (shape[i] - 1) * strides[i];
        if (hi > PY_SSIZE_T_MAX - t)
            return -1;
        hi += t;
#endif
    }
    return hi;
}

typedef struct {
    int rank;
    Py_ssize_t itemsize;
    Py_ssize_t shape[FC_MAX_RANK], ds[FC_MAX_RANK], ss[FC_MAX_RANK];
} fc_args;

static int
fc_parse_layout(PyObject *dst_strides, PyObject *src_strides, PyObject *shape,
                PyObject *itemsize, fc_args *a)
{
    int nd, ns;

    a->itemsize = PyNumber_AsSsize_t(itemsize, PyExc_OverflowError);
    if (a->itemsize == -1 && PyErr_Occurred())
        return -1;
    if (a->itemsize < 1) {
        PyErr_SetString(PyExc_ValueError, "itemsize must be >= 1");
        return -1;
    }
    if ((a->rank = fc_parse_ints(shape, a->shape, "shape", 0)) < 0)
        return -1;
    if ((nd = fc_parse_ints(dst_strides, a->ds, "dst_strides", 0)) < 0)
        return -1;
    if ((ns = fc_parse_ints(src_strides, a->ss, "src_strides", 0)) < 0)
        return -1;
    if (nd != a->rank || ns != a->rank) {
        PyErr_SetString(PyExc_ValueError, "shape, dst_strides and src_strides differ in length");
        return -1;
    }
    if (fc_extent(a->rank, a->shape, a->ds, a->itemsize) < 0 ||
        fc_extent(a->rank, a->shape, a->ss, a->itemsize) < 0) {
        PyErr_SetString(PyExc_OverflowError, "layout extent overflows Py_ssize_t");
        return -1;
    }
    return 0;
}

PyDoc_STRVAR(copy_strided_doc,
"copy_strided(dst_addr, dst_strides, src_addr, src_strides, shape, itemsize)\n"
"--\n\n"
"Copy the elements of the strided view at src_addr into the strided view at\n"
"dst_addr, byte for byte.  Addresses are ints; strides are tuples of\n"
"non-negative byte strides, one per dim of shape (rank <= 10).  The two\n"
"views must not overlap.  Nothing outside the dst view is written.  The GIL\n"
"is released during the copy.");

static PyObject *
fc_copy_strided(PyObject *Py_UNUSED(self), PyObject *const *args, Py_ssize_t nargs)
{
    fc_args a;
    fc_plan plan;
    void *dst, *src;
    int i;

    if (nargs != 6) {
        PyErr_Format(PyExc_TypeError, "copy_strided() takes 6 arguments (%zd given)", nargs);
        return NULL;
    }
    if (fc_parse_layout(args[1], args[3], args[4], args[5], &a) < 0)
        return NULL;
    dst = PyLong_AsVoidPtr(args[0]);
    if (dst == NULL && PyErr_Occurred())
        return NULL;
    src = PyLong_AsVoidPtr(args[2]);
    if (src == NULL && PyErr_Occurred())
        return NULL;
    for (i = 0; i < a.rank; i++) {
        if (a.shape[i] == 0)
            Py_RETURN_NONE;
    }
    if (dst == NULL || src == NULL) {
        PyErr_SetString(PyExc_ValueError, "NULL address for a non-empty view");
        return NULL;
    }
    fc_make_plan(&plan, a.rank, a.shape, a.ds, a.ss, a.itemsize);
    Py_BEGIN_ALLOW_THREADS
    fc_execute(fc_active, &plan, (char *)dst, (const char *)src);
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

/* Copies at least this big release the GIL (below it the release costs
 * more than it could give another thread). */
#define FC_GIL_BYTES 32768

/* Whether two exported buffers can go to the kernel as dst and src: same
 * rank (<= FC_MAX_RANK), shape and itemsize, no object items, non-negative
 * strides, no two dst elements on one slot, no overlap between the two. */
static int
fc_buffers_ok(const Py_buffer *d, const Py_buffer *s, Py_ssize_t *nbytes)
{
    Py_ssize_t hd, hs, n = d->itemsize;
    const char *lo_d, *lo_s;
    int i;

    *nbytes = 0;
    if (d->ndim != s->ndim || d->ndim > FC_MAX_RANK || d->itemsize != s->itemsize ||
        d->itemsize < 1 || d->suboffsets != NULL || s->suboffsets != NULL)
        return 0;
    if ((d->format != NULL && strchr(d->format, 'O') != NULL) ||
        (s->format != NULL && strchr(s->format, 'O') != NULL))
        return 0;
    if (d->ndim > 0 && (d->strides == NULL || s->strides == NULL))
        return 0;
    for (i = 0; i < d->ndim; i++) {
        if (d->shape[i] != s->shape[i] || d->strides[i] < 0 || s->strides[i] < 0)
            return 0;
        if (d->shape[i] == 0)
            return 1; /* nothing to copy */
        if (d->strides[i] == 0 && d->shape[i] > 1)
            return 0;
        n = fc_mul(n, d->shape[i]);
        if (n < 0)
            return 0;
    }
    hd = fc_extent(d->ndim, d->shape, d->strides, d->itemsize);
    hs = fc_extent(s->ndim, s->shape, s->strides, s->itemsize);
    if (hd < 0 || hs < 0)
        return 0;
    lo_d = (const char *)d->buf;
    lo_s = (const char *)s->buf;
    if (lo_d <= lo_s + hs && lo_s <= lo_d + hd)
        return 0; /* byte ranges overlap: leave it to numpy */
    *nbytes = n;
    return 1;
}

PyDoc_STRVAR(copy_arrays_doc,
"copy_arrays(dst, src) -> bool\n"
"--\n\n"
"Copy src into dst (any objects exporting strided buffers, e.g. numpy arrays),\n"
"byte for byte, and return True; or return False without copying when the\n"
"pair does not qualify: dst not writeable, ranks, shapes or itemsizes that\n"
"differ, rank > 10, negative strides, object items, dst elements sharing a\n"
"slot, overlapping memory, or no strided buffer export.");

static PyObject *
fc_copy_arrays(PyObject *Py_UNUSED(self), PyObject *const *args, Py_ssize_t nargs)
{
    Py_buffer bd, bs;
    Py_ssize_t nbytes;
    fc_plan plan;
    int ok;

    if (nargs != 2) {
        PyErr_Format(PyExc_TypeError, "copy_arrays() takes 2 arguments (%zd given)", nargs);
        return NULL;
    }
    if (PyObject_GetBuffer(args[0], &bd, PyBUF_RECORDS) < 0) {
        PyErr_Clear();
        Py_RETURN_FALSE;
    }
    if (PyObject_GetBuffer(args[1], &bs, PyBUF_RECORDS_RO) < 0) {
        PyErr_Clear();
        PyBuffer_Release(&bd);
        Py_RETURN_FALSE;
    }
    ok = fc_buffers_ok(&bd, &bs, &nbytes);
    if (ok && nbytes > 0) {
        fc_make_plan(&plan, bd.ndim, bd.shape, bd.strides, bs.strides, bd.itemsize);
        if (nbytes >= FC_GIL_BYTES) {
            Py_BEGIN_ALLOW_THREADS
            fc_execute(fc_active, &plan, (char *)bd.buf, (const char *)bs.buf);
            Py_END_ALLOW_THREADS
        }
        else {
            fc_execute(fc_active, &plan, (char *)bd.buf, (const char *)bs.buf);
        }
    }
    PyBuffer_Release(&bs);
    PyBuffer_Release(&bd);
    return PyBool_FromLong(ok);
}

PyDoc_STRVAR(describe_doc,
"describe(dst_strides, src_strides, shape, itemsize) -> str\n"
"--\n\n"
"The plan copy_strided would follow for this layout, as text (for tests,\n"
"benchmarks and debugging).");

static PyObject *
fc_describe(PyObject *Py_UNUSED(self), PyObject *const *args, Py_ssize_t nargs)
{
    static const char *kinds[] = {"empty", "memcpy", "rows", "t2d"};
    static const char *subs[] = {"gen", "il", "dil", "bt"};
    fc_args a;
    fc_plan p;
    PyObject *res, *part;
    int k;

    if (nargs != 4) {
        PyErr_Format(PyExc_TypeError, "describe() takes 4 arguments (%zd given)", nargs);
        return NULL;
    }
    if (fc_parse_layout(args[0], args[1], args[2], args[3], &a) < 0)
        return NULL;
    fc_make_plan(&p, a.rank, a.shape, a.ds, a.ss, a.itemsize);
    if (p.kind == FC_EMPTY || p.kind == FC_MEMCPY)
        return PyUnicode_FromFormat("%s E=%zd", kinds[p.kind], p.E);
    if (p.kind == FC_ROWS)
        res = PyUnicode_FromFormat("rows E=%zd D=(%zd,%zd,%zd)", p.E, p.D.n, p.D.ds, p.D.ss);
    else
        res = PyUnicode_FromFormat("t2d/%s E=%zd D=(%zd,%zd,%zd) S=(%zd,%zd,%zd)", subs[p.sub],
                                   p.E, p.D.n, p.D.ds, p.D.ss, p.S.n, p.S.ds, p.S.ss);
    for (k = 0; res != NULL && k < p.nouter; k++) {
        part = PyUnicode_FromFormat(" O=(%zd,%zd,%zd)", p.outer[k].n, p.outer[k].ds,
                                    p.outer[k].ss);
        if (part == NULL) {
            Py_CLEAR(res);
            break;
        }
        PyUnicode_AppendAndDel(&res, part);
    }
    return res;
}

PyDoc_STRVAR(set_isa_doc,
"set_isa(level=None) -> str\n"
"--\n\n"
"Use the kernels of instruction-set level `level` (\"base\", \"avx2\" or\n"
"\"avx512\"), or of a lower one when the CPU lacks it; None picks the best\n"
"the CPU runs.  Returns the level in use.  For tests and benchmarks.");

static PyObject *
fc_set_isa_py(PyObject *Py_UNUSED(self), PyObject *const *args, Py_ssize_t nargs)
{
    const char *cap = NULL;

    if (nargs > 1) {
        PyErr_Format(PyExc_TypeError, "set_isa() takes at most 1 argument (%zd given)", nargs);
        return NULL;
    }
    if (nargs == 1 && args[0] != Py_None) {
        cap = PyUnicode_AsUTF8AndSize(args[0], NULL);
        if (cap == NULL)
            return NULL;
        if (strcmp(cap, "base") != 0 && strcmp(cap, "avx2") != 0 && strcmp(cap, "avx512") != 0) {
            PyErr_Format(PyExc_ValueError, "unknown instruction-set level %R", args[0]);
            return NULL;
        }
    }
    fc_set_isa(fc_pick_isa(cap));
    return PyUnicode_FromString(fc_active->name);
}

PyDoc_STRVAR(get_isa_doc,
"get_isa() -> str\n"
"--\n\n"
"The instruction-set level whose kernels are in use.");

static PyObject *
fc_get_isa_py(PyObject *Py_UNUSED(self), PyObject *Py_UNUSED(args))
{
    return PyUnicode_FromString(fc_active->name);
}


/* ---- 16-bit values <-> two byte planes (the KL730 HL formats) -------------
 * mode 0: plain bytes, lo = v & 0xFF, hi = v >> 8.
 * mode 1: the KL730 runtime's 15-bit reading: lo = (v >> 1) & 0x7F, hi = v >> 8,
 *         and back v = ((lo & 0x7F) << 1) | (hi << 8).
 * One contiguous pass each way, so the planes can then be placed by the
 * strided copy with contiguous sources. */

static void
fc_split16(const uint16_t *src, uint8_t *lo, uint8_t *hi, Py_ssize_t n, int mode)
{
    Py_ssize_t i;
    if (mode) {
        for (i = 0; i < n; i++) {
            uint16_t v = src[i];
            lo[i] = (uint8_t)((v >> 1) & 0x7F);
            hi[i] = (uint8_t)(v >> 8);
        }
    }
    else {
        for (i = 0; i < n; i++) {
            uint16_t v = src[i];
            lo[i] = (uint8_t)(v & 0xFF);
            hi[i] = (uint8_t)(v >> 8);
        }
    }
}

static void
fc_join16(const uint8_t *lo, const uint8_t *hi, uint16_t *dst, Py_ssize_t n, int mode)
{
    Py_ssize_t i;
    if (mode) {
        for (i = 0; i < n; i++)
            dst[i] = (uint16_t)(((unsigned)(lo[i] & 0x7F) << 1) | ((unsigned)hi[i] << 8));
    }
    else {
        for (i = 0; i < n; i++)
            dst[i] = (uint16_t)((unsigned)lo[i] | ((unsigned)hi[i] << 8));
    }
}

/* Contiguous buffers of the expected byte sizes, or a Python exception. */
static int
fc_planes(PyObject *const *args, int writable16, Py_buffer *b16, Py_buffer *blo, Py_buffer *bhi,
          Py_ssize_t *n)
{
    int f16 = writable16 ? PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS : PyBUF_C_CONTIGUOUS;
    int f8 = writable16 ? PyBUF_C_CONTIGUOUS : PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS;
    if (PyObject_GetBuffer(args[0], b16, f16) < 0)
        return -1;
    if (PyObject_GetBuffer(args[1], blo, f8) < 0) {
        PyBuffer_Release(b16);
        return -1;
    }
    if (PyObject_GetBuffer(args[2], bhi, f8) < 0) {
        PyBuffer_Release(blo);
        PyBuffer_Release(b16);
        return -1;
    }
    *n = blo->len;
    if (b16->len != 2 * blo->len || bhi->len != blo->len) {
        PyErr_SetString(PyExc_ValueError, "planes must hold one byte per 16-bit value");
        PyBuffer_Release(bhi);
        PyBuffer_Release(blo);
        PyBuffer_Release(b16);
        return -1;
    }
    return 0;
}

/* split16 and join16: the same argument checks, one call each way. */
static PyObject *
fc_planes_call(PyObject *const *args, Py_ssize_t nargs, int join, const char *name)
{
    Py_buffer b16, blo, bhi;
    Py_ssize_t n;
    long mode;
    if (nargs != 4) {
        PyErr_Format(PyExc_TypeError, "%s() takes 4 arguments (%zd given)", name, nargs);
        return NULL;
    }
    mode = PyLong_AsLong(args[3]);
    if (mode == -1 && PyErr_Occurred())
        return NULL;
    if (fc_planes(args, join, &b16, &blo, &bhi, &n) < 0)
        return NULL;
    Py_BEGIN_ALLOW_THREADS
    if (join)
        fc_join16((const uint8_t *)blo.buf, (const uint8_t *)bhi.buf, (uint16_t *)b16.buf, n,
                  mode != 0);
    else
        fc_split16((const uint16_t *)b16.buf, (uint8_t *)blo.buf, (uint8_t *)bhi.buf, n,
                   mode != 0);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&bhi);
    PyBuffer_Release(&blo);
    PyBuffer_Release(&b16);
    Py_RETURN_NONE;
}

PyDoc_STRVAR(split16_doc,
"split16(values, lo, hi, mode) -> None\n"
"--\n\n"
"Split contiguous little-endian 16-bit values into two contiguous byte planes;\n"
"mode 1 is the KL730 15-bit reading (lo holds bits [7:1]).");

static PyObject *
fc_split16_py(PyObject *Py_UNUSED(self), PyObject *const *args, Py_ssize_t nargs)
{
    return fc_planes_call(args, nargs, 0, "split16");
}

PyDoc_STRVAR(join16_doc,
"join16(values, lo, hi, mode) -> None\n"
"--\n\n"
"Join two contiguous byte planes into contiguous little-endian 16-bit values\n"
"(written into values); mode 1 is the KL730 15-bit reading.");

static PyObject *
fc_join16_py(PyObject *Py_UNUSED(self), PyObject *const *args, Py_ssize_t nargs)
{
    return fc_planes_call(args, nargs, 1, "join16");
}

/* split16_blocks and join16_blocks: values (n per row) and blocks, checked. */
static PyObject *
fc_blocks_call(PyObject *const *args, Py_ssize_t nargs, int join, const char *name)
{
    Py_buffer bv, bb;
    long a[4];
    Py_ssize_t n, B, rows, rowlen;
    int k;
    if (nargs != 6) {
        PyErr_Format(PyExc_TypeError, "%s() takes 6 arguments (%zd given)", name, nargs);
        return NULL;
    }
    for (k = 0; k < 4; k++) {
        a[k] = PyLong_AsLong(args[2 + k]);
        if (a[k] == -1 && PyErr_Occurred())
            return NULL;
    }
    n = a[0];
    B = a[1];
    if (n < 1 || B < 1 || a[2] < 0 || a[2] > 2) {
        PyErr_Format(PyExc_ValueError, "%s(): need n >= 1, B >= 1, mode 0-2", name);
        return NULL;
    }
    if (PyObject_GetBuffer(args[0], &bv, join ? PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS
                                              : PyBUF_C_CONTIGUOUS) < 0)
        return NULL;
    if (PyObject_GetBuffer(args[1], &bb, join ? PyBUF_C_CONTIGUOUS
                                              : PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) < 0) {
        PyBuffer_Release(&bv);
        return NULL;
    }
    rows = bv.len / (2 * n);
    rowlen = ((n + B - 1) / B) * 2 * B;
    if (bv.len != rows * 2 * n || bb.len != rows * rowlen) {
        PyErr_Format(PyExc_ValueError,
                     "%s(): %zd bytes of values are not rows of %zd 16-bit values, or "
                     "%zd bytes of blocks not %zd rows of %zd", name, bv.len, n, bb.len, rows,
                     rowlen);
        PyBuffer_Release(&bb);
        PyBuffer_Release(&bv);
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    (join ? fc_active->join_blk : fc_active->split_blk)((uint16_t *)bv.buf, (uint8_t *)bb.buf,
                                                         rows, n, B, (int)a[2], a[3] != 0);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&bb);
    PyBuffer_Release(&bv);
    Py_RETURN_NONE;
}

PyDoc_STRVAR(split16_blocks_doc,
"split16_blocks(values, blocks, n, B, mode, swap) -> None\n"
"--\n\n"
"Contiguous 16-bit values, rows of n, into blocks: each row becomes\n"
"ceil(n / B) blocks of 2B bytes, B first-slot bytes then B second-slot bytes\n"
"(unused bytes of a partial last block are not written).  mode 0: plain bytes,\n"
"1: KL730 15-bit (low slot bits [7:1]), 2: plain with bit 0 dropped; swap:\n"
"the high byte in the first slot.");

static PyObject *
fc_split16_blocks_py(PyObject *Py_UNUSED(self), PyObject *const *args, Py_ssize_t nargs)
{
    return fc_blocks_call(args, nargs, 0, "split16_blocks");
}

PyDoc_STRVAR(join16_blocks_doc,
"join16_blocks(values, blocks, n, B, mode, swap) -> None\n"
"--\n\n"
"The inverse of split16_blocks, into values.");

static PyObject *
fc_join16_blocks_py(PyObject *Py_UNUSED(self), PyObject *const *args, Py_ssize_t nargs)
{
    return fc_blocks_call(args, nargs, 1, "join16_blocks");
}

static PyMethodDef fc_methods[] = {
    {"split16_blocks", (PyCFunction)(void (*)(void))fc_split16_blocks_py, METH_FASTCALL,
     split16_blocks_doc},
    {"join16_blocks", (PyCFunction)(void (*)(void))fc_join16_blocks_py, METH_FASTCALL,
     join16_blocks_doc},
    {"split16", (PyCFunction)(void (*)(void))fc_split16_py, METH_FASTCALL, split16_doc},
    {"join16", (PyCFunction)(void (*)(void))fc_join16_py, METH_FASTCALL, join16_doc},
    {"copy_arrays", (PyCFunction)(void (*)(void))fc_copy_arrays, METH_FASTCALL,
     copy_arrays_doc},
    {"copy_strided", (PyCFunction)(void (*)(void))fc_copy_strided, METH_FASTCALL,
     copy_strided_doc},
    {"describe", (PyCFunction)(void (*)(void))fc_describe, METH_FASTCALL, describe_doc},
    {"set_isa", (PyCFunction)(void (*)(void))fc_set_isa_py, METH_FASTCALL, set_isa_doc},
    {"get_isa", fc_get_isa_py, METH_NOARGS, get_isa_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef fc_module = {
    PyModuleDef_HEAD_INIT,
    "harness.codec._kernels",
    "Fast strided byte copies (see harness.codec.fastcopy).",
    0,
    fc_methods,
    NULL,
    NULL,
    NULL,
    NULL,
};

PyMODINIT_FUNC
PyInit__kernels(void)
{
    PyObject *m;

    fc_set_isa(fc_pick_isa(NULL));
    m = PyModule_Create(&fc_module);
    if (m == NULL)
        return NULL;
    if (PyModule_AddIntConstant(m, "MAX_RANK", FC_MAX_RANK) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}

#else /* FC_KERNEL_PASS: the vectorised kernels, once per ISA level ------- */

#define FC_N(name) FC_CAT(name, FC_SFX)

/* ------------------------------------------------------------ vector zips */
/* zip(a, b) -> (lo, hi): the units of a and b interleaved, low halves into
 * lo and high halves into hi (punpckl/h on x86, zip1/zip2 on NEON). */
#if FC_GNU
#if defined(__clang__)
#define FC_SHUF(V, a, b, ...) __builtin_shufflevector((a), (b), __VA_ARGS__)
#else
#define FC_SHUF(V, a, b, ...) __builtin_shuffle((a), (b), (V){__VA_ARGS__})
#endif

typedef uint8_t FC_N(n8) __attribute__((vector_size(16)));
typedef uint16_t FC_N(n16) __attribute__((vector_size(16)));
typedef uint32_t FC_N(n32) __attribute__((vector_size(16)));
typedef uint64_t FC_N(n64) __attribute__((vector_size(16)));

#define FC_NZIP_u8(a, b, lo, hi)                                              \
    do {                                                                      \
        lo = FC_SHUF(FC_N(n8), a, b, 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23); \
        hi = FC_SHUF(FC_N(n8), a, b, 8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, \
                     15, 31);                                                 \
    } while (0)
#define FC_NZIP_u16(a, b, lo, hi)                                             \
    do {                                                                      \
        lo = FC_SHUF(FC_N(n16), a, b, 0, 8, 1, 9, 2, 10, 3, 11);              \
        hi = FC_SHUF(FC_N(n16), a, b, 4, 12, 5, 13, 6, 14, 7, 15);            \
    } while (0)
#define FC_NZIP_u32(a, b, lo, hi)                                             \
    do {                                                                      \
        lo = FC_SHUF(FC_N(n32), a, b, 0, 4, 1, 5);                            \
        hi = FC_SHUF(FC_N(n32), a, b, 2, 6, 3, 7);                            \
    } while (0)
#define FC_NZIP_u64(a, b, lo, hi)                                             \
    do {                                                                      \
        lo = FC_SHUF(FC_N(n64), a, b, 0, 2);                                  \
        hi = FC_SHUF(FC_N(n64), a, b, 1, 3);                                  \
    } while (0)

#endif /* FC_GNU */

/* ---------------------------------------------------------------- IL/DIL */

/* Staged or dense interleave of K channels into pixels of Kp units:
 *   out[(i*Kp + k)*E] = src[(k < K ? k : 0)*plane + i*E]
 * K and Kp are compile-time constants at every call site, so the loop over
 * k unrolls and the pixel loop vectorises as a store group of Kp units.
 * Gap units (k >= K) repeat channel 0: the masked store drops them, and a
 * full store group vectorises where one with holes or constants does not. */
#define FC_DEF_IL_KK(T)                                                       \
    FC_INLINE void FC_N(fc_il_kk_##T)(char *FC_RESTRICT out, const char *FC_RESTRICT src, \
                                      Py_ssize_t n, Py_ssize_t plane, int K, int Kp) \
    {                                                                         \
        const Py_ssize_t E = (Py_ssize_t)sizeof(fc_##T);                      \
        for (Py_ssize_t i = 0; i < n; i++)                                    \
            for (int k = 0; k < Kp; k++)                                      \
                FC_ST(T, out + (i * Kp + k) * E,                              \
                      FC_LD(T, src + (k < K ? k : 0) * plane + i * E));       \
    }

/* Deinterleave K channels out of pixels of Kp units (Kp >= K):
 *   dst[k*plane + i*E] = in[(i*Kp + k)*E]                                  */
#define FC_DEF_DIL_KK(T)                                                      \
    FC_INLINE void FC_N(fc_dil_kk_##T)(char *FC_RESTRICT dst, const char *FC_RESTRICT in, \
                                       Py_ssize_t n, Py_ssize_t plane, int K, int Kp) \
    {                                                                         \
        const Py_ssize_t E = (Py_ssize_t)sizeof(fc_##T);                      \
        for (Py_ssize_t i = 0; i < n; i++)                                    \
            for (int k = 0; k < K; k++)                                       \
                FC_ST(T, dst + k * plane + i * E, FC_LD(T, in + (i * Kp + k) * E)); \
    }

/* Dense deinterleave by a zip network, for the baseline x86 pass (SSE2 has
 * no byte shuffle, and gcc leaves groups of 3, 5, 6, 7 scalar there): 2K
 * registers hold 32 / E pixels; log2(16 / E) + 1 rounds of zip(r[j],
 * r[j + K]) leave channel k in registers 2k and 2k + 1.  Returns the pixels
 * done; the caller finishes the rest. */
#if FC_GNU && !FC_PASS_WIDE && (defined(__x86_64__) || defined(__i386__))
/* ROUNDS rounds of ZIP over the R registers r (t: as many for the results): each round
 * interleaves register i with register i + R / 2 into t[2i], t[2i + 1]. */
#define FC_ZIP_ROUNDS(r, t, R, ROUNDS, ZIP)                                   \
    do {                                                                      \
        int zr_, zi_;                                                         \
        for (zr_ = 0; zr_ < (ROUNDS); zr_++) {                                \
            for (zi_ = 0; zi_ < (R) / 2; zi_++)                               \
                ZIP(r[zi_], r[zi_ + (R) / 2], t[2 * zi_], t[2 * zi_ + 1]);    \
            for (zi_ = 0; zi_ < (R); zi_++)                                   \
                r[zi_] = t[zi_];                                              \
        }                                                                     \
    } while (0)

#define FC_DEF_ZIPDIL(T, V, ROUNDS, ZIP)                                      \
    FC_INLINE Py_ssize_t FC_N(fc_zipdil_##T)(char *FC_RESTRICT dst, const char *FC_RESTRICT src, \
                                             Py_ssize_t n, Py_ssize_t plane, int K) \
    {                                                                         \
        const Py_ssize_t E = (Py_ssize_t)sizeof(fc_##T), PX = 32 / E;         \
        Py_ssize_t i;                                                         \
        for (i = 0; i + PX <= n; i += PX) {                                   \
            V r[16], t[16];                                                   \
            int j;                                                            \
            for (j = 0; j < 2 * K; j++)                                       \
                memcpy(&r[j], src + i * K * E + 16 * j, 16);                  \
            FC_ZIP_ROUNDS(r, t, 2 * K, ROUNDS, ZIP);                          \
            for (j = 0; j < K; j++) {                                         \
                memcpy(dst + j * plane + i * E, &r[2 * j], 16);               \
                memcpy(dst + j * plane + i * E + 16, &r[2 * j + 1], 16);      \
            }                                                                 \
        }                                                                     \
        return i;                                                             \
    }
FC_DEF_ZIPDIL(u8, FC_N(n8), 5, FC_NZIP_u8)
FC_DEF_ZIPDIL(u16, FC_N(n16), 4, FC_NZIP_u16)
#undef FC_DEF_ZIPDIL
#define FC_ZIPDIL_U8 fc_zipdil_u8
#define FC_ZIPDIL_U16 fc_zipdil_u16
#else
#define FC_ZIPDIL_U8 fc_zipdil_none
#define FC_ZIPDIL_U16 fc_zipdil_none
#endif

/* No zip network: nothing done. */
FC_INLINE Py_ssize_t
FC_N(fc_zipdil_none)(char *dst, const char *src, Py_ssize_t n, Py_ssize_t plane, int K)
{
    (void)dst;
    (void)src;
    (void)n;
    (void)plane;
    (void)K;
    return 0;
}

/* Dense deinterleave of K (a constant at the call sites) channels. */
#define FC_DEF_DIL_DENSE(T, ZIPDIL)                                           \
    FC_INLINE void FC_N(fc_dil_dense_##T)(char *FC_RESTRICT dst, const char *FC_RESTRICT src, \
                                          Py_ssize_t n, Py_ssize_t plane, int K) \
    {                                                                         \
        const Py_ssize_t E = (Py_ssize_t)sizeof(fc_##T);                      \
        Py_ssize_t done = 0;                                                  \
        if (K == 3 || K == 5 || K == 6 || K == 7)                             \
            done = FC_N(ZIPDIL)(dst, src, n, plane, K);                       \
        FC_N(fc_dil_kk_##T)(dst + done * E, src + done * K * E, n - done, plane, K, K); \
    }

/* One fixed-size (KE bytes, a constant at the call sites) move per pixel. */
FC_INLINE void
FC_N(fc_scatter_fixed)(char *FC_RESTRICT dst, Py_ssize_t P, const char *FC_RESTRICT tmp,
                       Py_ssize_t tP, Py_ssize_t n, Py_ssize_t KE)
{
    for (Py_ssize_t i = 0; i < n; i++)
        memcpy(dst + i * P, tmp + i * tP, (size_t)KE);
}

FC_INLINE void
FC_N(fc_gather_fixed)(char *FC_RESTRICT tmp, const char *FC_RESTRICT src, Py_ssize_t P,
                      Py_ssize_t n, Py_ssize_t KE)
{
    for (Py_ssize_t i = 0; i < n; i++)
        memcpy(tmp + i * KE, src + i * P, (size_t)KE);
}

#define FC_KCASES(X) X(2) X(3) X(4) X(5) X(6) X(7) X(8)
/* (K, Kp) with a gap, Kp in {4, 8} */
#define FC_GAPCASES(X)                                                        \
    X(2, 4) X(3, 4) X(2, 8) X(3, 8) X(4, 8) X(5, 8) X(6, 8) X(7, 8)

#define FC_DEF_IL(T)                                                          \
    FC_DEF_IL_KK(T)                                                           \
    FC_NOINLINE void FC_N(fc_il_gap_##T)(char *dst, const char *src, Py_ssize_t n, \
                                         Py_ssize_t P, Py_ssize_t plane, int K) \
    {                                                                         \
        const Py_ssize_t E = (Py_ssize_t)sizeof(fc_##T);                      \
        char tmp[FC_STAGE] FC_ALIGN64;                                        \
        const fc_masked_fn masked = fc_masked_store;                          \
        const int Kp = P % E == 0 && P / E <= 8 ? (int)(P / E) : 0;           \
        Py_ssize_t i0, m, chunk;                                              \
        if ((Kp == 4 || Kp == 8) && K < Kp) {                                 \
            /* Stage whole pixels (gap units are junk), then store only the   \
             * K units of each: byte-masked, or one fixed-size move each. */  \
            chunk = FC_STAGE / P;                                             \
            for (i0 = 0; i0 < n; i0 += chunk) {                               \
                m = n - i0 < chunk ? n - i0 : chunk;                          \
                switch (Kp * 16 + K) {                                        \
                    FC_GAPCASES(FC_IL_STAGE_CASE)                             \
                default:                                                      \
                    break;                                                    \
                }                                                             \
                if (masked != NULL && 32 % P == 0) {                          \
                    masked(dst + i0 * P, tmp, m * P, P, K * E);               \
                    continue;                                                 \
                }                                                             \
                switch (K) {                                                  \
                    FC_KCASES(FC_IL_MOVE_CASE)                                \
                default:                                                      \
                    break;                                                    \
                }                                                             \
            }                                                                 \
            return;                                                           \
        }                                                                     \
        /* Stage dense K-unit pixels, move K*E bytes per pixel. */            \
        chunk = FC_STAGE / (K * E);                                           \
        for (i0 = 0; i0 < n; i0 += chunk) {                                   \
            m = n - i0 < chunk ? n - i0 : chunk;                              \
            switch (K) {                                                      \
                FC_KCASES(FC_IL_SCATTER_CASE)                                 \
            default:                                                          \
                break;                                                        \
            }                                                                 \
        }                                                                     \
    }                                                                         \
    FC_NOINLINE void FC_N(fc_il_##T)(char *dst, const char *src, Py_ssize_t n, Py_ssize_t P, \
                                     Py_ssize_t plane, int K)                 \
    {                                                                         \
        const Py_ssize_t E = (Py_ssize_t)sizeof(fc_##T);                      \
        if (P == K * E) {                                                     \
            switch (K) {                                                      \
                FC_KCASES(FC_IL_DENSE_CASE)                                   \
            default:                                                          \
                break;                                                        \
            }                                                                 \
            fc_gen(E, dst, src, K, E, plane, n, P, E);                        \
            return;                                                           \
        }                                                                     \
        if (K >= 2 && K <= 8) {                                               \
            FC_N(fc_il_gap_##T)(dst, src, n, P, plane, K);                    \
            return;                                                           \
        }                                                                     \
        fc_gen(E, dst, src, K, E, plane, n, P, E);                            \
    }

#define FC_IL_STAGE_CASE(K_, KP_)                                             \
    case KP_ * 16 + K_:                                                       \
        FC_N(FC_CAT(fc_il_kk, T))(tmp, src + i0 * E, m, plane, K_, KP_);      \
        break;
#define FC_IL_MOVE_CASE(K_)                                                   \
    case K_:                                                                  \
        FC_N(fc_scatter_fixed)(dst + i0 * P, P, tmp, P, m, K_ * E);           \
        break;
#define FC_IL_SCATTER_CASE(K_)                                                \
    case K_:                                                                  \
        FC_N(FC_CAT(fc_il_kk, T))(tmp, src + i0 * E, m, plane, K_, K_);       \
        FC_N(fc_scatter_fixed)(dst + i0 * P, P, tmp, K_ * E, m, K_ * E);      \
        break;
#define FC_IL_DENSE_CASE(K_)                                                  \
    case K_:                                                                  \
        FC_N(FC_CAT(fc_il_kk, T))(dst, src, n, plane, K_, K_);                \
        return;

#define FC_DEF_DIL(T, ZIPDIL)                                                 \
    FC_DEF_DIL_KK(T)                                                          \
    FC_DEF_DIL_DENSE(T, ZIPDIL)                                               \
    FC_NOINLINE void FC_N(fc_dil_gap_##T)(char *dst, const char *src, Py_ssize_t n, \
                                          Py_ssize_t P, Py_ssize_t plane, int K) \
    {                                                                         \
        const Py_ssize_t E = (Py_ssize_t)sizeof(fc_##T);                      \
        char tmp[FC_STAGE] FC_ALIGN64;                                        \
        const int Kp = P % E == 0 && P / E <= 8 ? (int)(P / E) : 0;           \
        Py_ssize_t i0, m, chunk;                                              \
        switch (Kp * 16 + K) {                                                \
            /* Pixels of Kp units read whole (gap included) and split. */     \
            FC_GAPCASES(FC_DIL_GAP_CASE)                                      \
        default:                                                              \
            break;                                                            \
        }                                                                     \
        /* Gather K*E bytes per pixel into dense pixels, split those. */      \
        chunk = FC_STAGE / (K * E);                                           \
        for (i0 = 0; i0 < n; i0 += chunk) {                                   \
            m = n - i0 < chunk ? n - i0 : chunk;                              \
            switch (K) {                                                      \
                FC_KCASES(FC_DIL_GATHER_CASE)                                 \
            default:                                                          \
                break;                                                        \
            }                                                                 \
        }                                                                     \
    }                                                                         \
    FC_NOINLINE void FC_N(fc_dil_##T)(char *dst, const char *src, Py_ssize_t n, Py_ssize_t P, \
                                      Py_ssize_t plane, int K)                \
    {                                                                         \
        const Py_ssize_t E = (Py_ssize_t)sizeof(fc_##T);                      \
        if (P == K * E) {                                                     \
            switch (K) {                                                      \
                FC_KCASES(FC_DIL_DENSE_CASE)                                  \
            default:                                                          \
                break;                                                        \
            }                                                                 \
            fc_gen(E, dst, src, n, E, P, K, plane, E);                        \
            return;                                                           \
        }                                                                     \
        if (K >= 2 && K <= 8) {                                               \
            FC_N(fc_dil_gap_##T)(dst, src, n, P, plane, K);                   \
            return;                                                           \
        }                                                                     \
        fc_gen(E, dst, src, n, E, P, K, plane, E);                            \
    }

#define FC_DIL_GAP_CASE(K_, KP_)                                              \
    case KP_ * 16 + K_:                                                       \
        FC_N(FC_CAT(fc_dil_kk, T))(dst, src, n, plane, K_, KP_);              \
        return;
#define FC_DIL_GATHER_CASE(K_)                                                \
    case K_:                                                                  \
        FC_N(fc_gather_fixed)(tmp, src + i0 * P, P, m, K_ * E);               \
        FC_N(FC_CAT(fc_dil_kk, T))(dst + i0 * E, tmp, m, plane, K_, K_);      \
        break;
#define FC_DIL_DENSE_CASE(K_)                                                 \
    case K_:                                                                  \
        FC_N(FC_CAT(fc_dil_dense, T))(dst, src, n, plane, K_);                \
        return;

/* The case macros refer to T, so T is a real macro while they expand. */
#define T u8
FC_DEF_IL(u8)
FC_DEF_DIL(u8, FC_ZIPDIL_U8)
#undef T
#define T u16
FC_DEF_IL(u16)
FC_DEF_DIL(u16, FC_ZIPDIL_U16)
#undef T
#define T u32
FC_DEF_IL(u32)
FC_DEF_DIL(u32, fc_zipdil_none)
#undef T
#define T u64
FC_DEF_IL(u64)
FC_DEF_DIL(u64, fc_zipdil_none)
#undef T

#undef FC_DEF_IL_KK
#undef FC_DEF_DIL_KK
#undef FC_KCASES
#undef FC_GAPCASES
#undef FC_DEF_IL
#undef FC_DEF_DIL
#undef FC_IL_STAGE_CASE
#undef FC_IL_SCATTER_CASE
#undef FC_IL_MOVE_CASE
#undef FC_IL_DENSE_CASE
#undef FC_DIL_GAP_CASE
#undef FC_DIL_GATHER_CASE
#undef FC_DIL_DENSE_CASE
#undef FC_DEF_DIL_DENSE
#undef FC_ZIPDIL_U8
#undef FC_ZIPDIL_U16

/* ------------------------------------------------------- blocked transpose */
/*   dst[d*E + s*dS] = src[d*sD + s*E]                                        */
/* src row d holds s contiguously, dst row s holds d contiguously.  A block  */
/* is R rows of d (R = 16 / E units, 16 bytes of each dst row) by 16 bytes   */
/* of s; the wide pass also has a double block, two side by side (one per    */
/* 128-bit lane).  log2(R) rounds of the perfect shuffle (each rotates the   */
/* bits of the (row, column) index by one) transpose each 16x16-byte square. */

#if FC_GNU
#define FC_HAVE_BT 1

/* One block: R src rows of VB bytes -> (VB / 16) * R dst rows of 16 bytes;
 * lane L of transposed row i is dst row L * R + i. */
#define FC_DEF_TBLOCK(NAME, V, VB, R, ROUNDS, ZIP)                            \
    FC_INLINE void FC_N(NAME)(char *FC_RESTRICT dst, Py_ssize_t dS,           \
                              const char *FC_RESTRICT src, Py_ssize_t sD)     \
    {                                                                         \
        V r[R], t[R];                                                         \
        int i, lane;                                                          \
        for (i = 0; i < R; i++)                                               \
            memcpy(&r[i], src + i * sD, VB);                                  \
        FC_ZIP_ROUNDS(r, t, R, ROUNDS, ZIP);                                  \
        for (lane = 0; lane < VB / 16; lane++)                                \
            for (i = 0; i < R; i++)                                           \
                memcpy(dst + (lane * R + i) * dS, (const char *)&r[i] + 16 * lane, 16); \
    }
FC_DEF_TBLOCK(fc_tb16_u8, FC_N(n8), 16, 16, 4, FC_NZIP_u8)
FC_DEF_TBLOCK(fc_tb16_u16, FC_N(n16), 16, 8, 3, FC_NZIP_u16)
FC_DEF_TBLOCK(fc_tb16_u32, FC_N(n32), 16, 4, 2, FC_NZIP_u32)
FC_DEF_TBLOCK(fc_tb16_u64, FC_N(n64), 16, 2, 1, FC_NZIP_u64)

/* n <= 16 bytes by at most two overlapping moves of one size (no call, no
 * byte loop): the ragged edges of the blocked transpose. */
FC_INLINE void
FC_N(fc_small)(char *FC_RESTRICT d, const char *FC_RESTRICT s, size_t n)
{
    if (n > 16)
        n = 16;
    if (n >= 8) {
        fc_u64 a = FC_LD(u64, s), b = FC_LD(u64, s + n - 8);
        FC_ST(u64, d, a);
        FC_ST(u64, d + n - 8, b);
    }
    else if (n >= 4) {
        fc_u32 a = FC_LD(u32, s), b = FC_LD(u32, s + n - 4);
        FC_ST(u32, d, a);
        FC_ST(u32, d + n - 4, b);
    }
    else if (n >= 2) {
        fc_u16 a = FC_LD(u16, s), b = FC_LD(u16, s + n - 2);
        FC_ST(u16, d, a);
        FC_ST(u16, d + n - 2, b);
    }
    else if (n == 1) {
        *d = *s;
    }
}

/* A ragged block: `rows` (<= R) src rows of `lb` (<= 16) bytes, the rest of
 * the 16x16-byte square zero in registers, transposed; `outrows` dst rows of
 * `sb` bytes stored.  Reads and writes only bytes of the two views: this is
 * what keeps a partial last C2 block (C = 255, 17, 1000) on the vector path
 * instead of the scalar loop. */
#define FC_DEF_TPART(NAME, V, R, ROUNDS, ZIP)                                 \
    FC_INLINE void FC_N(NAME)(char *FC_RESTRICT dst, Py_ssize_t dS,           \
                              const char *FC_RESTRICT src, Py_ssize_t sD, Py_ssize_t rows, \
                              Py_ssize_t lb, Py_ssize_t outrows, Py_ssize_t sb) \
    {                                                                         \
        V r[R], t[R];                                                         \
        Py_ssize_t i;                                                         \
        for (i = 0; i < R; i++) {                                             \
            memset(&r[i], 0, 16);                                             \
            if (i < rows)                                                     \
                FC_N(fc_small)((char *)&r[i], src + i * sD, (size_t)lb);              \
        }                                                                     \
        FC_ZIP_ROUNDS(r, t, R, ROUNDS, ZIP);                                  \
        for (i = 0; i < outrows; i++)                                         \
            FC_N(fc_small)(dst + i * dS, (const char *)&r[i], (size_t)sb);            \
    }
FC_DEF_TPART(fc_tp16_u8, FC_N(n8), 16, 4, FC_NZIP_u8)
FC_DEF_TPART(fc_tp16_u16, FC_N(n16), 8, 3, FC_NZIP_u16)
FC_DEF_TPART(fc_tp16_u32, FC_N(n32), 4, 2, FC_NZIP_u32)
FC_DEF_TPART(fc_tp16_u64, FC_N(n64), 2, 1, FC_NZIP_u64)
#undef FC_DEF_TPART

#if FC_PASS_WIDE
typedef uint8_t FC_N(w8) __attribute__((vector_size(32)));
typedef uint16_t FC_N(w16) __attribute__((vector_size(32)));
typedef uint32_t FC_N(w32) __attribute__((vector_size(32)));
typedef uint64_t FC_N(w64) __attribute__((vector_size(32)));

#define FC_WZIP_u8(a, b, lo, hi)                                              \
    do {                                                                      \
        lo = FC_SHUF(FC_N(w8), a, b, 0, 32, 1, 33, 2, 34, 3, 35, 4, 36, 5, 37, 6, 38, 7, 39, \
                     16, 48, 17, 49, 18, 50, 19, 51, 20, 52, 21, 53, 22, 54, 23, 55); \
        hi = FC_SHUF(FC_N(w8), a, b, 8, 40, 9, 41, 10, 42, 11, 43, 12, 44, 13, 45, 14, 46, \
                     15, 47, 24, 56, 25, 57, 26, 58, 27, 59, 28, 60, 29, 61, 30, 62, 31, \
                     63);                                                     \
    } while (0)
#define FC_WZIP_u16(a, b, lo, hi)                                             \
    do {                                                                      \
        lo = FC_SHUF(FC_N(w16), a, b, 0, 16, 1, 17, 2, 18, 3, 19, 8, 24, 9, 25, 10, 26, 11, \
                     27);                                                     \
        hi = FC_SHUF(FC_N(w16), a, b, 4, 20, 5, 21, 6, 22, 7, 23, 12, 28, 13, 29, 14, 30, \
                     15, 31);                                                 \
    } while (0)
#define FC_WZIP_u32(a, b, lo, hi)                                             \
    do {                                                                      \
        lo = FC_SHUF(FC_N(w32), a, b, 0, 8, 1, 9, 4, 12, 5, 13);              \
        hi = FC_SHUF(FC_N(w32), a, b, 2, 10, 3, 11, 6, 14, 7, 15);            \
    } while (0)
#define FC_WZIP_u64(a, b, lo, hi)                                             \
    do {                                                                      \
        lo = FC_SHUF(FC_N(w64), a, b, 0, 4, 2, 6);                            \
        hi = FC_SHUF(FC_N(w64), a, b, 1, 5, 3, 7);                            \
    } while (0)

FC_DEF_TBLOCK(fc_tb32_u8, FC_N(w8), 32, 16, 4, FC_WZIP_u8)
FC_DEF_TBLOCK(fc_tb32_u16, FC_N(w16), 32, 8, 3, FC_WZIP_u16)
FC_DEF_TBLOCK(fc_tb32_u32, FC_N(w32), 32, 4, 2, FC_WZIP_u32)
FC_DEF_TBLOCK(fc_tb32_u64, FC_N(w64), 32, 2, 1, FC_WZIP_u64)
#endif

/* Cache tile of the blocked transpose, in bytes of d and of s, by which
 * side has its rows far apart (measured; 256-row byte transposes, 6-64 MB):
 * with far src rows, few of them per tile and long pieces (the hardware
 * prefetchers follow a few dozen read streams, not hundreds); with far dst
 * rows, big tiles (written-to streams are cheap, write-backs stay whole). */
#define FC_BT_FAR_SRC_D 32
#define FC_BT_FAR_SRC_S 1024
#define FC_BT_FAR_DST_D 1024
#define FC_BT_FAR_DST_S 256

/* Ragged edges this many bytes wide or less (C = 17: one channel past the
 * last 16) go by the scalar loop: a ragged block costs a whole 16x16
 * transpose for them. */
#ifndef FC_BT_THIN
#define FC_BT_THIN 4
#endif

#define FC_BT_INNER(BLOCK, BS)                                                \
    for (Py_ssize_t s = s0; s < s1; s += (BS))                                \
        for (Py_ssize_t d = d0; d < d1; d += BD)                              \
            BLOCK(dst + d * E + s * dS, dS, src + d * sD + s * E, sD);
/* The last nD % BD rows of d for columns [s0, s1) of s: a ragged block per
 * BD columns, or, as thin as FC_BT_THIN bytes (C = 17), unit by unit. */
#define FC_BT_DEDGE(T, s0, s1)                                                \
    if ((nD - nDb) * E > FC_BT_THIN)                                          \
        for (Py_ssize_t s = (s0); s < (s1); s += BD)                          \
            FC_N(fc_tp16_##T)(dst + nDb * E + s * dS, dS, src + nDb * sD + s * E, sD, \
                              nD - nDb, 16, BD, (nD - nDb) * E);              \
    else                                                                      \
        for (Py_ssize_t d = nDb; d < nD; d++)                                 \
            for (Py_ssize_t s = (s0); s < (s1); s++)                          \
                FC_ST(T, dst + d * E + s * dS, FC_LD(T, src + d * sD + s * E));
/* Blocks of BD x BS units over d in [0, nDb), s in [sa, sb), tiled; each
 * tile of s with its edge rows of d, while its dst is still in cache (a
 * pass of its own over them cost as much as the blocks at C = 17): after
 * the blocks, or before them when the edge is stored wide (see `over`). */
#define FC_BT_LOOP(T, BLOCK, BS, sa, sb)                                      \
    for (Py_ssize_t s0 = (sa); s0 < (sb); s0 += TS) {                         \
        Py_ssize_t s1 = s0 + TS < (sb) ? s0 + TS : (sb);                      \
        if (wide_edge)                                                        \
            for (Py_ssize_t s = s0; s < s1; s += BD)                          \
                FC_N(fc_tp16_##T)(dst + nDb * E + s * dS, dS, src + nDb * sD + s * E, sD, \
                                  nD - nDb, 16, BD, s + BD < nS ? 16 : (nD - nDb) * E); \
        for (Py_ssize_t d0 = 0; d0 < nDb; d0 += TD) {                         \
            Py_ssize_t d1 = d0 + TD < nDb ? d0 + TD : nDb;                    \
            FC_BT_INNER(BLOCK, BS)                                            \
        }                                                                     \
        if (nDb < nD && !wide_edge) {                                         \
            FC_BT_DEDGE(T, s0, s1)                                            \
        }                                                                     \
    }

#if FC_PASS_WIDE
#define FC_BT_WIDE(T)                                                         \
    nSw = nS - nS % (32 / E);                                                 \
    FC_BT_LOOP(T, FC_N(fc_tb32_##T), 32 / E, 0, nSw)
#else
#define FC_BT_WIDE(T) nSw = 0;
#endif

/* over: a ragged row of d may be stored 16 bytes wide, its tail landing on
 * the first units of the next row of s (dst rows of s adjacent, e.g. NHWC
 * pixels of 255 bytes): each tile does its edge first, and the blocks (or
 * the next tile's, or the last columns') write those units after.  Two short
 * moves per row cost more than the one whole. */
#define FC_DEF_BT(T)                                                          \
    FC_NOINLINE void FC_N(fc_bt_x_##T)(char *dst, const char *src, Py_ssize_t nD, \
                                       Py_ssize_t sD, Py_ssize_t nS, Py_ssize_t dS, int over) \
    {                                                                         \
        const Py_ssize_t E = (Py_ssize_t)sizeof(fc_##T), BD = 16 / E;         \
        const int wide_edge = over && (nD % BD) * E > FC_BT_THIN;              \
        const Py_ssize_t TD = (sD >= dS ? FC_BT_FAR_SRC_D : FC_BT_FAR_DST_D) / E; \
        const Py_ssize_t TS = (sD >= dS ? FC_BT_FAR_SRC_S : FC_BT_FAR_DST_S) / E; \
        const Py_ssize_t nDb = nD - nD % BD, nSn = nS - nS % (16 / E);        \
        Py_ssize_t nSw;                                                       \
        FC_BT_WIDE(T)                                                         \
        FC_BT_LOOP(T, FC_N(fc_tb16_##T), 16 / E, nSw, nSn)                    \
        /* The last nS % (16 / E) columns of s for the whole blocks of d, as  \
         * ragged blocks; the corner of both edges by the scalar loop. */     \
        if ((nS - nSn) * E > FC_BT_THIN)                                      \
            for (Py_ssize_t d = 0; d < nDb; d += BD)                          \
                FC_N(fc_tp16_##T)(dst + d * E + nSn * dS, dS, src + d * sD + nSn * E, sD, \
                                  BD, (nS - nSn) * E, nS - nSn, 16);          \
        else                                                                  \
            fc_gen(E, dst + nSn * dS, src + nSn * E, nDb, E, sD, nS - nSn, dS, E); \
        fc_gen(E, dst + nDb * E + nSn * dS, src + nDb * sD + nSn * E, nD - nDb, E, sD, \
               nS - nSn, dS, E);                                              \
    }                                                                         \
    FC_NOINLINE void FC_N(fc_bt_##T)(char *dst, const char *src, Py_ssize_t nD, Py_ssize_t sD, \
                                     Py_ssize_t nS, Py_ssize_t dS)            \
    {                                                                         \
        const Py_ssize_t E = (Py_ssize_t)sizeof(fc_##T);                      \
        FC_N(fc_bt_x_##T)(dst, src, nD, sD, nS, dS, dS == nD * E && nD >= 16 / E); \
    }
FC_DEF_BT(u8)
FC_DEF_BT(u16)
FC_DEF_BT(u32)
FC_DEF_BT(u64)

#if FC_PASS_WIDE
/* A tall block: 32 bytes of d (32 / E src rows of 16 bytes), rows i and
 * i + R side by side in one register, so the rounds leave dst row i's 32
 * bytes whole in r[i]: one 32-byte store per dst row where the wide block
 * stores two 16-byte halves to two rows. */
#define FC_DEF_TTALL(T, V, R, ROUNDS, ZIP)                                    \
    FC_INLINE void FC_N(fc_tt32_##T)(char *FC_RESTRICT dst, Py_ssize_t dS,    \
                                     const char *FC_RESTRICT src, Py_ssize_t sD) \
    {                                                                         \
        V r[R], t[R];                                                         \
        int i;                                                                \
        for (i = 0; i < R; i++) {                                             \
            __m256i v = _mm256_castsi128_si256(                               \
                _mm_loadu_si128((const __m128i *)(const void *)(src + i * sD))); \
            v = _mm256_inserti128_si256(                                      \
                v, _mm_loadu_si128((const __m128i *)(const void *)(src + (i + R) * sD)), 1); \
            r[i] = (V)v;                                                      \
        }                                                                     \
        FC_ZIP_ROUNDS(r, t, R, ROUNDS, ZIP);                                  \
        for (i = 0; i < R; i++)                                               \
            memcpy(dst + i * dS, &r[i], 32);                                  \
    }

/* Transpose with its src rows far apart (planes into pixels): tall blocks
 * over the whole 32-byte groups of d and the whole 16-byte columns of s; the
 * rest by the wide / narrow blocks and their edges, the last rows of d tile
 * by tile, before the tall blocks (so a ragged row may be stored wide, see
 * `over`).  With the dst rows far apart (pixels into planes) the wide blocks
 * measured faster, so the table has both. */
#define FC_DEF_BT_TALL(T)                                                     \
    FC_NOINLINE void FC_N(fc_bt_tall_##T)(char *dst, const char *src, Py_ssize_t nD, \
                                          Py_ssize_t sD, Py_ssize_t nS, Py_ssize_t dS) \
    {                                                                         \
        const Py_ssize_t E = (Py_ssize_t)sizeof(fc_##T), DB = 32 / E, SB = 16 / E; \
        const Py_ssize_t nDt = nD - nD % DB, nSn = nS - nS % SB;              \
        const Py_ssize_t TD = FC_BT_FAR_SRC_D / E, TS = FC_BT_FAR_SRC_S / E;  \
        const int over = dS == nD * E;                                        \
        if (nDt == 0) {                                                       \
            FC_N(fc_bt_##T)(dst, src, nD, sD, nS, dS);                        \
            return;                                                           \
        }                                                                     \
        for (Py_ssize_t s0 = 0; s0 < nSn; s0 += TS) {                         \
            Py_ssize_t s1 = s0 + TS < nSn ? s0 + TS : nSn;                    \
            if (nDt < nD)                                                     \
                FC_N(fc_bt_x_##T)(dst + nDt * E + s0 * dS, src + nDt * sD + s0 * E, \
                                  nD - nDt, sD, s1 - s0, dS, over);           \
            for (Py_ssize_t d0 = 0; d0 < nDt; d0 += TD) {                     \
                Py_ssize_t d1 = d0 + TD < nDt ? d0 + TD : nDt;                \
                for (Py_ssize_t s = s0; s < s1; s += SB)                      \
                    for (Py_ssize_t d = d0; d < d1; d += DB)                  \
                        FC_N(fc_tt32_##T)(dst + d * E + s * dS, dS, src + d * sD + s * E, sD); \
            }                                                                 \
        }                                                                     \
        if (nSn < nS)                                                         \
            FC_N(fc_bt_##T)(dst + nSn * dS, src + nSn * E, nD, sD, nS - nSn, dS); \
    }
FC_DEF_TTALL(u8, FC_N(w8), 16, 4, FC_WZIP_u8)
FC_DEF_TTALL(u16, FC_N(w16), 8, 3, FC_WZIP_u16)
FC_DEF_BT_TALL(u8)
FC_DEF_BT_TALL(u16)
#undef FC_DEF_TTALL
#undef FC_DEF_BT_TALL
#define FC_BT_FAR_SRC_U8 fc_bt_tall_u8
#define FC_BT_FAR_SRC_U16 fc_bt_tall_u16
#else
#define FC_BT_FAR_SRC_U8 fc_bt_u8
#define FC_BT_FAR_SRC_U16 fc_bt_u16
#endif

#undef FC_SHUF
#undef FC_NZIP_u8
#undef FC_NZIP_u16
#undef FC_NZIP_u32
#undef FC_NZIP_u64
#undef FC_WZIP_u8
#undef FC_WZIP_u16
#undef FC_WZIP_u32
#undef FC_WZIP_u64
#undef FC_DEF_TBLOCK
#undef FC_BT_LOOP
#undef FC_BT_INNER
#undef FC_BT_DEDGE
#undef FC_BT_WIDE
#undef FC_DEF_BT
#else
#define FC_HAVE_BT 0
#endif /* FC_GNU */


/* ------------------------------------------------------ blocked byte planes */
/* B = 4 or 8: eight values a step, their low and high bytes gathered by one
 * byte shuffle into [4 first | 4 second | 4 first | 4 second] (B = 4) or
 * [8 first | 8 second], one 16-byte move.  B a multiple of 16: sixteen values
 * a step, 16 first-slot bytes to the block's first half, 16 second-slot bytes
 * to its second.  The scalar loop takes partial blocks and other B. */
#if FC_GNU && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define FC_HAVE_BLK 1
#if defined(__clang__)
#define FC_BSHUF(V, a, b, ...) __builtin_shufflevector((a), (b), __VA_ARGS__)
#else
#define FC_BSHUF(V, a, b, ...) __builtin_shuffle((a), (b), (V){__VA_ARGS__})
#endif

/* Eight values -> (first-slot bytes, second-slot bytes), each in the low
 * byte of a 16-bit lane, the high byte zero. */
FC_INLINE void
FC_N(fc_blk_bytes)(FC_N(n16) a, int mode, int swap, FC_N(n16) *first, FC_N(n16) *second)
{
    const FC_N(n16) m7f = {0x7F, 0x7F, 0x7F, 0x7F, 0x7F, 0x7F, 0x7F, 0x7F};
    const FC_N(n16) mfe = {0xFE, 0xFE, 0xFE, 0xFE, 0xFE, 0xFE, 0xFE, 0xFE};
    const FC_N(n16) mff = {0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF};
    FC_N(n16) lo = mode == 1 ? (a >> 1) & m7f : a & (mode == 2 ? mfe : mff), hi = a >> 8;
    *first = swap ? hi : lo;
    *second = swap ? lo : hi;
}

/* Value bytes (low | high << 8, as the slots hold them) -> values. */
FC_INLINE FC_N(n16)
FC_N(fc_blk_value)(FC_N(n8) x, int mode, int swap)
{
    const FC_N(n16) m7f = {0x7F, 0x7F, 0x7F, 0x7F, 0x7F, 0x7F, 0x7F, 0x7F};
    const FC_N(n16) mhi = {0xFF00, 0xFF00, 0xFF00, 0xFF00, 0xFF00, 0xFF00, 0xFF00, 0xFF00};
    const FC_N(n16) mfe = {0xFFFE, 0xFFFE, 0xFFFE, 0xFFFE, 0xFFFE, 0xFFFE, 0xFFFE, 0xFFFE};
    FC_N(n16) a = (FC_N(n16))x;
    if (swap)
        a = (a >> 8) | (a << 8);
    if (mode == 1)
        a = ((a & m7f) << 1) | (a & mhi);
    else if (mode == 2)
        a &= mfe;
    return a;
}

/* The low bytes of sixteen 16-bit lanes, each at most 0xFF: on x86 one pack
 * with unsigned saturation (SSE2 has no byte shuffle, and gcc spells the
 * general one as several). */
FC_INLINE FC_N(n8)
FC_N(fc_blk_even)(FC_N(n16) a, FC_N(n16) b)
{
#if defined(__x86_64__) || defined(__i386__)
    typedef short FC_N(s16) __attribute__((vector_size(16)));
    return (FC_N(n8))__builtin_ia32_packuswb128((FC_N(s16))a, (FC_N(s16))b);
#else
    return FC_BSHUF(FC_N(n8), (FC_N(n8))a, (FC_N(n8))b, 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20,
                    22, 24, 26, 28, 30);
#endif
}

/* One whole block of B (a multiple of 16) values, sixteen a step; a split
 * takes values from m on as zero (the block's bytes for them zero). */
FC_INLINE void
FC_N(fc_blk16)(uint16_t *vk, uint8_t *at, Py_ssize_t B, int mode, int swap, int join,
               Py_ssize_t m)
{
    Py_ssize_t j;
    FC_N(n16) a, c, f0, s0, f1, s1;
    FC_N(n8) x, y;
    const FC_N(n16) lane = {0, 1, 2, 3, 4, 5, 6, 7};
    for (j = 0; j < B; j += 16) {
        if (join) {
            memcpy(&x, at + j, 16);
            memcpy(&y, at + B + j, 16);
            a = FC_N(fc_blk_value)(FC_BSHUF(FC_N(n8), x, y, 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5,
                                            21, 6, 22, 7, 23),
                                   mode, swap);
            c = FC_N(fc_blk_value)(FC_BSHUF(FC_N(n8), x, y, 8, 24, 9, 25, 10, 26, 11, 27, 12, 28,
                                            13, 29, 14, 30, 15, 31),
                                   mode, swap);
            memcpy(vk + j, &a, 16);
            memcpy(vk + j + 8, &c, 16);
            continue;
        }
        memcpy(&a, vk + j, 16);
        memcpy(&c, vk + j + 8, 16);
        if (m < B) {
            FC_N(n16) mj = (FC_N(n16)){0, 0, 0, 0, 0, 0, 0, 0} + (uint16_t)(m > j ? m - j : 0);
            FC_N(n16) mj8 = (FC_N(n16)){0, 0, 0, 0, 0, 0, 0, 0} +
                            (uint16_t)(m > j + 8 ? m - j - 8 : 0);
            a &= (FC_N(n16))(lane < mj);
            c &= (FC_N(n16))(lane < mj8);
        }
        FC_N(fc_blk_bytes)(a, mode, swap, &f0, &s0);
        FC_N(fc_blk_bytes)(c, mode, swap, &f1, &s1);
        x = FC_N(fc_blk_even)(f0, f1);
        y = FC_N(fc_blk_even)(s0, s1);
        memcpy(at + j, &x, 16);
        memcpy(at + B + j, &y, 16);
    }
}

/* Largest B whose partial block goes through a local whole one. */
#define FC_BLK_LOCAL 256

FC_INLINE void
FC_N(fc_blk_body)(uint16_t *values, uint8_t *blocks, Py_ssize_t rows, Py_ssize_t n,
                  Py_ssize_t B, int mode, int swap, int join)
{
    Py_ssize_t r, i, k, nb = (n + B - 1) / B, whole = n / B, done;
    if (B != 4 && B != 8 && B % 16 != 0) {
        fc_blk_scalar(values, blocks, rows, n, B, mode, swap, join, 0);
        return;
    }
    /* values in the blocks the vector steps take (B = 4 with an odd count of
     * whole blocks: the last one scalar) */
    done = B == 4 ? (whole & ~(Py_ssize_t)1) * 4 : whole * B;
    for (r = 0; r < rows; r++) {
        uint16_t *v = values + r * n;
        uint8_t *b = blocks + r * nb * 2 * B;
        FC_N(n16) a, f0, s0;
        FC_N(n8) x;
        if (B <= 8) {
            for (i = 0; i < done; i += 8) {
                if (join) {
                    memcpy(&x, b + 2 * i, 16);
                    if (B == 4)
                        x = FC_BSHUF(FC_N(n8), x, x, 0, 4, 1, 5, 2, 6, 3, 7, 8, 12, 9, 13, 10, 14,
                                     11, 15);
                    else
                        x = FC_BSHUF(FC_N(n8), x, x, 0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6,
                                     14, 7, 15);
                    a = FC_N(fc_blk_value)(x, mode, swap);
                    memcpy(v + i, &a, 16);
                    continue;
                }
                memcpy(&a, v + i, 16);
                FC_N(fc_blk_bytes)(a, mode, swap, &f0, &s0);
                if (B == 4)
                    x = FC_BSHUF(FC_N(n8), (FC_N(n8))f0, (FC_N(n8))s0, 0, 2, 4, 6, 16, 18, 20,
                                 22, 8, 10, 12, 14, 24, 26, 28, 30);
                else
                    x = FC_BSHUF(FC_N(n8), (FC_N(n8))f0, (FC_N(n8))s0, 0, 2, 4, 6, 8, 10, 12,
                                 14, 16, 18, 20, 22, 24, 26, 28, 30);
                memcpy(b + 2 * i, &x, 16);
            }
        }
        else {
            for (k = 0; k < whole; k++)
                FC_N(fc_blk16)(v + k * B, b + k * 2 * B, B, mode, swap, join, B);
            if (whole < nb && (rows - r) * n - whole * B >= B) {
                /* a partial block, not the array's last: a whole-block step over the
                 * next row's first values.  A split zeroes them first (zero values are
                 * zero bytes in every mode, and the unused bytes must be zero); a join
                 * writes over them, and the next row's step writes them again. */
                FC_N(fc_blk16)(v + whole * B, b + whole * 2 * B, B, mode, swap, join,
                               n - whole * B);
                continue;
            }
            if (whole < nb && B <= FC_BLK_LOCAL) {
                /* the array's last partial block: through a local whole one */
                uint16_t local[FC_BLK_LOCAL];
                Py_ssize_t m = n - whole * B;
                uint8_t *at = b + whole * 2 * B;
                if (join) {
                    FC_N(fc_blk16)(local, at, B, mode, swap, 1, B);
                    memcpy(v + whole * B, local, (size_t)m * 2);
                }
                else {
                    memcpy(local, v + whole * B, (size_t)m * 2);
                    memset(local + m, 0, (size_t)(B - m) * 2);
                    FC_N(fc_blk16)(local, at, B, mode, swap, 0, B);
                }
                continue;
            }
        }
        if (done < n)
            fc_blk_scalar(v, b, 1, n, B, mode, swap, join, done);
    }
}

/* One copy of the loops per (mode, swap, join): with them constant the
 * per-vector selects fold away. */
#define FC_BLK_CASE(M, S, J)                                                  \
    case M * 4 + S * 2 + J:                                                   \
        FC_N(fc_blk_body)(values, blocks, rows, n, B, M, S, J);               \
        return;

static void
FC_N(fc_blk)(uint16_t *values, uint8_t *blocks, Py_ssize_t rows, Py_ssize_t n, Py_ssize_t B,
             int mode, int swap, int join)
{
    switch ((mode < 0 || mode > 2 ? 3 : mode) * 4 + (swap != 0) * 2 + (join != 0)) {
        FC_BLK_CASE(0, 0, 0)
        FC_BLK_CASE(0, 0, 1)
        FC_BLK_CASE(0, 1, 0)
        FC_BLK_CASE(0, 1, 1)
        FC_BLK_CASE(1, 0, 0)
        FC_BLK_CASE(1, 0, 1)
        FC_BLK_CASE(1, 1, 0)
        FC_BLK_CASE(1, 1, 1)
        FC_BLK_CASE(2, 0, 0)
        FC_BLK_CASE(2, 0, 1)
        FC_BLK_CASE(2, 1, 0)
        FC_BLK_CASE(2, 1, 1)
    default:
        FC_N(fc_blk_body)(values, blocks, rows, n, B, mode, swap, join);
        return;
    }
}
#undef FC_BLK_CASE

static void
FC_N(fc_split_blk)(uint16_t *values, uint8_t *blocks, Py_ssize_t rows, Py_ssize_t n,
                   Py_ssize_t B, int mode, int swap)
{
    FC_N(fc_blk)(values, blocks, rows, n, B, mode, swap, 0);
}

static void
FC_N(fc_join_blk)(uint16_t *values, uint8_t *blocks, Py_ssize_t rows, Py_ssize_t n,
                  Py_ssize_t B, int mode, int swap)
{
    FC_N(fc_blk)(values, blocks, rows, n, B, mode, swap, 1);
}
#undef FC_BSHUF
#undef FC_BLK_LOCAL
#else
#define FC_HAVE_BLK 0
#endif

/* ------------------------------------------------------- small-unit rows */
/* W <= E <= 2W bytes by two overlapping moves of W, both loaded before either
 * is stored (a broadcast src may be read for every unit).  A memcpy call per
 * unit of a few dozen bytes costs more than the move: rows of 41 bytes (KL730
 * 16W1C8B at odd W) and 7-byte row tails cleared one by one. */
#define FC_ROW_PAIR(W)                                                        \
    for (Py_ssize_t i = 0; i < n; i++) {                                      \
        char a[W], b[W];                                                      \
        memcpy(a, src + i * ss, W);                                           \
        memcpy(b, src + i * ss + E - W, W);                                   \
        memcpy(dst + i * ds, a, W);                                           \
        memcpy(dst + i * ds + E - W, b, W);                                   \
    }

static void
FC_N(fc_row_small)(char *FC_RESTRICT dst, const char *FC_RESTRICT src, Py_ssize_t E,
                   Py_ssize_t n, Py_ssize_t ds, Py_ssize_t ss)
{
    if (E < 4)
        FC_ROW_PAIR(2)
    else if (E < 8)
        FC_ROW_PAIR(4)
    else if (E < 16)
        FC_ROW_PAIR(8)
    else if (E < 32)
        FC_ROW_PAIR(16)
    else if (E < 64)
        FC_ROW_PAIR(32)
    else
        FC_ROW_PAIR(64)
}
#undef FC_ROW_PAIR

static const fc_isa FC_N(fc_isa) = {
    FC_PASS_NAME,
    FC_PASS_MASKED,
    {FC_N(fc_il_u8), FC_N(fc_il_u16), FC_N(fc_il_u32), FC_N(fc_il_u64)},
    {FC_N(fc_dil_u8), FC_N(fc_dil_u16), FC_N(fc_dil_u32), FC_N(fc_dil_u64)},
#if FC_HAVE_BT
    {FC_N(fc_bt_u8), FC_N(fc_bt_u16), FC_N(fc_bt_u32), FC_N(fc_bt_u64)},
    {FC_N(FC_BT_FAR_SRC_U8), FC_N(FC_BT_FAR_SRC_U16)},
#else
    {NULL, NULL, NULL, NULL},
    {NULL, NULL},
#endif
#if FC_HAVE_BLK
    FC_N(fc_split_blk),
    FC_N(fc_join_blk),
#else
    fc_split_blk_plain,
    fc_join_blk_plain,
#endif
    FC_N(fc_row_small),
};

#undef FC_HAVE_BT
#undef FC_HAVE_BLK
#undef FC_BT_FAR_SRC_U8
#undef FC_BT_FAR_SRC_U16
#undef FC_N

#endif /* FC_KERNEL_PASS */
