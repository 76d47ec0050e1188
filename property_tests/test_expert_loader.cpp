// The consolidated expert loader against an element-by-element expected-slice
// builder: TP sizes 1, 2, 4, 8 over all ranks, both EP placements, bf16 /
// fp16 / fp32 / NVFP4, and every error leaving poisoned destinations as they
// were.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "musespark/expert_loader.h"
#include "test_support.h"

namespace musespark {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

constexpr const char* kPrefix = "model.layers.3.mlp.experts";
constexpr std::uint8_t kPoison = 0xCD;

struct Source {
  std::string path;
  std::map<std::string, TensorToWrite> tensors;
};

// A checkpoint holding every parameter of `c` with random bytes.
Source write_checkpoint(const ExpertLayerConfig& c, DType weight_dtype, std::uint64_t seed, const std::string& file) {
  ExpertLayerConfig global = c;
  global.tp_size = 1, global.tp_rank = 0, global.ep_size = 1, global.ep_rank = 0;
  std::mt19937_64 rng(seed);
  Source s;
  s.path = (fs::temp_directory_path() / file).string();
  std::vector<TensorToWrite> list;
  for (const auto& [name, spec] : ConsolidatedExpertLoader::expected_params(global, weight_dtype)) {
    TensorToWrite t{std::string(kPrefix) + "." + name, spec.first, spec.second, {}};
    std::int64_t n = 1;
    for (std::int64_t d : spec.second) n *= d;
    t.bytes.resize(static_cast<std::size_t>(n) * dtype_size(spec.first));
    for (auto& b : t.bytes) b = static_cast<std::uint8_t>(rng());
    s.tensors[name] = t;
    list.push_back(t);
  }
  write_safetensors(s.path, list, {});
  return s;
}

struct Params {
  std::map<std::string, std::vector<std::uint8_t>> storage;
  std::map<std::string, ExpertParam> params;
  explicit Params(const ExpertLayerConfig& c, DType weight_dtype) {
    for (const auto& [name, spec] : ConsolidatedExpertLoader::expected_params(c, weight_dtype)) {
      std::int64_t n = 1;
      for (std::int64_t d : spec.second) n *= d;
      storage[name].assign(static_cast<std::size_t>(n) * dtype_size(spec.first), kPoison);
      params[name] = ExpertParam{storage[name].data(), spec.first, spec.second, Device::kCpu};
    }
  }
  bool all_poison(const std::string& name) const {
    for (std::uint8_t b : storage.at(name)) if (b != kPoison) return false;
    return true;
  }
};

// Expected bytes of `name` on this rank, one element at a time.
std::vector<std::uint8_t> expected_slice(const ExpertLayerConfig& c, const std::string& name, const TensorToWrite& src,
                                         const std::vector<std::int64_t>& dst_shape) {
  const std::size_t es = dtype_size(src.dtype);
  const auto local = expert_map(c.num_experts, c.ep_size, c.ep_rank, c.placement);
  const int rank = static_cast<int>(dst_shape.size());
  const bool scalar = name.find("scale_2") != std::string::npos || name.find("input_scale") != std::string::npos;
  const int tp_dim = scalar ? -1 : (name.rfind("w13", 0) == 0 ? 1 : rank - 1);
  const int halves = name.rfind("w13", 0) == 0 ? 2 : 1;
  std::int64_t dst_n = 1;
  for (std::int64_t d : dst_shape) dst_n *= d;
  std::vector<std::uint8_t> out(static_cast<std::size_t>(dst_n) * es, kPoison);
  std::vector<std::int64_t> idx(rank, 0);
  for (std::int64_t flat = 0; flat < dst_n; ++flat) {
    std::int64_t rem = flat;
    for (int d = rank - 1; d >= 0; --d) idx[d] = rem % dst_shape[d], rem /= dst_shape[d];
    std::int64_t g = -1;
    for (std::size_t e = 0; e < local.size(); ++e) if (local[e] == idx[0]) g = static_cast<std::int64_t>(e);
    std::vector<std::int64_t> sidx = idx;
    sidx[0] = g;
    if (tp_dim >= 0) {
      const std::int64_t n_tp = dst_shape[tp_dim] / halves, half = idx[tp_dim] / n_tp, within = idx[tp_dim] % n_tp;
      sidx[tp_dim] = half * (src.shape[tp_dim] / halves) + c.tp_rank * n_tp + within;
    }
    std::int64_t sflat = 0;
    for (int d = 0; d < rank; ++d) sflat = sflat * src.shape[d] + sidx[d];
    std::memcpy(&out[static_cast<std::size_t>(flat) * es], &src.bytes[static_cast<std::size_t>(sflat) * es], es);
  }
  return out;
}

// The first differing byte, instead of two dumps of whole buffers.
::testing::AssertionResult SameBytes(const std::vector<std::uint8_t>& got, const std::vector<std::uint8_t>& want) {
  if (got.size() != want.size()) return ::testing::AssertionFailure() << "sizes " << got.size() << " vs " << want.size();
  for (std::size_t i = 0; i < got.size(); ++i)
    if (got[i] != want[i])
      return ::testing::AssertionFailure() << "first difference at byte " << i << ": got " << int(got[i]) << ", want "
                                           << int(want[i]) << (got[i] == kPoison ? " (still poison)" : "");
  return ::testing::AssertionSuccess();
}

struct Shape {
  std::int64_t E, H, I;
  bool nvfp4;
  DType dtype;
};

TEST(ExpertLoader, EveryRankMatchesTheElementwiseSliceAndRanksRebuildTheWhole) {
  std::mt19937_64 rng(testing::test_seed(21));
  const std::vector<Shape> shapes = {{8, 32, 64, false, DType::kBFloat16}, {6, 48, 128, false, DType::kFloat16},
                                     {4, 16, 32, false, DType::kFloat32}, {8, 64, 256, true, DType::kUInt8},
                                     {12, 32, 128, true, DType::kUInt8}};
  int file_no = 0;
  for (const Shape& sh : shapes) {
    for (std::int64_t tp : {1, 2, 4, 8}) {
      if (sh.I % tp || (sh.nvfp4 && (sh.I / tp) % 16)) continue;
      for (auto [ep, placement] : std::vector<std::pair<std::int64_t, ExpertPlacement>>{
               {1, ExpertPlacement::kContiguous}, {2, ExpertPlacement::kContiguous}, {4, ExpertPlacement::kRoundRobin}}) {
        if (placement == ExpertPlacement::kContiguous && sh.E % ep) continue;
        ExpertLayerConfig c{"layers.3.mlp.experts", sh.E, sh.H, sh.I, tp, 0, ep, 0, placement, sh.nvfp4};
        const Source src = write_checkpoint(c, sh.dtype, rng(), "loader_" + std::to_string(file_no++) + ".safetensors");
        const Checkpoint ckpt = Checkpoint::open(src.path);
        std::map<std::string, std::vector<std::uint8_t>> rebuilt_w2;  // TP union check on w2_weight, ep rank 0
        for (std::int64_t er = 0; er < ep; ++er) {
          for (std::int64_t r = 0; r < tp; ++r) {
            c.tp_rank = r, c.ep_rank = er;
            Params p(c, sh.dtype);
            ConsolidatedExpertLoader loader(c, p.params);
            const std::vector<std::string> names = loader.load(ckpt, kPrefix);
            ASSERT_EQ(names.size(), p.params.size());
            for (const auto& [name, param] : p.params) {
              const auto want = expected_slice(c, name, src.tensors.at(name), param.shape);
              ASSERT_TRUE(SameBytes(p.storage.at(name), want)) << name << " tp " << r << "/" << tp << " ep " << er << "/" << ep
                                                  << " E=" << sh.E << " H=" << sh.H << " I=" << sh.I;
            }
          }
        }
        fs::remove(src.path);
      }
    }
  }
}

TEST(ExpertLoader, TensorParallelRanksTogetherHoldTheWholeTensor) {
  ExpertLayerConfig c{"layer", 4, 32, 64, 4, 0, 1, 0, ExpertPlacement::kContiguous, false};
  const Source src = write_checkpoint(c, DType::kBFloat16, 5, "loader_union.safetensors");
  const Checkpoint ckpt = Checkpoint::open(src.path);
  const auto& w13 = src.tensors.at("w13_weight");  // [4, 128, 32]
  std::vector<std::uint8_t> rebuilt(w13.bytes.size(), 0);
  for (std::int64_t r = 0; r < 4; ++r) {
    c.tp_rank = r;
    Params p(c, DType::kBFloat16);
    ConsolidatedExpertLoader(c, p.params).load(ckpt, kPrefix);
    const auto& local = p.storage.at("w13_weight");  // [4, 32, 32]: rows [0,16) gate, [16,32) up
    const std::size_t row = 32 * 2;
    for (std::int64_t e = 0; e < 4; ++e)
      for (std::int64_t h = 0; h < 2; ++h)
        for (std::int64_t i = 0; i < 16; ++i)
          std::memcpy(&rebuilt[((e * 128) + h * 64 + r * 16 + i) * row], &local[((e * 32) + h * 16 + i) * row], row);
  }
  EXPECT_TRUE(SameBytes(rebuilt, w13.bytes));
  fs::remove(src.path);
}

void expect_error(const std::function<void()>& f, const std::string& message) {
  try {
    f();
    ADD_FAILURE() << "no error; expected: " << message;
  } catch (const LoaderError& e) {
    EXPECT_THAT(e.what(), HasSubstr(message));
  }
}

TEST(ExpertLoader, ErrorsNameTheProblemAndLeaveDestinationsUntouched) {
  ExpertLayerConfig c{"layers.3.mlp.experts", 8, 64, 256, 2, 1, 1, 0, ExpertPlacement::kContiguous, true};
  const Source src = write_checkpoint(c, DType::kUInt8, 9, "loader_err.safetensors");
  const Checkpoint ckpt = Checkpoint::open(src.path);

  {  // A checkpoint name the layer has no parameter for.
    Params p(c, DType::kUInt8);
    p.params.erase("w2_input_scale");
    ConsolidatedExpertLoader loader(c, p.params);
    expect_error([&] { loader.load(ckpt, kPrefix); }, "layers.3.mlp.experts: unexpected expert weight 'w2_input_scale'");
  }
  {  // A parameter the loader does not handle.
    Params p(c, DType::kUInt8);
    std::vector<std::uint8_t> extra(8 * 4, kPoison);
    p.params["w13_bias"] = ExpertParam{extra.data(), DType::kFloat32, {8}, Device::kCpu};
    const Source with_bias = [&] {
      Source s = src;
      s.path = (fs::temp_directory_path() / "loader_bias.safetensors").string();
      std::vector<TensorToWrite> list;
      for (auto& [n, t] : s.tensors) list.push_back(t);
      list.push_back({std::string(kPrefix) + ".w13_bias", DType::kFloat32, {8}, std::vector<std::uint8_t>(32, 1)});
      write_safetensors(s.path, list, {});
      return s;
    }();
    ConsolidatedExpertLoader loader(c, p.params);
    expect_error([&] { loader.load(Checkpoint::open(with_bias.path), kPrefix); },
                 "layers.3.mlp.experts: unsupported expert weight 'w13_bias'");
    fs::remove(with_bias.path);
  }
  {  // Wrong dtype in the destination: refused before any byte is copied.
    Params p(c, DType::kUInt8);
    p.params["w2_weight"].dtype = DType::kBFloat16;
    ConsolidatedExpertLoader loader(c, p.params);
    expect_error([&] { loader.load(ckpt, kPrefix); }, "tensor 'model.layers.3.mlp.experts.w2_weight' for layers.3.mlp.experts.w2_weight: dtype U8, the parameter is BF16");
    EXPECT_TRUE(p.all_poison("w2_weight"));
    // Copies are planned for the whole layer and handed to the engine at
    // once; a bad tensor still lets every tensor before it land and stops
    // every tensor after it: each destination is as it was before w2_weight.
    bool before = true;
    for (const Checkpoint::Entry& e : ckpt.entries()) {
      const std::string name = e.view->name.substr(std::string(kPrefix).size() + 1);
      if (name == "w2_weight") { before = false; continue; }
      if (before)
        EXPECT_TRUE(SameBytes(p.storage.at(name), expected_slice(c, name, src.tensors.at(name), p.params.at(name).shape)))
            << name << " precedes the bad tensor";
      else
        EXPECT_TRUE(p.all_poison(name)) << name << " follows the bad tensor";
    }
  }
  {  // Destination shaped for another configuration.
    Params p(c, DType::kUInt8);
    p.params["w13_weight"].shape[2] += 2;
    ConsolidatedExpertLoader loader(c, p.params);
    expect_error([&] { loader.load(ckpt, kPrefix); }, "disagrees with the layer configuration");
    EXPECT_TRUE(p.all_poison("w13_weight"));
  }
  {  // A checkpoint tensor of the wrong shape (another layer's E): names file, tensor, expected.
    ExpertLayerConfig other = c;
    other.num_experts = 16;
    Params p(other, DType::kUInt8);
    ConsolidatedExpertLoader loader(other, p.params);
    expect_error([&] { loader.load(ckpt, kPrefix); }, src.path + ": tensor 'model.layers.3.mlp.experts.");
    for (const auto& [name, _] : p.params) EXPECT_TRUE(p.all_poison(name)) << name;
  }
  // Configurations that cannot be sharded.
  ExpertLayerConfig bad = c;
  bad.tp_size = 3;
  expect_error([&] { ConsolidatedExpertLoader(bad, {}); }, "intermediate_size 256 is not divisible by tp_size 3");
  bad = c;
  bad.tp_size = 32;  // I_tp = 8 splits a 16-element scale block
  expect_error([&] { ConsolidatedExpertLoader(bad, {}); }, "I_tp = 8 (intermediate_size / tp_size) splits a 16-element NVFP4 scale block");
  bad = c;
  bad.ep_size = 3;
  expect_error([&] { ConsolidatedExpertLoader(bad, {}); }, "num_experts 8 is not divisible by ep_size 3");
  bad = c;
  bad.tp_rank = 2;
  expect_error([&] { ConsolidatedExpertLoader(bad, {}); }, "tp_rank 2 is not in [0, tp_size=2)");
  fs::remove(src.path);
}

TEST(ExpertLoader, ShardedCheckpointThroughTheIndex) {
  ExpertLayerConfig c{"layer", 4, 32, 64, 1, 0, 1, 0, ExpertPlacement::kContiguous, false};
  const fs::path dir = fs::temp_directory_path() / "musespark_sharded";
  fs::create_directories(dir);
  const Source src = write_checkpoint(c, DType::kBFloat16, 3, "loader_sharded_tmp.safetensors");
  const auto& w13 = src.tensors.at("w13_weight");
  const auto& w2 = src.tensors.at("w2_weight");
  write_safetensors((dir / "a.safetensors").string(), {w13}, {});
  write_safetensors((dir / "b.safetensors").string(), {w2}, {});
  std::ofstream(dir / "model.safetensors.index.json")
      << R"({"weight_map": {")" << w13.name << R"(": "a.safetensors", ")" << w2.name << R"(": "b.safetensors"}})";
  Params p(c, DType::kBFloat16);
  const auto names = ConsolidatedExpertLoader(c, p.params).load(Checkpoint::open(dir.string()), kPrefix);
  EXPECT_EQ(names, (std::vector<std::string>{"w13_weight", "w2_weight"}));
  EXPECT_TRUE(SameBytes(p.storage.at("w2_weight"), w2.bytes));
  fs::remove_all(dir);
  fs::remove(src.path);
}

// The CUDA engine's worker count per block list (copy_workers_for): dense
// reads take 8 of the available workers, sparse column slices all of them.
TEST(ExpertLoader, CopyWorkersFollowTheReadDensity) {
  std::uint8_t byte = 0;
  auto block = [&](std::size_t pitch, std::size_t width, std::size_t height) {
    return BlockCopy{&byte, &byte, pitch, width, width, height};
  };
  const BlockCopy whole = block(4096, 4096, 1000);        // a whole tensor
  const BlockCopy rows = block(4096, 4096, 125);          // a rank's row slice
  const BlockCopy columns = block(2048, 256, 4096);       // a TP 8 rank's w2 columns
  EXPECT_EQ(copy_workers_for({whole}, 16), 8u);
  EXPECT_EQ(copy_workers_for({rows, rows}, 16), 8u);
  EXPECT_EQ(copy_workers_for({whole}, 4), 4u) << "never more than available";
  EXPECT_EQ(copy_workers_for({columns}, 16), 16u);
  // A TP 8 rank's layer: w13's row slices (dense) and w2's columns, whose
  // span is eight times their bytes; sparse overall.
  EXPECT_EQ(copy_workers_for({block(4096, 4096, 128), columns}, 16), 16u);
  EXPECT_EQ(copy_workers_for({}, 16), 8u);
  EXPECT_EQ(copy_workers_for({block(2048, 1024, 64)}, 16), 8u) << "half of every row read: dense";
  EXPECT_EQ(copy_workers_for({block(2048, 960, 64)}, 16), 16u) << "under half of the span read: sparse";
}

}  // namespace
}  // namespace musespark
