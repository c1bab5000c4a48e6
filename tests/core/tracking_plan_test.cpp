// The workbench's tracking rules without Qt: what a track, a re-track and a consistency check plan, when a
// result is stale after an edit, and the scheduler that decides between loading a model and starting a job.
#include <gtest/gtest.h>

#include <string>

#include "core/tracking/tracking_plan.h"

namespace trackscope::core {
namespace {

constexpr int64_t kFrames = 48;

// A straight track over [first, end): frame f at (10 + 2 f, 20 + f), visible, queried on `query_frame`.
Track line_track(int64_t first, int64_t end, int64_t query_frame) {
  Track track;
  track.first_frame = first;
  for (int64_t f = first; f < end; ++f) {
    track.points.push_back({static_cast<float>(10 + 2 * f), static_cast<float>(20 + f), true, 0.1f, 0.05f});
  }
  track.query = {query_frame, 10 + 2.0 * query_frame, 20 + 1.0 * query_frame};
  return track;
}

// Point on frame 5 with a track over the whole clip and a hand-set keyframe on frame 20.
PointId add_tracked_point(Annotation& annotation) {
  const PointId id = annotation.add({5, 20.0, 25.0});
  EXPECT_TRUE(annotation.set_track(id, PointTrack{line_track(0, kFrames, 5), {"m", "cpu", "fp32"}, {20}}));
  return id;
}

TEST(TrackingPlan, TrackPlansTheAskedPointsInIdOrderOverTheWholeClip) {
  Annotation annotation;
  const PointId a = annotation.add({3, 1.5, 2.5});
  const PointId b = annotation.add({7, 4.5, 5.5});
  const PointId c = annotation.add({0, 8.5, 9.5});

  const std::optional<TrackingPlan> all = plan_tracking_job(annotation, {TrackingJobKind::track, {}, {}}, kFrames);
  ASSERT_TRUE(all);
  EXPECT_EQ(all->ids, (std::vector<PointId>{a, b, c}));
  EXPECT_EQ(all->queries, (std::vector<Query>{{3, 1.5, 2.5}, {7, 4.5, 5.5}, {0, 8.5, 9.5}}));
  EXPECT_EQ(all->range, (FrameRange{0, kFrames}));
  const TrackRequest request = all->request();
  EXPECT_EQ(request.queries, all->queries);
  EXPECT_EQ(request.first_frame, 0);
  EXPECT_EQ(request.end_frame, -1);  // the whole clip, however long the tracker finds it

  // Asked in any order, planned in id order; a removed id is skipped.
  const auto some = plan_tracking_job(annotation, {TrackingJobKind::track, {c, 99, a}, {}}, kFrames);
  ASSERT_TRUE(some);
  EXPECT_EQ(some->ids, (std::vector<PointId>{a, c}));
  EXPECT_FALSE(plan_tracking_job(annotation, {TrackingJobKind::track, {99}, {}}, kFrames));

  EXPECT_TRUE(has_points_to_track(annotation, {}));
  EXPECT_TRUE(has_points_to_track(annotation, {99, b}));
  EXPECT_FALSE(has_points_to_track(annotation, {99}));
  EXPECT_EQ(requested_point_count(annotation, {}), 3u);
  EXPECT_EQ(requested_point_count(annotation, {a, 99}), 2u);  // what the point limit is checked against
  Annotation empty;
  EXPECT_FALSE(has_points_to_track(empty, {}));
  EXPECT_FALSE(plan_tracking_job(empty, {TrackingJobKind::track, {}, {}}, kFrames));
}

TEST(TrackingPlan, ForwardRetrackFromAKeyframeCoversTheKeyframeToTheEnd) {
  Annotation annotation;
  const PointId id = add_tracked_point(annotation);
  const RetrackRequest forward{id, 20, RetrackDirection::forward, MergePolicy::fill_missing};
  ASSERT_EQ(check_retrack(annotation, forward, kFrames), RetrackCheck::ok);

  const auto plan = plan_tracking_job(annotation, {TrackingJobKind::retrack, {id}, forward}, kFrames);
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->range, (FrameRange{20, kFrames}));
  EXPECT_EQ(plan->ids, (std::vector<PointId>{id}));
  EXPECT_EQ(plan->queries, (std::vector<Query>{{20, 50.0, 40.0}}));  // the track's estimate on the keyframe
  EXPECT_EQ(plan->retrack.policy, MergePolicy::fill_missing);
  const TrackRequest request = plan->request();
  EXPECT_EQ(request.first_frame, 20);
  EXPECT_EQ(request.end_frame, kFrames);

