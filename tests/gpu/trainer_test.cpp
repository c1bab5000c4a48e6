// The trainer on tiny clips with a tiny model defined here: the loss goes down, a resumed run reproduces an
// uninterrupted one exactly, a whole run_training() call writes its checkpoint, logs and validation, weights
// files round-trip, the schedule follows PyTorch's OneCycleLR, and validation of an oracle scores perfectly.
// CPU by default; TRACKSCOPE_TEST_DEVICE=cuda reruns what is device-dependent on the GPU (bf16 autocast in the
// run_training test), skipping without CUDA.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <numbers>
#include <string>

#include "gpu/training/checkpoint.h"
#include "gpu/training/trainer.h"
#include "test_device.h"

namespace trackscope::gpu::training {
namespace {

namespace fs = std::filesystem;

// A few convolution and linear layers: features sampled at the query position on every frame predict an
// offset, an occlusion and an expected-distance logit; a second "refinement" iteration adds corrections.
struct TinyNet : torch::nn::Module {
  TinyNet() {
    conv = register_module("conv", torch::nn::Conv2d(torch::nn::Conv2dOptions(3, 8, 3).stride(2).padding(1)));
    head0 = register_module("head0", torch::nn::Linear(8, 4));
    head1 = register_module("head1", torch::nn::Linear(12, 4));
  }
  torch::nn::Conv2d conv{nullptr};
  torch::nn::Linear head0{nullptr}, head1{nullptr};
};

class TinyTracker : public TrainableTracker {
 public:
  TinyTracker() : net_(std::make_shared<TinyNet>()) {}
  torch::nn::Module& module() override { return *net_; }
  std::string describe() const override { return "tiny test tracker"; }
  TrackerOutputs forward(const at::Tensor& video, const at::Tensor& queries) override {
    const int64_t b = video.size(0), t = video.size(1), h = video.size(2), w = video.size(3), n = queries.size(1);
    at::Tensor features = at::relu(net_->conv->forward(video.permute({0, 1, 4, 2, 3}).reshape({b * t, 3, h, w})));
    at::Tensor xy = queries.narrow(-1, 1, 2).flip(-1);  // [B,N,2]
    at::Tensor grid = (xy / at::tensor({static_cast<float>(w), static_cast<float>(h)}, xy.options()) * 2.0 - 1.0)
                          .unsqueeze(1)
                          .expand({b, t, n, 2})
                          .reshape({b * t, n, 1, 2});
    at::Tensor sampled =
        at::grid_sampler(features, grid, 0, 0, false).view({b, t, 8, n}).permute({0, 3, 1, 2});  // [B,N,T,8]
    at::Tensor out0 = net_->head0->forward(sampled);
    at::Tensor tracks0 = xy.unsqueeze(2) + out0.narrow(-1, 0, 2);
    at::Tensor out1 = net_->head1->forward(at::cat({sampled, out0}, -1));
    return {{{tracks0, out0.select(-1, 2), out0.select(-1, 3)},
             {tracks0 + out1.narrow(-1, 0, 2), out0.select(-1, 2) + out1.select(-1, 2),
              out0.select(-1, 3) + out1.select(-1, 3)}}};
  }

