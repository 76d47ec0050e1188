// The LibTorch adapter on CPU tensors: the seed's call shape, given and
// allocated destinations, id types, the router object, and its errors.
#include <ATen/ATen.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "expert_loader_adapter.h"
#include "fused_routing.h"
#include "musespark/errors.h"
#include "router.h"

namespace musespark {
namespace {

using torch_adapter::fused_musespark1x_routing;
using ::testing::HasSubstr;

at::Tensor logits(std::int64_t T, std::int64_t E, at::ScalarType dtype = at::kFloat) {
  at::manual_seed(3);
  return at::randn({T, E}).to(dtype);
}

TEST(TorchAdapter, AllocatesWhenNoDestinationIsGiven) {
  const auto g = logits(5, 16);
  const auto [w, ids] = fused_musespark1x_routing(g, at::zeros({16}), 4, 1.0);
  EXPECT_EQ(w.sizes(), (std::vector<std::int64_t>{5, 4}));
  EXPECT_EQ(w.scalar_type(), at::kFloat);
  EXPECT_EQ(ids.scalar_type(), at::kInt);
  // Without eps the weights sum to route_scale.
  EXPECT_TRUE(at::allclose(w.sum(1), at::ones({5}), 1e-6, 1e-6));
  // Highest sigmoid first when the bias is zero.
  const auto expected = std::get<1>(at::topk(g, 4, 1));
  EXPECT_TRUE(at::equal(ids.to(at::kLong), expected));
}

TEST(TorchAdapter, WritesOnlyTheWindowOfGivenDestinations) {
  const auto g = logits(3, 8);
  auto w = at::full({6, 5}, -7.0f);
  auto ids = at::full({6, 5}, -7, at::kLong);
  const auto [wv, iv] = fused_musespark1x_routing(g, at::zeros({8}), 2, 2.5, 0.5, "softmax", 1e-15, w, ids);
  EXPECT_EQ(wv.data_ptr(), w.data_ptr());  // a view, not a copy
  EXPECT_EQ(wv.sizes(), (std::vector<std::int64_t>{3, 2}));
  EXPECT_TRUE(at::all(w.narrow(0, 3, 3) == -7.0f).item<bool>());
  EXPECT_TRUE(at::all(w.narrow(1, 2, 3) == -7.0f).item<bool>());
  EXPECT_TRUE(at::all(ids.narrow(1, 2, 3) == -7).item<bool>());
  EXPECT_TRUE(at::all(iv >= 0).item<bool>());
}

TEST(TorchAdapter, TransposedLogitsAndStridedPadding) {
  const auto base = logits(8, 6);
  const auto g = base.t().contiguous().t();  // same values, column-major
  auto pad_storage = at::zeros({6}, at::kBool);
  pad_storage[2] = true;  // padding view [3] with stride 2 marks row 1
  const auto pad = pad_storage.as_strided({3}, {2});
  const auto [w1, i1] = fused_musespark1x_routing(base.narrow(0, 0, 3), at::zeros({6}), 2, 1.0, {}, "sigmoid", {}, {}, {}, pad);
  const auto [w2, i2] = fused_musespark1x_routing(g.narrow(0, 0, 3), at::zeros({6}), 2, 1.0, {}, "sigmoid", {}, {}, {}, pad);
  EXPECT_TRUE(at::equal(w1, w2));
  EXPECT_TRUE(at::equal(i1, i2));
  EXPECT_TRUE(at::equal(i1[1], at::full({2}, -1, at::kInt)));
  EXPECT_TRUE(at::equal(w1[1], at::zeros({2})));
}

TEST(TorchAdapter, BFloat16LogitsAndBias) {
  const auto g = logits(4, 32, at::kBFloat16);
  const auto bias = (at::randn({32}) * 0.1).to(at::kBFloat16);
  const auto [w, ids] = fused_musespark1x_routing(g, bias, 8, 1.0);
  const auto [w32, ids32] = fused_musespark1x_routing(g.to(at::kFloat), bias.to(at::kFloat), 8, 1.0);
  EXPECT_TRUE(at::equal(ids, ids32));  // bf16 widens exactly
  EXPECT_TRUE(at::equal(w, w32));
}

void expect_error(const std::function<void()>& call, const std::string& message) {
  try {
    call();
    ADD_FAILURE() << "expected: " << message;
  } catch (const std::exception& e) {
    EXPECT_THAT(e.what(), HasSubstr(message));
  }
}

TEST(TorchAdapter, ErrorsNameTheBadValue) {
  const auto g = logits(4, 8);
  const auto b = at::zeros({8});
  expect_error([&] { fused_musespark1x_routing(g.unsqueeze(0), b, 2, 1.0); }, "gating_output must be 2-D [tokens, experts], got 3-D");
  expect_error([&] { fused_musespark1x_routing(g, at::zeros({7}), 2, 1.0); }, "bias has 7 entries but gating_output has 8 experts");
  expect_error([&] { fused_musespark1x_routing(g, b, 2, 1.0, {}, "gelu"); }, "got 'gelu'");
  expect_error([&] { fused_musespark1x_routing(g, b, 9, 1.0); }, "topk must be in [1, num_experts=8], got 9");
  expect_error([&] { fused_musespark1x_routing(g.to(at::kInt), b, 2, 1.0); }, "gating_output dtype must be float32, bfloat16 or float16");
  expect_error([&] { fused_musespark1x_routing(g, b, 2, 1.0, {}, "sigmoid", {}, at::zeros({4, 2}, at::kDouble)); }, "topk_weights dtype must be Float");
  expect_error([&] { fused_musespark1x_routing(g, b, 2, 1.0, {}, "sigmoid", {}, at::zeros({3, 2})); }, "topk_weights has shape [3, 2], needs at least [4, 2]");
  expect_error([&] { fused_musespark1x_routing(g, b, 2, 1.0, {}, "sigmoid", {}, {}, {}, at::zeros({4}, at::kInt)); }, "is_padding dtype must be bool");
  expect_error([&] { fused_musespark1x_routing(g, b, 2, 1.0, {}, "sigmoid", {}, {}, {}, at::zeros({5}, at::kBool)); }, "is_padding must have shape [4]");
  expect_error([&] { fused_musespark1x_routing(g, b.as_strided({8}, {0}), 2, 1.0); }, "bias must be contiguous, got stride 0");
}

TEST(TorchRouter, ValidatesAndRoutesWithTheRequestedIndexType) {
  RouterConfig c;
  c.top_k = 2;
  c.num_experts = 8;
  c.route_scale = 2.5;
  c.router_score_division_eps = 1e-15;
  torch_adapter::MuseSpark1xRouter router(c, at::zeros({8}));
  EXPECT_EQ(router.routing_method_type(), RoutingMethodType::kDeepSeekV3);
  const auto [w, ids] = router.compute_routing(logits(3, 8), at::kLong);
  EXPECT_EQ(ids.scalar_type(), at::kLong);
  EXPECT_TRUE(at::allclose(w.sum(1), at::full({3}, 2.5f), 1e-6, 1e-6));
  expect_error([&] { torch_adapter::MuseSpark1xRouter(c, at::zeros({7})); }, "expert_bias must have shape [8]");
  expect_error([&] { router.compute_routing(logits(3, 9)); }, "router_logits has 9 experts, the router was built for 8");
  expect_error([&] { router.compute_routing(logits(3, 8), at::kShort); }, "index dtype must be int32 or int64");
}

}  // namespace
}  // namespace musespark

