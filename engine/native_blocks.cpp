// A GGUF file's Q4_0, Q4_1 and Q8_0 blocks times float32 inputs, read where they lie (AVX2).
//
// Built on first use by engine/native_blocks.py (torch.utils.cpp_extension); torch's own int
// kernels are the fallback wherever it cannot be built.  Each input row is rounded to int16 per
// 32-weight block (scale = the block's max |x| / 32767, so 2^-16 of that max at worst), then each
// block's codes multiply it in integers (_mm256_madd_epi16) and the block's scale d and zero z
// are applied in float32:
//
//   sum_j x_j (d q_j + z) = d dx sum_j q_j xq_j + z sum_j x_j        (Q4_1: z = m; Q4_0: z = -8 d)
//   sum_j x_j d q_j       = d dx sum_j q_j xq_j                      (Q8_0, q centred)
//
// Block layouts are ggml's: Q4_0 {f16 d; u8 qs[16]}, Q4_1 {f16 d; f16 m; u8 qs[16]},
// Q8_0 {f16 d; i8 qs[32]}; a Q4 block's weight j < 16 is the low nibble of qs[j], weight j + 16
// its high nibble.  `defects` plants the engine's faults (engine/faults.py) into this path too, so
// a contract's mutant reaches whichever kernel runs.

#include <ATen/Parallel.h>
#include <immintrin.h>
#include <torch/extension.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

namespace {

enum Kind : int64_t { Q4_0 = 0, Q4_1 = 1, Q8_0 = 2 };
enum Defect : int64_t { HALVES_SWAPPED = 1, ZERO_OFF_BY_8 = 2, SCALES_SHIFTED = 4, SCALES_TRANSPOSED = 8, KEY_UNROTATED = 16 };
constexpr int64_t TILE = 4;  // input rows multiplied per pass over a weight row

inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_hadd_ps(s, s);
  s = _mm_hadd_ps(s, s);
  return _mm_cvtss_f32(s);
}

struct Block {
  __m256i w0, w1;  // the 32 codes as int16
  __m128 dz;       // lanes 0 and 1: the block's scale d and zero z (Q4_0: -8 d; Q8_0: 0)
};

inline __m128 halves(const uint8_t* p, int count) {  // `count` (1 or 2) float16 fields as float32 lanes
  uint32_t bits = 0;
  std::memcpy(&bits, p, count * 2);
  return _mm_cvtph_ps(_mm_cvtsi32_si128(static_cast<int>(bits)));
}

struct Matrix {
  const uint8_t* raw;
  int64_t n, groups, block_bytes, defects;
};

// block g of weight row `row`; KIND and whether any defect is planted are fixed at compile time, so
// the loop over blocks carries no branch on either
template <int64_t KIND, bool DEFECTS>
inline Block decode(const Matrix& w, int64_t row, int64_t g) {
  const uint8_t* first = w.raw + row * w.groups * w.block_bytes;
  const uint8_t* codes = first + g * w.block_bytes;
  const uint8_t* scale = codes;
  if (DEFECTS && (w.defects & SCALES_SHIFTED)) scale = first + ((g + 1) % w.groups) * w.block_bytes;
  if (DEFECTS && (w.defects & SCALES_TRANSPOSED)) {
    const int64_t flat = g * w.n + row;  // the scale pairs taken in the file's row order
    scale = w.raw + (flat / w.groups) * w.groups * w.block_bytes + (flat % w.groups) * w.block_bytes;
  }
  Block b;
  if (KIND == Q8_0) {
    b.dz = halves(scale, 1);
    b.w0 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(codes + 2)));
    b.w1 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(codes + 18)));
    return b;
  }
  if (KIND == Q4_1) {
    b.dz = halves(scale, 2);
  } else {
    const __m128 d = halves(scale, 1);
    b.dz = _mm_unpacklo_ps(d, _mm_mul_ss(d, _mm_set_ss(-8.0f)));
  }
  if (DEFECTS && (w.defects & ZERO_OFF_BY_8) && KIND == Q4_1) {
    const float d = _mm_cvtss_f32(b.dz), z = _mm_cvtss_f32(_mm_shuffle_ps(b.dz, b.dz, 1));
    b.dz = _mm_setr_ps(d, z - 8 * d, 0, 0);
  }
  // the 16 bytes widened to int16: each lane's low nibble is weight j, the next four bits weight j + 16
  const __m256i q = _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(codes + (KIND == Q4_1 ? 4 : 2))));
  b.w0 = _mm256_and_si256(q, _mm256_set1_epi16(0x0F));
  b.w1 = _mm256_srli_epi16(q, 4);
  if (DEFECTS && (w.defects & HALVES_SWAPPED)) std::swap(b.w0, b.w1);
  return b;
}

