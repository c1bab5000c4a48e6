// The stability evaluation (core/tracking/evaluation_stability.h) and its input changes: grey-level shifts
// clamp, the JPEG round trip equals PIL's save(quality=q) + open (when python3 with PIL is installed), and
// evaluate_stability reports what fake trackers with known answers change (a tracker that reads the frames
// moves by exactly the shift it sees; another precision adds a known offset; an unsupported one is skipped).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "core/tracking/evaluation_stability.h"
#include "core/video/memory_video.h"

namespace trackscope::core {
namespace {

namespace fs = std::filesystem;

// A test image: smooth gradients, an edge and a fine texture (so that JPEG has something to lose), values in
// [40, 215] so that a shift by a few levels never clamps.
Frame test_image(int width, int height, int seed = 0) {
  Frame frame;
  frame.width = width;
  frame.height = height;
  frame.rgb.resize(static_cast<size_t>(width) * height * 3);
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      for (int c = 0; c < 3; ++c) {
        const double smooth = 128.0 + 60.0 * std::sin(0.07 * (x + seed) + 0.05 * y + c);
        const double edge = x > width / 2 ? 20.0 : -20.0;
        const double texture = ((x * 7 + y * 13 + c * 5 + seed) % 11) - 5.0;
        frame.rgb[(static_cast<size_t>(y) * width + x) * 3 + c] =
            static_cast<uint8_t>(std::clamp(smooth + edge + texture, 40.0, 215.0));
      }
    }
  }
  return frame;
}

double mean_abs_difference(const Frame& a, const Frame& b) {
  double sum = 0.0;
  for (size_t i = 0; i < a.rgb.size(); ++i) sum += std::abs(static_cast<int>(a.rgb[i]) - static_cast<int>(b.rgb[i]));
  return sum / static_cast<double>(a.rgb.size());
}

TEST(Perturbation, BrightnessShiftClampsAndNamesItself) {
  Frame frame;
  frame.width = 2;
  frame.height = 1;
  frame.index = 7;
  frame.rgb = {0, 1, 2, 253, 254, 255};
  Expected<Frame> up = perturb_frame(frame, {PerturbationKind::brightness, +2, 90});
  ASSERT_TRUE(up) << up.status().message();
  EXPECT_EQ(up->rgb, (std::vector<uint8_t>{2, 3, 4, 255, 255, 255}));
  EXPECT_EQ(up->index, 7);
  Expected<Frame> down = perturb_frame(frame, {PerturbationKind::brightness, -2, 90});
  ASSERT_TRUE(down);
  EXPECT_EQ(down->rgb, (std::vector<uint8_t>{0, 0, 0, 251, 252, 253}));
  EXPECT_EQ((FramePerturbation{PerturbationKind::brightness, +2, 90}.name()), "brightness +2");
  EXPECT_EQ((FramePerturbation{PerturbationKind::brightness, -2, 90}.name()), "brightness -2");
  EXPECT_EQ((FramePerturbation{PerturbationKind::jpeg, 0, 90}.name()), "jpeg q90");
  EXPECT_EQ(perturb_frame(frame, {PerturbationKind::jpeg, 0, 0}).status().code(), StatusCode::invalid_argument);
  Frame broken = frame;
  broken.rgb.pop_back();
  EXPECT_EQ(perturb_frame(broken, {PerturbationKind::brightness, 1, 90}).status().code(), StatusCode::invalid_argument);
}

TEST(Perturbation, JpegRoundTripLosesALittleAndMoreAtLowQuality) {
  const Frame image = test_image(37, 29);  // odd sizes: partial 8x8 blocks and chroma subsampling at the border
  Expected<Frame> q90 = perturb_frame(image, {PerturbationKind::jpeg, 0, 90});
  Expected<Frame> q30 = perturb_frame(image, {PerturbationKind::jpeg, 0, 30});
  ASSERT_TRUE(q90) << q90.status().message();
  ASSERT_TRUE(q30) << q30.status().message();
  EXPECT_EQ(q90->width, 37);
  EXPECT_EQ(q90->height, 29);
  const double loss90 = mean_abs_difference(image, *q90), loss30 = mean_abs_difference(image, *q30);
  EXPECT_GT(loss90, 0.2);
  EXPECT_LT(loss90, 4.0);
  EXPECT_GT(loss30, loss90);
  EXPECT_EQ(decode_jpeg({0xFF, 0xD8, 0x00}).status().code(), StatusCode::corrupt_data);
}

