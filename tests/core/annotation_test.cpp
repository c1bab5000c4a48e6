#include "core/tracking/annotation.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "core/status.h"

namespace trackscope::core {
namespace {

// Records every notification, and what the annotation looked like when it arrived.
class Recorder : public AnnotationObserver {
 public:
  void on_annotation_changed(const Annotation& annotation, const AnnotationChange& change) override {
    changes.push_back(change);
    sizes_seen.push_back(annotation.size());
  }
  std::vector<AnnotationChange> changes;
  std::vector<size_t> sizes_seen;
};

std::vector<PointId> ids_of(const Annotation& annotation) {
  std::vector<PointId> ids;
  for (const QueryPoint& point : annotation) ids.push_back(point.id);
  return ids;
}

TEST(Annotation, AddAssignsIncreasingIdsAndColours) {
  Annotation annotation;
  EXPECT_TRUE(annotation.empty());
  const PointId a = annotation.add({3, 10.5, 20.25});
  const PointId b = annotation.add({0, 1.0, 2.0});
  const PointId c = annotation.add({3, 11.0, 21.0});
  EXPECT_EQ(a, 0);
  EXPECT_EQ(b, 1);
  EXPECT_EQ(c, 2);
  ASSERT_EQ(annotation.size(), 3u);
  EXPECT_EQ(annotation.find(a)->query, (Query{3, 10.5, 20.25}));
  EXPECT_EQ(annotation.find(b)->query, (Query{0, 1.0, 2.0}));
  EXPECT_NE(annotation.find(a)->colour_index, annotation.find(b)->colour_index);
  EXPECT_NE(annotation.find(b)->colour_index, annotation.find(c)->colour_index);
  EXPECT_EQ(annotation.find(99), nullptr);
  EXPECT_EQ(annotation.queries(), (std::vector<Query>{{3, 10.5, 20.25}, {0, 1.0, 2.0}, {3, 11.0, 21.0}}));
}

TEST(Annotation, RemovedIdsAreNotReusedAndOrderIsById) {
  Annotation annotation;
  for (int i = 0; i < 4; ++i) annotation.add({i, 1.0 * i, 2.0 * i});
  EXPECT_TRUE(annotation.remove(1));
  EXPECT_FALSE(annotation.remove(1));
  EXPECT_EQ(annotation.add({9, 0.0, 0.0}), 4);
  EXPECT_EQ(ids_of(annotation), (std::vector<PointId>{0, 2, 3, 4}));
  annotation.clear();
  EXPECT_TRUE(annotation.empty());
  EXPECT_EQ(annotation.add({0, 0.0, 0.0}), 5);
}

TEST(Annotation, MoveKeepsIdAndColour) {
  Annotation annotation;
  const PointId id = annotation.add({2, 5.0, 6.0});
  const int colour = annotation.find(id)->colour_index;
  EXPECT_TRUE(annotation.move(id, {7, 50.5, 60.5}));
  EXPECT_EQ(annotation.find(id)->query, (Query{7, 50.5, 60.5}));
  EXPECT_EQ(annotation.find(id)->colour_index, colour);
  EXPECT_FALSE(annotation.move(id + 1, {0, 0.0, 0.0}));
}

TEST(Annotation, InsertRestoresIdAndColourInOrder) {
  Annotation annotation;
  for (int i = 0; i < 3; ++i) annotation.add({0, 10.0 * i, 0.0});
  const QueryPoint removed = *annotation.find(1);
  ASSERT_TRUE(annotation.remove(1));
  annotation.insert(removed);
  EXPECT_EQ(ids_of(annotation), (std::vector<PointId>{0, 1, 2}));
  EXPECT_EQ(*annotation.find(1), removed);
  EXPECT_THROW(annotation.insert(removed), InvariantError);
  annotation.insert({10, {1, 1.0, 1.0}, 10});
  EXPECT_EQ(annotation.next_id(), 11);
  EXPECT_EQ(annotation.add({0, 0.0, 0.0}), 11);
  EXPECT_EQ(annotation.find(11)->colour_index, 11);
}

TEST(Annotation, RejectsInvalidQueries) {
  Annotation annotation;
  EXPECT_THROW(annotation.add({-1, 0.0, 0.0}), InvariantError);
  EXPECT_THROW(annotation.add({0, std::numeric_limits<double>::quiet_NaN(), 0.0}), InvariantError);
  EXPECT_THROW(annotation.add({0, 0.0, std::numeric_limits<double>::infinity()}), InvariantError);
  const PointId id = annotation.add({0, 1.0, 1.0});
  EXPECT_THROW((void)annotation.move(id, {0, std::nan(""), 1.0}), InvariantError);
  EXPECT_EQ(annotation.size(), 1u);
  EXPECT_EQ(annotation.find(id)->query, (Query{0, 1.0, 1.0}));
}

TEST(Annotation, FindNearestOnlyOnTheFrameAndWithinRadius) {
  Annotation annotation;
  const PointId far = annotation.add({5, 100.0, 100.0});
  const PointId near = annotation.add({5, 10.0, 10.0});
  const PointId other_frame = annotation.add({6, 10.0, 10.0});
  EXPECT_EQ(annotation.find_nearest(5, 12.0, 10.0, 5.0), near);
  EXPECT_EQ(annotation.find_nearest(6, 12.0, 10.0, 5.0), other_frame);
  EXPECT_EQ(annotation.find_nearest(5, 97.0, 104.0, 5.0), far);  // distance exactly 5: inclusive
  EXPECT_EQ(annotation.find_nearest(5, 97.0, 104.0, 4.99), std::nullopt);
  EXPECT_EQ(annotation.find_nearest(7, 10.0, 10.0, 50.0), std::nullopt);
  EXPECT_EQ(annotation.find_nearest(5, 50.0, 50.0, 1000.0), near);  // both in range: the nearer one
}

TEST(Annotation, FindNearestTieGoesToLowerId) {
  Annotation annotation;
  const PointId first = annotation.add({0, 10.0, 10.0});
  annotation.add({0, 14.0, 10.0});
  EXPECT_EQ(annotation.find_nearest(0, 12.0, 10.0, 3.0), first);
}

TEST(Annotation, ObserversSeeEveryChangeAfterItIsApplied) {
  Annotation annotation;
  Recorder recorder;
  annotation.add_observer(&recorder);
  annotation.add_observer(&recorder);  // registering twice notifies once
  const PointId id = annotation.add({1, 2.0, 3.0});
  ASSERT_TRUE(annotation.move(id, {1, 4.0, 5.0}));
  ASSERT_FALSE(annotation.move(id + 7, {1, 4.0, 5.0}));  // no change, no notification
  ASSERT_TRUE(annotation.remove(id));
  annotation.add({0, 0.0, 0.0});
  annotation.clear();
  ASSERT_EQ(recorder.changes.size(), 5u);
  EXPECT_EQ(recorder.changes[0].kind, AnnotationChangeKind::added);
  EXPECT_EQ(recorder.changes[0].after.query, (Query{1, 2.0, 3.0}));
  EXPECT_EQ(recorder.changes[1].kind, AnnotationChangeKind::moved);
  EXPECT_EQ(recorder.changes[1].before.query, (Query{1, 2.0, 3.0}));
  EXPECT_EQ(recorder.changes[1].after.query, (Query{1, 4.0, 5.0}));
  EXPECT_EQ(recorder.changes[1].after.id, id);
  EXPECT_EQ(recorder.changes[2].kind, AnnotationChangeKind::removed);
  EXPECT_EQ(recorder.changes[2].before.id, id);
  EXPECT_EQ(recorder.changes[3].kind, AnnotationChangeKind::added);
  EXPECT_EQ(recorder.changes[4].kind, AnnotationChangeKind::cleared);
  EXPECT_EQ(recorder.sizes_seen, (std::vector<size_t>{1, 1, 0, 1, 0}));

  annotation.remove_observer(&recorder);
  annotation.add({0, 0.0, 0.0});
  EXPECT_EQ(recorder.changes.size(), 5u);
}

TEST(Annotation, ObserverMustNotModifyDuringNotification) {
  struct Meddler : AnnotationObserver {
    void on_annotation_changed(const Annotation&, const AnnotationChange& change) override {
      if (change.kind == AnnotationChangeKind::added) target->add({0, 0.0, 0.0});
    }
    Annotation* target = nullptr;
  };
  Annotation annotation;
  Meddler meddler;
  meddler.target = &annotation;
  annotation.add_observer(&meddler);
  EXPECT_THROW(annotation.add({0, 1.0, 1.0}), InvariantError);
  annotation.remove_observer(&meddler);  // the model is usable again after the throw
  EXPECT_EQ(annotation.size(), 1u);
  annotation.add({0, 2.0, 2.0});
  EXPECT_EQ(annotation.size(), 2u);
}

}  // namespace
}  // namespace trackscope::core

