// Template of the image path's C, appended to c_source by kairo.logic.backends._cimages
// (string.Template: ${name} is filled in there). These // lines are not copied.

/* ------------------------------------------------------------------ uint8 images -> classes
 *
 *   int kairo_predict_images(const uint8_t *img, int32_t *pred, size_t n_images);
 *
 * img: n_images x ${n_pixels} uint8 pixels, row-major. Input k * ${n_pixels} + p of the circuit is
 * pixel p > threshold k, thresholds {${thresholds}} (threshold-major). Writes the first class
 * with the most votes of every image to pred. Returns 0, or -1 when malloc fails.
 * Single-threaded; one block of ${width} images at a time.
 */
#if defined(__AVX512BW__) || defined(__AVX2__)
#include <immintrin.h>
#endif
#define KAIRO_N_PIXELS ${n_pixels}
#define KAIRO_N_THRESH ${n_thresholds}
#define KAIRO_VOTE_BITS ${vote_bits}
#define KAIRO_CLASS_BITS ${class_bits}
#define KAIRO_VOTE __attribute__((noinline))

#if !defined(__AVX512BW__) && defined(__AVX2__)
/* x > t for unsigned bytes via the signed compare: flip the top bit of both sides */
static inline uint64_t kairo_gt_avx2(__m256i lo, __m256i hi, int t)
{
    const __m256i tv = _mm256_set1_epi8((char)(t ^ 0x80));
    const uint32_t a = (uint32_t)_mm256_movemask_epi8(_mm256_cmpgt_epi8(lo, tv));
    const uint32_t b = (uint32_t)_mm256_movemask_epi8(_mm256_cmpgt_epi8(hi, tv));
    return a | (uint64_t)b << 32;
}
#endif

#if !defined(__AVX512BW__) && !defined(__AVX2__)
static inline uint64_t kairo_gt_scalar(const uint8_t *p, size_t w, int t)
{
    uint64_t m = 0;
    for (size_t j = 0; j < w; ++j)
        m |= (uint64_t)(p[j] > t) << j;
    return m;
}
#endif

/* m[64 * k]: bit j = pixel p[j] > threshold k, for the w (<= 64) pixels at p. */
static inline void kairo_px_masks(const uint8_t *p, size_t w, uint64_t *m)
{
#if defined(__AVX512BW__)
    const __m512i v = w == 64 ? _mm512_loadu_si512((const void *)p)
                              : _mm512_maskz_loadu_epi8((__mmask64)((1ull << w) - 1), p);
#define KAIRO_GT(t) ((uint64_t)_mm512_cmpgt_epu8_mask(v, _mm512_set1_epi8((char)(t))))
#elif defined(__AVX2__)
    uint8_t buf[64];
    if (w < 64) {
        memset(buf, 0, sizeof buf);
        memcpy(buf, p, w);
        p = buf;
    }
    const __m256i top = _mm256_set1_epi8((char)0x80);
    const __m256i lo = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)p), top);
    const __m256i hi = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(p + 32)), top);
#define KAIRO_GT(t) kairo_gt_avx2(lo, hi, (t))
#else
#define KAIRO_GT(t) kairo_gt_scalar(p, w, (t))
#endif
${threshold_masks}
#undef KAIRO_GT
}

#if defined(__AVX512F__)
/* kairo_transpose64 with AVX-512: the 64 words in 8 registers of 8; swapping bit j of the
 * row and column index is one "delta swap" per pair of words k, k | j (the six swaps
 * commute). For j = 32, 16, 8 the pair is in two registers, for j = 4, 2, 1 in one, whose
 * lanes are permuted to meet their partners. */
#define KAIRO_XSWAP(A, B, J, M) do {                                                     \
        const __m512i t_ = _mm512_and_si512(_mm512_xor_si512(_mm512_srli_epi64(A, J), B), \
                                            _mm512_set1_epi64((long long)(M)));          \
        A = _mm512_xor_si512(A, _mm512_slli_epi64(t_, J));                              \
        B = _mm512_xor_si512(B, t_);                                                     \
    } while (0)
#define KAIRO_ISWAP(A, J, M, PERM, HI) do {                                              \
        const __m512i s_ = PERM(A);                                                      \
        const __m512i t_ = _mm512_and_si512(_mm512_xor_si512(_mm512_srli_epi64(A, J), s_),\
                                            _mm512_set1_epi64((long long)(M)));          \
        A = _mm512_mask_xor_epi64(_mm512_xor_si512(A, _mm512_slli_epi64(t_, J)), HI, A,  \
                                  PERM(t_));                                             \
    } while (0)
#define KAIRO_P4(x) _mm512_shuffle_i64x2(x, x, 0x4e)     /* word k <-> k ^ 4 */
#define KAIRO_P2(x) _mm512_permutex_epi64(x, 0x4e)        /* word k <-> k ^ 2 */
#define KAIRO_P1(x) _mm512_shuffle_epi32(x, 0x4e)         /* word k <-> k ^ 1 */
static inline void kairo_transpose64_fast(uint64_t a[64])
{
    __m512i r[8];
    for (int i = 0; i < 8; ++i)
        r[i] = _mm512_loadu_si512((const void *)(a + 8 * i));
    for (int i = 0; i < 4; ++i)
        KAIRO_XSWAP(r[i], r[i + 4], 32, 0x00000000FFFFFFFFull);
    for (int i = 0; i < 8; i += (i & 1) ? 3 : 1)                      /* 0, 1, 4, 5 */
        KAIRO_XSWAP(r[i], r[i + 2], 16, 0x0000FFFF0000FFFFull);
    for (int i = 0; i < 8; i += 2)
        KAIRO_XSWAP(r[i], r[i + 1], 8, 0x00FF00FF00FF00FFull);
    for (int i = 0; i < 8; ++i) {
        KAIRO_ISWAP(r[i], 4, 0x0F0F0F0F0F0F0F0Full, KAIRO_P4, 0xF0);
        KAIRO_ISWAP(r[i], 2, 0x3333333333333333ull, KAIRO_P2, 0xCC);
        KAIRO_ISWAP(r[i], 1, 0x5555555555555555ull, KAIRO_P1, 0xAA);
    }
    for (int i = 0; i < 8; ++i)
        _mm512_storeu_si512((void *)(a + 8 * i), r[i]);
}
#else
#define kairo_transpose64_fast kairo_transpose64
#endif