  const RetrackRequest backward{id, 20, RetrackDirection::backward, MergePolicy::overwrite};
  EXPECT_EQ(plan_tracking_job(annotation, {TrackingJobKind::retrack, {id}, backward}, kFrames)->range,
            (FrameRange{0, 21}));
  // From the query frame: the point's own query, not the track's estimate there.
  const RetrackRequest from_query{id, 5, RetrackDirection::both, MergePolicy::overwrite};
  const auto both = plan_tracking_job(annotation, {TrackingJobKind::retrack, {id}, from_query}, kFrames);
  ASSERT_TRUE(both);
  EXPECT_EQ(both->range, (FrameRange{0, kFrames}));
  EXPECT_EQ(both->queries, (std::vector<Query>{{5, 20.0, 25.0}}));
}

TEST(TrackingPlan, RetrackIsRefusedAwayFromKeyframesAndOutsideTheVideo) {
  Annotation annotation;
  const PointId id = add_tracked_point(annotation);
  EXPECT_EQ(check_retrack(annotation, {id + 1, 20}, kFrames), RetrackCheck::no_point);
  EXPECT_EQ(check_retrack(annotation, {id, 21}, kFrames), RetrackCheck::not_keyframe);  // tracked, not a keyframe
  EXPECT_EQ(check_retrack(annotation, {id, 5}, kFrames), RetrackCheck::ok);             // the query frame

  // A point queried beyond a shorter video: its query frame is a keyframe, but not a frame of the video.
  const PointId late = annotation.add({60, 1.0, 1.0});
  EXPECT_EQ(check_retrack(annotation, {late, 60}, kFrames), RetrackCheck::outside_video);
  EXPECT_EQ(check_retrack(annotation, {late, 60}, 0), RetrackCheck::ok);  // frame count unknown: not checked

  // Without a track, only the query frame can be re-tracked from.
  const PointId bare = annotation.add({9, 1.0, 1.0});
  EXPECT_EQ(check_retrack(annotation, {bare, 20}, kFrames), RetrackCheck::not_keyframe);
  EXPECT_EQ(retrack_query(annotation, bare, 9), (Query{9, 1.0, 1.0}));
  EXPECT_EQ(retrack_query(annotation, bare, 20), std::nullopt);
}

TEST(TrackingPlan, ConsistencyCheckPlansEachTrackFromItsFarthestVisibleFrame) {
  Annotation annotation;
  const PointId tracked = add_tracked_point(annotation);  // query on 5: the farthest visible frame is 47
  const PointId untracked = annotation.add({2, 3.0, 4.0});
  const PointId short_track = annotation.add({4, 18.0, 24.0});
  ASSERT_TRUE(annotation.set_track(short_track, line_track(4, 5, 4)));  // only its query frame: no anchor
  const PointId second = annotation.add({40, 90.0, 60.0});
  ASSERT_TRUE(annotation.set_track(second, line_track(10, 41, 40)));  // farthest from frame 40: frame 10

  EXPECT_EQ(consistency_candidates(annotation, {}), (std::vector<PointId>{tracked, second}));
  EXPECT_EQ(consistency_candidates(annotation, {second, untracked}), (std::vector<PointId>{second}));
  EXPECT_TRUE(consistency_candidates(annotation, {untracked, short_track}).empty());

  const auto plan = plan_tracking_job(annotation, {TrackingJobKind::consistency, {tracked, second}, {}}, kFrames);
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->ids, (std::vector<PointId>{tracked, second}));
  EXPECT_EQ(plan->queries, (std::vector<Query>{{47, 104.0, 67.0}, {10, 30.0, 30.0}}));
  EXPECT_EQ(plan->range, (FrameRange{0, kFrames}));
  EXPECT_EQ(plan->request().end_frame, -1);

  // The track went away between the request and the start: nothing left to check.
  ASSERT_TRUE(annotation.clear_track(second));
  ASSERT_TRUE(annotation.clear_track(tracked));
  EXPECT_FALSE(plan_tracking_job(annotation, {TrackingJobKind::consistency, {tracked, second}, {}}, kFrames));
}