namespace trackscope::core {
namespace {

Track straight_track(const Query& query, int64_t frames) {
  Track track;
  track.query = query;
  for (int64_t f = 0; f < frames; ++f) {
    const float x = static_cast<float>(query.x_px + f);
    track.points.push_back({x, static_cast<float>(query.y_px), true, 0.1f, 0.2f});
  }
  return track;
}

struct TrackRecorder : AnnotationObserver {
  std::vector<AnnotationChangeKind> kinds;
  void on_annotation_changed(const Annotation&, const AnnotationChange& change) override {
    kinds.push_back(change.kind);
  }
};

TEST(AnnotationTracks, SetReplaceClearAndLifetimeFollowThePoint) {
  Annotation annotation;
  TrackRecorder recorder;
  annotation.add_observer(&recorder);
  const PointId a = annotation.add({0, 10.5, 20.5});
  const PointId b = annotation.add({3, 1.5, 2.5});
  EXPECT_EQ(annotation.track(a), nullptr);
  EXPECT_FALSE(annotation.set_track(99, straight_track({0, 1, 1}, 4)));
  ASSERT_TRUE(annotation.set_track(a, straight_track({0, 10.5, 20.5}, 5), {"LocoTrack-S", "cpu", "fp32"}));
  ASSERT_NE(annotation.track(a), nullptr);
  EXPECT_EQ(annotation.track(a)->track.points.size(), 5u);
  EXPECT_FLOAT_EQ(annotation.track(a)->track.points[4].x_px, 14.5f);
  EXPECT_EQ(annotation.track(a)->provenance.device, "cpu");
  ASSERT_TRUE(annotation.set_track(a, straight_track({0, 10.5, 20.5}, 2)));
  EXPECT_EQ(annotation.track(a)->track.points.size(), 2u);
  ASSERT_TRUE(annotation.move(a, {1, 11.0, 21.0}));
  EXPECT_NE(annotation.track(a), nullptr) << "move keeps the track";
  ASSERT_TRUE(annotation.set_track(b, straight_track({3, 1.5, 2.5}, 3)));
  ASSERT_TRUE(annotation.remove(b));
  EXPECT_EQ(annotation.track(b), nullptr);
  ASSERT_TRUE(annotation.clear_track(a));
  EXPECT_FALSE(annotation.clear_track(a));
  ASSERT_TRUE(annotation.set_track(a, straight_track({0, 10.5, 20.5}, 2)));
  annotation.clear();
  EXPECT_EQ(annotation.track(a), nullptr);
  const std::vector<AnnotationChangeKind> expected = {
      AnnotationChangeKind::added,         AnnotationChangeKind::added,         AnnotationChangeKind::track_changed,
      AnnotationChangeKind::track_changed, AnnotationChangeKind::moved,         AnnotationChangeKind::track_changed,
      AnnotationChangeKind::removed,       AnnotationChangeKind::track_changed, AnnotationChangeKind::track_changed,
      AnnotationChangeKind::cleared};
  EXPECT_EQ(recorder.kinds, expected);
  annotation.remove_observer(&recorder);
}

}  // namespace
}  // namespace trackscope::core