 private:
  std::shared_ptr<TinyNet> net_;
};

using test_env::cuda_requested;
using test_env::test_device;

TrainingOptions tiny_options(const fs::path& dir) {
  TrainingOptions o;
  o.model = "tiny";
  o.device = test_env::test_device_name();
  o.precision = core::Precision::fp32;
  o.output_dir = dir;
  o.data.batch_size = 2;
  o.data.frames = 6;
  o.data.height = o.data.width = 32;
  o.data.points = 32;
  o.data.object_texture_size = 32;
  o.data.background_texture_size = 64;
  o.validation_data = o.data;
  o.validation_data.query_first_fraction = 1.0;
  o.validation_clips = 3;
  o.validation_every_steps = 0;
  o.optimizer.learning_rate = 3e-3;
  o.schedule.total_steps = 100;
  o.log_every_steps = 2;
  o.checkpoint_every_minutes = 0.0;
  o.max_steps = 6;
  return o;
}

fs::path fresh_dir(const std::string& name) {
  const fs::path dir = fs::path(TRACKSCOPE_TEST_OUTPUT_DIR) / "trainer" / name;
  fs::remove_all(dir);
  return dir;
}

std::unique_ptr<TinyTracker> seeded_tracker(uint64_t seed) {
  at::manual_seed(seed);  // the test model's initialisation
  auto tracker = std::make_unique<TinyTracker>();
  tracker->module().to(test_device());
  return tracker;
}

// run_training()'s factory for the model "tiny" (not_found for any other name); counts the models made in `made`.
TrainableTrackerFactory tiny_factory(int* made = nullptr) {
  return
      [made](const std::string& name, const at::Device& device) -> core::Expected<std::unique_ptr<TrainableTracker>> {
        if (name != "tiny") return core::not_found("unknown model " + name);
        if (made != nullptr) ++*made;
        auto tracker = std::make_unique<TinyTracker>();
        tracker->module().to(device);
        return std::unique_ptr<TrainableTracker>(std::move(tracker));
      };
}

TEST(Trainer, LossDecreasesOnTinyClips) {
  TRACKSCOPE_SKIP_WITHOUT_TEST_DEVICE();
  TrainingOptions o = tiny_options(fresh_dir("decrease"));
  o.schedule.kind = LearningRateSchedule::constant;
  o.optimizer.learning_rate = 1e-2;
  o.data.max_object_speed = 0.2;  // slow scenes, so that the position term does not drown everything else
  o.data.max_camera_speed = 0.1;
  o.validation_data = o.data;
  o.validation_clips = 8;
  auto model = seeded_tracker(1);
  auto trainer = Trainer::create(o, *model, test_device());
  ASSERT_TRUE(trainer) << trainer.status().message();
  ASSERT_TRUE((*trainer)->self_check().ok());
  auto before = (*trainer)->validate();
  ASSERT_TRUE(before) << before.status().message();
  std::vector<StepRecord> records;
  for (int i = 0; i < 40; ++i) {
    auto record = (*trainer)->train_step(/*timed=*/i % 10 == 0);
    ASSERT_TRUE(record) << record.status().message();
    EXPECT_EQ(record->step, i);
    EXPECT_EQ(record->nonfinite_gradients, 0);
    records.push_back(*record);
  }
  auto after = (*trainer)->validate();
  ASSERT_TRUE(after);
  // The held-out loss (fixed clips) goes down (measured 7.9 -> 6.9), and the occlusion term, which a few dozen
  // steps can learn, a lot (measured 1.24 -> 0.69).
  EXPECT_LT(after->loss, 0.95 * before->loss) << "before " << before->loss << " after " << after->loss;
  double first = 0.0, last = 0.0;
  for (size_t i = 0; i < 8; ++i) {
    first += records[i].occlusion_loss / 8.0;
    last += records[records.size() - 1 - i].occlusion_loss / 8.0;
  }
  EXPECT_LT(last, 0.7 * first) << "occlusion loss: first steps " << first << ", last steps " << last;
}

std::map<std::string, at::Tensor> parameters_of(TinyTracker& tracker) {
  std::map<std::string, at::Tensor> out;
  for (const auto& p : tracker.module().named_parameters()) out[p.key()] = p.value().detach().clone();
  return out;
}

TEST(Trainer, ResumedRunReproducesAnUninterruptedRun) {
  if (cuda_requested()) GTEST_SKIP() << "bitwise resume is checked on the CPU (CUDA backward kernels use atomics)";
  TrainingOptions straight = tiny_options(fresh_dir("straight"));
  straight.max_steps = 8;
  auto model_straight = seeded_tracker(2);
  auto trainer_straight = Trainer::create(straight, *model_straight, at::kCPU);
  ASSERT_TRUE(trainer_straight);
  ASSERT_TRUE((*trainer_straight)->train());

  TrainingOptions first = tiny_options(fresh_dir("split"));
  first.max_steps = 4;
  first.validation_clips = 0;
  {
    auto model = seeded_tracker(2);
    auto trainer = Trainer::create(first, *model, at::kCPU);
    ASSERT_TRUE(trainer);
    auto summary = (*trainer)->train();
    ASSERT_TRUE(summary) << summary.status().message();
    EXPECT_EQ(summary->last_step, 4);
  }
  auto model_resumed = seeded_tracker(99);  // different initial weights: everything must come from the checkpoint
  auto trainer_resumed = Trainer::create(first, *model_resumed, at::kCPU);
  ASSERT_TRUE(trainer_resumed);
  ASSERT_TRUE((*trainer_resumed)->resume(first.output_dir).ok());
  EXPECT_EQ((*trainer_resumed)->step(), 4);
  auto summary = (*trainer_resumed)->train();
  ASSERT_TRUE(summary) << summary.status().message();
  EXPECT_EQ(summary->first_step, 4);
  EXPECT_EQ(summary->last_step, 8);

  const auto a = parameters_of(*model_straight), b = parameters_of(*model_resumed);
  ASSERT_EQ(a.size(), b.size());
  for (const auto& [name, tensor] : a) {
    EXPECT_TRUE(at::allclose(tensor, b.at(name), 0.0, 1e-7))
        << name << " differs by " << (tensor - b.at(name)).abs().max().item<double>();
  }
  // Without optimizer.pt the moments restart: the weights still load, the run continues, the result differs.
  fs::remove(first.output_dir / "optimizer.pt");
  auto model_no_moments = seeded_tracker(3);
  auto trainer_no_moments = Trainer::create(first, *model_no_moments, at::kCPU);
  ASSERT_TRUE((*trainer_no_moments)->resume(first.output_dir).ok());
  EXPECT_EQ((*trainer_no_moments)->step(), 8);
}

std::vector<nlohmann::json> read_lines(const fs::path& path) {
  std::ifstream in(path);
  std::vector<nlohmann::json> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(nlohmann::json::parse(line));
  return lines;
}

TEST(Trainer, RunTrainingWritesCheckpointLogsAndValidation) {
  TRACKSCOPE_SKIP_WITHOUT_TEST_DEVICE();
  TrainingOptions o = tiny_options(fresh_dir("run"));
  if (cuda_requested()) o.precision = core::Precision::bf16;  // exercises the autocast guard
  o.max_steps = 5;
  o.validation_every_steps = 4;
  o.max_shard_bytes = 1 << 20;
  int made = 0;
  const TrainableTrackerFactory factory = tiny_factory(&made);
  auto summary = run_training(o, factory);
  ASSERT_TRUE(summary) << summary.status().message();
  EXPECT_EQ(made, 1);
  EXPECT_EQ(summary->last_step, 5);
  EXPECT_GT(summary->clips_per_second, 0.0);
  ASSERT_TRUE(summary->validation.has_value());
  EXPECT_GE(summary->validation->metrics.average_jaccard, 0.0);
  EXPECT_LE(summary->validation->metrics.average_jaccard, 1.0);
  EXPECT_EQ(summary->validation->metrics.videos, 3);
  // The stationary baseline predicts everything visible: its occlusion accuracy is the visible share.
  EXPECT_GT(summary->validation->stationary_baseline.occlusion_accuracy, 0.5);

  for (const char* file :
       {"weights.safetensors", "optimizer.pt", "trainer_state.json", "train_log.jsonl", "validation.json"}) {
    EXPECT_TRUE(fs::exists(o.output_dir / file)) << file;
  }
  std::map<std::string, int> kinds;
  for (const auto& line : read_lines(o.output_dir / "train_log.jsonl")) ++kinds[line.at("type").get<std::string>()];
  EXPECT_EQ(kinds["self_check"], 1);
  EXPECT_EQ(kinds["start"], 1);
  EXPECT_EQ(kinds["train"], 3);       // steps 2, 4 and the partial interval ending at 5
  EXPECT_EQ(kinds["validation"], 2);  // step 4 and the final one
  EXPECT_EQ(kinds["end"], 1);
  std::ifstream state_file(o.output_dir / "trainer_state.json");
  EXPECT_EQ(nlohmann::json::parse(state_file).at("step").get<int64_t>(), 5);

  // --continue: a second call with the same options resumes from the output folder.
  TrainingOptions again = o;
  again.continue_in_output = true;
  auto continued = run_training(again, factory);
  ASSERT_TRUE(continued) << continued.status().message();
  EXPECT_EQ(continued->first_step, 5);
  EXPECT_EQ(continued->last_step, 10);

  TrainingOptions unknown = o;
  unknown.model = "nope";
  EXPECT_EQ(run_training(unknown, factory).status().code(), core::StatusCode::not_found);
  TrainingOptions no_budget = o;
  no_budget.max_steps = 0;
  EXPECT_EQ(run_training(no_budget, factory).status().code(), core::StatusCode::invalid_argument);
}

TEST(Trainer, ValidateOnlyMeasuresTheStartingWeightsWithoutTraining) {
  TRACKSCOPE_SKIP_WITHOUT_TEST_DEVICE();
  const TrainableTrackerFactory factory = tiny_factory();
  // A short run whose final validation is of the weights it checkpoints (fp32).
  TrainingOptions trained = tiny_options(fresh_dir("validate_only_source"));
  trained.max_steps = 2;
  auto source = run_training(trained, factory);
  ASSERT_TRUE(source) << source.status().message();
  ASSERT_TRUE(source->validation.has_value());

  auto expect_same_validation = [&](const TrainingSummary& summary) {
    ASSERT_TRUE(summary.validation.has_value());
    EXPECT_EQ(summary.validation->metrics.videos, 3);
    EXPECT_DOUBLE_EQ(summary.validation->metrics.average_jaccard, source->validation->metrics.average_jaccard);
    EXPECT_DOUBLE_EQ(summary.validation->loss, source->validation->loss);
  };
  auto expect_no_training = [](const fs::path& dir, const std::map<std::string, int>& log_lines) {
    for (const char* file : {"weights.safetensors", "optimizer.pt", "trainer_state.json"}) {
      EXPECT_FALSE(fs::exists(dir / file)) << file << " written by a validate-only call";
    }
    EXPECT_TRUE(fs::exists(dir / "validation.json"));
    std::map<std::string, int> kinds;
    for (const auto& line : read_lines(dir / "train_log.jsonl")) ++kinds[line.at("type").get<std::string>()];
    EXPECT_EQ(kinds, log_lines);
  };

  // From the checkpoint's weights as a fresh start: step 0, no budget given.
  TrainingOptions from_weights = tiny_options(fresh_dir("validate_only_weights"));
  from_weights.validate_only = true;
  from_weights.max_steps = 0;
  from_weights.init_weights = trained.output_dir / "weights.safetensors";
  auto measured = run_training(from_weights, factory);
  ASSERT_TRUE(measured) << measured.status().message();
  EXPECT_EQ(measured->first_step, 0);
  EXPECT_EQ(measured->last_step, 0);
  EXPECT_TRUE(measured->checkpoint_dir.empty());
  expect_same_validation(*measured);
  expect_no_training(from_weights.output_dir, {{"validation", 1}});

  // Resumed from a copy of the checkpoint folder whose optimizer.pt is damaged (validate-only never reads the
  // moments): its step, and the checkpoint left as it was.
  const fs::path damaged = fresh_dir("validate_only_damaged_moments");
  fs::copy(trained.output_dir, damaged, fs::copy_options::recursive | fs::copy_options::overwrite_existing);
  std::ofstream(damaged / "optimizer.pt", std::ios::binary | std::ios::trunc) << "not a torch archive";
  const auto state_before = fs::last_write_time(damaged / "trainer_state.json");
  TrainingOptions resumed = from_weights;
  resumed.init_weights.clear();
  resumed.resume_from = damaged;
  resumed.output_dir = fresh_dir("validate_only_resumed");
  auto measured_resumed = run_training(resumed, factory);
  ASSERT_TRUE(measured_resumed) << measured_resumed.status().message();
  EXPECT_EQ(measured_resumed->first_step, 2);
  EXPECT_EQ(measured_resumed->last_step, 2);
  expect_same_validation(*measured_resumed);
  expect_no_training(resumed.output_dir, {{"resume", 1}, {"validation", 1}});
  EXPECT_EQ(fs::last_write_time(damaged / "trainer_state.json"), state_before);

  // A validate-only trainer has no optimizer: training with it is refused, not a crash.
  auto model = factory(resumed.model, test_device());
  ASSERT_TRUE(model) << model.status().message();
  auto validator = Trainer::create(resumed, **model, test_device());
  ASSERT_TRUE(validator) << validator.status().message();
  EXPECT_EQ((*validator)->train().status().code(), core::StatusCode::invalid_argument);
  EXPECT_EQ((*validator)->save_checkpoint(fresh_dir("validate_only_no_checkpoint")).code(),
            core::StatusCode::invalid_argument);

  TrainingOptions nothing_to_measure = from_weights;
  nothing_to_measure.validation_clips = 0;
  EXPECT_EQ(run_training(nothing_to_measure, factory).status().code(), core::StatusCode::invalid_argument);
}

TEST(Trainer, WeightsRoundTripShardedAndStrict) {
  TRACKSCOPE_SKIP_WITHOUT_TEST_DEVICE();
  const fs::path dir = fresh_dir("weights");
  auto source = seeded_tracker(4);
  auto files = save_weights(source->module(), dir, "w", WeightsDtype::bf16, 1 << 20, {{"note", "test"}});
  ASSERT_TRUE(files) << files.status().message();
  auto target = seeded_tracker(5);
  ASSERT_TRUE(load_weights(target->module(), dir / "w.safetensors").ok());
  for (const auto& [name, tensor] : parameters_of(*source)) {
    EXPECT_TRUE(at::allclose(tensor.to(at::kBFloat16).to(at::kFloat), parameters_of(*target).at(name))) << name;
  }
  EXPECT_EQ(read_weights_metadata(dir / "w.safetensors")->at("note"), "test");

  // Sharding: a tiny shard limit puts every tensor in a file of its own; loading finds the shards.
  struct Wide : torch::nn::Module {
    Wide() { layer = register_module("layer", torch::nn::Linear(600, 600)); }
    torch::nn::Linear layer{nullptr};
  } wide, wide_copy;
  auto shards = save_weights(wide, dir, "wide", WeightsDtype::fp32, 1 << 20);
  ASSERT_TRUE(shards);
  EXPECT_EQ(shards->size(), 2u);  // weight 1.44 MB and bias in their own shards
  EXPECT_TRUE(fs::exists(dir / "wide-1.safetensors"));
  ASSERT_TRUE(load_weights(wide_copy, dir / "wide.safetensors").ok());
  EXPECT_TRUE(at::equal(wide.layer->weight, wide_copy.layer->weight));

  EXPECT_EQ(load_weights(wide_copy, dir / "w.safetensors").code(), core::StatusCode::invalid_argument);  // other model
  const std::string broken("\x40\x00\x00\x00\x00\x00\x00\x00{\"a\":", 13);  // header length 64, 5 bytes of it
  std::ofstream(dir / "broken.safetensors", std::ios::binary) << broken;
  EXPECT_EQ(load_weights(wide_copy, dir / "broken.safetensors").code(), core::StatusCode::corrupt_data);
  EXPECT_EQ(load_weights(wide_copy, dir / "missing.safetensors").code(), core::StatusCode::not_found);
}

TEST(Trainer, ScheduleFollowsOneCycleAndCosine) {
  ScheduleOptions s;
  s.total_steps = 100;
  s.warmup_fraction = 0.1;  // OneCycleLR: phase one ends at step 0.1 * 100 - 1 = 9
  const double peak = 1e-3, initial = peak / 25.0, minimum = initial / 1e4;
  EXPECT_DOUBLE_EQ(s.at(0, peak, 0.9).learning_rate, initial);
  EXPECT_DOUBLE_EQ(s.at(0, peak, 0.9).beta1, 0.95);
  EXPECT_NEAR(s.at(9, peak, 0.9).learning_rate, peak, 1e-15);
  EXPECT_NEAR(s.at(9, peak, 0.9).beta1, 0.85, 1e-15);
  EXPECT_NEAR(s.at(54, peak, 0.9).learning_rate, (peak + minimum) / 2.0, 1e-12);  // halfway through phase two
  EXPECT_NEAR(s.at(99, peak, 0.9).learning_rate, minimum, 1e-15);
  EXPECT_NEAR(s.at(500, peak, 0.9).learning_rate, minimum, 1e-15);  // past the end: stays final
  s.cycle_momentum = false;
  EXPECT_DOUBLE_EQ(s.at(9, peak, 0.9).beta1, 0.9);

  s.kind = LearningRateSchedule::cosine;  // 10 warm-up steps, then cosine to 1% of the peak
  EXPECT_NEAR(s.at(0, peak, 0.9).learning_rate, peak / 10.0, 1e-15);
  EXPECT_NEAR(s.at(9, peak, 0.9).learning_rate, peak, 1e-15);
  EXPECT_NEAR(s.at(99, peak, 0.9).learning_rate, peak * 0.01, 1e-15);
  EXPECT_NEAR(s.at(10 + 89 / 2.0, peak, 0.9).learning_rate,
              peak * (0.01 + 0.99 * 0.5 * (1.0 + std::cos(std::numbers::pi * 44.0 / 89.0))), 1e-12);
}

// Returns the ground truth itself, found by regenerating the validation batches: validation must score 1.
class OracleTracker : public TrainableTracker {
 public:
  explicit OracleTracker(const TrainingOptions& o)
      : options_(o), generator_(std::move(*SyntheticVideoGenerator::create(o.validation_data, at::kCPU))) {
    module_.register_parameter("unused", at::zeros({1}));
  }
  torch::nn::Module& module() override { return module_; }
  std::string describe() const override { return "oracle"; }
  TrackerOutputs forward(const at::Tensor& video, const at::Tensor&) override {
    for (uint64_t i = 0; i < 8; ++i) {
      SyntheticBatch batch = generator_->generate(derive_seed(options_.validation_seed, i));
      if (!at::equal(batch.video, video)) continue;
      at::Tensor logits = batch.occluded.to(at::kFloat) * 20.0 - 10.0;
      return {{{batch.target_points_xy, logits, at::full_like(logits, -10.0)}}};
    }
    ADD_FAILURE() << "validation batch not found";
    return {};
  }