TEST(TrackingPlan, ATrackResultIsStaleOnceItsPointMovedOrWasRemoved) {
  Annotation annotation;
  const PointId kept = annotation.add({3, 1.5, 2.5});
  const PointId moved = annotation.add({7, 4.5, 5.5});
  const PointId removed = annotation.add({0, 8.5, 9.5});
  const TrackingPlan plan = *plan_tracking_job(annotation, {TrackingJobKind::track, {}, {}}, kFrames);

  ASSERT_TRUE(annotation.move(moved, {7, 4.5, 6.0}));
  ASSERT_TRUE(annotation.remove(removed));
  EXPECT_EQ(result_staleness(annotation, plan, 0), ResultStaleness::current);
  EXPECT_EQ(result_staleness(annotation, plan, 1), ResultStaleness::query_changed);
  EXPECT_EQ(result_staleness(annotation, plan, 2), ResultStaleness::point_removed);
  // Moving it back answers the question that was asked again.
  ASSERT_TRUE(annotation.move(moved, {7, 4.5, 5.5}));
  EXPECT_EQ(result_staleness(annotation, plan, 1), ResultStaleness::current);
  (void)kept;
}

TEST(TrackingPlan, ARetrackResultIsStaleOnceItsKeyframeChanged) {
  Annotation annotation;
  const PointId id = add_tracked_point(annotation);
  const TrackingPlan plan = *plan_tracking_job(
      annotation, {TrackingJobKind::retrack, {id}, {id, 20, RetrackDirection::forward, MergePolicy::overwrite}},
      kFrames);
  EXPECT_EQ(result_staleness(annotation, plan, 0), ResultStaleness::current);

  // Moving the point's query (frame 5) does not change the keyframe on 20: the result still applies.
  ASSERT_TRUE(annotation.move(id, {5, 21.0, 26.0}));
  EXPECT_EQ(result_staleness(annotation, plan, 0), ResultStaleness::current);

  // A correction on the keyframe does.
  PointTrack corrected = *annotation.track(id);
  corrected.track.points[20].x_px += 3.0f;
  ASSERT_TRUE(annotation.set_track(id, corrected));
  EXPECT_EQ(result_staleness(annotation, plan, 0), ResultStaleness::query_changed);
  ASSERT_TRUE(annotation.clear_track(id));
  EXPECT_EQ(result_staleness(annotation, plan, 0), ResultStaleness::query_changed);  // no estimate on 20 any more
  ASSERT_TRUE(annotation.remove(id));
  EXPECT_EQ(result_staleness(annotation, plan, 0), ResultStaleness::point_removed);
}

TEST(TrackingPlan, AConsistencyResultNeedsTheTrackItIsComparedWith) {
  Annotation annotation;
  const PointId id = add_tracked_point(annotation);
  const TrackingPlan plan = *plan_tracking_job(annotation, {TrackingJobKind::consistency, {id}, {}}, kFrames);
  // Compared with the track as it is when the result arrives: an edited track still gets its distances.
  ASSERT_TRUE(annotation.move(id, {5, 30.0, 30.0}));
  EXPECT_EQ(result_staleness(annotation, plan, 0), ResultStaleness::current);
  ASSERT_TRUE(annotation.clear_track(id));
  EXPECT_EQ(result_staleness(annotation, plan, 0), ResultStaleness::track_removed);
}

using Scheduler = TrackerScheduler<std::string>;

TEST(TrackerScheduler, AJobWaitsForItsModelThenStarts) {
  Scheduler scheduler("model-a", true);
  EXPECT_EQ(scheduler.state(), TrackingState::idle);
  EXPECT_EQ(scheduler.next(false).action, TrackerAction::none);  // nothing wanted yet: no load at start

  EXPECT_EQ(scheduler.admit({TrackingJobKind::track, {3}, {}}, true), JobAdmission::accepted);
  const auto load = scheduler.next(false);
  ASSERT_EQ(load.action, TrackerAction::start_load);
  EXPECT_EQ(load.load, "model-a");
  EXPECT_EQ(scheduler.state(), TrackingState::loading_model);
  EXPECT_EQ(scheduler.next(false).action, TrackerAction::none);  // one creation at a time

  const auto outcome = scheduler.load_finished("model-a", true);
  EXPECT_TRUE(outcome.for_selection);
  EXPECT_FALSE(outcome.dropped_job);
  const auto start = scheduler.next(true);
  ASSERT_EQ(start.action, TrackerAction::start_job);
  EXPECT_EQ(start.job.ids, (std::vector<PointId>{3}));
  EXPECT_FALSE(scheduler.has_pending_job());
  scheduler.job_started();
  EXPECT_EQ(scheduler.state(), TrackingState::tracking);
  EXPECT_EQ(scheduler.next(true).action, TrackerAction::none);

  EXPECT_EQ(scheduler.admit({TrackingJobKind::track, {}, {}}, true), JobAdmission::busy);
  EXPECT_FALSE(scheduler.job_finished());
  EXPECT_EQ(scheduler.state(), TrackingState::idle);
}