// One input row as int16 blocks, with each block's scale and plain sum.  A block holding a NaN or
// an infinity keeps codes of 0 and a NaN scale, so every output it reaches is NaN (a cast of NaN
// to int16 would be undefined).
struct Input {
  std::vector<int16_t> q;
  std::vector<float> pairs;  // per block: its scale and its plain sum, then two zeros (one __m128)

  Input(const float* x, int64_t k) : q(k, 0), pairs(k / 32 * 4, 0.0f) {
    for (int64_t g = 0; g < k / 32; ++g) {
      const float* xb = x + g * 32;
      float amax = 0, s = 0;
      for (int j = 0; j < 32; ++j) {
        amax = std::max(amax, std::abs(xb[j]));
        s += xb[j];
      }
      pairs[g * 4 + 1] = s;
      if (!std::isfinite(s) || !std::isfinite(amax)) {  // std::max drops a NaN; the sum keeps it
        pairs[g * 4] = NAN;
        continue;
      }
      const float inv = amax > 0 ? 32767.0f / amax : 0.0f;
      for (int j = 0; j < 32; ++j) q[g * 32 + j] = static_cast<int16_t>(std::nearbyint(xb[j] * inv));
      pairs[g * 4] = amax / 32767.0f;
    }
  }
};

// a batch of one input row
inline std::vector<Input> one_row(const float* x, int64_t k) {
  std::vector<Input> in;
  in.emplace_back(x, k);
  return in;
}

inline __m256 dot(const Block& b, const int16_t* xq) {
  const __m256i s = _mm256_add_epi32(
      _mm256_madd_epi16(b.w0, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq))),
      _mm256_madd_epi16(b.w1, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq + 16))));
  return _mm256_cvtepi32_ps(s);
}

// d dx (lane 0) and z sum (lane 1) of one block and one input row
inline __m128 factors(const Block& b, const Input& x, int64_t g) {
  return _mm_mul_ps(b.dz, _mm_loadu_ps(x.pairs.data() + g * 4));
}

template <int64_t T>
inline void step(const Block& b, const std::vector<Input>& in, int64_t m0, int64_t g, __m256 (&acc)[T],
                 __m128 (&zacc)[T]) {
  for (int64_t t = 0; t < T; ++t) {
    const Input& x = in[m0 + t];
    const __m128 f = factors(b, x, g);
    acc[t] = _mm256_fmadd_ps(_mm256_broadcastss_ps(f), dot(b, x.q.data() + g * 32), acc[t]);
    zacc[t] = _mm_add_ps(zacc[t], f);  // lane 1 sums the zeros' terms; lane 0 is not read
  }
}

