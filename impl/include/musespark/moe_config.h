// MuseSpark1x's MoE-layer decisions (SPEC section 3).
#pragma once

#include <cstdint>

namespace musespark {

// Every expert's output goes through an RMSNorm over the hidden dim ("post
// expert norm") before the weighted top-k sum, so a fused-MoE kernel must
// stop after the second GEMM whenever there is any token to process.
bool should_defer_moe_finalize(std::int64_t num_tokens);

// Under tensor parallelism the second GEMM produces partial sums; RMS is not
// linear in them, so they are all-reduced before the norm.
bool needs_pre_norm_all_reduce(std::int64_t tp_size);

}  // namespace musespark
