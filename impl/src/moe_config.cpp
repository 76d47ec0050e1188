#include "musespark/moe_config.h"

#include <string>

#include "musespark/errors.h"

namespace musespark {

bool should_defer_moe_finalize(std::int64_t num_tokens) {
  if (num_tokens < 0)
    throw ArgumentError("should_defer_moe_finalize: num_tokens must be >= 0, got " +
                        std::to_string(num_tokens));
  return num_tokens > 0;
}

bool needs_pre_norm_all_reduce(std::int64_t tp_size) {
  if (tp_size < 1)
    throw ArgumentError("needs_pre_norm_all_reduce: tp_size must be >= 1, got " +
                        std::to_string(tp_size));
  return tp_size > 1;
}

}  // namespace musespark