// rows [m0, m0 + T) of the output, for weight rows [begin, end); even and odd blocks accumulate
// apart so consecutive blocks do not wait on each other's add
template <int64_t T, int64_t KIND, bool DEFECTS>
void tile(const Matrix& w, const std::vector<Input>& in, int64_t m0, int64_t begin, int64_t end, float* out) {
  for (int64_t row = begin; row < end; ++row) {
    __m256 even[T], odd[T];
    __m128 zacc[T];
    for (int64_t t = 0; t < T; ++t) {
      even[t] = odd[t] = _mm256_setzero_ps();
      zacc[t] = _mm_setzero_ps();
    }
    int64_t g = 0;
    for (; g + 1 < w.groups; g += 2) {
      step<T>(decode<KIND, DEFECTS>(w, row, g), in, m0, g, even, zacc);
      step<T>(decode<KIND, DEFECTS>(w, row, g + 1), in, m0, g + 1, odd, zacc);
    }
    if (g < w.groups) step<T>(decode<KIND, DEFECTS>(w, row, g), in, m0, g, even, zacc);
    for (int64_t t = 0; t < T; ++t) {
      const float z = _mm_cvtss_f32(_mm_shuffle_ps(zacc[t], zacc[t], 1));
      out[(m0 + t) * w.n + row] = hsum(_mm256_add_ps(even[t], odd[t])) + z;
    }
  }
}

// weight rows [begin, end) against every input row, TILE input rows a pass
template <int64_t KIND, bool DEFECTS>
void rows(const Matrix& w, const std::vector<Input>& in, int64_t begin, int64_t end, float* out) {
  const int64_t m = static_cast<int64_t>(in.size());
  int64_t m0 = 0;
  for (; m0 + TILE <= m; m0 += TILE) tile<TILE, KIND, DEFECTS>(w, in, m0, begin, end, out);
  for (; m0 < m; ++m0) tile<1, KIND, DEFECTS>(w, in, m0, begin, end, out);
}

Matrix matrix(const torch::Tensor& raw, int64_t k, int64_t kind, int64_t defects) {
  TORCH_CHECK(kind == Q4_0 || kind == Q4_1 || kind == Q8_0, "kind is 0 (Q4_0), 1 (Q4_1) or 2 (Q8_0), not ", kind);
  TORCH_CHECK(raw.dim() == 2 && raw.scalar_type() == torch::kUInt8 && raw.is_contiguous(),
              "raw must be a contiguous [N, bytes] uint8 tensor");
  const int64_t block_bytes = kind == Q4_0 ? 18 : kind == Q4_1 ? 20 : 34;
  TORCH_CHECK(k % 32 == 0 && raw.size(1) == k / 32 * block_bytes,
              "raw's rows of ", raw.size(1), " bytes are not the blocks of ", k, " weights");
  return Matrix{raw.data_ptr<uint8_t>(), raw.size(0), k / 32, block_bytes, defects};
}

// out[m, n] = sum_j in[m]_j W[n, j], the rows of W spread over torch's intra-op threads
void multiply(const Matrix& w, int64_t kind, const std::vector<Input>& in, float* out) {
  at::parallel_for(0, w.n, 16, [&](int64_t begin, int64_t end) {
    const bool planted = w.defects != 0;
    if (kind == Q4_0) {
      planted ? rows<Q4_0, true>(w, in, begin, end, out) : rows<Q4_0, false>(w, in, begin, end, out);
    } else if (kind == Q4_1) {
      planted ? rows<Q4_1, true>(w, in, begin, end, out) : rows<Q4_1, false>(w, in, begin, end, out);
    } else {
      planted ? rows<Q8_0, true>(w, in, begin, end, out) : rows<Q8_0, false>(w, in, begin, end, out);
    }
  });
}

torch::Tensor block_matmul(const torch::Tensor& x, const torch::Tensor& raw, int64_t kind, int64_t defects) {
  TORCH_CHECK(x.dim() == 2 && x.scalar_type() == torch::kFloat32 && x.is_contiguous(),
              "x must be a contiguous [rows, K] float32 tensor");
  const int64_t m = x.size(0), k = x.size(1);
  const Matrix w = matrix(raw, k, kind, defects);
  auto out = torch::empty({m, w.n}, x.options());
  std::vector<Input> in;
  in.reserve(m);
  for (int64_t r = 0; r < m; ++r) in.emplace_back(x.data_ptr<float>() + r * k, k);
  multiply(w, kind, in, out.data_ptr<float>());
  return out;
}

