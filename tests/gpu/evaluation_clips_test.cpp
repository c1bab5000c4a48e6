// generate_synthetic_evaluation_clips (gpu/training.h): deterministic, the generator's own batches (seeded as the
// trainer's validation set), query-first, valid for core::evaluate_tapvid.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <string>

#include "gpu/training.h"
#include "gpu/training/synthetic.h"
#include "test_device.h"

namespace trackscope::gpu {
namespace {

SyntheticEvaluationOptions small_options() {
  SyntheticEvaluationOptions options;
  options.data.frames = 5;
  options.data.height = 48;
  options.data.width = 64;
  options.data.points = 12;
  options.data.background_texture_size = 64;
  options.data.object_texture_size = 32;
  options.clips = 6;  // one whole batch of 4 and half of the next
  options.seed = 77;
  options.device = test_env::test_device_name();
  return options;
}

TEST(SyntheticEvaluationClips, DefaultsAreTheTrainersValidationSet) {
  const SyntheticEvaluationOptions options;
  const TrainingOptions training;
  EXPECT_EQ(options.seed, training.validation_seed);
  EXPECT_EQ(options.clips, training.validation_clips);
  EXPECT_EQ(options.data.batch_size, training.validation_data.batch_size);
  EXPECT_EQ(options.data.frames, training.validation_data.frames);
  EXPECT_EQ(options.data.points, training.validation_data.points);
  EXPECT_EQ(options.data.query_first_fraction, 1.0);
  EXPECT_TRUE(options.check()) << options.check().message();
}

TEST(SyntheticEvaluationClips, AreTheGeneratorsBatchesAsPlainData) {
  TRACKSCOPE_SKIP_WITHOUT_TEST_DEVICE();
  const SyntheticEvaluationOptions options = small_options();
  core::Expected<std::vector<core::TapVidClip>> clips = generate_synthetic_evaluation_clips(options);
  ASSERT_TRUE(clips) << clips.status().message();
  ASSERT_EQ(clips->size(), 6u);

  SyntheticOptions data = options.data;
  data.format = SyntheticVideoFormat::uint8;
  auto generator = training::SyntheticVideoGenerator::create(data, at::Device(options.device));
  ASSERT_TRUE(generator) << generator.status().message();
  for (uint64_t batch_index = 0; batch_index < 2; ++batch_index) {
    const training::SyntheticBatch batch = (*generator)->generate(training::derive_seed(options.seed, batch_index));
    for (int64_t b = 0; b < 4; ++b) {
      const size_t c = static_cast<size_t>(batch_index * 4 + b);
      if (c >= clips->size()) break;
      const core::TapVidClip& clip = (*clips)[c];
      SCOPED_TRACE("clip " + std::to_string(c));
      EXPECT_EQ(clip.name, "synthetic-77-" + std::to_string(c));
      ASSERT_TRUE(clip.check()) << clip.check().message();  // sizes consistent, query-first
      EXPECT_EQ(clip.width, 64);
      EXPECT_EQ(clip.height, 48);
      ASSERT_EQ(clip.frame_count(), 5);
      ASSERT_EQ(clip.track_count(), 12);
      const at::Tensor video = batch.video[b].cpu().contiguous();
      for (int64_t t = 0; t < 5; ++t) {
        const at::Tensor frame =
            at::from_blob(const_cast<uint8_t*>(clip.frames_rgb[static_cast<size_t>(t)].data()), {48, 64, 3}, at::kByte);
        EXPECT_TRUE(at::equal(frame, video[t])) << "frame " << t;
      }
      const at::Tensor queries = batch.query_points_tyx[b].cpu();
      for (int64_t n = 0; n < 12; ++n) {
        const core::Query& q = clip.queries[static_cast<size_t>(n)];
        EXPECT_EQ(q.frame, 0);
        EXPECT_FLOAT_EQ(static_cast<float>(q.x_px), queries[n][2].item<float>());
        EXPECT_FLOAT_EQ(static_cast<float>(q.y_px), queries[n][1].item<float>());
      }
      const at::Tensor tracks = batch.target_points_xy[b].cpu().contiguous();
      const at::Tensor occluded = batch.occluded[b].cpu().to(at::kByte).contiguous();
      EXPECT_TRUE(
          at::equal(at::from_blob(const_cast<float*>(clip.gt_tracks_xy.data()), {12, 5, 2}, at::kFloat), tracks));
      EXPECT_TRUE(
          at::equal(at::from_blob(const_cast<uint8_t*>(clip.gt_occluded.data()), {12, 5}, at::kByte), occluded));
    }
  }
}

TEST(SyntheticEvaluationClips, SameSeedSameClipsOtherSeedOtherClips) {
  TRACKSCOPE_SKIP_WITHOUT_TEST_DEVICE();
  SyntheticEvaluationOptions options = small_options();
  options.clips = 2;
  auto a = generate_synthetic_evaluation_clips(options);
  auto b = generate_synthetic_evaluation_clips(options);
  options.seed = 78;
  auto c = generate_synthetic_evaluation_clips(options);
  ASSERT_TRUE(a && b && c);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ((*a)[i].frames_rgb, (*b)[i].frames_rgb);
    EXPECT_EQ((*a)[i].gt_tracks_xy, (*b)[i].gt_tracks_xy);
    EXPECT_EQ((*a)[i].queries, (*b)[i].queries);
    EXPECT_NE((*a)[i].frames_rgb, (*c)[i].frames_rgb);
  }
}

TEST(SyntheticEvaluationClips, RejectsOptionsThatAreNotQueryFirst) {
  TRACKSCOPE_SKIP_WITHOUT_TEST_DEVICE();
  SyntheticEvaluationOptions options = small_options();
  options.data.query_first_fraction = 0.3;
  EXPECT_EQ(generate_synthetic_evaluation_clips(options).status().code(), core::StatusCode::invalid_argument);
  options = small_options();
  options.clips = 0;
  EXPECT_EQ(generate_synthetic_evaluation_clips(options).status().code(), core::StatusCode::invalid_argument);
  options = small_options();
  options.device = "tpu";
  EXPECT_FALSE(generate_synthetic_evaluation_clips(options));
}

}  // namespace
}  // namespace trackscope::gpu