#define KAIRO_N_CHUNKS_PX ((KAIRO_N_PIXELS + 63) / 64)
#define KAIRO_PX_TAIL (KAIRO_N_PIXELS - 64 * (KAIRO_N_CHUNKS_PX - 1))   /* 1 … 64 */

/* Threshold the ns (<= 64) images at img and transpose them into lane `lane` of the input
 * block x: x[i * KAIRO_LANES + lane] bit r = input i of image r. Each image is read once,
 * front to back (t[chunk][threshold][image] holds the masks), then the tiles transposed. */
static void kairo_image_lane(const uint8_t *img, size_t ns, uint64_t *restrict x, size_t lane)
{
    static _Thread_local uint64_t t[KAIRO_N_CHUNKS_PX][KAIRO_N_THRESH][64]
        __attribute__((aligned(64)));
    for (size_t r = 0; r < 64; ++r) {
        if (r < ns) {
            const uint8_t *p = img + r * KAIRO_N_PIXELS;
            for (size_t c = 0; c + 1 < KAIRO_N_CHUNKS_PX; ++c)
                kairo_px_masks(p + 64 * c, 64, &t[c][0][r]);
            kairo_px_masks(p + 64 * (KAIRO_N_CHUNKS_PX - 1), KAIRO_PX_TAIL,
                           &t[KAIRO_N_CHUNKS_PX - 1][0][r]);
        } else {
            for (size_t c = 0; c < KAIRO_N_CHUNKS_PX; ++c)
                for (size_t k = 0; k < KAIRO_N_THRESH; ++k)
                    t[c][k][r] = 0;
        }
    }
    for (size_t c = 0; c < KAIRO_N_CHUNKS_PX; ++c) {
        const size_t w = c + 1 < KAIRO_N_CHUNKS_PX ? 64 : KAIRO_PX_TAIL;
        for (size_t k = 0; k < KAIRO_N_THRESH; ++k) {
            kairo_transpose64_fast(t[c][k]);  /* t[c][k][j]: bit r = pixel 64c + j of image r */
            uint64_t *dst = x + (k * KAIRO_N_PIXELS + 64 * c) * KAIRO_LANES + lane;
            for (size_t j = 0; j < w; ++j)
                dst[j * KAIRO_LANES] = t[c][k][j];
        }
    }
}

${vote_functions}
static void kairo_votes(const uint64_t *restrict y, W *restrict acc)
{
${vote_calls}
}

${argmax_function}
/* Class of each of the ns (<= KAIRO_WIDTH) samples of a block from the index bit-planes. */
static void kairo_write_classes(const W *idx, int32_t *pred, size_t ns)
{
    uint64_t w[KAIRO_CLASS_BITS][KAIRO_LANES];
    memcpy(w, idx, sizeof w);
    for (size_t s = 0; s < ns; ++s) {
        int32_t cl = 0;
        for (size_t b = 0; b < KAIRO_CLASS_BITS; ++b)
            cl |= (int32_t)((w[b][s >> 6] >> (s & 63)) & 1u) << b;
        pred[s] = cl;
    }
}

static size_t kairo_round64(size_t n) { return (n + 63) / 64 * 64; }

int kairo_predict_images(const uint8_t *img, int32_t *pred, size_t n_images)
{
    uint64_t *x = aligned_alloc(64, kairo_round64(8 * (size_t)KAIRO_N_INPUTS * KAIRO_LANES));
    uint64_t *y = aligned_alloc(64, kairo_round64(8 * (size_t)KAIRO_N_OUTPUTS * KAIRO_LANES));
    W *acc = aligned_alloc(64, kairo_round64(sizeof(W) * KAIRO_N_CLASSES * KAIRO_VOTE_BITS));
    W *idx = aligned_alloc(64, kairo_round64(sizeof(W) * KAIRO_CLASS_BITS));
    W *v = kairo_scratch();
    int rc = -1;
    if (!x || !y || !acc || !idx || !v)
        goto done;
    for (size_t s0 = 0; s0 < n_images; s0 += KAIRO_WIDTH) {
        const size_t nb = n_images - s0 < KAIRO_WIDTH ? n_images - s0 : KAIRO_WIDTH;
        for (size_t lane = 0; lane < KAIRO_LANES; ++lane) {
            const size_t first = lane * 64;
            const size_t ns = nb <= first ? 0 : nb - first < 64 ? nb - first : 64;
            kairo_image_lane(ns ? img + (s0 + first) * KAIRO_N_PIXELS : img, ns, x, lane);
        }
        kairo_block(x, y, v);
        kairo_votes(y, acc);
        kairo_argmax(acc, idx);
        kairo_write_classes(idx, pred + s0, nb);
    }
    rc = 0;
done:
    free(x);
    free(y);
    free(acc);
    free(idx);
    free(v);
    return rc;
}