TEST(TrackerScheduler, RefusesWithoutVideoOrTrackerAndAfterShutdown) {
  Scheduler scheduler("m", true);
  EXPECT_EQ(scheduler.admit({}, false), JobAdmission::no_video);
  Scheduler no_factory("m", false);
  EXPECT_EQ(no_factory.admit({}, true), JobAdmission::no_tracker);
  EXPECT_TRUE(no_factory.select("n"));
  EXPECT_EQ(no_factory.next(false).action, TrackerAction::none);  // nothing to load with
  scheduler.shut_down();
  EXPECT_EQ(scheduler.admit({}, true), JobAdmission::shut_down);
  EXPECT_FALSE(scheduler.select("n"));
  EXPECT_EQ(scheduler.next(false).action, TrackerAction::none);
}

TEST(TrackerScheduler, ASwitchLoadsTheNewSelectionAndALeftLoadIsNotWaitedFor) {
  Scheduler scheduler("a", true);
  EXPECT_FALSE(scheduler.select("a"));  // no change
  ASSERT_TRUE(scheduler.select("b"));
  ASSERT_EQ(scheduler.next(false).action, TrackerAction::start_load);
  EXPECT_EQ(scheduler.state(), TrackingState::loading_model);
  // The user moves on while "b" loads: nothing waits for "b", and "c" is created once "b" is done.
  ASSERT_TRUE(scheduler.select("c"));
  EXPECT_EQ(scheduler.state(), TrackingState::idle);
  EXPECT_EQ(scheduler.next(false).action, TrackerAction::none);
  EXPECT_FALSE(scheduler.load_finished("b", true).for_selection);
  const auto load = scheduler.next(false);
  ASSERT_EQ(load.action, TrackerAction::start_load);
  EXPECT_EQ(load.load, "c");
  // Switching back to a cached selection loads nothing.
  EXPECT_TRUE(scheduler.load_finished("c", true).for_selection);
  ASSERT_TRUE(scheduler.select("b"));
  EXPECT_EQ(scheduler.next(true).action, TrackerAction::none);
  EXPECT_EQ(scheduler.state(), TrackingState::idle);
}

TEST(TrackerScheduler, AFailedLoadDropsTheWaitingJob) {
  Scheduler scheduler("a", true);
  ASSERT_EQ(scheduler.admit({}, true), JobAdmission::accepted);
  ASSERT_EQ(scheduler.next(false).action, TrackerAction::start_load);
  const auto outcome = scheduler.load_finished("a", false);
  EXPECT_TRUE(outcome.for_selection);
  EXPECT_TRUE(outcome.dropped_job);
  EXPECT_EQ(scheduler.state(), TrackingState::idle);
  EXPECT_EQ(scheduler.next(false).action, TrackerAction::none);  // no retry until asked again
}

TEST(TrackerScheduler, AJobAskedForWhileCancellingRunsAfterTheCancelledOne) {
  Scheduler scheduler("a", true);
  ASSERT_EQ(scheduler.admit({TrackingJobKind::track, {1}, {}}, true), JobAdmission::accepted);
  ASSERT_EQ(scheduler.next(true).action, TrackerAction::start_job);
  scheduler.job_started();
  EXPECT_TRUE(scheduler.begin_cancel());
  EXPECT_FALSE(scheduler.begin_cancel());  // already cancelling
  EXPECT_EQ(scheduler.state(), TrackingState::cancelling);
  ASSERT_EQ(scheduler.admit({TrackingJobKind::track, {2}, {}}, true), JobAdmission::accepted);
  EXPECT_EQ(scheduler.next(true).action, TrackerAction::none);  // the cancelled job has not ended yet
  EXPECT_TRUE(scheduler.job_finished());                        // it had been cancelled
  const auto next = scheduler.next(true);
  ASSERT_EQ(next.action, TrackerAction::start_job);
  EXPECT_EQ(next.job.ids, (std::vector<PointId>{2}));
  EXPECT_FALSE(scheduler.begin_cancel());  // not started yet: nothing to cancel
}

}  // namespace
}  // namespace trackscope::core
