// The TAPIR/LocoTrack loss on tiny inputs whose values are worked out by hand.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <cmath>

#include "gpu/training/loss.h"

namespace trackscope::gpu::training {
namespace {

const double kLn2 = std::log(2.0);

// One clip, one point, four frames: errors (3,4) -> 5 px, (1,1) -> sqrt 2, (6,1) -> sqrt 37, (0,0); frame 3 occluded.
struct Tiny {
  at::Tensor targets = at::zeros({1, 1, 4, 2});
  at::Tensor tracks = at::tensor({3.0f, 4.0f, 1.0f, 1.0f, 6.0f, 1.0f, 0.0f, 0.0f}).view({1, 1, 4, 2});
  at::Tensor occluded = at::tensor({0, 0, 0, 1}).to(at::kBool).view({1, 1, 4});
};

TEST(Loss, HuberIsQuadraticInsideDeltaLinearOutsideMaskedAndAveragedOverAllEntries) {
  Tiny t;
  // 5 px > 4: 4 * (5 - 2) = 12;  sqrt2 < 4: 2 / 2 = 1;  sqrt37 > 4: 4 * (sqrt37 - 2);  occluded frame: 0.
  const double expected = (12.0 + 1.0 + 4.0 * (std::sqrt(37.0) - 2.0) + 0.0) / 4.0;
  EXPECT_NEAR(huber_position_loss(t.tracks, t.targets, t.occluded, 4.0).item<double>(), expected, 1e-5);
  // A bigger delta makes every visible error quadratic: (25 + 2 + 37) / 2 / 4.
  EXPECT_NEAR(huber_position_loss(t.tracks, t.targets, t.occluded, 10.0).item<double>(), 64.0 / 2.0 / 4.0, 1e-5);
}

TEST(Loss, ExpectedDistanceTargetsErrorsBeyondTheThreshold) {
  Tiny t;
  at::Tensor logits = at::tensor({0.0f, 2.0f, -1.0f, 5.0f}).view({1, 1, 4});
  // Targets: 5 px -> near (0); sqrt2 -> near (0); sqrt37 > 6 -> far (1); occluded -> masked.
  // BCE(0, 0) = ln 2; BCE(2, 0) = ln(1 + e^2); BCE(-1, 1) = ln(1 + e^1).
  const double expected = (kLn2 + std::log1p(std::exp(2.0)) + std::log1p(std::exp(1.0))) / 4.0;
  EXPECT_NEAR(expected_dist_loss(t.tracks, logits, t.targets, t.occluded, 6.0).item<double>(), expected, 1e-5);
  // Logit 2 everywhere. Threshold 5 px: 5 px is not beyond it (strict), sqrt 37 is; threshold 4.9: both are.
  at::Tensor twos = at::full({1, 1, 4}, 2.0f);
  const double near = std::log1p(std::exp(2.0)), far = std::log1p(std::exp(-2.0));
  EXPECT_NEAR(expected_dist_loss(t.tracks, twos, t.targets, t.occluded, 5.0).item<double>(), (2 * near + far) / 4.0,
              1e-5);
  EXPECT_NEAR(expected_dist_loss(t.tracks, twos, t.targets, t.occluded, 4.9).item<double>(), (near + 2 * far) / 4.0,
              1e-5);
}

TEST(Loss, OcclusionIsPlainBinaryCrossEntropy) {
  Tiny t;
  at::Tensor logits = at::tensor({0.0f, 0.0f, 3.0f, 3.0f}).view({1, 1, 4});
  // Visible with logit 3: ln(1 + e^3); occluded with logit 3: ln(1 + e^-3).
  const double expected = (2.0 * kLn2 + std::log1p(std::exp(3.0)) + std::log1p(std::exp(-3.0))) / 4.0;
  EXPECT_NEAR(occlusion_loss(logits, t.occluded).item<double>(), expected, 1e-5);
}

TEST(Loss, TapirLossSumsEveryIterationWithPositionWeight) {
  Tiny t;
  TrackerOutputs outputs;
  at::Tensor zeros = at::zeros({1, 1, 4});
  outputs.iterations.push_back({t.tracks, zeros, zeros});
  outputs.iterations.push_back({t.targets.clone(), zeros, zeros});  // a perfect second iteration
  LossTerms loss = tapir_loss(outputs, t.targets, t.occluded, 256, 256, LossOptions{});
  ASSERT_EQ(loss.position.size(), 2u);
  const double huber0 = (12.0 + 1.0 + 4.0 * (std::sqrt(37.0) - 2.0)) / 4.0;
  EXPECT_NEAR(loss.position[0].item<double>(), 0.05 * huber0, 1e-6);
  EXPECT_NEAR(loss.position[1].item<double>(), 0.0, 1e-6);
  EXPECT_NEAR(loss.occlusion[1].item<double>(), kLn2, 1e-6);
  EXPECT_NEAR(loss.expected_dist[0].item<double>(), 3.0 * kLn2 / 4.0, 1e-6);
  const double total = 0.05 * huber0 + kLn2 + 3.0 * kLn2 / 4.0 + 0.0 + kLn2 + 3.0 * kLn2 / 4.0;
  EXPECT_NEAR(loss.total.item<double>(), total, 1e-5);
}

TEST(Loss, ExpectedDistanceDoesNotPushTracksAndSizesScaleTo256) {
  Tiny t;
  at::Tensor tracks = t.tracks.clone().requires_grad_(true);
  at::Tensor expd = at::zeros({1, 1, 4}).requires_grad_(true);
  TrackerOutputs outputs;
  outputs.iterations.push_back({tracks, at::zeros({1, 1, 4}), expd});
  LossOptions no_position;
  no_position.position_weight = 0.0;
  tapir_loss(outputs, t.targets, t.occluded, 256, 256, no_position).total.backward();
  EXPECT_EQ(tracks.grad().abs().sum().item<double>(), 0.0);  // detached in the expected-distance term
  EXPECT_GT(expd.grad().abs().sum().item<double>(), 0.0);

  // The same errors in a 128x64 video are 2x (x) and 4x (y) larger at 256x256: (3,4) -> (6,16).
  outputs.iterations[0] = {t.tracks, at::zeros({1, 1, 4}), at::Tensor()};
  LossTerms small = tapir_loss(outputs, t.targets, t.occluded, 64, 128, LossOptions{});
  const double d0 = std::sqrt(36.0 + 256.0), d1 = std::sqrt(4.0 + 16.0), d2 = std::sqrt(144.0 + 16.0);
  const double expected = 0.05 * (4.0 * (d0 - 2.0) + 4.0 * (d1 - 2.0) + 4.0 * (d2 - 2.0)) / 4.0;
  EXPECT_NEAR(small.position[0].item<double>(), expected, 1e-5);
  EXPECT_EQ(small.expected_dist[0].item<double>(), 0.0);  // no expected-distance head
}

TEST(Loss, Bf16OutputsAreComputedInFloat) {
  Tiny t;
  TrackerOutputs outputs;
  outputs.iterations.push_back(
      {t.tracks.to(at::kBFloat16), at::zeros({1, 1, 4}, at::kBFloat16), at::zeros({1, 1, 4}, at::kBFloat16)});
  LossTerms loss = tapir_loss(outputs, t.targets, t.occluded, 256, 256, LossOptions{});
  EXPECT_EQ(loss.total.scalar_type(), at::kFloat);
  EXPECT_NEAR(loss.occlusion[0].item<double>(), kLn2, 1e-6);
}

TEST(Loss, ConsistencyPullsCopyATowardsCopyB) {
  Tiny t;
  // Copy A: the Tiny tracks; copy B: 1 px to the right on every frame; occlusion logits 0 (p 0.5) and ln 3 (p 0.75).
  at::Tensor a_tracks = t.tracks.clone().requires_grad_(true);
  at::Tensor b_tracks = (t.tracks + at::tensor({1.0f, 0.0f})).requires_grad_(true);
  at::Tensor a_occlusion = at::zeros({1, 1, 4}).requires_grad_(true);
  at::Tensor b_occlusion = at::full({1, 1, 4}, static_cast<float>(std::log(3.0))).requires_grad_(true);
  const TrackerOutputs a{{{a_tracks, a_occlusion, at::Tensor()}}};
  const TrackerOutputs b{{{b_tracks, b_occlusion, at::Tensor()}}};
  ConsistencyOptions options;
  // Position: 1 px everywhere (< delta): 1/2 on the 3 visible frames, mean over 4; occlusion: |0.5 - 0.75|.
  at::Tensor loss = consistency_loss(a, b, t.occluded, 256, 256, options);
  EXPECT_NEAR(loss.item<double>(), 0.5 * 3.0 / 4.0 + 0.25, 1e-5);
  loss.backward();
  EXPECT_TRUE(a_tracks.grad().defined());
  EXPECT_GT(a_tracks.grad().abs().sum().item<double>(), 0.0);
  EXPECT_FALSE(b_tracks.grad().defined());  // copy B is a fixed target
  // Symmetric: both copies get gradients, opposite in sign.
  options.symmetric = true;
  consistency_loss(a, b, t.occluded, 256, 256, options).backward();
  ASSERT_TRUE(b_tracks.grad().defined());
  EXPECT_NEAR((a_tracks.grad() / 2.0 + b_tracks.grad()).abs().max().item<double>(), 0.0, 1e-6);
  // Identical copies agree; the positions scale to 256x256 like the supervised loss (a 128 px clip doubles them).
  EXPECT_NEAR(consistency_loss(a, a, t.occluded, 256, 256, options).item<double>(), 0.0, 1e-9);
  const TrackerOutputs b_plain{{{t.tracks + at::tensor({1.0f, 0.0f}), b_occlusion, at::Tensor()}}};
  EXPECT_NEAR(consistency_loss(a, b_plain, t.occluded, 128, 128, options).item<double>(), 2.0 * 3.0 / 4.0 + 0.25, 1e-5);
  // With hidden points the hidden frame's 1 px counts too, with its weight.
  options.hidden_weight = 1.0;
  EXPECT_NEAR(consistency_loss(a, b, t.occluded, 256, 256, options).item<double>(), 0.5 * 4.0 / 4.0 + 0.25, 1e-5);
  options.hidden_weight = 0.25;
  EXPECT_NEAR(consistency_loss(a, b, t.occluded, 256, 256, options).item<double>(), 0.5 * 3.25 / 4.0 + 0.25, 1e-5);
  // Slicing a doubled batch gives each copy's estimates.
  const TrackerOutputs both{{{at::cat({t.tracks, t.tracks + 1.0}), at::zeros({2, 1, 4}), at::ones({2, 1, 4})}}};
  const TrackerOutputs second = slice_outputs(both, 1, 1);
  EXPECT_TRUE(at::equal(second.final_estimate().tracks_xy, t.tracks + 1.0));
  EXPECT_EQ(second.final_estimate().expected_dist_logits.size(0), 1);
}

}  // namespace
}  // namespace trackscope::gpu::training