// ---- the expert loader into at::Tensor parameters ------------------------------

namespace musespark {
namespace {

TEST(TorchExpertLoader, LoadsAnNvfp4LayerIntoTensorsOfOneTensorParallelRank) {
  ExpertLayerConfig global{"layers.0.mlp.experts", 4, 64, 128, 1, 0, 1, 0, ExpertPlacement::kContiguous, true};
  const std::string path = (std::filesystem::temp_directory_path() / "torch_loader.safetensors").string();
  std::vector<TensorToWrite> list;
  std::map<std::string, std::vector<std::uint8_t>> source;
  std::uint8_t x = 1;
  for (const auto& [name, spec] : ConsolidatedExpertLoader::expected_params(global, DType::kUInt8)) {
    std::int64_t n = 1;
    for (std::int64_t d : spec.second) n *= d;
    std::vector<std::uint8_t> bytes(static_cast<std::size_t>(n) * dtype_size(spec.first));
    for (auto& b : bytes) b = x = static_cast<std::uint8_t>(x * 33 + 7);
    source[name] = bytes;
    list.push_back({"m." + name, spec.first, spec.second, bytes});
  }
  write_safetensors(path, list, {});

  ExpertLayerConfig rank = global;
  rank.tp_size = 2, rank.tp_rank = 1;
  auto params = torch_adapter::allocate_expert_layer(rank, at::kBFloat16, at::kCPU);
  const auto names = torch_adapter::load_expert_layer(rank, params, path, "m");
  EXPECT_EQ(names.size(), 8u);
  // w2_weight [4, 64, 64 bytes] per rank: rank 1 holds bytes [32, 64) of each row.
  const at::Tensor w2 = params.at("w2_weight");
  EXPECT_EQ(w2.sizes(), (std::vector<std::int64_t>{4, 64, 32}));
  const std::uint8_t* got = w2.data_ptr<std::uint8_t>();
  for (std::int64_t e = 0; e < 4; ++e)
    for (std::int64_t h = 0; h < 64; ++h)
      ASSERT_EQ(std::memcmp(got + (e * 64 + h) * 32, &source["w2_weight"][(e * 64 + h) * 64 + 32], 32), 0) << e << "," << h;
  // Scalars are copied whole per expert.
  EXPECT_EQ(std::memcmp(params.at("w13_input_scale").data_ptr(), source["w13_input_scale"].data(), 4 * 2 * 4), 0);
  std::filesystem::remove(path);
}

TEST(TorchExpertLoader, RefusesNonContiguousParameters) {
  ExpertLayerConfig c{"layer", 2, 16, 32, 1, 0, 1, 0, ExpertPlacement::kContiguous, false};
  auto params = torch_adapter::allocate_expert_layer(c, at::kBFloat16, at::kCPU);
  params["w2_weight"] = params["w2_weight"].transpose(1, 2);
  try {
    torch_adapter::load_expert_layer(c, params, "/nonexistent", "m");
    ADD_FAILURE();
  } catch (const LoaderError& e) {
    EXPECT_THAT(e.what(), HasSubstr("parameter 'w2_weight' is not contiguous"));
  }
}

}  // namespace
}  // namespace musespark
