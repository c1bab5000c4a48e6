// LocoTrack modules and weights: official keys and shapes, strict loading, checkpoints, conversion, autograd.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Parallel.h>
#include <c10/core/InferenceMode.h>
#include <torch/csrc/jit/serialization/pickle.h>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "core/io/safetensors.h"
#include "gpu/cpu_runtime.h"
#include "gpu/model/locotrack.h"
#include "gpu/ops/ops.h"
#include "gpu/model_weights.h"
#include "gpu/weights/weights.h"

namespace trackscope::gpu {
namespace {

namespace fs = std::filesystem;
using model::LocoTrack;
using model::LocoTrackConfig;
using model::ModelSize;

const fs::path kFixtures = fs::path(TRACKSCOPE_SHARED_DIR) / "fixtures" / "locotrack";

// One CPU thread (deterministic; CI runs suites side by side on 2 cores) and no page-fault storm (cpu_runtime.h).
class CpuSetup : public ::testing::Environment {
 public:
  void SetUp() override {
    set_cpu_threads(1);
    keep_freed_host_memory();
  }
};
[[maybe_unused]] ::testing::Environment* const kCpuSetup = ::testing::AddGlobalTestEnvironment(new CpuSetup);

fs::path fixture_weights(ModelSize size) {
  return kFixtures / fmt::format("locotrack_{}_random_bf16.safetensors", model::model_size_name(size));
}

fs::path temp_folder(const std::string& name) {
  const fs::path folder = fs::temp_directory_path() / ("trackscope_weights_" + name);
  fs::remove_all(folder);
  fs::create_directories(folder);
  return folder;
}

nlohmann::ordered_json official_shapes() {
  std::ifstream in(kFixtures / "state_dict_shapes.json");
  return nlohmann::ordered_json::parse(in);
}

class PerSize : public ::testing::TestWithParam<ModelSize> {};

TEST_P(PerSize, NamedParametersAreExactlyTheOfficialKeysInOrder) {
  const ModelSize size = GetParam();
  const auto json = official_shapes()[std::string(model::model_size_name(size))];
  const auto& expected = json["state_dict"];
  LocoTrack model(LocoTrackConfig{size});
  const auto parameters = model.named_parameters();
  ASSERT_EQ(parameters.size(), expected.size());
  EXPECT_EQ(parameters.size(), size == ModelSize::small ? 135u : 147u);
  std::size_t index = 0;
  std::int64_t count = 0;
  for (const auto& [key, shape] : expected.items()) {
    const auto& item = parameters[index++];
    EXPECT_EQ(item.key(), key) << "position " << index - 1;
    EXPECT_EQ(item.value().sizes().vec(), shape.get<std::vector<std::int64_t>>()) << key;
    count += item.value().numel();
  }
  EXPECT_EQ(count, json["params"].get<std::int64_t>());
  EXPECT_EQ(count, LocoTrackConfig{size}.parameter_count());
  EXPECT_TRUE(model.named_buffers().is_empty());
}

TEST_P(PerSize, LoadsTheShardedBf16FixtureAsFloat32) {
  const ModelSize size = GetParam();
  core::Expected<weights::LoadedModel> loaded = weights::load_locotrack(fixture_weights(size));
  ASSERT_TRUE(loaded) << loaded.status().message();
  EXPECT_EQ(loaded->model->config().size, size);
  EXPECT_EQ(loaded->info.model_size, model::model_size_name(size));
  EXPECT_EQ(loaded->info.files.size(), 2u);
  EXPECT_EQ(loaded->info.sha256.size(), 2u);
  EXPECT_EQ(loaded->info.source_dtypes, "BF16");
  EXPECT_EQ(loaded->info.parameter_count, LocoTrackConfig{size}.parameter_count());
  EXPECT_TRUE(loaded->info.official_checkpoint.empty());
  EXPECT_NE(loaded->info.summary().find("custom weights"), std::string::npos) << loaded->info.summary();
  // The BF16 values arrive exactly (widening is exact) in float32 parameters.
  core::Expected<core::io::SafetensorsSet> raw = core::io::SafetensorsSet::open(fixture_weights(size));
  ASSERT_TRUE(raw);
  const core::io::TensorEntry* entry = raw->find("cost_conv.weight");
  ASSERT_NE(entry, nullptr);
  at::Tensor bf16 = at::empty(entry->shape, at::kBFloat16);
  std::memcpy(bf16.data_ptr(), raw->bytes(*entry).data(), raw->bytes(*entry).size());
  EXPECT_EQ(loaded->model->cost_conv->weight.scalar_type(), at::kFloat);
  EXPECT_TRUE(at::equal(loaded->model->cost_conv->weight, bf16.to(at::kFloat)));
}

INSTANTIATE_TEST_SUITE_P(Sizes, PerSize, ::testing::Values(ModelSize::small, ModelSize::base),
                         [](const auto& test_info) { return std::string(model::model_size_name(test_info.param)); });

weights::StateDict state_of(const LocoTrack& model) {
  weights::StateDict state;
  for (const auto& item : model.named_parameters())
    state.tensors.emplace_back(item.key(), item.value().detach().clone());
  return state;
}

// The CPU's table lookup gives exactly the floats of the official u/255*2-1 chain: every byte value, any layout.
TEST(LocoTrackStages, NormalisedFramesEqualTheOfficialArithmetic) {
  at::Generator g = at::make_generator<at::CPUGeneratorImpl>(5);
  const at::Tensor all_values =
      at::arange(256, at::kFloat).to(at::kByte).view({1, 1, 16, 16, 1}).expand({1, 1, 16, 16, 3});
  const at::Tensor frames = at::randint(0, 256, {1, 3, 37, 53, 3}, g, at::TensorOptions(at::kByte));
  for (const at::Tensor& video : {all_values, frames, frames.transpose(2, 3)}) {
    const at::Tensor official = video.to(at::kFloat).div(255.0).mul(2).sub(1);
    const at::Tensor ours = model::normalize_video_u8(video);
    EXPECT_EQ(ours.sizes(), official.sizes());
    EXPECT_EQ(ours.scalar_type(), at::kFloat);
    EXPECT_TRUE(at::equal(ours, official));
  }
  EXPECT_FLOAT_EQ(model::normalize_video_u8(at::full({1}, 255, at::kByte)).item<float>(), 1.0f);
  EXPECT_FLOAT_EQ(model::normalize_video_u8(at::zeros({1}, at::kByte)).item<float>(), -1.0f);
}

TEST(LocoTrackWeights, StrictLoadListsEveryProblemAtOnce) {
  LocoTrack source(LocoTrackConfig{ModelSize::small});
  weights::StateDict state = state_of(source);
  // Remove two keys, add two unknown ones, give two the wrong shape.
  state.tensors.erase(
      std::remove_if(state.tensors.begin(), state.tensors.end(),
                     [](const auto& kv) { return kv.first == "cost_conv.bias" || kv.first == "occ_linear.weight"; }),
      state.tensors.end());
  state.tensors.emplace_back("extra_convs.0.weight", at::zeros({3}));
  state.tensors.emplace_back("torch_pips_mixer.feature_head", at::zeros({3}));
  for (auto& [key, tensor] : state.tensors) {
    if (key == "cmdtop.1.conv.0.0.weight") tensor = at::zeros({64, 49, 3, 3});
    if (key == "torch_pips_mixer.output_proj.bias") tensor = at::zeros({4});
  }
  LocoTrack target(LocoTrackConfig{ModelSize::small});
  const at::Tensor before = target.cost_conv->weight.clone();
  core::Status status = weights::load_state_dict(target, state);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.code(), core::StatusCode::invalid_argument);
  const std::string& message = status.message();
  for (const char* key :
       {"cost_conv.bias", "occ_linear.weight", "extra_convs.0.weight", "torch_pips_mixer.feature_head",
        "cmdtop.1.conv.0.0.weight: file [64, 49, 3, 3] vs model [64, 49, 5, 5]",
        "torch_pips_mixer.output_proj.bias: file [4] vs model [388]"}) {
    EXPECT_NE(message.find(key), std::string::npos) << "missing '" << key << "' in:\n" << message;
  }
  EXPECT_NE(message.find("missing (2)"), std::string::npos) << message;
  EXPECT_NE(message.find("unexpected (2)"), std::string::npos) << message;
  EXPECT_TRUE(at::equal(before, target.cost_conv->weight)) << "a failed load must not modify the model";
}

TEST(LocoTrackWeights, RejectsNonFiniteValuesAndOtherModels) {
  LocoTrack source(LocoTrackConfig{ModelSize::base});
  weights::StateDict state = state_of(source);
  for (auto& [key, tensor] : state.tensors) {
    if (key == "occ_linear.bias") tensor[1] = std::numeric_limits<float>::quiet_NaN();
    if (key == "cost_conv.weight") tensor[0][0][1][1] = std::numeric_limits<float>::infinity();
  }
  LocoTrack target(LocoTrackConfig{ModelSize::base});
  core::Status status = weights::load_state_dict(target, state);
  EXPECT_EQ(status.code(), core::StatusCode::corrupt_data);
  EXPECT_NE(status.message().find("occ_linear.bias"), std::string::npos) << status.message();
  EXPECT_NE(status.message().find("cost_conv.weight"), std::string::npos) << status.message();

  // Base weights into a small model: a shape error, and the size inference says base.
  EXPECT_EQ(weights::infer_model_size(state_of(source)).value(), ModelSize::base);
  EXPECT_EQ(weights::infer_model_size(state_of(LocoTrack(LocoTrackConfig{ModelSize::small}))).value(),
            ModelSize::small);
  LocoTrack small(LocoTrackConfig{ModelSize::small});
  EXPECT_EQ(weights::load_state_dict(small, state_of(source)).code(), core::StatusCode::invalid_argument);
  weights::StateDict unrelated;
  unrelated.tensors.emplace_back("fc.weight", at::zeros({2, 2}));
  EXPECT_FALSE(weights::infer_model_size(unrelated));
}

TEST(LocoTrackWeights, RejectsTruncatedAndMissingFiles) {
  const fs::path folder = temp_folder("truncated");
  // Cut a real shard in the middle of its data: the last tensors run past the end.
  const fs::path shard = kFixtures / "locotrack_small_random_bf16-1.safetensors";
  std::ifstream in(shard, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  bytes.resize(bytes.size() / 2);
  std::ofstream(folder / "cut.safetensors", std::ios::binary)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  core::Expected<weights::LoadedModel> cut = weights::load_locotrack(folder / "cut.safetensors");
  ASSERT_FALSE(cut);
  EXPECT_EQ(cut.status().code(), core::StatusCode::corrupt_data);
  EXPECT_NE(cut.status().message().find("truncated"), std::string::npos) << cut.status().message();

  EXPECT_EQ(weights::load_locotrack(folder / "absent.safetensors").status().code(), core::StatusCode::not_found);
  // Only one of the two shards: the missing keys are listed.
  core::Expected<weights::LoadedModel> half =
      weights::load_locotrack(kFixtures / "locotrack_small_random_bf16-0.safetensors");
  ASSERT_FALSE(half);
  EXPECT_NE(half.status().message().find("missing"), std::string::npos) << half.status().message();
  // A zip that is not a torch checkpoint, and garbage.
  std::ofstream(folder / "fake.ckpt", std::ios::binary) << "PK\x03\x04 not really a zip archive";
  core::Expected<weights::LoadedModel> fake = weights::load_locotrack(folder / "fake.ckpt");
  ASSERT_FALSE(fake);
  EXPECT_EQ(fake.status().code(), core::StatusCode::corrupt_data) << fake.status().message();
  std::ofstream(folder / "garbage.bin", std::ios::binary) << "definitely not weights";
  EXPECT_FALSE(weights::load_locotrack(folder / "garbage.bin"));
}

// A file laid out like the official Lightning checkpoints: {"state_dict": {"model.<key>": fp32 tensor}, ...}.
fs::path write_lightning_checkpoint(const LocoTrack& model, const fs::path& path) {
  c10::impl::GenericDict state(c10::StringType::get(), c10::TensorType::get());
  for (const auto& item : model.named_parameters()) state.insert("model." + item.key(), item.value().detach().clone());
  c10::impl::GenericDict root(c10::StringType::get(), c10::AnyType::get());
  root.insert("epoch", c10::IValue(int64_t{3}));
  root.insert("global_step", c10::IValue(int64_t{300000}));
  root.insert("pytorch-lightning_version", c10::IValue(std::string("2.2.1")));
  root.insert("state_dict", state);
  const std::vector<char> bytes = torch::jit::pickle_save(root);
  std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return path;
}

TEST(LocoTrackWeights, LoadsATorchSaveCheckpointWithModelPrefix) {
  const fs::path folder = temp_folder("checkpoint");
  core::Expected<weights::LoadedModel> fixture = weights::load_locotrack(fixture_weights(ModelSize::small));
  ASSERT_TRUE(fixture) << fixture.status().message();
  const fs::path path = write_lightning_checkpoint(*fixture->model, folder / "locotrack_small.ckpt");
  core::Expected<weights::LoadedModel> loaded = weights::load_locotrack(path);
  ASSERT_TRUE(loaded) << loaded.status().message();
  EXPECT_EQ(loaded->info.format, "pytorch checkpoint");
  EXPECT_EQ(loaded->info.model_name, "LocoTrack-S");
  EXPECT_TRUE(loaded->info.official_checkpoint.empty()) << "same name, different bytes: not the official file";
  const auto expected = fixture->model->named_parameters();
  for (const auto& item : loaded->model->named_parameters()) {
    EXPECT_TRUE(at::equal(item.value(), expected[item.key()])) << item.key();
  }
  // A plain state dict (torch.save(model.state_dict())) works as well.
  c10::impl::GenericDict plain(c10::StringType::get(), c10::TensorType::get());
  for (const auto& item : fixture->model->named_parameters()) plain.insert(item.key(), item.value().detach());
  const std::vector<char> bytes = torch::jit::pickle_save(plain);
  std::ofstream(folder / "plain.pt", std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  EXPECT_TRUE(weights::load_locotrack(folder / "plain.pt")) << "plain state dict";
}

// Issue 18: checkpoints are read by the project's restricted unpickler, so every layout Python's torch.save writes
// loads on LibTorch 1.13 as on 2.x: {'state_dict': {...}} (a one-item dict: SETITEM, "Unknown opcode 0x73" on
// LibTorch 1.13's own unpickler), a plain state dict (OrderedDict with _metadata) and a Lightning checkpoint with
// optimizer state and hyper-parameters. The files are written by tests/data/make_checkpoints.py with Python's
// pickle module, as torch.save lays them out.
TEST(LocoTrackWeights, LoadsEveryTorchSaveLayoutWrittenByPython) {
  const fs::path folder = temp_folder("python_layouts");
  core::Expected<weights::LoadedModel> fixture = weights::load_locotrack(fixture_weights(ModelSize::small));
  ASSERT_TRUE(fixture) << fixture.status().message();
  const fs::path source = folder / "small_f32.safetensors";
  ASSERT_TRUE(weights::save_model_safetensors(*fixture->model, source, at::kFloat).ok());
  const auto expected = fixture->model->named_parameters();
  for (const std::string layout : {"nested", "plain", "lightning"}) {
    SCOPED_TRACE(layout);
    const fs::path checkpoint = folder / ("small_" + layout + ".ckpt");
    const std::string command = fmt::format("python3 '{}/tests/data/make_checkpoints.py' from-safetensors '{}' '{}' {}",
                                            TRACKSCOPE_SOURCE_DIR, source.string(), checkpoint.string(), layout);
    ASSERT_EQ(std::system(command.c_str()), 0) << command;
    core::Expected<weights::LoadedModel> loaded = weights::load_locotrack(checkpoint);
    ASSERT_TRUE(loaded) << loaded.status().message();
    EXPECT_EQ(loaded->info.format, "pytorch checkpoint");
    EXPECT_EQ(loaded->info.model_name, "LocoTrack-S");
    for (const auto& item : loaded->model->named_parameters()) {
      EXPECT_TRUE(at::equal(item.value(), expected[item.key()])) << item.key();
    }
  }
  // A random file named .ckpt is called what it is, not "a damaged safetensors file".
  std::ofstream(folder / "random.ckpt", std::ios::binary) << std::string("\x3f\xa2\x00\x17 random bytes", 17);
  core::Expected<weights::LoadedModel> random = weights::load_locotrack(folder / "random.ckpt");
  ASSERT_FALSE(random);
  EXPECT_NE(random.status().message().find("not a PyTorch checkpoint"), std::string::npos) << random.status().message();
  EXPECT_EQ(random.status().message().find("safetensors file:"), std::string::npos) << random.status().message();
}

TEST(LocoTrackWeights, ConvertWritesStrictSafetensorsInEachDtype) {
  const fs::path folder = temp_folder("convert");
  core::Expected<weights::LoadedModel> fixture = weights::load_locotrack(fixture_weights(ModelSize::base));
  ASSERT_TRUE(fixture) << fixture.status().message();
  const fs::path checkpoint = write_lightning_checkpoint(*fixture->model, folder / "base.ckpt");
  for (const std::string dtype : {"f32", "bf16", "f16"}) {
    const fs::path out = folder / ("base_" + dtype + ".safetensors");
    core::Expected<ModelWeightsInfo> info = convert_model_weights({checkpoint, out, dtype});
    ASSERT_TRUE(info) << info.status().message();
    EXPECT_EQ(info->model_size, "base");
    core::Expected<core::io::SafetensorsSet> written = core::io::SafetensorsSet::open(out);
    ASSERT_TRUE(written) << written.status().message();
    EXPECT_EQ(written->tensors().size(), 147u);
    EXPECT_EQ(written->tensors().front().name, "resnet_torch.initial_conv.weight") << "official order, no prefix";
    EXPECT_EQ(written->metadata().at("model"), "LocoTrack-B");
    EXPECT_EQ(written->metadata().at("source_sha256"), info->sha256.at(0));
    core::Expected<weights::LoadedModel> reloaded = weights::load_locotrack(out);
    ASSERT_TRUE(reloaded) << reloaded.status().message();
    // The fixture values are bf16-representable: f32 and bf16 are exact; f16 rounds (and must stay finite).
    const auto expected = fixture->model->named_parameters();
    for (const auto& item : reloaded->model->named_parameters()) {
      const at::Tensor& want = expected[item.key()];
      if (dtype == "f16") {
        EXPECT_TRUE(at::allclose(item.value(), want, 1e-3, 1e-4)) << item.key();
      } else {
        EXPECT_TRUE(at::equal(item.value(), want)) << dtype << " " << item.key();
      }
    }
  }
  EXPECT_FALSE(convert_model_weights({checkpoint, folder / "x.safetensors", "f8"}));
  EXPECT_FALSE(convert_model_weights({checkpoint, folder / "x.bin", "f32"}));
  EXPECT_EQ(convert_model_weights({folder / "absent.ckpt", folder / "x.safetensors", "f32"}).status().code(),
            core::StatusCode::not_found);
}

TEST(LocoTrackWeights, AverageMixesRunsParameterByParameterAndRefusesMixedModels) {
  const fs::path folder = temp_folder("average");
  core::Expected<weights::LoadedModel> a = weights::load_locotrack(fixture_weights(ModelSize::small));
  ASSERT_TRUE(a) << a.status().message();
  // A second "run": every parameter of the fixture moved by its own index-dependent amount.
  core::Expected<weights::LoadedModel> b = weights::load_locotrack(fixture_weights(ModelSize::small));
  ASSERT_TRUE(b) << b.status().message();
  {
    at::NoGradGuard no_grad;
    double shift = 0.25;
    for (auto& item : b->model->named_parameters()) {
      item.value().add_(shift);
      shift += 0.125;
    }
  }
  const fs::path b_file = folder / "b.safetensors";
  ASSERT_TRUE(weights::save_model_safetensors(*b->model, b_file, at::kFloat).ok());
  const fs::path out = folder / "mix.safetensors";
  core::Expected<ModelWeightsInfo> info =
      average_model_weights({{fixture_weights(ModelSize::small), b_file}, {0.25, 0.75}, out, "f32"});
  ASSERT_TRUE(info) << info.status().message();
  EXPECT_EQ(info->model_size, "small");
  core::Expected<weights::LoadedModel> mixed = weights::load_locotrack(out);
  ASSERT_TRUE(mixed) << mixed.status().message();
  const auto want_a = a->model->named_parameters();
  const auto want_b = b->model->named_parameters();
  int64_t checked = 0;
  for (const auto& item : mixed->model->named_parameters()) {
    const at::Tensor want = want_a[item.key()] * 0.25 + want_b[item.key()] * 0.75;
    EXPECT_TRUE(at::allclose(item.value(), want, 1e-6, 1e-6)) << item.key();
    EXPECT_FALSE(at::allclose(item.value(), want_a[item.key()], 1e-3, 1e-3)) << item.key() << " kept input 1";
    ++checked;
  }
  EXPECT_EQ(checked, 135);
  core::Expected<core::io::SafetensorsSet> written = core::io::SafetensorsSet::open(out);
  ASSERT_TRUE(written) << written.status().message();
  const std::string sources = written->metadata().at("averaged_from");
  EXPECT_NE(sources.find("b.safetensors"), std::string::npos) << sources;
  EXPECT_NE(sources.find("x 0.75"), std::string::npos) << sources;

  // Equal weights by default; mixed sizes, a lone input, bad weights and outputs are refused before writing.
  ASSERT_TRUE(average_model_weights({{b_file, b_file}, {}, folder / "same.safetensors", "f32"}));
  core::Expected<weights::LoadedModel> same = weights::load_locotrack(folder / "same.safetensors");
  ASSERT_TRUE(same) << same.status().message();
  for (const auto& item : same->model->named_parameters()) EXPECT_TRUE(at::equal(item.value(), want_b[item.key()]));
  const core::Expected<ModelWeightsInfo> mixed_sizes = average_model_weights(
      {{fixture_weights(ModelSize::small), fixture_weights(ModelSize::base)}, {}, folder / "x.safetensors", "f16"});
  ASSERT_FALSE(mixed_sizes);
  EXPECT_NE(mixed_sizes.status().message().find("LocoTrack-B"), std::string::npos) << mixed_sizes.status().message();
  EXPECT_FALSE(average_model_weights({{b_file}, {}, folder / "x.safetensors", "f16"}));
  EXPECT_FALSE(average_model_weights({{b_file, b_file}, {0.5, 0.6}, folder / "x.safetensors", "f16"}));
  EXPECT_FALSE(average_model_weights({{b_file, b_file}, {1.5, -0.5}, folder / "x.safetensors", "f16"}));
  EXPECT_FALSE(average_model_weights({{b_file, b_file}, {1.0}, folder / "x.safetensors", "f16"}));
  EXPECT_FALSE(average_model_weights({{b_file, b_file}, {}, folder / "x.bin", "f16"}));
  EXPECT_FALSE(fs::exists(folder / "x.safetensors"));
  EXPECT_EQ(average_model_weights({{b_file, folder / "absent.safetensors"}, {}, folder / "x.safetensors", "f16"})
                .status()
                .code(),
            core::StatusCode::not_found);
}

TEST(LocoTrackWeights, RecognisesOfficialCheckpointsBySha256) {
  ASSERT_EQ(known_checkpoints().size(), 2u);
  const KnownCheckpoint* small =
      find_known_checkpoint("da023594e6d6c05ecad9644efc1467545481cfa899e20730bd9fdce778ffa5ac");
  ASSERT_NE(small, nullptr);
  EXPECT_EQ(small->file_name, "locotrack_small.ckpt");
  EXPECT_EQ(small->size_bytes, 33'001'026u);
  EXPECT_EQ(find_known_checkpoint("8a5adbaeb610d1f06adfbc7c9076b66f727d674c0fd1d668890201cf3339736c")->model_size,
            "base");
  EXPECT_EQ(find_known_checkpoint(std::string(64, '0')), nullptr);
  // A conversion records its source's sha256; when that is an official file the loader says so.
  const fs::path folder = temp_folder("official");
  LocoTrack model(LocoTrackConfig{ModelSize::small});
  ASSERT_TRUE(weights::save_model_safetensors(model, folder / "converted.safetensors", at::kFloat,
                                              {{"source_sha256", std::string(small->sha256)}})
                  .ok());
  core::Expected<ModelWeightsInfo> info = inspect_model_weights(folder / "converted.safetensors");
  ASSERT_TRUE(info) << info.status().message();
  EXPECT_EQ(info->official_checkpoint, "locotrack_small.ckpt");
  EXPECT_TRUE(info->converted_from_official);
  EXPECT_NE(info->summary().find("converted from the official locotrack_small.ckpt"), std::string::npos)
      << info->summary();
}

TEST(LocoTrackAutograd, EveryParameterReceivesAGradientThroughAllIterations) {
  at::manual_seed(7);
  LocoTrack model(LocoTrackConfig{ModelSize::small});
  model.train();
  const at::Tensor video = at::rand({1, 2, 256, 256, 3}) * 2 - 1;
  const at::Tensor queries = at::tensor({0.f, 100.5f, 60.25f, 1.f, 30.f, 200.f}).view({1, 2, 3});
  const model::ForwardOutput out = model::forward(model, video, queries, /*query_chunk=*/1);
  at::Tensor loss = at::zeros({});
  for (const model::TrackState& state : out.iterations) {
    loss = loss + state.tracks.sum() * 1e-3 + state.occlusion.sum() + state.expected_dist.sum();
  }
  loss.backward();
  std::vector<std::string> without;
  for (const auto& item : model.named_parameters()) {
    // output_proj rows 4.. feed nothing (the dead carried feature) and get zero gradient, as in the official model.
    const at::Tensor& grad = item.value().grad();
    if (!grad.defined() || !at::isfinite(grad).all().item<bool>()) without.push_back(item.key());
  }
  EXPECT_TRUE(without.empty()) << "no or non-finite gradient: " << fmt::format("{}", fmt::join(without, ", "));
  const at::Tensor output_grad = model.torch_pips_mixer->output_proj->weight.grad();
  ASSERT_TRUE(output_grad.defined());
  EXPECT_GT(output_grad.narrow(0, 0, 4).abs().sum().item<double>(), 0.0);
  EXPECT_EQ(output_grad.narrow(0, 4, 384).abs().sum().item<double>(), 0.0);
}

TEST(LocoTrackForward, NoQueriesGiveEmptyTracksAndBadShapesAreRejected) {
  LocoTrack model(LocoTrackConfig{ModelSize::small});
  c10::InferenceMode inference;
  const at::Tensor video = at::zeros({1, 1, 256, 256, 3});
  const model::ForwardOutput out = model::forward(model, video, at::zeros({1, 0, 3}));
  EXPECT_EQ(out.tracks.sizes(), (std::vector<std::int64_t>{1, 0, 1, 2}));
  EXPECT_EQ(out.occlusion.sizes(), (std::vector<std::int64_t>{1, 0, 1}));
  EXPECT_EQ(out.iterations.size(), 5u);
  EXPECT_THROW(model::forward(model, at::zeros({1, 1, 128, 128, 3}), at::zeros({1, 1, 3})), c10::Error);
  EXPECT_THROW(model::forward(model, video, at::zeros({1, 1, 2})), c10::Error);
  EXPECT_THROW(model::inference(model, video, at::zeros({1, 1, 3})), c10::Error) << "inference() takes uint8 video";
}

TEST(LocoTrackStages, WindowedSoftArgmaxTakesTheFirstPeakAndAStrictRadius) {
  // Two equal peaks: the first in raster order wins; its window (distance^2 < 25 cells) excludes the second.
  at::Tensor heat = at::zeros({1, 64, 64});
  heat[0][10][20] = 0.4;  // (x, y) = (20.5, 10.5)
  heat[0][40][50] = 0.4;
  heat[0][10][25] = 0.2;  // exactly 5 cells right of the peak: outside (strict <)
  heat[0][13][24] = 0.1;  // distance^2 = 9 + 16 = 25: outside
  heat[0][12][23] = 0.1;  // distance^2 = 4 + 9 = 13: inside
  const at::Tensor xy = model::windowed_soft_argmax(heat);
  ASSERT_EQ(xy.sizes(), (std::vector<std::int64_t>{1, 2}));
  EXPECT_NEAR(xy[0][0].item<double>(), (0.4 * 20.5 + 0.1 * 23.5) / 0.5, 1e-5);
  EXPECT_NEAR(xy[0][1].item<double>(), (0.4 * 10.5 + 0.1 * 12.5) / 0.5, 1e-5);
  // A peak in the corner: cells outside the map do not count; all-zero maps give (0, 0) like the reference.
  at::Tensor corner = at::zeros({2, 64, 64});
  corner[0][0][0] = 1.0;
  corner[0][1][1] = 1.0 / 3.0;
  const at::Tensor c = model::windowed_soft_argmax(corner);
  EXPECT_NEAR(c[0][0].item<double>(), (0.5 + 1.5 / 3.0) / (4.0 / 3.0), 1e-5);
  EXPECT_EQ(c[1][0].item<double>(), 0.0);
  EXPECT_EQ(c[1][1].item<double>(), 0.0);
}

TEST(LocoTrackModules, WidenedWeightGivesTheSameConvolutionAsThePaddedInput) {
  at::manual_seed(7);
  for (const bool channels_last : {false, true}) {
    for (const std::int64_t kernel : {1, 3, 7}) {
      model::Conv2dSame conv(5, 6, kernel, 2, /*bias=*/true);
      model::Conv2dSame widened(5, 6, kernel, 2, /*bias=*/true);
      {
        at::NoGradGuard no_grad;
        widened.weight.copy_(conv.weight);
        widened.bias.copy_(conv.bias);
      }
      if (channels_last) widened.weight.set_data(widened.weight.contiguous(at::MemoryFormat::ChannelsLast));
      widened.add_widened_weight();
      ASSERT_EQ(widened.widened_weight.sizes(), (std::vector<std::int64_t>{6, 5, kernel + 1, kernel + 1}));
      EXPECT_EQ(widened.widened_weight.select(2, 0).abs().sum().item<double>(), 0.0);
      EXPECT_EQ(widened.widened_weight.select(3, 0).abs().sum().item<double>(), 0.0);
      // Even sizes pad one more pixel at the end (the widened weight), odd ones symmetrically or (kernel 1) not at
      // all, and 16 x 15 on one axis only (the padded copy): every case equals the reference convolution.
      for (const auto& [height, width] :
           std::vector<std::pair<std::int64_t, std::int64_t>>{{16, 16}, {15, 15}, {16, 15}}) {
        at::Tensor input = at::randn({2, 5, height, width}, at::kDouble).to(at::kFloat);
        if (channels_last) input = input.contiguous(at::MemoryFormat::ChannelsLast);
        const at::Tensor expected = conv.forward(input);
        const at::Tensor actual = widened.forward(input);
        ASSERT_EQ(actual.sizes(), expected.sizes()) << kernel << " " << height << "x" << width;
        EXPECT_LT((actual - expected).abs().max().item<double>(), 1e-5)
            << "kernel " << kernel << ", " << height << "x" << width << (channels_last ? ", channels-last" : "");
      }
      if (kernel == 1) continue;  // a 1x1 stride-2 conv needs no padding at even sizes
      // The even size convolves with the widened weight (zeroed, only the bias is left); 15 x 15 does not.
      widened.widened_weight.zero_();
      const at::Tensor bias_only = widened.forward(at::randn({1, 5, 16, 16}));
      EXPECT_TRUE(at::equal(bias_only, widened.bias.view({1, 6, 1, 1}).expand_as(bias_only))) << kernel;
      const at::Tensor odd = at::randn({1, 5, 15, 15});
      EXPECT_TRUE(at::allclose(widened.forward(odd), conv.forward(odd), 1e-5, 1e-5)) << kernel;
    }
  }
}

// The backbone's hooks for the engine's fused path: BackboneKernels::add_norm_relu computes each block's residual sum
// and the next block's first activation (7 of the 8 blocks: the last has no next), and must give the outputs of the
// addition followed by the next block's own norm bit for bit; both within float32 rounding of the reference ops.
int& add_norm_relu_calls() {
  static int calls = 0;
  return calls;
}
at::Tensor norm_relu_op(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias) {
  return ops::instance_norm_relu(x, weight, bias);
}
std::array<at::Tensor, 2> add_norm_relu_op(const at::Tensor& x, const at::Tensor& residual, const at::Tensor& weight,
                                           const at::Tensor& bias) {
  ++add_norm_relu_calls();
  ops::SumAndNorm result = ops::add_instance_norm_relu(x, residual, weight, bias);
  return {result.sum, result.norm};
}

TEST(LocoTrackModules, BackboneHandsEachBlockItsFirstActivation) {
  at::manual_seed(11);
  at::NoGradGuard no_grad;
  model::ResNetBackbone backbone;
  for (const auto& group : backbone.groups) {
    for (const auto& block : group) {
      for (const auto& norm : {block->bn_0, block->bn_1}) {
        norm->weight.uniform_(0.5, 1.5);
        norm->bias.normal_(0.0, 0.5);
      }
    }
  }
  const at::Tensor frames = at::rand({2, 3, 64, 64}) * 2.0 - 1.0;
  const std::array<at::Tensor, 3> reference = backbone.forward(frames);
  model::BackboneKernels separate;
  separate.norm_relu = &norm_relu_op;
  model::BackboneKernels fused = separate;
  fused.add_norm_relu = &add_norm_relu_op;
  const std::array<at::Tensor, 3> expected = backbone.forward(frames, separate);
  add_norm_relu_calls() = 0;
  const std::array<at::Tensor, 3> actual = backbone.forward(frames, fused);
  EXPECT_EQ(add_norm_relu_calls(), 7);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_TRUE(at::equal(actual[i], expected[i])) << "output " << i;
    const double scale = reference[i].abs().max().item<double>();
    EXPECT_LT((actual[i] - reference[i]).abs().max().item<double>(), 1e-4 * scale) << "output " << i;
  }
}

TEST(LocoTrackStages, AlibiBiasHasTheDocumentedSlopesAndMasks) {
  const at::Tensor small = model::alibi_bias(4, 5, at::TensorOptions());
  ASSERT_EQ(small.sizes(), (std::vector<std::int64_t>{4, 5, 5}));
  // docs/locotrack-spec.md §2.5: small slopes [0.2041241, 0.0416667], forward heads first, then backward heads.
  EXPECT_NEAR(small[0][3][2].item<double>(), -0.2041241, 1e-7);  // forward: -s (i - j) for j <= i
  EXPECT_NEAR(small[1][4][0].item<double>(), -4 * 0.0416667, 1e-6);
  EXPECT_EQ(small[0][2][3].item<double>(), -1e9);                    // forward heads never look ahead
  EXPECT_NEAR(small[2][1][4].item<double>(), -3 * 0.2041241, 1e-6);  // backward: -s (j - i) for j >= i
  EXPECT_EQ(small[3][4][1].item<double>(), -1e9);
  EXPECT_EQ(small[2][3][3].item<double>(), 0.0);
  const at::Tensor base = model::alibi_bias(6, 3, at::TensorOptions());
  EXPECT_NEAR(-base[0][1][0].item<double>(), 0.3466806, 1e-7);
  EXPECT_NEAR(-base[1][1][0].item<double>(), 0.1201875, 1e-7);
  EXPECT_NEAR(-base[5][0][1].item<double>(), 0.0416667, 1e-7);
}

TEST(LocoTrackStages, RelativeMotionEncodingOrder) {
  // Tracks (x, y) over 3 frames in 256 space.
  const at::Tensor tracks = at::tensor({10.f, 20.f, 12.f, 16.f, 12.f, 16.f}).view({1, 1, 3, 2});
  const at::Tensor e = ops::relative_motion_encoding(tracks);  // the encoding apply_mixer uses
  ASSERT_EQ(e.sizes(), (std::vector<std::int64_t>{1, 1, 3, 84}));
  // u at frame 0 = [fwd_x, fwd_y, bwd_x, bwd_y] = [(10-12)/256, (20-16)/256, 0, 0].
  EXPECT_FLOAT_EQ(e[0][0][0][0].item<float>(), -2.f / 256);
  EXPECT_FLOAT_EQ(e[0][0][0][1].item<float>(), 4.f / 256);
  EXPECT_FLOAT_EQ(e[0][0][0][2].item<float>(), 0.f);
  EXPECT_FLOAT_EQ(e[0][0][1][2].item<float>(), 2.f / 256);  // backward motion at frame 1
  EXPECT_FLOAT_EQ(e[0][0][2][0].item<float>(), 0.f);        // no forward motion at the last frame
  // s-major: sin(2^s u_c) at 4 + 4 s + c; cos as sin(x + pi/2) 40 entries later.
  EXPECT_NEAR(e[0][0][0][4 + 4 * 3 + 1].item<double>(), std::sin(8.0 * 4 / 256), 1e-6);
  EXPECT_NEAR(e[0][0][0][44 + 4 * 9 + 0].item<double>(), std::cos(512.0 * -2 / 256), 1e-5);
}

TEST(LocoTrackStages, OcclusionRuleIsTheOfficialOne) {
  // p = 1 - (1 - sigmoid(occ)) (1 - sigmoid(expd)); occluded iff p > 0.5.
  const at::Tensor occlusion = at::tensor({0.f, -5.f, -5.f, 3.f});
  const at::Tensor expected = at::tensor({0.f, -5.f, 0.f, -9.f});
  const at::Tensor p = model::occlusion_probability(occlusion, expected);
  EXPECT_NEAR(p[0].item<double>(), 0.75, 1e-7);
  EXPECT_LT(p[1].item<double>(), 0.5);
  EXPECT_GT(p[2].item<double>(), 0.5);  // an uncertain position alone makes the point count as occluded
  EXPECT_GT(p[3].item<double>(), 0.5);
}

}  // namespace
}  // namespace trackscope::gpu