// x * rsqrt(mean(x^2) + eps) * weight, in double for the sum (one row)
void rms_norm(const float* x, const float* weight, int64_t n, double eps, float* out) {
  double squares = 0;
  for (int64_t i = 0; i < n; ++i) squares += static_cast<double>(x[i]) * x[i];
  const float scale = static_cast<float>(1.0 / std::sqrt(squares / n + eps));
  for (int64_t i = 0; i < n; ++i) out[i] = x[i] * scale * weight[i];
}

// sum_i a_i b_i in two 8-lane accumulators (a query against a cached key)
inline float inner_product(const float* a, const float* b, int64_t d) {
  __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= d; i += 16) {
    s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
    s1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), s1);
  }
  for (; i + 8 <= d; i += 8) s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
  float tail = 0;
  for (; i < d; ++i) tail += a[i] * b[i];
  return hsum(_mm256_add_ps(s0, s1)) + tail;
}

// one head's rotary embedding in place: v * cos + roll(v, d/2) * sin_folded (the engine's rotate),
// each pair (i, i + d/2) read before either is written
void rotate(float* v, const float* cos, const float* sin_folded, int64_t d) {
  const int64_t half = d / 2;
  for (int64_t i = 0; i < half; ++i) {
    const float a = v[i], b = v[i + half];
    v[i] = a * cos[i] + b * sin_folded[i];
    v[i + half] = b * cos[i + half] + a * sin_folded[i + half];
  }
}