// PIL (what users' reference pipelines use) gives the same pixels for save(quality=90) and open.
TEST(Perturbation, JpegRoundTripEqualsPil) {
  std::string python;
  for (const char* candidate : {"/usr/bin/python3", "python3"}) {
    if (std::system((std::string(candidate) + " -c 'import PIL' > /dev/null 2>&1").c_str()) == 0) {
      python = candidate;
      break;
    }
  }
  if (python.empty()) GTEST_SKIP() << "python3 with PIL (Debian python3-pil) is not installed";
  const fs::path dir = fs::path(TRACKSCOPE_TEST_OUTPUT_DIR) / "stability_jpeg";
  fs::create_directories(dir);
  for (const auto& [width, height, quality] : std::vector<std::tuple<int, int, int>>{{37, 29, 90}, {64, 48, 75}}) {
    const Frame image = test_image(width, height, quality);
    const fs::path raw = dir / "in.rgb", out = dir / "pil.rgb";
    std::ofstream(raw, std::ios::binary)
        .write(reinterpret_cast<const char*>(image.rgb.data()), static_cast<std::streamsize>(image.rgb.size()));
    const std::string script =
        "import io,sys; from PIL import Image; "
        "im=Image.frombytes('RGB',(" +
        std::to_string(width) + "," + std::to_string(height) +
        "),open(sys.argv[1],'rb').read()); "
        "b=io.BytesIO(); im.save(b,'JPEG',quality=" +
        std::to_string(quality) + "); b.seek(0); open(sys.argv[2],'wb').write(Image.open(b).convert('RGB').tobytes())";
    ASSERT_EQ(std::system((python + " -c \"" + script + "\" " + raw.string() + " " + out.string()).c_str()), 0);
    std::ifstream in(out, std::ios::binary);
    const std::vector<uint8_t> pil((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    Expected<Frame> ours = perturb_frame(image, {PerturbationKind::jpeg, 0, quality});
    ASSERT_TRUE(ours) << ours.status().message();
    ASSERT_EQ(pil.size(), ours->rgb.size());
    size_t differing = 0;
    for (size_t i = 0; i < pil.size(); ++i) differing += pil[i] != ours->rgb[i] ? 1 : 0;
    EXPECT_EQ(differing, 0u) << width << "x" << height << " quality " << quality;
  }
}

std::unique_ptr<MemoryVideoSource> test_video(int frames) {
  std::vector<Frame> list;
  for (int t = 0; t < frames; ++t) list.push_back(test_image(48, 32, t));
  Expected<std::unique_ptr<MemoryVideoSource>> video = MemoryVideoSource::create(std::move(list), {25, 1}, "test");
  EXPECT_TRUE(video) << video.status().message();
  return std::move(*video);
}

TEST(Perturbation, PerturbedVideoServesChangedFrames) {
  std::unique_ptr<MemoryVideoSource> video = test_video(3);
  PerturbedVideoSource brighter(*video, {PerturbationKind::brightness, 3, 90});
  EXPECT_EQ(brighter.info().frame_count, 3);
  Expected<FramePtr> original = video->read_frame(2);
  Expected<FramePtr> changed = brighter.read_frame(2);
  ASSERT_TRUE(original && changed);
  EXPECT_EQ((*changed)->index, 2);
  EXPECT_NEAR(mean_abs_difference(**original, **changed), 3.0, 1e-12);
  Expected<FramePtr> small = brighter.read_frame(1, {24, 16});
  ASSERT_TRUE(small) << small.status().message();
  EXPECT_EQ((*small)->width, 24);
  EXPECT_EQ(brighter.read_frame(3).status().code(), StatusCode::invalid_argument);
}

// Tracks every query to (query x + 0.5 * (mean grey of the frame - mean grey of the original frame), query y +
// y_offset_px): it reads the frames, so a shift of the grey levels by s moves it by s / 2 px in x.
class FrameReadingTracker final : public PointTracker {
 public:
  FrameReadingTracker(std::vector<double> original_means, Precision precision, float y_offset_px)
      : original_means_(std::move(original_means)), y_offset_px_(y_offset_px) {
    description_.model_name = "frame-reading fake";
    description_.device.id = "cpu";
    description_.precision = precision;
  }
  const TrackerDescription& description() const override { return description_; }
  Expected<TrackSet> track(VideoSource& video, const TrackRequest& request, TrackObserver& observer,
                           std::stop_token) override {
    const int64_t end = request.end_frame == -1 ? video.info().frame_count : request.end_frame;
    TrackSet set;
    set.first_frame = request.first_frame;
    set.frame_count = end - request.first_frame;
    std::vector<double> shift;
    for (int64_t t = request.first_frame; t < end; ++t) {
      Expected<FramePtr> frame = video.read_frame(t);
      if (!frame) return frame.status();
      double sum = 0.0;
      for (uint8_t v : (*frame)->rgb) sum += v;
      shift.push_back(0.5 *
                      (sum / static_cast<double>((*frame)->rgb.size()) - original_means_.at(static_cast<size_t>(t))));
    }
    for (const Query& q : request.queries) {
      Track track;
      track.query = q;
      track.first_frame = request.first_frame;
      for (int64_t t = request.first_frame; t < end; ++t) {
        const auto dx = static_cast<float>(shift[static_cast<size_t>(t - request.first_frame)]);
        track.points.push_back(
            {static_cast<float>(q.x_px) + dx, static_cast<float>(q.y_px) + y_offset_px_, t != 2, 0.1f, 0.1f});
      }
      set.tracks.push_back(std::move(track));
    }
    observer.on_progress({1.0, 1, 1, "done"});
    return set;
  }

 private:
  std::vector<double> original_means_;
  float y_offset_px_;
  TrackerDescription description_;
};

class FakeFactory final : public TrackerFactory {
 public:
  explicit FakeFactory(std::vector<double> means) : means_(std::move(means)) {}
  std::vector<DeviceInfo> devices() const override { return {}; }
  Expected<std::unique_ptr<PointTracker>> create(const TrackerOptions& options) override {
    requested.push_back(options.precision);
    if (options.precision == Precision::fp16) return unsupported("fp16 is not available on this fake CPU");
    if (options.precision == Precision::tf32) return not_found("weights vanished");
    return std::unique_ptr<PointTracker>(std::make_unique<FrameReadingTracker>(means_, options.precision, 0.25f));
  }
  std::vector<Precision> requested;

 private:
  std::vector<double> means_;
};

TEST(Stability, RowsReportTheChangeEachPerturbationCauses) {
  std::unique_ptr<MemoryVideoSource> video = test_video(6);
  std::vector<double> means;
  for (int t = 0; t < 6; ++t) {
    double sum = 0.0;
    for (uint8_t v : (*video->read_frame(t))->rgb) sum += v;
    means.push_back(sum / (48.0 * 32.0 * 3.0));
  }
  FrameReadingTracker reference_tracker(means, Precision::fp32, 0.0f);
  FakeFactory factory(means);
  TrackRequest request;
  request.queries = {{0, 10.0, 10.0}, {1, 30.0, 20.0}};
  TrackObserver observer;
  Expected<TrackSet> reference = reference_tracker.track(*video, request, observer, {});
  ASSERT_TRUE(reference);
  StabilityOptions options;  // +-2, jpeg q90, fp16, bf16
  Expected<StabilityEvaluation> s =
      evaluate_stability(factory, TrackerOptions{}, reference_tracker, *video, request, *reference, options, observer);
  ASSERT_TRUE(s) << s.status().message();
  EXPECT_EQ(s->reference, "fp32 on the original frames");
  EXPECT_EQ(s->tracks, 2);
  EXPECT_EQ(s->end_frame, 6);
  ASSERT_EQ(s->rows.size(), 5u);
  EXPECT_EQ(s->rows[0].name, "brightness +2");
  EXPECT_EQ(s->rows[1].name, "brightness -2");
  EXPECT_EQ(s->rows[2].name, "jpeg q90");
  EXPECT_EQ(s->rows[3].name, "fp16");
  EXPECT_EQ(s->rows[4].name, "bf16");
  // +-2 levels move the frame-reading tracker by exactly 1 px (no sample clamps: values in [40, 215]).
  for (int r : {0, 1}) {
    ASSERT_TRUE(s->rows[static_cast<size_t>(r)].change);
    const TrackChange& c = *s->rows[static_cast<size_t>(r)].change;
    EXPECT_EQ(c.pairs, 10);         // 2 tracks x 6 frames, minus the query frames
    EXPECT_EQ(c.visible_pairs, 8);  // frame 2 is occluded in the reference
    EXPECT_NEAR(c.mean_px, 1.0, 1e-4);
    EXPECT_NEAR(c.p99_px, 1.0, 1e-4);
    EXPECT_NEAR(c.visible_mean_px, 1.0, 1e-4);
    EXPECT_EQ(c.visibility_agreement, 1.0);
  }
  // JPEG changes the frames a little (the mean grey moves by a fraction of a level).
  ASSERT_TRUE(s->rows[2].change);
  EXPECT_GT(s->rows[2].change->max_px, 0.0);
  EXPECT_LT(s->rows[2].change->max_px, 1.0);
  // fp16 is unsupported by the fake factory: skipped with its reason; bf16 adds 0.25 px in y.
  EXPECT_FALSE(s->rows[3].change);
  EXPECT_NE(s->rows[3].skipped.find("not available"), std::string::npos);
  ASSERT_TRUE(s->rows[4].change);
  EXPECT_NEAR(s->rows[4].change->mean_px, 0.25, 1e-6);
  EXPECT_EQ(factory.requested, (std::vector<Precision>{Precision::fp16, Precision::bf16}));

  // The reference's own precision is not compared with itself; other load failures are errors.
  StabilityOptions precisions_only;
  precisions_only.brightness_levels.clear();
  precisions_only.jpeg_qualities.clear();
  precisions_only.precisions = {Precision::fp32, Precision::bf16};
  Expected<StabilityEvaluation> p = evaluate_stability(factory, TrackerOptions{}, reference_tracker, *video, request,
                                                       *reference, precisions_only, observer);
  ASSERT_TRUE(p);
  ASSERT_EQ(p->rows.size(), 1u);
  EXPECT_EQ(p->rows[0].name, "bf16");
  precisions_only.precisions = {Precision::tf32};
  EXPECT_EQ(evaluate_stability(factory, TrackerOptions{}, reference_tracker, *video, request, *reference,
                               precisions_only, observer)
                .status()
                .code(),
            StatusCode::not_found);
  // Bad options and a reference of other queries.
  StabilityOptions none;
  none.brightness_levels.clear();
  none.jpeg_qualities.clear();
  none.precisions.clear();
  EXPECT_EQ(none.check().code(), StatusCode::invalid_argument);
  StabilityOptions zero;
  zero.brightness_levels = {0};
  EXPECT_EQ(zero.check().code(), StatusCode::invalid_argument);
  TrackSet wrong = *reference;
  wrong.tracks.pop_back();
  EXPECT_EQ(evaluate_stability(factory, TrackerOptions{}, reference_tracker, *video, request, wrong, options, observer)
                .status()
                .code(),
            StatusCode::invalid_argument);
}

}  // namespace
}  // namespace trackscope::core