 private:
  TrainingOptions options_;
  std::unique_ptr<SyntheticVideoGenerator> generator_;
  torch::nn::Module module_;
};

TEST(Trainer, ValidationOfAnOracleIsPerfect) {
  if (cuda_requested()) GTEST_SKIP() << "the oracle regenerates batches on the CPU";
  TrainingOptions o = tiny_options(fresh_dir("oracle"));
  o.validation_clips = 5;            // two batches of 2 and a partial one
  o.validation_stability.clips = 0;  // the oracle knows the validation frames only as they are
  OracleTracker oracle(o);
  auto trainer = Trainer::create(o, oracle, at::kCPU);
  ASSERT_TRUE(trainer);
  auto v = (*trainer)->validate();
  ASSERT_TRUE(v) << v.status().message();
  EXPECT_EQ(v->metrics.videos, 5);
  EXPECT_DOUBLE_EQ(v->metrics.average_jaccard, 1.0);
  EXPECT_DOUBLE_EQ(v->metrics.average_pts_within, 1.0);
  EXPECT_DOUBLE_EQ(v->metrics.occlusion_accuracy, 1.0);
  EXPECT_LT(v->stationary_baseline.average_jaccard, 0.9);
  // Its probabilities (sigmoid of +-10) are as good as calibrated: ECE = sigmoid(-10) = 4.5e-5.
  EXPECT_EQ(v->occluded_calibration.count, v->metrics.counts.evaluated_points);
  EXPECT_NEAR(v->occluded_calibration.expected_calibration_error, 4.54e-5, 1e-6);
  EXPECT_NEAR(v->far_calibration.expected_calibration_error, 4.54e-5, 1e-6);
  EXPECT_GT(v->occluded_calibration.base_rate, 0.0);
  EXPECT_TRUE(v->stability.empty());
}

// Augmented training with the consistency loss: both copies are trained, the consistency term is logged, and the
// validation reports the calibration and the stability rows (bf16/fp16 only on CUDA).
TEST(Trainer, AugmentationConsistencyCalibrationAndStability) {
  TRACKSCOPE_SKIP_WITHOUT_TEST_DEVICE();
  TrainingOptions o = tiny_options(fresh_dir("robust"));
  o.consistency.weight = 0.5;
  EXPECT_EQ(o.check().code(), core::StatusCode::invalid_argument) << "consistency needs an augmentation";
  o.augmentation.max_brightness_levels = 6.0;
  o.augmentation.jpeg_probability = 0.5;
  o.data.articulated_fraction = 0.5;
  o.data.limb_fraction = 0.5;
  o.data.occluder_fraction = 0.5;
  o.data.max_camera_shake = 0.05;
  o.validation_stability.clips = 2;
  o.max_steps = 4;
  ASSERT_TRUE(o.check().ok()) << o.check().message();
  auto model = seeded_tracker(5);
  auto trainer = Trainer::create(o, *model, test_device());
  ASSERT_TRUE(trainer) << trainer.status().message();
  ASSERT_TRUE((*trainer)->self_check().ok());
  double consistency = 0.0;
  for (int i = 0; i < 4; ++i) {
    auto record = (*trainer)->train_step(false);
    ASSERT_TRUE(record) << record.status().message();
    EXPECT_TRUE(std::isfinite(record->loss));
    consistency += record->consistency_loss;
  }
  EXPECT_GT(consistency, 0.0) << "two differently augmented copies disagree somewhat";
  {
    // The JPEG pair needs no other augmentation: the compressed copy differs from the plain one.
    TrainingOptions paired = tiny_options(fresh_dir("robust_jpeg_pair"));
    paired.consistency.weight = 0.5;
    paired.consistency.jpeg_pair = true;
    ASSERT_TRUE(paired.check().ok()) << paired.check().message();
    auto paired_model = seeded_tracker(5);
    auto paired_trainer = Trainer::create(paired, *paired_model, test_device());
    ASSERT_TRUE(paired_trainer) << paired_trainer.status().message();
    auto record = (*paired_trainer)->train_step(false);
    ASSERT_TRUE(record) << record.status().message();
    EXPECT_TRUE(std::isfinite(record->loss));
    EXPECT_GT(record->consistency_loss, 0.0) << "a clip and its JPEG-like copy disagree somewhat";
  }
  auto v = (*trainer)->validate();
  ASSERT_TRUE(v) << v.status().message();
  EXPECT_GT(v->occluded_calibration.count, 0);
  EXPECT_GT(v->far_calibration.count, 0);
  EXPECT_GE(v->occluded_calibration.expected_calibration_error, 0.0);
  EXPECT_LE(v->occluded_calibration.expected_calibration_error, 1.0);
  ASSERT_EQ(v->stability.size(), 5u);
  EXPECT_EQ(v->stability[0].name, "brightness +2");
  EXPECT_EQ(v->stability[1].name, "brightness -2");
  EXPECT_EQ(v->stability[2].name, "jpeg-like q90");
  for (size_t r = 0; r < 3; ++r) {
    ASSERT_TRUE(v->stability[r].change) << v->stability[r].name;
    EXPECT_EQ(v->stability[r].change->pairs, 2 * 32 * 5);  // 2 clips x 32 points x (6 frames - the query frame)
    EXPECT_GT(v->stability[r].change->max_px, 0.0) << v->stability[r].name << ": the input changed";
  }
  for (size_t r = 3; r < 5; ++r) EXPECT_EQ(v->stability[r].change.has_value(), test_device().is_cuda());

  // The validation line of the log carries both (one more validation through train()).
  o.max_steps = 1;
  o.output_dir = fresh_dir("robust_log");
  auto second = Trainer::create(o, *model, test_device());
  ASSERT_TRUE(second);
  ASSERT_TRUE((*second)->train());
  std::ifstream in(o.output_dir / "validation.json");
  const nlohmann::json validation = nlohmann::json::parse(in);
  EXPECT_EQ(validation["calibration"]["p_far"]["bins"].size(), 10u);
  EXPECT_TRUE(validation["calibration"]["p_occluded"].contains("suspicious_threshold"));
  EXPECT_EQ(validation["stability"].size(), 5u);
  std::ifstream log(o.output_dir / "train_log.jsonl");
  bool saw_consistency = false;
  for (std::string line; std::getline(log, line);) {
    const nlohmann::json j = nlohmann::json::parse(line);
    if (j["type"] == "train") saw_consistency = j["consistency_loss"].get<double>() > 0.0;
    if (j["type"] == "start") {
      EXPECT_EQ(j["consistency"]["weight"], 0.5);
    }
  }
  EXPECT_TRUE(saw_consistency);
}

}  // namespace
}  // namespace trackscope::gpu::training