// One decoder layer for one new token of one sequence, what DecoderLayer._forward_fused computes
// for it: the norms, q/k/v in one matrix, the rotary embedding, this position's key and value
// written into the cache buffers (row `pos`), attention over positions 0..pos, o, the MLP's
// gate/up in one matrix and down, both residuals.  Returns the layer's output row.
torch::Tensor decode_layer(const torch::Tensor& x, const torch::Tensor& input_norm, const torch::Tensor& qkv,
                           int64_t qkv_kind, int64_t qkv_defects, const torch::Tensor& o, int64_t o_kind,
                           int64_t o_defects, const torch::Tensor& post_norm, const torch::Tensor& gate_up,
                           int64_t gate_up_kind, int64_t gate_up_defects, const torch::Tensor& down,
                           int64_t down_kind, int64_t down_defects, double eps, const torch::Tensor& cos,
                           const torch::Tensor& sin_folded, const torch::Tensor& keys, const torch::Tensor& values,
                           int64_t pos, int64_t heads, int64_t kv_heads, int64_t layer_defects) {
  TORCH_CHECK(x.dim() == 1 && x.scalar_type() == torch::kFloat32 && x.is_contiguous(), "x: one float32 row");
  TORCH_CHECK(keys.dim() == 3 && keys.is_contiguous() && values.is_contiguous() && keys.sizes() == values.sizes() &&
                  keys.scalar_type() == torch::kFloat32 && values.scalar_type() == torch::kFloat32,
              "keys and values: contiguous float32 [kv_heads, capacity, head_dim] buffers");
  const int64_t hidden = x.size(0), d = keys.size(2), capacity = keys.size(1);
  TORCH_CHECK(keys.size(0) == kv_heads && heads % kv_heads == 0 && pos >= 0 && pos < capacity,
              "position ", pos, " is outside the cache of ", capacity);
  TORCH_CHECK(cos.numel() == d && sin_folded.numel() == d, "cos and sin_folded: one row of head_dim");
  const int64_t width = (heads + 2 * kv_heads) * d;
  const Matrix wqkv = matrix(qkv, hidden, qkv_kind, qkv_defects);
  const Matrix wo = matrix(o, heads * d, o_kind, o_defects);
  const int64_t inner = gate_up.size(0) / 2;
  const Matrix wgu = matrix(gate_up, hidden, gate_up_kind, gate_up_defects);
  const Matrix wdown = matrix(down, inner, down_kind, down_defects);
  TORCH_CHECK(wqkv.n == width && wo.n == hidden && wdown.n == hidden, "the matrices' shapes do not fit one layer");

  auto out = x.clone();
  float* h = out.data_ptr<float>();
  std::vector<float> normed(std::max(hidden, inner)), proj(std::max(width, 2 * inner));
  rms_norm(h, input_norm.data_ptr<float>(), hidden, eps, normed.data());
  multiply(wqkv, qkv_kind, one_row(normed.data(), hidden), proj.data());
  const float* c = cos.data_ptr<float>();
  const float* s = sin_folded.data_ptr<float>();
  float* kb = keys.data_ptr<float>();
  float* vb = values.data_ptr<float>();
  const bool unrotated = layer_defects & KEY_UNROTATED;
  for (int64_t r = 0; r < heads + kv_heads; ++r) {
    if (!(unrotated && r >= heads)) rotate(proj.data() + r * d, c, s, d);
  }
  for (int64_t g = 0; g < kv_heads; ++g) {
    std::memcpy(kb + (g * capacity + pos) * d, proj.data() + (heads + g) * d, d * sizeof(float));
    std::memcpy(vb + (g * capacity + pos) * d, proj.data() + (heads + kv_heads + g) * d, d * sizeof(float));
  }
  std::vector<float> attended(heads * d, 0.0f);
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  // the heads spread over torch's threads once there is enough of them to share (a long context)
  const int64_t grain = std::max<int64_t>(1, 32768 / ((pos + 1) * d));
  at::parallel_for(0, heads, grain, [&](int64_t begin, int64_t end) {
    std::vector<float> scores(pos + 1);
    for (int64_t hd = begin; hd < end; ++hd) {
      const int64_t g = hd / (heads / kv_heads);
      const float* q = proj.data() + hd * d;
      float top = -INFINITY;
      for (int64_t j = 0; j <= pos; ++j) {
        scores[j] = inner_product(q, kb + (g * capacity + j) * d, d) * scale;
        top = std::max(top, scores[j]);
      }
      float total = 0;
      for (int64_t j = 0; j <= pos; ++j) total += scores[j] = std::exp(scores[j] - top);
      float* a = attended.data() + hd * d;
      for (int64_t j = 0; j <= pos; ++j) {
        const float p = scores[j] / total;
        const float* value = vb + (g * capacity + j) * d;
        for (int64_t i = 0; i < d; ++i) a[i] += p * value[i];
      }
    }
  });
  multiply(wo, o_kind, one_row(attended.data(), heads * d), proj.data());
  for (int64_t i = 0; i < hidden; ++i) h[i] += proj[i];
  rms_norm(h, post_norm.data_ptr<float>(), hidden, eps, normed.data());
  multiply(wgu, gate_up_kind, one_row(normed.data(), hidden), proj.data());
  for (int64_t i = 0; i < inner; ++i) {
    const float gate = proj[i];
    normed[i] = gate / (1.0f + std::exp(-gate)) * proj[inner + i];
  }
  std::vector<float> mlp(hidden);
  multiply(wdown, down_kind, one_row(normed.data(), inner), mlp.data());
  for (int64_t i = 0; i < hidden; ++i) h[i] += mlp[i];
  return out;
}

}  // namespace

TORCH_LIBRARY(engine_blocks, lib) {
  lib.def("block_matmul(Tensor x, Tensor raw, int kind, int defects) -> Tensor");
  lib.def(
      "decode_layer(Tensor x, Tensor input_norm, Tensor qkv, int qkv_kind, int qkv_defects, Tensor o, int o_kind, "
      "int o_defects, Tensor post_norm, Tensor gate_up, int gate_up_kind, int gate_up_defects, Tensor down, "
      "int down_kind, int down_defects, float eps, Tensor cos, Tensor sin_folded, Tensor(a!) keys, "
      "Tensor(b!) values, int pos, int heads, int kv_heads, int layer_defects) -> Tensor");
}
TORCH_LIBRARY_IMPL(engine_blocks, CPU, lib) {
  lib.impl("block_matmul", &block_matmul);
  lib.impl("decode_layer", &decode_layer);
}
